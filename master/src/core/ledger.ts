/**
 * The ledger: who holds which slots where. Every change of an assignment goes through `setAsgn`,
 * which keeps the schedule unit's assignment, the node's allocation and grant table, and the quota
 * group's usage in step; `checkInvariants` proves they agree.
 */
import { add, AM_SU, fits, InvalidArgumentError, scale, ZERO, type Resource } from '@fuxi/common';
import { grantKey, type AppState, type MasterState, type ScheduleUnitState } from './master-state.js';
import type { RequestDelta, UnitConfig } from './types.js';

/** Sets the assigned slot count of an SU on a node, keeping node and grant tables in step. */
export function setAsgn(st: MasterState, app: AppState, su: ScheduleUnitState, nodeId: string, slots: number): void {
  const before = su.asgn.get(nodeId) ?? 0;
  if (slots === before) return;
  if (slots === 0) su.asgn.delete(nodeId);
  else su.asgn.set(nodeId, slots);
  const group = app.job.spec.quotaGroup;
  st.usage.set(group, add(st.usage.get(group) ?? ZERO, scale(su.resource, slots - before)));
  const node = st.nodes.get(nodeId);
  if (!node) return;
  node.allocated = add(node.allocated, scale(su.resource, slots - before));
  const key = grantKey(app.appId, su.suId);
  if (slots === 0) node.grants.delete(key);
  else node.grants.set(key, { appId: app.appId, suId: su.suId, slots, resource: su.resource, amAttempt: app.job.amAttempt });
}

/** Declares a unit, or updates its priority; the caller has validated it. */
export function declareUnit(app: AppState, u: UnitConfig): void {
  const su = app.sus.get(u.suId);
  if (su) {
    su.priority = u.priority;
    return;
  }
  app.sus.set(u.suId, { suId: u.suId, resource: u.resource, priority: u.priority, requests: new Map(), asgn: new Map() });
}

/** Throws the first problem of an UpdateRequests before any of it is applied (all or nothing). */
export function checkRequest(app: AppState, units: readonly UnitConfig[], deltas: readonly RequestDelta[]): void {
  for (const u of units) {
    if (u.suId === AM_SU) throw new InvalidArgumentError('units.suId', `"${AM_SU}" is reserved`);
    if (u.resource.cpuMilli <= 0 || u.resource.memoryMb <= 0) {
      throw new InvalidArgumentError(`units[${u.suId}].resource`, 'must be positive in every dimension');
    }
  }
  const declared = new Set(units.map((u) => u.suId));
  for (const d of deltas) {
    if (d.suId === AM_SU || (!app.sus.has(d.suId) && !declared.has(d.suId))) {
      throw new InvalidArgumentError('deltas.suId', `unknown schedule unit "${d.suId}" (declare it in units first)`);
    }
    if (d.location !== '' && !/^(node|rack):.+$/.test(d.location)) {
      throw new InvalidArgumentError('deltas.location', `must be "", "node:<id>" or "rack:<name>", got "${d.location}"`);
    }
  }
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
  const usage = groupUsage(st);
  for (const g of new Set([...usage.keys(), ...st.usage.keys()])) {
    const a = usage.get(g) ?? ZERO;
    const b = st.usage.get(g) ?? ZERO;
    if (a.cpuMilli !== b.cpuMilli || a.memoryMb !== b.memoryMb)
      throw new Error(`quota group ${g}: usage ${JSON.stringify(b)} disagrees with the assignments ${JSON.stringify(a)}`);
  }
}
