/**
 * Peer probing, the master's side: each agent's probe targets kept current (probe-targets.ts
 * computes them), the agents' reports applied to the connectivity graph (connectivity.ts), and the
 * graph's views for `fuxi nodes` and `fuxi cluster status`.
 *
 * - **Targets.** Recomputed at the master's tick when membership changed (a registration, a node
 *   lost or back: `membersChanged`) or, above `probeAllUpTo`, an app's hosts changed
 *   (`appHostsChanged`, from the ledger; at most every APP_HOSTS_REFRESH_MS). A heartbeat whose `probe_targets_version` is not the
 *   node's current version is answered with the list. `connectivity.probes` holds, per agent, the
 *   targets it confirmed holding (its heartbeat named their version), so a voucher (MPART's
 *   `vouchers`) is always a peer that really probes the node.
 * - **Reports.** A heartbeat's `ConnectivityDelta` goes through `applyDelta`; the answer carries
 *   the sequence the master now holds (`connectivity_seq`) or asks for the whole set
 *   (`connectivity_resync`). Peers that are not probing members here (lost, unknown) are left
 *   out of what is applied. An agent that sends no report (probing off) has its reports forgotten.
 *
 * ```ts
 * refreshProbeTargets(st);                        // at the tick
 * const a = probeHeartbeat(st, hb);               // { connectivitySeq, connectivityResync, probeTargets? }
 * ```
 */
import { hostOf } from '@fuxi/common';
import { applyDelta, brokenLinks, confirmReports, dropNode, forgetReports } from './connectivity.js';
import { isRegistered, PROBE_DETECTION_MS, type MasterState, type NodeState } from './master-state.js';
import { computeProbeTargets, DEFAULT_PROBE_TARGETS, type ProbeApp, type ProbeMember, type ProbePeerView, type ProbeTargetsConfig } from './probe-targets.js';
import type { ConnectivityView, HeartbeatInput } from './types.js';

/** Where `node`'s probe responder is ('' when it does not probe). */
export function probeAddress(node: NodeState): string {
  const port = node.info.probePort ?? 0;
  if (port <= 0) return '';
  const host = hostOf(node.info.address);
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

/** Whether `node` probes and is probed: registered, not lost, with a responder. */
export function isProbeMember(node: NodeState): boolean {
  return isRegistered(node) && node.status !== 'lost' && (node.info.probePort ?? 0) > 0;
}

export function probeMembers(st: MasterState): ProbeMember[] {
  const out: ProbeMember[] = [];
  for (const n of st.nodes.values()) if (isProbeMember(n)) out.push({ nodeId: n.info.nodeId, address: probeAddress(n) });
  return out;
}

/** The apps holding slots, by app id: their hosts and AM host. */
export function probeApps(st: MasterState): ProbeApp[] {
  const out: ProbeApp[] = [];
  for (const appId of [...st.apps.keys()].sort()) {
    const app = st.apps.get(appId)!;
    const hosts = new Set<string>();
    for (const su of app.sus.values()) for (const [nodeId, slots] of su.asgn) if (slots > 0) hosts.add(nodeId);
    if (hosts.size === 0) continue;
    out.push({ hosts: [...hosts], ...(app.job.amNodeId ? { amHost: app.job.amNodeId } : {}) });
  }
  return out;
}

export function probeTargetsConfig(st: MasterState): ProbeTargetsConfig {
  return {
    allUpTo: st.cfg.probeAllUpTo ?? DEFAULT_PROBE_TARGETS.allUpTo,
    sample: st.cfg.probeSample ?? DEFAULT_PROBE_TARGETS.sample,
    maxTargets: st.cfg.probeMaxTargets ?? DEFAULT_PROBE_TARGETS.maxTargets,
  };
}

/** Membership changed (a registration, a node lost or back): targets are recomputed at the next refresh. */
export function membersChanged(st: MasterState): void {
  st.probeTargets.membersDirty = true;
}

/** A node joined or left an app's hosts. */
export function appHostsChanged(st: MasterState): void {
  st.probeTargets.appsDirty = true;
}

/** A node was lost: it leaves the graph (its reports, reports about it, probe targets) and the members. */
export function nodeLost(st: MasterState, nodeId: string): void {
  if (dropNode(st.connectivity, nodeId)) st.log.info({ nodeId, version: st.connectivity.version }, 'lost node left the connectivity graph');
  membersChanged(st);
}

/**
 * App hosts change all the time on a busy cluster; above `probeAllUpTo` they make the targets be
 * recomputed at most this often (a computation at 5,000 nodes takes tens of milliseconds).
 */
export const APP_HOSTS_REFRESH_MS = 5000;

/**
 * Recomputes the probe targets when something they depend on changed (membership at once, app
 * hosts at most every APP_HOSTS_REFRESH_MS); a node whose list changed gets a new version. Returns
 * whether any list changed.
 */
export function refreshProbeTargets(st: MasterState): boolean {
  const plan = st.probeTargets;
  const cfg = probeTargetsConfig(st);
  const appsDue = plan.appsDirty && plan.members > cfg.allUpTo && st.now - plan.computedAtMs >= APP_HOSTS_REFRESH_MS;
  if (!plan.membersDirty && !appsDue) return false;
  plan.computedAtMs = st.now;
  plan.membersDirty = false;
  plan.appsDirty = false;
  const members = probeMembers(st);
  plan.members = members.length;
  const where = new Map(members.map((m) => [m.nodeId, m.address]));
  const targets = computeProbeTargets(members, members.length > cfg.allUpTo ? probeApps(st) : [], cfg);
  let changed = false;
  for (const id of [...plan.byNode.keys()]) {
    if (!targets.has(id)) {
      plan.byNode.delete(id);
      changed = true;
    }
  }
  for (const [id, ids] of targets) {
    const peers = ids.map((p) => ({ nodeId: p, address: where.get(p)! }));
    const cur = plan.byNode.get(id);
    if (cur && samePeers(cur.peers, peers)) continue;
    plan.byNode.set(id, { version: ++plan.counter, peers });
    changed = true;
  }
  if (changed) st.log.debug({ members: members.length, mode: members.length > cfg.allUpTo ? 'sample' : 'all' }, 'probe targets recomputed');
  return changed;
}

function samePeers(a: readonly ProbePeerView[], b: readonly ProbePeerView[]): boolean {
  return a.length === b.length && a.every((p, i) => p.nodeId === b[i]!.nodeId && p.address === b[i]!.address);
}

/** What a heartbeat answer carries for peer probing. */
export interface ProbeAnswer {
  /** The connectivity sequence the master holds for the agent (0: none). */
  connectivitySeq: number;
  /** The master lacks the base of the agent's changes: send the whole set. */
  connectivityResync: boolean;
  /** The agent's targets, when the version it holds is not the current one. */
  probeTargets?: { version: number; peers: ProbePeerView[] };
}

/**
 * A reported node's heartbeat: applies its probe report, confirms or sends its targets. An agent
 * that does not probe (no report) gets nothing.
 */
export function probeHeartbeat(st: MasterState, hb: HeartbeatInput): ProbeAnswer | undefined {
  const cs = st.connectivity;
  const nodeId = hb.nodeId;
  const plan = st.probeTargets.byNode.get(nodeId);
  const held = hb.probeTargetsVersion ?? 0;
  if (!hb.connectivity) {
    if (forgetReports(cs, nodeId)) st.log.info({ nodeId, version: cs.version }, 'agent stopped probing: its reports are forgotten');
    return undefined;
  }
  // The agent probes exactly these now: they are whom its reports speak for.
  if (plan && held === plan.version) {
    const cur = cs.probes.get(nodeId);
    if (!cur || cur.size !== plan.peers.length || plan.peers.some((p) => !cur.has(p.nodeId))) cs.probes.set(nodeId, new Set(plan.peers.map((p) => p.nodeId)));
  } else if (!plan) cs.probes.delete(nodeId);
  const known = (id: string) => {
    const n = st.nodes.get(id);
    return n !== undefined && isProbeMember(n);
  };
  const d = hb.connectivity;
  const r = applyDelta(cs, nodeId, { seq: d.seq, baseSeq: d.baseSeq, unreachable: d.unreachable.filter(known), reachable: d.reachable }, st.now);
  if (r.changed) st.log.info({ nodeId, unreachable: [...(cs.rows.get(nodeId)?.unreachable.keys() ?? [])].sort(), version: cs.version }, 'connectivity changed');
  const answer: ProbeAnswer = { connectivitySeq: r.ackSeq, connectivityResync: r.resync };
  if (plan && held !== plan.version) answer.probeTargets = { version: plan.version, peers: plan.peers };
  return answer;
}

/**
 * Every node's unreachable peers (ListNodes): `unreachablePeers` of each, computed in one pass over
 * the reports (a node with none is absent).
 */
export function unreachablePeersByNode(st: MasterState): Map<string, string[]> {
  const sets = new Map<string, Set<string>>();
  const add = (a: string, b: string) => {
    const s = sets.get(a);
    if (s) s.add(b);
    else sets.set(a, new Set([b]));
  };
  for (const l of brokenLinks(st.connectivity)) {
    add(l.a, l.b);
    add(l.b, l.a);
  }
  return new Map([...sets].map(([id, s]) => [id, [...s].sort()]));
}

/**
 * Confirms the reports whose accused peer the master has heard (or, partitioned from the master,
 * peers vouch for) a detection delay after the report (`probeDetectionMs` plus a heartbeat
 * interval: long enough for the reporter to say it reaches the peer again, had the peer only been
 * down). Returns whether a link became broken.
 */
export function confirmBrokenLinks(st: MasterState): boolean {
  const cs = st.connectivity;
  if (cs.rows.size === 0) return false;
  const delayMs = (st.cfg.probeDetectionMs ?? PROBE_DETECTION_MS) + st.cfg.heartbeatIntervalMs;
  const changed = confirmReports(cs, delayMs, (nodeId, t) => {
    const n = st.nodes.get(nodeId);
    if (!n) return false;
    if (cs.partitioned.has(nodeId)) return st.now >= t;
    return n.status === 'healthy' && n.lastHeartbeatMs >= t;
  });
  if (changed) st.log.info({ version: cs.version, brokenLinks: brokenLinks(cs).map((l) => `${l.a}-${l.b}`) }, 'broken links confirmed');
  return changed;
}

/** The graph as `fuxi cluster status` shows it. */
export function connectivityView(st: MasterState): ConnectivityView {
  const cs = st.connectivity;
  return { version: cs.version, brokenLinks: brokenLinks(cs), partitioned: [...cs.partitioned].sort() };
}
