/**
 * A worker's process family: which processes a stop must reach (pure: the shell reads /proc and
 * sends the signals; docs/architecture.md, "Stopping a worker").
 *
 * A worker's family is the closure, over "is a child of" (ppid), of three seeds:
 *
 * - its root (the wrapper the agent spawned), identified by pid AND start time;
 * - every process whose environment carries the worker's marker (`FUXI_WORKER_FAMILY=<marker>`,
 *   set by the agent at launch and inherited by every descendant that does not scrub it), which
 *   finds children that called `setsid` or double-forked (reparented to init);
 * - every process remembered from earlier snapshots as a member (pid AND start time), which finds a
 *   descendant that scrubbed its environment and was reparented after a snapshot saw it.
 *
 * Processes that ended (zombies, state Z or X) are not members (they cannot be signalled, and they
 * have no children); the excluded pids (the agent itself, its parent, init) are never members and
 * never walked through. A pid reused by an unrelated process has another start time, so it matches
 * neither the root nor a remembered member; and a ppid always names a live parent (orphans are
 * reparented at once), so walking children of verified members stays inside the family.
 *
 * ```ts
 * const members = familyOf(snapshot, { root: { pid: 4242, startTime: '81234' }, marker: 'c0ffee', known: [], exclude: [agentPid, 1] });
 * ```
 */

/** One process in a /proc snapshot. */
export interface ProcEntry {
  pid: number;
  /** Parent pid (/proc/<pid>/stat field 4). */
  ppid: number;
  /** Start time (/proc/<pid>/stat field 22, clock ticks after boot): with the pid, names the process. */
  startTime: string;
  /** State (field 3): 'R', 'S', 'D', 'T', 'Z', ... */
  state: string;
  /** The value of the family variable in its environment; undefined when absent or unreadable. */
  marker?: string;
}

/** A process named so that a reused pid never matches: pid and start time. */
export interface ProcId {
  pid: number;
  startTime: string;
}

export interface FamilyQuery {
  /** The worker's root process; undefined when unknown (only the marker and `known` seed it). */
  root?: ProcId;
  /** The worker's marker; '' = none (a worker launched without one). */
  marker: string;
  /** Members seen in earlier snapshots. */
  known: readonly ProcId[];
  /** Pids that are never members (the agent, its parent, init). */
  exclude: readonly number[];
  /**
   * Pids in the worker's cgroup as read just now: members whatever their environment and parent
   * (a descendant that scrubbed its marker and was reparented to init before any sample saw it).
   */
  inGroup?: ReadonlySet<number>;
}

/** The environment variable that carries a worker's marker. */
export const FAMILY_ENV = 'FUXI_WORKER_FAMILY';

export function procKey(p: ProcId): string {
  return `${p.pid}:${p.startTime}`;
}

function ended(p: ProcEntry): boolean {
  return p.state === 'Z' || p.state === 'X' || p.state === 'x';
}

/** The live members of the family in `procs`, in pid order. */
export function familyOf(procs: readonly ProcEntry[], q: FamilyQuery): ProcEntry[] {
  const exclude = new Set(q.exclude);
  const known = new Set(q.known.map(procKey));
  const children = new Map<number, ProcEntry[]>();
  const seeds: ProcEntry[] = [];
  for (const p of procs) {
    if (exclude.has(p.pid)) continue;
    let list = children.get(p.ppid);
    if (!list) children.set(p.ppid, (list = []));
    list.push(p);
    const isRoot = q.root !== undefined && p.pid === q.root.pid && p.startTime === q.root.startTime && q.root.startTime !== '';
    const marked = q.marker !== '' && p.marker === q.marker;
    if (isRoot || marked || known.has(procKey(p)) || q.inGroup?.has(p.pid)) seeds.push(p);
  }
  const members = new Map<number, ProcEntry>();
  const stack = [...seeds];
  while (stack.length > 0) {
    const p = stack.pop()!;
    if (members.has(p.pid)) continue;
    members.set(p.pid, p);
    for (const c of children.get(p.pid) ?? []) if (!members.has(c.pid)) stack.push(c);
  }
  return [...members.values()].filter((p) => !ended(p)).sort((a, b) => a.pid - b.pid);
}

/** The members of `now` not in `seen` (by pid and start time). */
export function newMembers(now: readonly ProcEntry[], seen: ReadonlySet<string>): ProcEntry[] {
  return now.filter((p) => !seen.has(procKey(p)));
}

/**
 * The root of the live processes carrying `marker`, for a worker whose spawn went unanswered (its
 * spawn helper died after the fork, before it said so): of the marked processes whose parent is not
 * marked, the one started first (its children, and anything it double-forked, started later).
 * Undefined when none runs, or for marker ''.
 */
export function markedRoot(procs: readonly ProcEntry[], marker: string): ProcId | undefined {
  if (marker === '') return undefined;
  const marked = procs.filter((p) => p.marker === marker && !ended(p));
  const markedPids = new Set(marked.map((p) => p.pid));
  let root: ProcEntry | undefined;
  for (const p of marked) {
    if (markedPids.has(p.ppid)) continue;
    const earlier = root === undefined || Number(p.startTime) < Number(root.startTime) || (p.startTime === root.startTime && p.pid < root.pid);
    if (earlier) root = p;
  }
  return root ? { pid: root.pid, startTime: root.startTime } : undefined;
}
