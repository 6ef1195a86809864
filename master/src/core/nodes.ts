/**
 * Agents: registration (new, restarted, rebooted, moved), heartbeats, the node status (one value,
 * set in `setNodeStatus`, which also posts and resolves the node's fault events), timing out,
 * partitions from the master, loss, and the release of a lost node's slots.
 */
import { AM_SU, fits, InvalidArgumentError, StaleEpochError, sub, ZERO } from '@fuxi/common';
import { checkAmLaunches, onAmWorker, repostAmFault } from './am-restart.js';
import type { BlacklistEntry } from './blacklist.js';
import { createDetector } from './detectors.js';
import { holdsTaskSlotsOn, setAsgn } from './ledger.js';
import { nodeRestarted, probersOf, setPartitioned, vouchers } from './connectivity.js';
import type { FaultKind } from './fault-fsm.js';
import { isLive, isRegistered, PROBE_DETECTION_MS, type MasterState, type NodeState, type NodeStatus } from './master-state.js';
import { hostFlapped, runningWorkers, workerEnds } from './prediction-hooks.js';
import { membersChanged, nodeLost, unreachablePeersByNode } from './probing.js';
import { runScheduler } from './scheduling.js';
import { putAgent } from './store-ops.js';
import { testbedOfNode } from './testbed-admin.js';
import { pushAssignments } from './sync.js';
import type { GrantEntry, HeartbeatInput, NodeInfo, NodeView } from './types.js';

/** The fault a node in this status has open. */
function faultOf(status: NodeStatus): FaultKind | undefined {
  if (status === 'timing-out' || status === 'missing') return 'AGENT_TIMING';
  return status === 'partitioned' ? 'AGENT_PARTITIONED' : undefined;
}

/**
 * Sets a node's status. Entering `timing-out` or `missing` posts AGENT_TIMING (its handler reserves
 * the node's slots and tells its AMs: fault-handlers.ts), entering `partitioned` posts
 * AGENT_PARTITIONED (slots kept, AMs not told) and marks the node in `connectivity.partitioned`;
 * leaving them resolves the fault (the new one is posted first: the FSM does not pass through S0).
 */
export function setNodeStatus(st: MasterState, node: NodeState, to: NodeStatus, why: string): void {
  const from = node.status;
  if (from === to) return;
  node.status = to;
  // Its AMs hear that it is back (request-limits.ts): those of a partitioned node never heard it left.
  if ((to === 'healthy' && from !== 'partitioned') || (to === 'partitioned' && from === 'timing-out')) node.backAtMs = st.now;
  const nodeId = node.info.nodeId;
  // A lost agent's history says nothing of how it beats when it is back: its detector starts over.
  // So for one back from a partition: the gap was the network's, not its beat.
  if (to === 'lost' || from === 'partitioned') st.detectors.delete(nodeId);
  // A lost node leaves the connectivity graph and the probe targets; one back rejoins them.
  if (to === 'lost') {
    nodeLost(st, nodeId);
    st.attempts.nodeGone(nodeId);
  } else if (from === 'lost') membersChanged(st);
  setPartitioned(st.connectivity, nodeId, to === 'partitioned');
  if ((to === 'timing-out' || to === 'lost') && from === 'healthy') hostFlapped(st, nodeId);
  const [was, is] = [faultOf(from), faultOf(to)];
  if (is && is !== was) st.faults.post(is, nodeId, st.now, why);
  if (was && was !== is) st.faults.resolve(was, nodeId, st.now, why);
}

/** AgentsTimedOut to every AM holding slots on the node (timing out, or back). */
export function noticeAgents(st: MasterState, nodeId: string, timingOut: boolean): void {
  for (const app of st.apps.values()) {
    if (!app.reported || app.amState !== 'running' || !app.job.amAddress || !holdsTaskSlotsOn(app, nodeId, AM_SU)) continue;
    st.out.push({
      kind: 'agentsTimedOut',
      appId: app.appId,
      address: app.job.amAddress,
      epoch: st.epoch,
      nodeIds: timingOut ? [nodeId] : [],
      recoveredNodeIds: timingOut ? [] : [nodeId],
    });
  }
}

/** Releases everything allocated on a lost node and tells the affected AMs; AMs that ran there restart. */
export function releaseNode(st: MasterState, node: NodeState): void {
  const nodeId = node.info.nodeId;
  for (const app of [...st.apps.values()]) {
    let touched = false;
    for (const su of app.sus.values()) {
      if ((su.asgn.get(nodeId) ?? 0) > 0) {
        setAsgn(st, app, su, nodeId, 0);
        touched = true;
      }
    }
    if (touched) pushAssignments(st, app, [{ nodeId }]);
    // The AM went with its node: an AM failure like a crash (S2) until the new attempt registers.
    if (app.job.amNodeId === nodeId && app.amState !== 'waiting') repostAmFault(st, 'AM_CRASH', app, `application master's node ${nodeId} was lost`);
  }
  node.grants.clear();
  node.allocated = ZERO;
  // The agent must drop these grants when it comes back: its next heartbeat gets the full table.
  node.grantSeq += 1;
}

export function registerAgent(st: MasterState, info: NodeInfo, epochSeen: string): { heartbeatIntervalMs: number; reportState: boolean } {
  if (BigInt(epochSeen || '0') > BigInt(st.epoch)) throw new StaleEpochError('epoch', st.epoch, epochSeen);
  if (info.capacity.cpuMilli <= 0 || info.capacity.memoryMb <= 0) {
    throw new InvalidArgumentError(
      'node.capacity',
      `must be positive in every dimension, got cpuMilli=${info.capacity.cpuMilli} memoryMb=${info.capacity.memoryMb}`,
    );
  }
  const known = st.nodes.get(info.nodeId);
  if (known) reRegister(st, known, info);
  else {
    // A node new to this master holds nothing it made; during a failover it may hold grants of
    // the previous master (a roster write lost), so it is asked for its state like the others.
    const reported = !st.recovering;
    st.nodes.set(info.nodeId, {
      info,
      status: reported ? 'healthy' : 'unreported',
      lastHeartbeatMs: -1,
      allocated: ZERO,
      grantSeq: 0,
      grants: new Map(),
      runningWorkers: 0,
      reported,
    });
    heard(st, st.nodes.get(info.nodeId)!);
    st.out.push(putAgent(info));
    st.log.info({ nodeId: info.nodeId, address: info.address, rack: info.rack, capacity: info.capacity }, 'agent registered');
  }
  runScheduler(st);
  return { heartbeatIntervalMs: st.cfg.heartbeatIntervalMs, reportState: !st.nodes.get(info.nodeId)!.reported };
}

/** A known node registers again: moved, restarted (an AGENT_CRASH), or its host rebooted. */
function reRegister(st: MasterState, known: NodeState, info: NodeInfo): void {
  if (!fits(known.allocated, info.capacity)) {
    st.log.warn({ nodeId: info.nodeId, capacity: info.capacity, allocated: known.allocated }, 'agent re-registered with less capacity than is allocated on it');
  }
  const moved = known.info.address !== info.address;
  const rebooted = known.reported && known.info.bootId !== '' && info.bootId !== '' && known.info.bootId !== info.bootId;
  const wasTimingOut = known.status === 'timing-out';
  known.info = info;
  heard(st, known);
  if (known.reported) {
    if (known.status !== 'healthy') st.log.info({ nodeId: info.nodeId }, 'agent is back');
    setNodeStatus(st, known, 'healthy', 're-registered');
    // Its AMs were told it was timing out: tell them it is back, as a heartbeat would.
    if (wasTimingOut) noticeAgents(st, info.nodeId, false);
  }
  if (moved) {
    st.out.push(putAgent(info));
    // AMs address the agent by what their assignments say: tell them where it is now.
    for (const app of st.apps.values()) if (holdsTaskSlotsOn(app, info.nodeId, AM_SU)) pushAssignments(st, app, [{ nodeId: info.nodeId }]);
  }
  if (rebooted) {
    // The host rebooted: every worker it ran is gone. Release its slots so the AMs re-run them.
    st.log.warn({ nodeId: info.nodeId }, 'agent host rebooted: its workers are gone');
    st.faults.post('AGENT_CRASH', info.nodeId, st.now, 'host rebooted');
    releaseNode(st, known);
    st.faults.resolve('AGENT_CRASH', info.nodeId, st.now, 'slots released');
  }
  if (known.reported) {
    // The agent restarted (crash and recovery): the AGENT_CRASH handler sends it this master's
    // grants, the authoritative copy (Table 3, row 2).
    st.faults.post('AGENT_CRASH', info.nodeId, st.now, 're-registered');
    st.faults.resolve('AGENT_CRASH', info.nodeId, st.now, 'grants re-sent by the master');
  }
  // A roster agent registering with a new leader is logged as its state is adopted (recovery.ts).
  st.log[known.reported ? 'info' : 'debug']({ nodeId: info.nodeId, address: info.address }, 'agent re-registered');
}

export interface HeartbeatResult {
  reregister: boolean;
  reportState?: boolean;
  full?: { seq: number; grants: GrantEntry[] };
}

export function heartbeat(st: MasterState, hb: HeartbeatInput): HeartbeatResult {
  const node = st.nodes.get(hb.nodeId);
  // A roster placeholder has not registered with this master yet (no capacity known).
  if (!node || !isRegistered(node)) return { reregister: true };
  if (!node.reported) {
    heard(st, node);
    return { reregister: false, reportState: true };
  }
  if (hb.epoch && hb.epoch !== '0' && BigInt(hb.epoch) > BigInt(st.epoch)) throw new StaleEpochError('epoch', st.epoch, hb.epoch);
  heard(st, node);
  node.runningWorkers = hb.running;
  if (node.status === 'timing-out' || node.status === 'partitioned') {
    const partitioned = node.status === 'partitioned';
    setNodeStatus(st, node, 'healthy', partitioned ? 'heard again: the partition from the master healed' : 'back before it was lost');
    st.log.info(
      { nodeId: hb.nodeId },
      partitioned ? 'agent heard again after a partition from the master: nothing lost' : 'agent back from timing out: nothing lost',
    );
    // Table 3 row 3: the master's grants (FMFullCap) are the agent's after it reconnects (the
    // answer below carries the full table: pushes made meanwhile moved its grant seq).
    st.used({
      row: 3,
      source: 'FMFullCap',
      timing: 'after-reconnect',
      subject: hb.nodeId,
      action: 'the master kept its grants; the agent reconciles with them',
    });
    // The AMs of a partitioned node were never told it timed out.
    if (!partitioned) noticeAgents(st, hb.nodeId, false);
    runScheduler(st);
  }
  if (node.status === 'lost') {
    setNodeStatus(st, node, 'healthy', 'heartbeat');
    st.log.info({ nodeId: hb.nodeId }, 'agent is back');
    runScheduler(st);
  }
  for (const am of hb.amWorkers) onAmWorker(st, hb.nodeId, am);
  if (hb.workerEnds) workerEnds(st, hb.nodeId, hb.workerEnds);
  if (hb.runningWorkers) runningWorkers(st, hb.nodeId, hb.runningWorkers);
  checkAmLaunches(st, hb.nodeId, hb.amWorkers);
  if (hb.grantSeq !== node.grantSeq) return { reregister: false, full: { seq: node.grantSeq, grants: [...node.grants.values()] } };
  return { reregister: false };
}

/**
 * The agent was heard from (registration, heartbeat, report): its failure detector learns the
 * arrival. Heard after a gap (a restart, a pause, a cut from the master), reports of peers that
 * could not reach it meanwhile wait for confirmation anew (connectivity.ts `nodeRestarted`).
 */
export function heard(st: MasterState, node: NodeState): void {
  if (st.now - node.lastHeartbeatMs > 2 * st.cfg.heartbeatIntervalMs && nodeRestarted(st.connectivity, node.info.nodeId, st.now)) {
    st.log.info(
      { nodeId: node.info.nodeId, version: st.connectivity.version },
      'agent heard again after a gap: reports of peers that could not reach it wait for confirmation',
    );
  }
  node.lastHeartbeatMs = st.now;
  let d = st.detectors.get(node.info.nodeId);
  if (!d) {
    d = createDetector(st.cfg.failureDetector ?? { kind: 'fixed', timeoutMs: st.cfg.agentTimingOutMs });
    st.detectors.set(node.info.nodeId, d);
  }
  d.heartbeat(st.now);
}

/** The agent's detector suspects it now (the fixed rule: silent past agentTimingOutMs). */
function suspected(st: MasterState, node: NodeState): boolean {
  const d = st.detectors.get(node.info.nodeId);
  return d ? d.suspicion(st.now) >= 1 : st.now - node.lastHeartbeatMs > st.cfg.agentTimingOutMs;
}

/**
 * The peers that vouch for a node the master cannot hear (connectivity.ts `vouchers`): among those
 * that probe it, the healthy ones whose last heartbeat still reports it reachable and was sent late
 * enough to count. A peer notices a dead node `probeDetectionMs` after it stops answering; a
 * heartbeat sent that long after the node's next heartbeat was due, still without it unreachable,
 * says the node was alive when it should have been heard: the master's link to it is cut.
 *
 * `pending`: no peer vouches yet, but some still report it reachable by heartbeats sent too early
 * to count; their next ones settle it (the wait ends two heartbeat intervals after they count).
 */
export function vouchersFor(st: MasterState, node: NodeState): { by: string[]; pending: boolean } {
  // Without connectivity awareness (the comparison baseline) the graph is ignored: no node is
  // partitioned, a silent one times out and is lost.
  if (st.cfg.connectivityAware === false) return { by: [], pending: false };
  const cs = st.connectivity;
  const nodeId = node.info.nodeId;
  const after = node.lastHeartbeatMs + st.cfg.heartbeatIntervalMs + (st.cfg.probeDetectionMs ?? PROBE_DETECTION_MS);
  const reaching = vouchers(cs, nodeId, probersOf(cs, nodeId), (p) => {
    const peer = st.nodes.get(p);
    return peer !== undefined && peer.reported && peer.status === 'healthy';
  });
  const by = reaching.filter((p) => st.nodes.get(p)!.lastHeartbeatMs >= after);
  return { by, pending: by.length === 0 && reaching.length > 0 && st.now < after + 2 * st.cfg.heartbeatIntervalMs };
}

/** The node's last sign of life: its last heartbeat, or the last tick at which peers vouched for it. */
function lastSignMs(node: NodeState): number {
  return Math.max(node.lastHeartbeatMs, node.vouchedAtMs ?? -Infinity);
}

/**
 * Periodic: what the master makes of the agents it does not hear.
 *
 * - One its failure detector suspects (by default: silent past agentTimingOutMs) is, at that
 *   moment, either `partitioned` (peers vouch for it, `vouchersFor`: workers and slots kept, not
 *   schedulable, its AMs not told) or `timing-out` (no voucher: slots reserved, its AMs told).
 *   While peers still reach it but their heartbeats are too early to vouch, the choice waits for
 *   their next ones (a detector quicker than the peers' probes would otherwise report a node it
 *   cannot hear timing out, then partitioned).
 * - The choice is made again at every tick: a timing-out node that gains vouchers becomes
 *   partitioned (its AMs are told it recovered); a partitioned one whose vouchers are gone (it is
 *   cut from everyone, or dead) becomes timing-out, as any silent node.
 * - A node is lost (its slots released) agentTimeoutMs after its last sign of life (its last
 *   heartbeat, or the last tick at which peers vouched for it), never while vouched for.
 */
export function tickNodes(st: MasterState): boolean {
  // The silent nodes, and which of them peers vouch for now.
  const silent: Array<{ node: NodeState; by: string[] }> = [];
  for (const node of st.nodes.values()) {
    if (!node.reported) continue;
    const s = node.status;
    if (s !== 'partitioned' && s !== 'timing-out' && !(s === 'healthy' && suspected(st, node))) continue;
    const { by, pending } = vouchersFor(st, node);
    // Suspected, but its peers' word is not in yet: it is reported neither way until it is.
    if (s === 'healthy' && pending) continue;
    if (by.length > 0) node.vouchedAtMs = st.now;
    silent.push({ node, by });
  }
  // Mark every silent agent lost before releasing any: work freed by one lost agent (a failed
  // AM's slots) must not be placed on another agent that is being lost in this same tick.
  const vouched = new Set(silent.filter((x) => x.by.length > 0).map((x) => x.node));
  const lost = [...st.nodes.values()].filter((n) => isLive(n) && !vouched.has(n) && st.now - lastSignMs(n) > st.cfg.agentTimeoutMs);
  for (const node of lost) {
    setNodeStatus(st, node, 'lost', 'lost: its slots were released');
    st.log.warn({ nodeId: node.info.nodeId, silentMs: st.now - node.lastHeartbeatMs }, 'agent lost: no heartbeat');
  }
  let changed = lost.length > 0;
  for (const { node, by } of silent) {
    if (node.status === 'lost') continue;
    changed = settleSilent(st, node, by) || changed;
  }
  for (const node of lost) releaseNode(st, node);
  return changed;
}

/** A silent node becomes partitioned (vouched for) or timing out (not); returns whether it changed. */
function settleSilent(st: MasterState, node: NodeState, by: string[]): boolean {
  const nodeId = node.info.nodeId;
  const silentMs = st.now - node.lastHeartbeatMs;
  const from = node.status;
  if (by.length > 0) {
    if (from === 'partitioned') return false;
    st.log.warn({ nodeId, silentMs, vouchers: by }, 'agent partitioned from the master: peers still reach it; its workers and slots are kept');
    setNodeStatus(st, node, 'partitioned', `silent for ${silentMs} ms, but reached by ${by.join(', ')}`);
    // Told it was timing out (no voucher then): its workers are not to be re-run after all.
    if (from === 'timing-out') noticeAgents(st, nodeId, false);
    restartLaunchingAms(st, nodeId);
    return true;
  }
  if (from === 'timing-out') return false;
  if (from === 'partitioned') {
    st.log.warn({ nodeId, silentMs }, 'partitioned agent no longer reached by any peer: timing out');
    setNodeStatus(st, node, 'timing-out', `silent for ${silentMs} ms and no peer reaches it any more`);
  } else {
    st.log.warn({ nodeId, silentMs }, 'agent timing out: slots reserved');
    setNodeStatus(st, node, 'timing-out', `silent for ${silentMs} ms`);
  }
  return true;
}

/**
 * An AM launched on a node partitioned from the master cannot register with it (M-D before the app
 * runs): its attempt is replaced now, on another node. A registered AM there is replaced once it
 * has been silent for three AM heartbeat intervals (apps.ts `tickAms`).
 */
function restartLaunchingAms(st: MasterState, nodeId: string): void {
  for (const app of [...st.apps.values()]) {
    if (app.amState !== 'launching' || app.job.amNodeId !== nodeId || app.pendingAmRestart || !app.reported) continue;
    repostAmFault(st, 'AM_CRASH', app, `its node ${nodeId} is partitioned from the master: attempt ${app.job.amAttempt} cannot register`);
  }
}

const NODE_STATE_NAMES: Record<NodeStatus, string> = {
  healthy: 'ready',
  'timing-out': 'timing out',
  partitioned: 'partitioned',
  lost: 'lost',
  unreported: 'unreported',
  missing: 'missing',
};

export function listNodes(st: MasterState): NodeView[] {
  const unreachable = unreachablePeersByNode(st);
  const listed = new Map(st.prediction.entries(st.now, st.nodes.size).map((e) => [e.nodeId, e]));
  return [...st.nodes.values()]
    .sort((a, b) => (a.info.nodeId < b.info.nodeId ? -1 : 1))
    .map((n) => ({
      info: n.info,
      healthy: n.status !== 'lost' && isRegistered(n),
      state: NODE_STATE_NAMES[n.status],
      allocated: n.allocated,
      free: sub(n.info.capacity, n.allocated),
      runningWorkers: n.runningWorkers,
      lastHeartbeatMs: n.lastHeartbeatMs,
      unreachablePeers: unreachable.get(n.info.nodeId) ?? [],
      ...adminOf(st, n),
      ...predictionOf(listed.get(n.info.nodeId)),
      ...testbedOf(st, n.info.nodeId),
    }));
}

/** A ready node shows its operator's state (cordoned, draining) as its state; any other keeps its own. */
function adminOf(st: MasterState, n: NodeState): Partial<Pick<NodeView, 'admin' | 'state'>> | undefined {
  const admin = st.admin.get(n.info.nodeId);
  if (!admin) return undefined;
  return n.status === 'healthy' ? { admin, state: admin.state } : { admin };
}

function testbedOf(st: MasterState, nodeId: string): Pick<NodeView, 'testbed'> {
  const testbed = testbedOfNode(st, nodeId);
  return testbed === undefined ? {} : { testbed };
}

function predictionOf(e: BlacklistEntry | undefined): Pick<NodeView, 'prediction'> {
  return e === undefined ? {} : { prediction: { level: e.level, reason: e.reason, jobs: e.jobs } };
}
