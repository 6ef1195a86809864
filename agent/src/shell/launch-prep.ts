/**
 * What is done on disk right before a worker starts: its directory and files, its working
 * directory checked, its ownership. Plain data in (`LaunchPrep`, made by process-driver.ts), plain
 * synchronous file-system calls: it runs in the spawn helper (spawner.ts) together with the
 * spawn, so a worker's start costs the agent's event loop one message and no file-system round
 * trips. A failure throws `LaunchPrepError`, whose `field` (when set) names the spec field at fault.
 * `launchDetached` lays one out and starts the process. It imports Node's own modules only, so the
 * helper starts in tens of milliseconds.
 *
 * ```ts
 * const cwd = runLaunchPrep({ dir, subdirs: [out], staleFiles: [exit, pid], files: [...], cwd: { path: dir } });
 * ```
 */
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { insideRoots } from '../core/path-roots.js';
import { ownDir, realDir, writeFresh } from './worker-files.js';

export interface LaunchPrep {
  /** The worker's directory, made with its parents. */
  dir: string;
  /** Directories made inside it. */
  subdirs: string[];
  /** Files of an earlier run of the same worker id, removed when `dir` was there already. */
  staleFiles: string[];
  /** Files written (whole, created or replaced), in order. */
  files: Array<{ path: string; text: string }>;
  /**
   * The working directory: `path` as is (a system process), or `confine`: a job-provided path
   * ('' = `dir`, relative = below `dir`) that must resolve (symlinks and `..`) into `dir` or one of
   * `allowed`. It must be a directory.
   */
  cwd: { path: string } | { confine: { field: string; given: string; allowed: string[] } };
  /**
   * The worker runs as another user: `passThrough` get the x bits for everyone, `give` become the
   * user's with mode 0700, `chown` become the user's.
   */
  owner?: { uid: number; gid: number; passThrough: string[]; give: string[]; chown: string[] };
}

export class LaunchPrepError extends Error {
  constructor(
    message: string,
    /** The spec field at fault ('cwd'), or '' when it is no field's. */
    readonly field = '',
    readonly reason = message,
  ) {
    super(message);
  }
}

/** Lays out the worker's directory as `p` says; returns its working directory. */
export function runLaunchPrep(p: LaunchPrep): string {
  // `recursive` returns the first directory it made: undefined when the worker's was there.
  const made = fs.mkdirSync(p.dir, { recursive: true });
  // A leftover exit file (same worker id, earlier run) would be taken for this run's exit.
  // The directory may be an earlier run's of the same worker id, and was its user's: nothing in it
  // is written or given through a symlink, or opened when it is a FIFO (worker-files.ts).
  if (made === undefined) for (const f of p.staleFiles) fs.rmSync(f, { force: true, recursive: true });
  let cwd: string;
  try {
    // In a directory made just now (by root, not yet its user's) nothing can be in the way.
    for (const d of p.subdirs) {
      if (made !== undefined && d.startsWith(`${p.dir}/`)) fs.mkdirSync(d, { recursive: true });
      else realDir(d);
    }
    for (const f of p.files) writeFresh(f.path, f.text);
    cwd = 'path' in p.cwd ? p.cwd.path : confinePath(p.cwd.confine.field, p.cwd.confine.given, p.dir, p.cwd.confine.allowed);
    // The worker's own directory, made just now, is one.
    const fresh = made !== undefined && 'confine' in p.cwd && !p.cwd.confine.given;
    let isDir = fresh;
    if (!fresh) {
      try {
        isDir = fs.statSync(cwd).isDirectory();
      } catch {
        isDir = false;
      }
    }
    if (!isDir) throw new LaunchPrepError(`working directory ${cwd} does not exist`);
  } catch (e) {
    // A launch that fails leaves no directory behind that it made.
    if (made !== undefined) fs.rmSync(p.dir, { recursive: true, force: true });
    throw e;
  }
  if (p.owner) {
    // Its user reaches its own directory (the ones above: traverse only, never list) and nothing else.
    passThrough(p.owner.passThrough);
    for (const d of p.owner.give) ownDir(d, p.owner.uid, p.owner.gid, 0o700);
    for (const f of p.owner.chown) fs.chownSync(f, p.owner.uid, p.owner.gid);
  }
  return cwd;
}

/**
 * `given` (a job-provided path; '' = `dir` itself, relative = below `dir`) with symlinks and `..`
 * resolved, when it is `dir` or below it or below one of `allowed`; otherwise a LaunchPrepError
 * naming `field`. A path that does not exist is refused too.
 */
export function confinePath(field: string, given: string, dir: string, allowed: readonly string[]): string {
  const refuse = (reason: string): LaunchPrepError => new LaunchPrepError(`${field}: ${reason}`, field, reason);
  // realpath(3) itself: Node's own realpathSync walks the path in JS, an lstat per component.
  let real: string;
  try {
    real = fs.realpathSync.native(path.resolve(dir, given || '.'));
  } catch {
    throw refuse(`${JSON.stringify(given)} does not exist on this node`);
  }
  // The worker's directory itself (`given` empty): its real path is the one just resolved.
  const roots: string[] = given ? [] : [real];
  for (const r of given ? [dir, ...allowed] : allowed) {
    try {
      roots.push(fs.realpathSync.native(r));
    } catch {
      // a missing allowed root allows nothing
    }
  }
  if (!insideRoots(real, roots)) {
    throw refuse(
      `${JSON.stringify(given)} resolves to ${real}, outside the worker's directory${allowed.length ? ` and allowedPaths (${allowed.join(', ')})` : ''}`,
    );
  }
  return real;
}

/** Lets every user traverse `dirs` (adds the x bits; read and write stay as they are). */
function passThrough(dirs: readonly string[]): void {
  for (const d of dirs) {
    const st = fs.statSync(d);
    if ((st.mode & 0o111) !== 0o111) fs.chmodSync(d, (st.mode & 0o7777) | 0o111);
  }
}

/** Where a start's outcome goes (launchDetached). */
export interface LaunchCallbacks {
  /** It runs (and `exited` follows once it ends). */
  started(pid: number): void;
  /** It could not be started: a LaunchPrepError of `prep`, or the spawn's error. */
  failed(e: unknown): void;
  exited(pid: number, code: number | null, signal: string | null): void;
}

/**
 * Lays out `prep` (when given; its working directory replaces `options.cwd`), then starts `file`
 * detached (its own session and process group) with no stdio. The child process, or undefined
 * when it did not start.
 */
export function launchDetached(
  file: string,
  args: string[],
  options: { cwd: string; env: Record<string, string>; uid?: number; gid?: number },
  prep: LaunchPrep | undefined,
  cb: LaunchCallbacks,
): ChildProcess | undefined {
  let child: ChildProcess;
  try {
    const cwd = prep ? runLaunchPrep(prep) : options.cwd;
    child = spawn(file, args, { ...options, cwd, detached: true, stdio: 'ignore' });
  } catch (e) {
    cb.failed(e);
    return undefined;
  }
  const pid = child.pid;
  if (pid === undefined) {
    child.once('error', (e) => cb.failed(e));
    return undefined;
  }
  // An error after a pid (a failed kill, say) changes nothing about the process: its exit still comes.
  child.once('error', () => {});
  child.once('exit', (code, signal) => cb.exited(pid, code, signal));
  cb.started(pid);
  return child;
}
