/**
 * Grant and assignment tables on the wire: what the master pushes to agents (their grants, as full
 * tables) and to AMs (their assignments, full or as deltas), numbered by per-receiver sequence
 * numbers that receivers accept by the rule of `acceptTable` (@fuxi/common).
 *
 * An assignment entry also names the node's first grant table that holds its count (`grantSeq`).
 * The two travel on different roads, and an agent may get an AM's plan before a table pushed
 * earlier: a slot returned and placed on the same node again would then start on the table from
 * before the return and be killed as over its grant when the return's table arrives. The AM puts
 * the seq on its plans, and the agent starts none before it has applied that table.
 */
import { AM_SU } from '@fuxi/common';
import { isLive, type AppState, type MasterState, type NodeState, type ScheduleUnitState } from './master-state.js';
import type { AssignmentEntry, GrantEntry } from './types.js';

/** Assignment pushes list every entry up to this many, only the changed ones above (see pushAssignments). */
const FULL_TABLE_MAX = 64;
/** How long an assignment push may take to reach the AM before a call lacking it gets the full table. */
const IN_FLIGHT_GRACE_MS = 1000;
/** Recent pushes remembered per app (their times, for IN_FLIGHT_GRACE_MS). */
const PUSH_LOG = 64;

/** Sends each live node its full grant table (small: one entry per app/SU, idempotent to apply). */
export function pushGrants(st: MasterState, nodeIds: Iterable<string>): void {
  for (const nodeId of nodeIds) {
    const node = st.nodes.get(nodeId);
    if (!node || !isLive(node)) continue;
    const t = nextGrantTable(node);
    st.out.push({ kind: 'grants', nodeId, address: node.info.address, epoch: st.epoch, seq: t.seq, full: true, grants: t.grants });
  }
}

/** The node's full grant table under its next seq: pushed, or handed back in an answer instead. */
export function nextGrantTable(node: NodeState): { seq: number; grants: GrantEntry[] } {
  node.grantSeq += 1;
  return { seq: node.grantSeq, grants: [...node.grants.values()] };
}

/**
 * Tells the AM its counts on `changed` nodes (nodeId '' = all). Up to FULL_TABLE_MAX entries it
 * gets the whole table (small, and it heals any message lost before); above, only the changed
 * entries, as a delta with the next seq: a push costs what changed, not the size of the app. An AM
 * that missed a message ignores deltas until its next UpdateRequests, whose answer then carries
 * the full table.
 */
export function pushAssignments(st: MasterState, app: AppState, changed: Array<{ nodeId: string }>): void {
  if (changed.length === 0) return;
  app.asgnSeq += 1;
  // An app that has not reported since a failover would take a partial table for lost slots.
  if (app.amState !== 'running' || !app.reported) return;
  const log = (app.pushedAt ??= new Map());
  log.set(app.asgnSeq, st.now);
  for (const seq of log.keys()) {
    if (log.size <= PUSH_LOG) break;
    log.delete(seq);
  }
  const full = changed.some((c) => c.nodeId === '') || assignmentCount(app) <= FULL_TABLE_MAX;
  const assignments = full ? assignmentsOf(st, app) : assignmentsOn(st, app, changed);
  app.lastPush = { seq: app.asgnSeq, full };
  st.out.push({ kind: 'assignments', appId: app.appId, address: app.job.amAddress, epoch: st.epoch, seq: app.asgnSeq, full, assignments });
}

/** Whether every push after `held` (up to the current seq) went out within the grace period. */
export function pushesInFlight(app: AppState, held: number, now: number): boolean {
  if (held >= app.asgnSeq || held < 0 || !app.pushedAt) return false;
  for (let seq = held + 1; seq <= app.asgnSeq; seq++) {
    const at = app.pushedAt.get(seq);
    if (at === undefined || now - at > IN_FLIGHT_GRACE_MS) return false;
  }
  return true;
}

function assignmentCount(app: AppState): number {
  let n = 0;
  for (const su of app.sus.values()) if (su.suId !== AM_SU) n += su.asgn.size;
  return n;
}

/** The app's absolute counts on the given nodes (0 where it holds nothing). */
function assignmentsOn(st: MasterState, app: AppState, changed: Array<{ nodeId: string }>): AssignmentEntry[] {
  const nodeIds = new Set(changed.map((c) => c.nodeId));
  const out: AssignmentEntry[] = [];
  for (const su of app.sus.values()) {
    if (su.suId === AM_SU) continue;
    for (const nodeId of nodeIds) out.push(entry(st, su, nodeId, su.asgn.get(nodeId) ?? 0));
  }
  return out;
}

/** The app's whole assignment table (its AM's own slot apart). */
export function assignmentsOf(st: MasterState, app: AppState): AssignmentEntry[] {
  const out: AssignmentEntry[] = [];
  for (const su of app.sus.values()) {
    if (su.suId === AM_SU) continue;
    for (const [nodeId, slots] of su.asgn) out.push(entry(st, su, nodeId, slots));
  }
  return out;
}

/** One count, with the seq of the node's first grant table that holds it (its AM's plans carry it). */
function entry(st: MasterState, su: ScheduleUnitState, nodeId: string, slots: number): AssignmentEntry {
  const grantSeq = slots > 0 ? su.grantedAt?.get(nodeId) : undefined;
  return { suId: su.suId, nodeId, nodeAddress: st.nodes.get(nodeId)?.info.address ?? '', slots, ...(grantSeq ? { grantSeq } : {}) };
}
