/**
 * The host side of core/worker-identity.ts: the user database, the agent's own uid, and whether
 * the agent's work directory is open to the worker user. (A job's paths are resolved against the
 * worker's directory and `allowedPaths` when it starts: launch-prep.ts.)
 *
 * ```ts
 * const identity = openWorkerIdentity({ workerUser: '', workerUsers: {}, allowRootWorkers: false });
 * const closed = firstClosedParent(workDir, user); // a parent the user cannot pass, or undefined
 * ```
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { decideWorkerIdentity, parsePasswd, type UserEntry, type WorkerIdentity } from '../core/worker-identity.js';

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
