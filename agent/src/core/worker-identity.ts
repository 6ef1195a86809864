/**
 * Who a worker runs as, with which environment, and where it may work (docs/architecture.md,
 * "What runs as whom"). Pure: the shell (shell/worker-users.ts) reads the user database and
 * resolves paths on disk, then asks these functions.
 *
 * - An agent running as root switches every job-provided process to an unprivileged user: the
 *   quota group's (`workerUsers`) or the default (`workerUser`, `nobody` when unset). uid 0 is
 *   refused unless the operator sets `allowRootWorkers`.
 * - An agent not running as root cannot switch: workers run as the agent's own user (mode `same`).
 * - A worker's environment is built from nothing: a fixed PATH, HOME (its work dir), LANG, the
 *   job's declared variables and the FUXI_* variables the agent sets for it. Nothing of the agent's
 *   own environment reaches it.
 *
 * ```ts
 * const id = decideWorkerIdentity({ agentUid: 0, agentUser: 'root', workerUser: '', workerUsers: {}, allowRootWorkers: false }, lookup);
 * id.mode; // 'switch'
 * ```
 */
import { InvalidArgumentError } from '@fuxi/common';

/** A user as the host's user database knows it. */
export interface UserEntry {
  name: string;
  uid: number;
  gid: number;
}

/** `switch`: job processes run as an unprivileged user; `same`: as the agent's own user (it is not root). */
export type WorkerUserMode = 'switch' | 'same';

export interface WorkerIdentitySettings {
  /** The agent's own uid (process.getuid()). */
  agentUid: number;
  /** The agent's own user name (for the mode line). */
  agentUser: string;
  /** Config `workerUser`: the default worker user ('' = `nobody` when the agent is root). */
  workerUser: string;
  /** Config `workerUsers`: quota group -> user. */
  workerUsers: Record<string, string>;
  /** Config `allowRootWorkers`: lets a worker user resolve to uid 0. */
  allowRootWorkers: boolean;
}

export interface WorkerIdentity {
  mode: WorkerUserMode;
  /** The default worker user (mode `switch`), or the agent's own. */
  defaultUser: UserEntry;
  /** Users of quota groups that have their own (mode `switch` only). */
  byQuotaGroup: ReadonlyMap<string, UserEntry>;
}

export const DEFAULT_WORKER_USER = 'nobody';

/** The PATH every worker gets (never the agent's). */
export const WORKER_PATH = '/usr/local/bin:/usr/bin:/bin';

/**
 * Resolves the configured users once, at start. Every problem is an InvalidArgumentError naming the
 * config key (`workerUser`, `workerUsers.<group>`, `allowRootWorkers`).
 */
export function decideWorkerIdentity(s: WorkerIdentitySettings, lookup: (name: string) => UserEntry | undefined): WorkerIdentity {
  const self: UserEntry = { name: s.agentUser, uid: s.agentUid, gid: -1 };
  if (s.agentUid !== 0) return { mode: 'same', defaultUser: self, byQuotaGroup: new Map() };
  const resolve = (key: string, name: string): UserEntry => {
    const u = /^\d+$/.test(name) ? lookupUid(Number(name), lookup, name) : lookup(name);
    if (!u) throw new InvalidArgumentError(key, `no such user on this host: ${JSON.stringify(name)}`);
    if (u.uid === 0 && !s.allowRootWorkers)
      throw new InvalidArgumentError(key, `${JSON.stringify(name)} is uid 0: workers never run as root unless allowRootWorkers is true`);
    return u;
  };
  const defaultUser = resolve('workerUser', s.workerUser || DEFAULT_WORKER_USER);
  const byQuotaGroup = new Map<string, UserEntry>();
  for (const [group, name] of Object.entries(s.workerUsers)) byQuotaGroup.set(group, resolve(`workerUsers.${group}`, name));
  return { mode: 'switch', defaultUser, byQuotaGroup };
}

function lookupUid(uid: number, lookup: (name: string) => UserEntry | undefined, raw: string): UserEntry | undefined {
  return lookup(raw) ?? { name: raw, uid, gid: uid };
}

/** The user a job process of `quotaGroup` runs as ('' or unknown group: the default). */
export function userFor(id: WorkerIdentity, quotaGroup: string): UserEntry {
  return (quotaGroup && id.byQuotaGroup.get(quotaGroup)) || id.defaultUser;
}

/** `fuxi nodes` / the start line: "nobody (switch)", "alice (same: the agent is not root)". */
export function describeIdentity(id: WorkerIdentity): string {
  if (id.mode === 'same') return `${id.defaultUser.name} (same: the agent is not root)`;
  const groups = [...id.byQuotaGroup].map(([g, u]) => `${g}=${u.name}`);
  return groups.length === 0 ? id.defaultUser.name : `${id.defaultUser.name} (${groups.join(', ')})`;
}

/** Parses /etc/passwd text into users by name. */
export function parsePasswd(text: string): Map<string, UserEntry> {
  const out = new Map<string, UserEntry>();
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const f = line.split(':');
    const uid = Number(f[2]);
    const gid = Number(f[3]);
    if (f[0] && Number.isInteger(uid) && Number.isInteger(gid) && !out.has(f[0])) out.set(f[0], { name: f[0], uid, gid });
  }
  return out;
}

/**
 * The whole environment of a job process: PATH, HOME, LANG, then the plan's variables (the job's
 * declared env with the FUXI_* ones the core added), then the agent's per-launch FUXI_* ones.
 * The job cannot override PATH's absence of the agent's own value: it may set its own PATH.
 */
export function workerEnv(home: string, lang: string, planEnv: Record<string, string>, launchEnv: Record<string, string>): Record<string, string> {
  return { PATH: WORKER_PATH, HOME: home, LANG: lang || 'C.UTF-8', ...planEnv, ...launchEnv };
}

export { insideRoots } from './path-roots.js';
