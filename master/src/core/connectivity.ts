/**
 * The connectivity graph (CASPR's connectivity matrix, seed 000): which hosts cannot reach which.
 * Soft state, like everything else the master learns from agents: each agent probes its peers
 * (agent/src/core/probes.ts) and reports, with its heartbeat, the peers that stopped or started
 * answering on top of the set the master acknowledged. A new leader starts empty and asks every
 * agent for its whole set (`resync`).
 *
 * Only what is broken is kept. A report "a cannot reach b" counts (the link a-b is broken) once it
 * is *confirmed*: b reports a as well (a cut stops the pings and pongs of both ends, so where both
 * probe each other both report it within a heartbeat), or the master has heard b after the report
 * and a detection delay (b is alive and still unreachable from a: `confirmReports`, at the
 * master's tick). A peer that is merely down or restarting (killed, its agent coming back) is no
 * broken link: it reports nothing, and nothing heard from it before the reports of its return
 * confirms them (`nodeRestarted` dates the reports about it anew). A pair nobody probes counts as
 * reachable.
 *
 * ```ts
 * const cs = newConnectivity(connectivityBase(epoch));
 * applyDelta(cs, 'a1', { seq: 1, baseSeq: 0, unreachable: ['a2'], reachable: [] }, now); // { ackSeq: 1, resync: false, changed: true }
 * applyDelta(cs, 'a2', { seq: 1, baseSeq: 0, unreachable: ['a1'], reachable: [] }, now); // both ends: confirmed
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
  /** Confirmed reports, as `reportKey(from, to)`: only these make a link broken. */
  confirmed: Set<string>;
}

const reportKey = (from: string, to: string): string => `${from}\u0000${to}`;

export interface BrokenLink {
  a: string;
  b: string;
  sinceMs: number;
}

/** An empty graph whose versions start at `base` (see `connectivityBase`). */
export function newConnectivity(base: number): ConnectivityState {
  return { rows: new Map(), version: base, partitioned: new Set(), probes: new Map(), confirmed: new Set() };
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
  for (const p of before) if (!next.has(p)) cs.confirmed.delete(reportKey(nodeId, p));
  // Both ends report each other: confirmed at once.
  for (const p of next.keys()) {
    if (cs.rows.get(p)?.unreachable.has(nodeId)) {
      cs.confirmed.add(reportKey(nodeId, p));
      cs.confirmed.add(reportKey(p, nodeId));
    }
  }
  const changed = before.size !== next.size || [...next.keys()].some((p) => !before.has(p));
  if (changed) cs.version++;
  return { ackSeq: d.seq, resync: false, changed };
}

/**
 * Confirms the reports whose accused peer the master has heard since (`heardAt(to, t)`: heard at
 * `t` or later, in its current run) `delayMs` after the report: alive, and still unreachable from
 * the reporter, which would have reported it reachable again by then. Returns whether any link
 * became broken (the version moved).
 */
export function confirmReports(cs: ConnectivityState, delayMs: number, heardAt: (nodeId: string, t: number) => boolean): boolean {
  let changed = false;
  for (const [from, row] of cs.rows) {
    for (const [to, since] of row.unreachable) {
      const key = reportKey(from, to);
      if (cs.confirmed.has(key) || !heardAt(to, since + delayMs)) continue;
      cs.confirmed.add(key);
      changed = true;
    }
  }
  if (changed) cs.version++;
  return changed;
}

/**
 * `nodeId` started again (its agent registered anew): reports about it made while it was down
 * are dated now and wait for confirmation again. Returns whether a broken link went (the version
 * moved).
 */
export function nodeRestarted(cs: ConnectivityState, nodeId: string, now: number): boolean {
  let changed = false;
  for (const [from, row] of cs.rows) {
    if (!row.unreachable.has(nodeId)) continue;
    row.unreachable.set(nodeId, now);
    // A report the restarted node makes itself (a real cut) confirms it again at once.
    if (cs.rows.get(nodeId)?.unreachable.has(from)) continue;
    if (cs.confirmed.delete(reportKey(from, nodeId))) changed = true;
  }
  if (changed) cs.version++;
  return changed;
}

/**
 * A node left the cluster (lost, removed): its row, every report about it, its probe targets and
 * its place in others' targets go. Returns whether a broken link or `partitioned` changed.
 */
export function dropNode(cs: ConnectivityState, nodeId: string): boolean {
  const had = unreachablePeers(cs, nodeId).length > 0;
  cs.rows.delete(nodeId);
  for (const row of cs.rows.values()) row.unreachable.delete(nodeId);
  dropConfirmed(cs, nodeId, true);
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
  const changed = [...row.unreachable.keys()].some((p) => cs.confirmed.has(reportKey(nodeId, p)) && !cs.confirmed.has(reportKey(p, nodeId)));
  dropConfirmed(cs, nodeId, false);
  if (changed) cs.version++;
  return changed;
}

/** Removes the confirmations of `nodeId`'s reports (and, with `about`, of reports about it). */
function dropConfirmed(cs: ConnectivityState, nodeId: string, about: boolean): void {
  for (const key of [...cs.confirmed]) {
    const [from, to] = key.split('\u0000');
    if (from === nodeId || (about && to === nodeId)) cs.confirmed.delete(key);
  }
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
  return !(cs.confirmed.has(reportKey(a, b)) || cs.confirmed.has(reportKey(b, a)));
}

/** Peers `nodeId` cannot reach or be reached by (confirmed), sorted. */
export function unreachablePeers(cs: ConnectivityState, nodeId: string): string[] {
  const out = new Set<string>();
  for (const key of cs.confirmed) {
    const [from, to] = key.split('\u0000') as [string, string];
    if (from === nodeId) out.add(to);
    else if (to === nodeId) out.add(from);
  }
  return [...out].sort();
}

/** Every broken link (a confirmed report) once (a < b), the earliest report's time, sorted. */
export function brokenLinks(cs: ConnectivityState): BrokenLink[] {
  const links = new Map<string, BrokenLink>();
  for (const [from, row] of cs.rows) {
    for (const [to, since] of row.unreachable) {
      if (!cs.confirmed.has(reportKey(from, to))) continue;
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
