/**
 * The V8 code cache a bundled bin runs with (`<name>.bundle.cjs.cache` beside `<name>.cjs`, written
 * by scripts/bundle-launcher.cjs), for a benchmark's report: a cold start depends on it (a cache
 * of what `fuxi --help` compiled costs a `fuxi` command about 47 ms more than the build's).
 */
import { readFileSync } from 'node:fs';

export interface CodeCacheInfo {
  /** The launcher's level: 1 written by a run up for 0.5 s, 0.5 by a shorter run that called out, 0.25 by the CLI's build, 0 by a run that did not call out. */
  level: number;
  bytes: number;
}

/** The cache of the bin `bin` (a `.cjs` bundled bin), or null when it has none or is not bundled. */
export function codeCacheOf(bin: string): CodeCacheInfo | null {
  if (!bin.endsWith('.cjs')) return null;
  try {
    const b = readFileSync(bin.replace(/\.cjs$/, '.bundle.cjs.cache'));
    return b.length > 32 ? { level: b.readDoubleLE(24), bytes: b.length } : null;
  } catch {
    return null;
  }
}
