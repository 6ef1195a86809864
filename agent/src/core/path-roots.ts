/**
 * Whether a resolved path lies under one of a set of roots. A module of its own, importing
 * nothing, so the spawn helper (shell/launch-prep.ts) uses it without loading the rest.
 */

/**
 * Whether `resolved` (an absolute path with symlinks and `..` resolved) is one of `roots` or below
 * one of them (absolute, resolved too).
 */
export function insideRoots(resolved: string, roots: readonly string[]): boolean {
  return roots.some((r) => resolved === r || resolved.startsWith(r.endsWith('/') ? r : r + '/'));
}
