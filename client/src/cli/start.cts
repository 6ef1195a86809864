#!/usr/bin/env node
/**
 * `fuxi` as installed (the package's bin): runs the bundled CLI, `client/dist/fuxi.cjs` (main.ts and
 * everything it imports in one CommonJS file, written by scripts/bundle.mjs), with V8's code cache
 * `fuxi.cjs.cache` beside it. A cold process then neither resolves modules nor compiles the code a
 * previous run compiled. Node 20 has no module compile cache (`module.enableCompileCache` is 22.1+),
 * so this does the same for the one file with `vm.Script`'s `cachedData`. The build writes the
 * cache (a `submit` to an unreachable master, which runs the client code); a missing cache, or one
 * V8 rejects (another Node version), is written anew at exit, and a failure to write it (a
 * read-only installation) only means running without one. CommonJS, not ESM: on Node 20 the ESM
 * loader alone costs a cold start about 15 ms.
 */
import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { Script } from 'node:vm';

const bundle = join(__dirname, '..', 'fuxi.cjs');
const cacheFile = `${bundle}.cache`;
// The CommonJS module wrapper; the bundle's `#!` line is blanked (same line numbers in traces).
const source = `(function (exports, require, module, __filename, __dirname) {${readFileSync(bundle, 'utf8').replace(/^#!.*/, '')}\n})`;
let cachedData: Buffer | undefined;
try {
  cachedData = readFileSync(cacheFile);
} catch {
  /* no cache yet */
}
const script = new Script(source, { filename: bundle, cachedData });
if (cachedData === undefined || script.cachedDataRejected) {
  process.once('exit', () => {
    const tmp = `${cacheFile}.${process.pid}`;
    try {
      writeFileSync(tmp, script.createCachedData());
      renameSync(tmp, cacheFile); // atomic: a concurrent run reads the old cache or the new one
    } catch {
      rmSync(tmp, { force: true }); // cannot write beside the bundle: run without a cache
    }
  });
}
const module_ = { exports: {} };
(script.runInThisContext() as (...args: unknown[]) => void)(module_.exports, createRequire(bundle), module_, bundle, dirname(bundle));
