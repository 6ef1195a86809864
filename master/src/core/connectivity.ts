/**
 * The connectivity graph (CASPR's connectivity matrix, seed 000): which hosts cannot reach which.
 * Soft state, like everything else the master learns from agents: each agent probes its peers
 * (agent/src/core/probes.ts) and reports, with its heartbeat, the peers that stopped or started
 * answering on top of the set the master acknowledged. A new leader starts empty and asks every
 * agent for its whole set (`resync`).
 *
 * Only what is broken is kept: a link a-b is broken when either end reports the other unreachable
 * (cuts are usually symmetric; an asymmetric one breaks traffic both ways for a job anyway). A pair
 * nobody probes counts as reachable.
 *
 * ```ts
 * const cs = newConnectivity(connectivityBase(epoch));
 * applyDelta(cs, 'a1', { seq: 1, baseSeq: 0, unreachable: ['a2'], reachable: [] }, now); // { ackSeq: 1, resync: false, changed: true }
 * reachable(cs, 'a2', 'a1'); // false
 * brokenLinks(cs);           // [{ a: 'a1', b: 'a2', sinceMs: now }]
 * ```
 */

export interface ConnectivityDeltaInput {
  /** The agent's sequence after these changes. */
  seq: number;
  /** The sequence the changes apply to; 0: `unreachable` is the whole set. */
  baseSeq: number;
  unreachable: readonly string[];
  reachable: readonly string[];
}

export interface ConnectivityRow {
  /** The reporter's sequence the master holds. */
  seq: number;
  /** Peers the reporter cannot reach, with when the master learned it. */
  unreachable: Map<string, number>;
}

export interface ConnectivityState {
  rows: Map<string, ConnectivityRow>;
  /** Bumped on every change of a broken link or of `partitioned`. */
  version: number;
  /** Nodes the master cannot hear while peers still reach them (nodes.ts keeps it). */
  partitioned: Set<string>;
  /** Prober -> the peers it probes (its probe targets, chosen by the master). */
  probes: Map<string, Set<string>>;
}

export interface BrokenLink {
  a: string;
  b: string;
  sinceMs: number;
}

/** An empty graph whose versions start at `base` (see `connectivityBase`). */
export function newConnectivity(base: number): ConnectivityState {
  return { rows: new Map(), version: base, partitioned: new Set(), probes: new Map() };
}

/**
 * Where a leader of master epoch `epoch` starts its versions: above any its predecessors handed
 * out (each leader's changes stay below 1e9), so an AM holding an old version always gets the new
 * graph.
 */
export function connectivityBase(epoch: string): number {
  const e = Number(epoch);
  return Number.isSafeInteger(e * 1e9) && e > 0 ? e * 1e9 : 1;
}

/**
 * Applies one agent's reported changes. A delta on a base the master does not hold (a new leader,
 * a lost heartbeat answer) is not applied: `resync` asks for the whole set. Returns the sequence
 * the master now holds for the agent and whether a broken link changed.
 */
export function applyDelta(
  cs: ConnectivityState,
  nodeId: string,
  d: ConnectivityDeltaInput,
  now: number,
): { ackSeq: number; resync: boolean; changed: boolean } {
  const row = cs.rows.get(nodeId);
  if (d.baseSeq !== 0 && (!row || row.seq !== d.baseSeq)) {
    if (row && row.seq === d.seq) return { ackSeq: row.seq, resync: false, changed: false };
    return { ackSeq: row?.seq ?? 0, resync: true, changed: false };
  }
  const before = new Set(row?.unreachable.keys() ?? []);
  const next = new Map<string, number>(d.baseSeq === 0 ? [] : row!.unreachable);
  if (d.baseSeq === 0) for (const p of d.unreachable) next.set(p, row?.unreachable.get(p) ?? now);
  else {
    for (const p of d.unreachable) if (!next.has(p)) next.set(p, now);
    for (const p of d.reachable) next.delete(p);
  }
  next.delete(nodeId);
  cs.rows.set(nodeId, { seq: d.seq, unreachable: next });
  const changed = before.size !== next.size || [...next.keys()].some((p) => !before.has(p));
  if (changed) cs.version++;
  return { ackSeq: d.seq, resync: false, changed };
}

/**
 * A node left the cluster (lost, removed): its row, every report about it, its probe targets and
 * its place in others' targets go. Returns whether a broken link or `partitioned` changed.
 */
export function dropNode(cs: ConnectivityState, nodeId: string): boolean {
  const had = unreachablePeers(cs, nodeId).length > 0;
  cs.rows.delete(nodeId);
  for (const row of cs.rows.values()) row.unreachable.delete(nodeId);
  cs.probes.delete(nodeId);
  for (const targets of cs.probes.values()) targets.delete(nodeId);
  const wasPartitioned = cs.partitioned.delete(nodeId);
  if (had || wasPartitioned) cs.version++;
  return had || wasPartitioned;
}

/**
 * A node stopped reporting (it no longer probes): what it reported goes, with its probe targets;
 * what others report about it stays. Returns whether a broken link changed.
 */
export function forgetReports(cs: ConnectivityState, nodeId: string): boolean {
  const row = cs.rows.get(nodeId);
  cs.probes.delete(nodeId);
  if (!row) return false;
  cs.rows.delete(nodeId);
  const changed = [...row.unreachable.keys()].some((p) => !cs.rows.get(p)?.unreachable.has(nodeId));
  if (changed) cs.version++;
  return changed;
}

/** The nodes that probe `nodeId` (whose probe targets include it). */
export function probersOf(cs: ConnectivityState, nodeId: string): string[] {
  const out: string[] = [];
  for (const [p, targets] of cs.probes) if (targets.has(nodeId)) out.push(p);
  return out;
}

/**
 * The peers that vouch for `nodeId`: among `probers` (the nodes whose probe targets include it),
 * those the master hears (`fresh`), whose set it holds (they reported since this master took over)
 * and which do not list `nodeId` unreachable. A node the master cannot hear but that has vouchers
 * is partitioned from the master, not dead.
 */
export function vouchers(cs: ConnectivityState, nodeId: string, probers: Iterable<string>, fresh: (id: string) => boolean): string[] {
  const out: string[] = [];
  for (const p of probers) {
    if (p === nodeId || !fresh(p)) continue;
    const row = cs.rows.get(p);
    if (row && !row.unreachable.has(nodeId)) out.push(p);
  }
  return out.sort();
}

/** Whether hosts `a` and `b` reach each other (true for a pair nobody reports). */
export function reachable(cs: ConnectivityState, a: string, b: string): boolean {
  if (a === b) return true;
  return !(cs.rows.get(a)?.unreachable.has(b) || cs.rows.get(b)?.unreachable.has(a));
}

/** Peers `nodeId` cannot reach or be reached by, sorted. */
export function unreachablePeers(cs: ConnectivityState, nodeId: string): string[] {
  const out = new Set(cs.rows.get(nodeId)?.unreachable.keys() ?? []);
  for (const [id, row] of cs.rows) if (row.unreachable.has(nodeId)) out.add(id);
  return [...out].sort();
}

/** Every broken link once (a < b), the earliest report's time, sorted. */
export function brokenLinks(cs: ConnectivityState): BrokenLink[] {
  const links = new Map<string, BrokenLink>();
  for (const [from, row] of cs.rows) {
    for (const [to, since] of row.unreachable) {
      const [a, b] = from < to ? [from, to] : [to, from];
      const key = `${a}\u0000${b}`;
      const l = links.get(key);
      if (!l) links.set(key, { a, b, sinceMs: since });
      else l.sinceMs = Math.min(l.sinceMs, since);
    }
  }
  return [...links.values()].sort((x, y) => (x.a === y.a ? (x.b < y.b ? -1 : 1) : x.a < y.a ? -1 : 1));
}

/** Marks `nodeId` partitioned from the master or not; bumps the version on a change. */
export function setPartitioned(cs: ConnectivityState, nodeId: string, on: boolean): boolean {
  const has = cs.partitioned.has(nodeId);
  if (has === on) return false;
  if (on) cs.partitioned.add(nodeId);
  else cs.partitioned.delete(nodeId);
  cs.version++;
  return true;
}
