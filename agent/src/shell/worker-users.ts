/**
 * The host side of core/worker-identity.ts: the user database, the agent's own uid, and job paths
 * resolved on disk (symlinks and `..`) against the worker's directory and `allowedPaths`.
 *
 * ```ts
 * const identity = openWorkerIdentity({ workerUser: '', workerUsers: {}, allowRootWorkers: false });
 * const cwd = await confinePath('cwd', spec.cwd, dir, ['/data']); // throws InvalidArgumentError('cwd', ...)
 * ```
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { InvalidArgumentError } from '@fuxi/common';
import { decideWorkerIdentity, insideRoots, parsePasswd, type UserEntry, type WorkerIdentity } from '../core/worker-identity.js';

export interface WorkerUserSettings {
  workerUser: string;
  workerUsers: Record<string, string>;
  allowRootWorkers: boolean;
}

/** Resolves the configured worker users on this host (InvalidArgumentError naming the key when one is bad). */
export function openWorkerIdentity(s: WorkerUserSettings, passwdFile = '/etc/passwd', agentUid = process.getuid?.() ?? -1): WorkerIdentity {
  let users = new Map<string, UserEntry>();
  try {
    users = parsePasswd(fs.readFileSync(passwdFile, 'utf8'));
  } catch {
    // No readable user database: only numeric users resolve.
  }
  let agentUser = String(agentUid);
  try {
    agentUser = os.userInfo().username;
  } catch {
    // keep the uid
  }
  return decideWorkerIdentity({ agentUid, agentUser, ...s }, (name) => users.get(name));
}

/**
 * `p` (a job-provided path; '' = `dir` itself, relative = below `dir`) with symlinks and `..`
 * resolved, when it is `dir` or below it or below one of `allowed`; otherwise an
 * InvalidArgumentError naming `field`. A path that does not exist is refused too.
 */
export async function confinePath(field: string, p: string, dir: string, allowed: readonly string[]): Promise<string> {
  const abs = path.resolve(dir, p || '.');
  let real: string;
  try {
    real = await fs.promises.realpath(abs);
  } catch {
    throw new InvalidArgumentError(field, `${JSON.stringify(p)} does not exist on this node`);
  }
  const roots: string[] = [];
  for (const r of [dir, ...allowed]) {
    try {
      roots.push(await fs.promises.realpath(r));
    } catch {
      // a missing allowed root allows nothing
    }
  }
  if (!insideRoots(real, roots)) {
    throw new InvalidArgumentError(
      field,
      `${JSON.stringify(p)} resolves to ${real}, outside the worker's directory${allowed.length ? ` and allowedPaths (${allowed.join(', ')})` : ''}`,
    );
  }
  return real;
}

/** Makes `dir` belong to `user` with mode 0700 (the worker's own directory). */
export async function giveDir(dir: string, user: UserEntry): Promise<void> {
  await fs.promises.chown(dir, user.uid, user.gid);
  await fs.promises.chmod(dir, 0o700);
}

/** Lets every user traverse `dirs` (adds the x bits; read and write stay as they are). */
export async function passThrough(dirs: readonly string[]): Promise<void> {
  for (const d of dirs) {
    const st = await fs.promises.stat(d);
    if ((st.mode & 0o111) !== 0o111) await fs.promises.chmod(d, (st.mode & 0o7777) | 0o111);
  }
}

/**
 * The first directory above `dir` that `user` cannot pass through (no execute bit for it as owner,
 * group or other), or undefined. Workers live under the agent's work directory: if one of its
 * parents is closed to the worker user (a 0700 directory made by mkdtemp, /root), every job
 * process fails before it runs.
 */
export function firstClosedParent(dir: string, user: UserEntry): { dir: string; mode: string } | undefined {
  const parts: string[] = [];
  for (let d = path.dirname(path.resolve(dir)); ; d = path.dirname(d)) {
    parts.unshift(d);
    if (d === path.dirname(d)) break;
  }
  for (const d of parts) {
    let st: fs.Stats;
    try {
      st = fs.statSync(d);
    } catch {
      return undefined; // not made yet: the agent makes it, with its own mode
    }
    const bit = st.uid === user.uid ? 0o100 : st.gid === user.gid ? 0o010 : 0o001;
    if ((st.mode & bit) === 0) return { dir: d, mode: (st.mode & 0o7777).toString(8).padStart(4, '0') };
  }
  return undefined;
}
