/**
 * The ledger: who holds which slots where, and what each schedule unit still asks for. Every change
 * of an assignment goes through `setAsgn`, which keeps the schedule unit's assignment, the node's
 * allocation and grant table, and the quota group's usage in step; `checkInvariants` proves they
 * agree. Request deltas are applied by `applyDelta`.
 */
import { add, AM_SU, fits, scale, ZERO, type Resource } from '@fuxi/common';
import { grantKey, type AppState, type MasterState, type ScheduleUnitState } from './master-state.js';
import { appHostsChanged } from './probing.js';
import { AmQueue } from './sched-am-queue.js';
import type { UnitConfig } from './types.js';

/** Sets the assigned slot count of an SU on a node, keeping node and grant tables in step. */
export function setAsgn(st: MasterState, app: AppState, su: ScheduleUnitState, nodeId: string, slots: number): void {
  const before = su.asgn.get(nodeId) ?? 0;
  if (slots === before) return;
  if (before === 0 || slots === 0) appHostsChanged(st); // the app's hosts (probe targets) changed
  if (slots === 0) su.asgn.delete(nodeId);
  else su.asgn.set(nodeId, slots);
  su.granted += slots - before;
  const group = app.job.spec.quotaGroup;
  st.usage.set(group, add(st.usage.get(group) ?? ZERO, scale(su.resource, slots - before)));
  if (su.suId === AM_SU) st.amUsed = add(st.amUsed, scale(su.resource, slots - before));
  const node = st.nodes.get(nodeId);
  if (!node) return;
  // The next grant table of the node is the first that holds the new count (nextGrantTable).
  if (slots > before) (su.grantedAt ??= new Map()).set(nodeId, node.grantSeq + 1);
  else if (slots === 0) su.grantedAt?.delete(nodeId);
  node.allocated = add(node.allocated, scale(su.resource, slots - before));
  const key = grantKey(app.appId, su.suId);
  if (slots === 0) node.grants.delete(key);
  else
    node.grants.set(key, {
      appId: app.appId,
      suId: su.suId,
      slots,
      resource: su.resource,
      amAttempt: app.job.amAttempt,
      quotaGroup: group,
      ...(app.job.amTokenHash ? { amTokenHash: app.job.amTokenHash } : {}),
    });
}

/**
 * The app may now have outstanding requests: the next scheduling passes look at it
 * (`MasterState.requesting`), and at its AM in its quota group's queue when the AM waits for its
 * slot (`MasterState.amQueues`).
 */
export function markRequesting(st: MasterState, app: AppState): void {
  st.requesting.add(app.appId);
  const am = app.sus.get(AM_SU);
  if (am === undefined || am.requests.size === 0) return;
  const group = app.job.spec.quotaGroup;
  let queue = st.amQueues.get(group);
  if (queue === undefined) st.amQueues.set(group, (queue = new AmQueue()));
  queue.add({ appId: app.appId, quotaGroup: group, priority: am.priority, submitSeq: app.job.submitSeq, resource: am.resource });
}

/** Whether the app's AM is in its quota group's queue. */
function amQueued(st: MasterState, app: AppState): boolean {
  return st.amQueues.get(app.job.spec.quotaGroup)?.has(app.appId) ?? false;
}

/**
 * Puts back into `st.requesting`, or its AM into its group's queue, any app with outstanding
 * requests that is missing there (a place that adds requests without `markRequesting`: a bug,
 * logged). Run on the master's tick, so such a bug delays an app by a tick instead of leaving it
 * unscheduled. True when one was missing.
 */
export function repairRequesting(st: MasterState): boolean {
  let missing = 0;
  for (const app of st.apps.values()) {
    for (const su of app.sus.values()) {
      if (su.requests.size === 0) continue;
      if (su.suId === AM_SU ? amQueued(st, app) : st.requesting.has(app.appId)) continue;
      markRequesting(st, app);
      missing++;
      if (missing === 1) st.log.error({ appId: app.appId, suId: su.suId }, 'app with outstanding requests was not marked as requesting');
      break;
    }
  }
  return missing > 0;
}

/** Declares a unit, or updates its priority; the caller has validated it. */
export function declareUnit(app: AppState, u: UnitConfig): void {
  const su = app.sus.get(u.suId);
  if (su) {
    su.priority = u.priority;
    return;
  }
  app.sus.set(u.suId, { suId: u.suId, resource: u.resource, priority: u.priority, requests: new Map(), asgn: new Map(), granted: 0 });
}

/** Locations in the order AMs cancel requests: anywhere first, then racks, then nodes, each by name. */
export function cancelOrder(locations: Iterable<string>): string[] {
  const rank = (l: string): number => (l === '' ? 0 : l.startsWith('rack:') ? 1 : 2);
  return [...locations].sort((a, b) => rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0));
}

/**
 * Applies one request delta to an SU's outstanding counts by location. A cancellation larger than
 * the count at its location spills over to the SU's other locations, in `cancelOrder`: the
 * scheduler may have satisfied a request of another location than the one the AM took the new
 * slot off (an AM takes a slot on node X off its `node:X` requests first), and what the AM means
 * is "this many fewer". So the master's total never exceeds what the AM believes it asked for, and
 * never goes below zero.
 */
export function applyDelta(requests: Map<string, number>, location: string, delta: number): void {
  if (delta > 0) {
    requests.set(location, (requests.get(location) ?? 0) + delta);
    return;
  }
  let n = -delta;
  for (const loc of [location, ...cancelOrder([...requests.keys()].filter((l) => l !== location))]) {
    if (n <= 0) return;
    const have = requests.get(loc) ?? 0;
    const m = Math.min(have, n);
    if (m === 0) continue;
    n -= m;
    if (have === m) requests.delete(loc);
    else requests.set(loc, have - m);
  }
}

/** Outstanding slot requests of an SU, over every location. */
export function outstandingOf(su: Pick<ScheduleUnitState, 'requests'>): number {
  let n = 0;
  for (const c of su.requests.values()) n += c;
  return n;
}

/** Whether the app holds task slots (not its AM's) on the node. */
export function holdsTaskSlotsOn(app: AppState, nodeId: string, amSu: string): boolean {
  for (const su of app.sus.values()) if (su.suId !== amSu && (su.asgn.get(nodeId) ?? 0) > 0) return true;
  return false;
}

/** Allocation per quota group, recomputed from every app's assignments (invariant checks). */
export function groupUsage(st: MasterState): Map<string, Resource> {
  const usage = new Map<string, Resource>();
  for (const app of st.apps.values()) {
    let total = usage.get(app.job.spec.quotaGroup) ?? ZERO;
    for (const su of app.sus.values()) {
      for (const slots of su.asgn.values()) total = add(total, scale(su.resource, slots));
    }
    usage.set(app.job.spec.quotaGroup, total);
  }
  return usage;
}

/** Throws when any node is over-committed or a grant table disagrees with the assignments. */
export function checkInvariants(st: MasterState): void {
  for (const n of st.nodes.values()) {
    // Slots on a node that has not reported are AM claims (reservations), not grants.
    if (n.reported && !fits(n.allocated, n.info.capacity)) throw new Error(`node ${n.info.nodeId} over-committed`);
    let sum = ZERO;
    for (const g of n.grants.values()) sum = add(sum, scale(g.resource, g.slots));
    if (sum.cpuMilli !== n.allocated.cpuMilli || sum.memoryMb !== n.allocated.memoryMb)
      throw new Error(`node ${n.info.nodeId} grants disagree with allocation`);
  }
  let amUsed = ZERO;
  for (const app of st.apps.values()) {
    for (const su of app.sus.values()) {
      let n = 0;
      for (const slots of su.asgn.values()) n += slots;
      if (n !== su.granted) throw new Error(`${app.appId}/${su.suId}: ${su.granted} slots counted granted, ${n} assigned`);
      if (su.suId === AM_SU) amUsed = add(amUsed, scale(su.resource, n));
      if (su.requests.size === 0) continue;
      if (su.suId === AM_SU && !amQueued(st, app)) throw new Error(`${app.appId}: its AM waits for a slot but is not in its quota group's queue`);
      if (su.suId !== AM_SU && !st.requesting.has(app.appId)) throw new Error(`${app.appId} has outstanding requests but is not marked as requesting`);
    }
  }
  if (amUsed.cpuMilli !== st.amUsed.cpuMilli || amUsed.memoryMb !== st.amUsed.memoryMb)
    throw new Error(`AM slots hold ${JSON.stringify(amUsed)}, counted ${JSON.stringify(st.amUsed)}`);
  const usage = groupUsage(st);
  for (const g of new Set([...usage.keys(), ...st.usage.keys()])) {
    const a = usage.get(g) ?? ZERO;
    const b = st.usage.get(g) ?? ZERO;
    if (a.cpuMilli !== b.cpuMilli || a.memoryMb !== b.memoryMb)
      throw new Error(`quota group ${g}: usage ${JSON.stringify(b)} disagrees with the assignments ${JSON.stringify(a)}`);
  }
}
