/**
 * Agents: registration (new, restarted, rebooted, moved), heartbeats, the node status (one value,
 * set in `setNodeStatus`, which also posts and resolves the node's fault events), timing out and
 * loss, and the release of a lost node's slots.
 */
import { AM_SU, fits, InvalidArgumentError, StaleEpochError, sub, ZERO } from '@fuxi/common';
import { checkAmLaunches, onAmWorker, repostAmFault } from './am-restart.js';
import { createDetector } from './detectors.js';
import { holdsTaskSlotsOn, setAsgn } from './ledger.js';
import { isLive, isRegistered, type MasterState, type NodeState, type NodeStatus } from './master-state.js';
import { membersChanged, nodeLost, unreachablePeersByNode } from './probing.js';
import { runScheduler } from './scheduling.js';
import { putAgent } from './store-ops.js';
import { pushAssignments } from './sync.js';
import type { GrantEntry, HeartbeatInput, NodeInfo, NodeView } from './types.js';

/**
 * Sets a node's status. Entering `timing-out` or `missing` posts AGENT_TIMING (its handler reserves
 * the node's slots and tells its AMs: fault-handlers.ts); leaving them resolves it.
 */
export function setNodeStatus(st: MasterState, node: NodeState, to: NodeStatus, why: string): void {
  const from = node.status;
  if (from === to) return;
  node.status = to;
  if (to === 'healthy') node.backAtMs = st.now;
  const nodeId = node.info.nodeId;
  // A lost agent's history says nothing of how it beats when it is back: its detector starts over.
  if (to === 'lost') st.detectors.delete(nodeId);
  // A lost node leaves the connectivity graph and the probe targets; one back rejoins them.
  if (to === 'lost') nodeLost(st, nodeId);
  else if (from === 'lost') membersChanged(st);
  if (to === 'timing-out' || to === 'missing') st.faults.post('AGENT_TIMING', nodeId, st.now, why);
  else if (from === 'timing-out' || from === 'missing') st.faults.resolve('AGENT_TIMING', nodeId, st.now, why);
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
  st.log.info({ nodeId: info.nodeId, address: info.address }, 'agent re-registered');
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
  if (node.status === 'timing-out') {
    setNodeStatus(st, node, 'healthy', 'back before it was lost');
    st.log.info({ nodeId: hb.nodeId }, 'agent back from timing out: nothing lost');
    // Table 3 row 3: the master's grants (FMFullCap) are the agent's after it reconnects.
    st.used({
      row: 3,
      source: 'FMFullCap',
      timing: 'after-reconnect',
      subject: hb.nodeId,
      action: 'the master kept its grants; the agent reconciles with them',
    });
    noticeAgents(st, hb.nodeId, false);
    runScheduler(st);
  }
  if (node.status === 'lost') {
    setNodeStatus(st, node, 'healthy', 'heartbeat');
    st.log.info({ nodeId: hb.nodeId }, 'agent is back');
    runScheduler(st);
  }
  for (const am of hb.amWorkers) onAmWorker(st, hb.nodeId, am);
  checkAmLaunches(st, hb.nodeId, hb.amWorkers);
  if (hb.grantSeq !== node.grantSeq) return { reregister: false, full: { seq: node.grantSeq, grants: [...node.grants.values()] } };
  return { reregister: false };
}

/** The agent was heard from (registration, heartbeat, report): its failure detector learns the arrival. */
export function heard(st: MasterState, node: NodeState): void {
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
 * Periodic: reported agents silent past agentTimeoutMs are lost (their slots released), those
 * their failure detector suspects (by default: silent past agentTimingOutMs) are timing out
 * (their slots reserved, their AMs told).
 */
export function tickNodes(st: MasterState): boolean {
  // Mark every silent agent lost before releasing any: work freed by one lost agent (a failed
  // AM's slots) must not be placed on another agent that is being lost in this same tick.
  const lost = [...st.nodes.values()].filter((n) => isLive(n) && st.now - n.lastHeartbeatMs > st.cfg.agentTimeoutMs);
  for (const node of lost) {
    setNodeStatus(st, node, 'lost', 'lost: its slots were released');
    st.log.warn({ nodeId: node.info.nodeId, silentMs: st.now - node.lastHeartbeatMs }, 'agent lost: no heartbeat');
  }
  let changed = lost.length > 0;
  for (const node of st.nodes.values()) {
    if (!node.reported || node.status !== 'healthy' || !suspected(st, node)) continue;
    st.log.warn({ nodeId: node.info.nodeId, silentMs: st.now - node.lastHeartbeatMs }, 'agent timing out: slots reserved');
    setNodeStatus(st, node, 'timing-out', `silent for ${st.now - node.lastHeartbeatMs} ms`);
    changed = true;
  }
  for (const node of lost) releaseNode(st, node);
  return changed;
}

const NODE_STATE_NAMES: Record<NodeStatus, string> = {
  healthy: 'ready',
  'timing-out': 'timing out',
  lost: 'lost',
  unreported: 'unreported',
  missing: 'missing',
};

export function listNodes(st: MasterState): NodeView[] {
  const unreachable = unreachablePeersByNode(st);
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
    }));
}
