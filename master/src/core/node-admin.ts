/**
 * A node's administrative state: an operator's cordon or drain (`fuxi node cordon|uncordon|drain`,
 * in the manner of `kubectl cordon/drain` and Nomad's node drain). It is hard state: every change is
 * a store write (`nodeadmin/<id>`), answered once durable, and a new leader loads it with the jobs
 * and the roster.
 *
 * - **Cordoned**: the scheduler gives the node nothing new (scheduling.ts `schedView`); its grants,
 *   workers and AMs stay. An AM restarted while its node is cordoned goes elsewhere (am-restart.ts).
 * - **Draining**: cordoned, and emptied. AMs hear of it with the connectivity graph (its
 *   `draining` list): they plan nothing new there and give back free slots there, so batch work
 *   finishes there and its slots come back; at the deadline the master revokes every task slot still held there, as it
 *   does for a lost node's, so the agent stops those workers and their AMs run the instances again
 *   elsewhere (a lost slot, not a failed attempt). AMs hosted on the node move last: once no task
 *   slot is left there (or at the deadline), each gets a new attempt on another node through the
 *   AM-restart path. When the node holds no grant at all it is cordoned, marked drained.
 * - **Uncordon**: the record is deleted; the node is schedulable again and a drain ends.
 */
import { AM_SU, InvalidArgumentError, NotFoundError } from '@fuxi/common';
import { restartAm } from './am-restart.js';
import { holdsTaskSlotsOn, setAsgn } from './ledger.js';
import type { MasterState } from './master-state.js';
import type { NodeAdmin } from './types.js';
import { scheduleOrDefer } from './scheduling.js';
import { KEYS, type StoreOp } from './store-ops.js';
import { pushAssignments, pushGrants } from './sync.js';

/** A drain with no deadline given gets this long (Nomad's default). */
export const DEFAULT_DRAIN_DEADLINE_MS = 60 * 60 * 1000;
/** The longest deadline a drain may have (30 days). */
export const MAX_DRAIN_DEADLINE_MS = 30 * 24 * 60 * 60 * 1000;
/** Longest reason and user name kept (the record must stay small). */
const MAX_TEXT = 1024;

function putAdmin(st: MasterState, a: NodeAdmin): void {
  if ((st.admin.get(a.nodeId)?.state === 'draining') !== (a.state === 'draining')) drainingChanged(st);
  st.admin.set(a.nodeId, a);
  const op: StoreOp = { type: 'put', key: KEYS.nodeAdmin(a.nodeId), value: JSON.stringify(a) };
  st.out.push({ kind: 'store', ops: [op] });
}

/**
 * The set of draining nodes changed: the connectivity version moves, so every AM gets the new set
 * with its next UpdateRequests answer (placement-scope.ts `connectivityFor`).
 */
function drainingChanged(st: MasterState): void {
  st.connectivity.version++;
}

function requireNode(st: MasterState, nodeId: string): void {
  if (!nodeId) throw new InvalidArgumentError('nodeId', 'is required');
  if (!st.nodes.has(nodeId)) throw new NotFoundError('node', nodeId);
}

function text(field: string, s: string): string {
  if (s.length > MAX_TEXT) throw new InvalidArgumentError(field, `is ${s.length} characters long; at most ${MAX_TEXT}`);
  return s;
}

export interface AdminRequest {
  nodeId: string;
  reason: string;
  by: string;
}

/** Cordons the node: nothing new goes there. A drain under way ends; its node stays cordoned. */
export function cordonNode(st: MasterState, req: AdminRequest): NodeAdmin {
  requireNode(st, req.nodeId);
  const a: NodeAdmin = {
    nodeId: req.nodeId,
    state: 'cordoned',
    reason: text('reason', req.reason),
    by: text('requestedBy', req.by),
    sinceMs: st.now,
    deadlineMs: 0,
  };
  putAdmin(st, a);
  st.log.info({ nodeId: a.nodeId, reason: a.reason, by: a.by }, 'node cordoned');
  return a;
}

/** Makes the node schedulable again; a drain under way ends (nothing it revoked comes back). */
export function uncordonNode(st: MasterState, req: Omit<AdminRequest, 'reason'>): void {
  requireNode(st, req.nodeId);
  text('requestedBy', req.by);
  const was = st.admin.get(req.nodeId);
  if (!was) return;
  if (was.state === 'draining') drainingChanged(st);
  st.admin.delete(req.nodeId);
  st.out.push({ kind: 'store', ops: [{ type: 'del', key: KEYS.nodeAdmin(req.nodeId) }] });
  st.log.info({ nodeId: req.nodeId, by: req.by }, 'node uncordoned');
  scheduleOrDefer(st);
}

/**
 * Drains the node: nothing new goes there, its work finishes or, `deadlineMs` from now, has its
 * slots revoked; its AMs move last. A drain of a node already draining sets the new deadline.
 */
export function drainNode(st: MasterState, req: AdminRequest & { deadlineMs: number }): NodeAdmin {
  requireNode(st, req.nodeId);
  const d = req.deadlineMs === 0 ? DEFAULT_DRAIN_DEADLINE_MS : req.deadlineMs;
  if (!Number.isSafeInteger(d) || d < 0 || d > MAX_DRAIN_DEADLINE_MS)
    throw new InvalidArgumentError(
      'deadlineMs',
      `must be between 1 and ${MAX_DRAIN_DEADLINE_MS} ms (0: ${DEFAULT_DRAIN_DEADLINE_MS} ms), got ${req.deadlineMs}`,
    );
  const a: NodeAdmin = {
    nodeId: req.nodeId,
    state: 'draining',
    reason: text('reason', req.reason),
    by: text('requestedBy', req.by),
    sinceMs: st.now,
    deadlineMs: st.now + d,
  };
  putAdmin(st, a);
  st.log.info({ nodeId: a.nodeId, reason: a.reason, by: a.by, deadlineMs: a.deadlineMs }, 'node draining');
  progressDrain(st, a);
  return st.admin.get(a.nodeId) ?? a;
}

/** Moves every drain on; returns whether slots were freed (a scheduling pass may place the work elsewhere). */
export function tickDrains(st: MasterState): boolean {
  if (st.recovering) return false;
  // Grant tables of nodes whose slots the last step revoked: their AMs have been told first.
  if (st.drainGrantsOwed.size > 0) {
    pushGrants(st, st.drainGrantsOwed);
    st.drainGrantsOwed.clear();
  }
  let changed = false;
  for (const a of [...st.admin.values()]) if (a.state === 'draining') changed = progressDrain(st, a) || changed;
  return changed;
}

/**
 * One step of a drain: at the deadline, revoke the task slots still on the node; once none is left
 * (at a later step than a revocation), move the AMs there; once the node holds nothing, it is
 * drained (cordoned).
 */
function progressDrain(st: MasterState, a: NodeAdmin): boolean {
  const nodeId = a.nodeId;
  const node = st.nodes.get(nodeId);
  if (!node || st.recovering) return false;
  // Revoked now, the AMs move at the next step: each first hears which of its slots were taken
  // (a lost slot, not a failed attempt) and asks for new ones elsewhere.
  if (st.now >= a.deadlineMs && revokeTaskSlots(st, nodeId, `node ${nodeId} drained: deadline passed`)) return true;
  let changed = false;
  const taskSlotsLeft = [...st.apps.values()].some((app) => holdsTaskSlotsOn(app, nodeId, AM_SU));
  if (!taskSlotsLeft) {
    for (const app of [...st.apps.values()]) {
      if (app.job.amNodeId !== nodeId || app.pendingAmRestart) continue;
      st.log.info({ appId: app.appId, nodeId }, 'node draining: the application master moves to another node');
      restartAm(st, app, `application master moved off node ${nodeId} (drained)`);
      changed = true;
    }
  }
  if (node.grants.size === 0 && !amsLeftOn(st, nodeId)) {
    putAdmin(st, { ...a, state: 'cordoned', deadlineMs: 0, sinceMs: st.now, drained: true });
    st.log.info({ nodeId, reason: a.reason, by: a.by }, 'node drained');
  }
  return changed;
}

/** AMs still placed on the node (a restart waiting for agents after a failover keeps its place). */
function amsLeftOn(st: MasterState, nodeId: string): boolean {
  for (const app of st.apps.values()) if (app.job.amNodeId === nodeId) return true;
  return false;
}

/**
 * Takes back every task slot on the node (as for a lost node): the AMs are told now, the agent at
 * the next step (`tickDrains`); the workers are stopped and their AMs run them again elsewhere.
 */
function revokeTaskSlots(st: MasterState, nodeId: string, why: string): boolean {
  let revoked = false;
  for (const app of st.apps.values()) {
    let touched = false;
    for (const su of app.sus.values()) {
      if (su.suId === AM_SU || (su.asgn.get(nodeId) ?? 0) === 0) continue;
      st.log.warn({ appId: app.appId, suId: su.suId, nodeId, slots: su.asgn.get(nodeId), reason: why }, 'slots revoked');
      setAsgn(st, app, su, nodeId, 0);
      touched = true;
    }
    if (touched) {
      pushAssignments(st, app, [{ nodeId }]);
      revoked = true;
    }
  }
  // The agent's table goes at the next step: each AM hears first that its slots there are gone and
  // stops those workers itself, so their end is a lost slot to it, not a failed attempt.
  if (revoked) st.drainGrantsOwed.add(nodeId);
  return revoked;
}

/** Loads the records read from the store (a new leader). */
export function loadAdmin(st: MasterState, records: readonly NodeAdmin[]): void {
  st.admin.clear();
  for (const r of records) st.admin.set(r.nodeId, r);
}
