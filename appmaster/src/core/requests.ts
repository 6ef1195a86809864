/**
 * Requests to the master: each task's outstanding slot count per location ('' anywhere,
 * `rack:<name>`, `node:<id>`), kept in step with what its pending instances need, and the
 * incremental deltas (plus each SU's config, sent once) that go out in the step's `request` effect.
 * New placements consume outstanding counts (the node's own first); a task that needs fewer cancels
 * anywhere first, then racks, then nodes, once the surplus is more than an eighth of its need
 * (`cancelSlack`).
 *
 * The master refuses a request that would take a task's outstanding plus held slots above its
 * instances (plus a small allowance; master request-limits.ts), not counting slots on nodes it
 * reported timing out. So a task never asks for more than its instances less the slots it holds
 * outside timing-out nodes (`countedHolds`): slots held by shadows, or on an agent that has not
 * listed its workers since a restart, are waited for instead of asked for again.
 */
import { byKey, key, type AmState, type Task } from './am-state.js';
import { effective } from './holds.js';
import type { OutstandingRequest, RequestDelta, ScheduleUnitConfig, TaskSpec } from './types.js';

/** The SU config of a task (its SU id is the task name). */
export function unitOf(task: Task): ScheduleUnitConfig {
  return { suId: task.suId, resource: task.spec.resource, priority: task.priority };
}

/** Changes the outstanding count of `task` at `location` by `n` and adds `n` to the step's delta. */
export function addRequest(st: AmState, task: Task, location: string, n: number): void {
  if (n === 0) return;
  task.outstanding.set(location, (task.outstanding.get(location) ?? 0) + n);
  if (task.outstanding.get(location) === 0) task.outstanding.delete(location);
  const k = key(task.suId, location);
  const d = st.out.deltas.get(k);
  if (d) d.delta += n;
  else st.out.deltas.set(k, { suId: task.suId, location, delta: n });
}

/** New slots on `nodeId` satisfied some of our requests: the node's own first, then any, then racks and other nodes. */
export function consumeOutstanding(task: Task, nodeId: string, n: number): void {
  const order = [`node:${nodeId}`, ...locationOrder(task.outstanding)];
  for (const loc of order) {
    if (n === 0) return;
    const have = task.outstanding.get(loc) ?? 0;
    const m = Math.min(have, n);
    if (m === 0) continue;
    n -= m;
    if (have === m) task.outstanding.delete(loc);
    else task.outstanding.set(loc, have - m);
  }
}

/** Asks the master for `n` fewer slots (anywhere first, then racks, then nodes). */
export function cancelOutstanding(st: AmState, task: Task, n: number): void {
  for (const loc of locationOrder(task.outstanding)) {
    if (n <= 0) return;
    const m = Math.min(task.outstanding.get(loc) ?? 0, n);
    if (m > 0) addRequest(st, task, loc, -m);
    n -= m;
  }
}

/** The task's slots the master counts against its request limit: usable ones (held, not returning) on nodes not timing out. */
export function countedHolds(st: AmState, task: Task): number {
  let n = 0;
  for (const [nodeId, h] of task.holds) if (!st.timingOut.has(nodeId)) n += effective(h);
  return n;
}

/**
 * Sizes the task's outstanding requests to `need` slots, or fewer when the slots it holds (see
 * `countedHolds`) leave less room under its instances: more are asked for (the SU's config the
 * first time; spread over the locality hints the first time, anywhere afterwards), fewer cancelled (past `cancelSlack`).
 */
export function sizeRequests(st: AmState, task: Task, pending: number): void {
  // Slots held by speculative shadows are the backups' extra room (the master's speculation allowance).
  const room = Math.max(0, task.spec.instances + task.speculating - countedHolds(st, task));
  const need = Math.min(pending, room);
  if (need < pending) st.log.debug({ task: task.spec.name, pending, room }, 'requests held back: the task holds slots it cannot use yet');
  let outstanding = 0;
  for (const n of task.outstanding.values()) outstanding += n;
  if (need > outstanding) {
    if (!task.unitSent) {
      task.unitSent = true;
      st.out.units.push(unitOf(task));
    }
    const locations = task.requested ? [''] : localitiesOf(task.spec);
    task.requested = true;
    spread(need - outstanding, locations).forEach(([loc, n]) => addRequest(st, task, loc, n));
  } else if (outstanding - need > cancelSlack(need)) {
    cancelOutstanding(st, task, outstanding - need);
  }
}

/**
 * How far a task's outstanding requests may stay above its `need` before the surplus is cancelled:
 * an eighth of the need. A task of many instances reuses each slot its finished instances free, so
 * its need falls by one per launch; cancelling each one was an UpdateRequests per task (435 calls
 * for one job of 1,000 instances on 16 slots), when the master cannot tell 984 from 983 while every
 * slot it has is placed. With the slack the cancels come in steps of an eighth (44 for those
 * 1,000), and below 8 each one goes at once. The cost is bounded: the master may place up to that
 * surplus while it has slots free, and those go straight back (`reconcile`, step 3).
 */
export function cancelSlack(need: number): number {
  return Math.floor(need / 8);
}

/** `''` first, then `rack:*`, then `node:*`, each sorted. */
function locationOrder(m: ReadonlyMap<string, number>): string[] {
  const rank = (l: string): number => (l === '' ? 0 : l.startsWith('rack:') ? 1 : 2);
  return [...m.keys()].sort((a, b) => rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0));
}

/** The request locations of a task's locality hint: listed nodes, then listed racks; else anywhere. */
export function localitiesOf(spec: Pick<TaskSpec, 'locality'>): string[] {
  const locs = [...spec.locality.nodes.map((n) => `node:${n}`), ...spec.locality.racks.map((r) => `rack:${r}`)];
  return locs.length > 0 ? [...new Set(locs)] : [''];
}

/** Spreads `n` over `locations` as evenly as possible (earlier ones get the remainder), dropping zeros. */
export function spread(n: number, locations: readonly string[]): Array<[string, number]> {
  const base = Math.floor(n / locations.length);
  const rest = n % locations.length;
  return locations.map((l, i): [string, number] => [l, base + (i < rest ? 1 : 0)]).filter(([, c]) => c > 0);
}

/**
 * The master refused an UpdateRequests on the count of slots and applied none of it: its deltas
 * are taken back and its units count as not sent, so the next step asks again from what we then
 * know (the master holds slots for us we have not heard of yet, e.g. placed as our cancellation
 * crossed them). Nothing is asked again here: a step that follows new information does.
 */
export function takeBack(st: AmState, units: readonly ScheduleUnitConfig[], deltas: readonly RequestDelta[]): void {
  for (const u of units) {
    const t = st.tasks.get(u.suId);
    if (t) t.unitSent = false;
  }
  for (const d of deltas) {
    const t = st.tasks.get(d.suId);
    if (!t) continue;
    const left = (t.outstanding.get(d.location) ?? 0) - d.delta;
    if (left > 0) t.outstanding.set(d.location, left);
    else t.outstanding.delete(d.location);
  }
}

/** Every outstanding request, by task, then location (for ReportAppState). */
export function outstandingRequests(st: AmState): OutstandingRequest[] {
  const out: OutstandingRequest[] = [];
  for (const t of st.tasks.values()) {
    for (const [location, count] of byKey(t.outstanding)) if (count > 0) out.push({ suId: t.suId, location, count });
  }
  return out;
}

/** Configs of the SUs already declared to the master (by this AM attempt, or holding slots from an earlier one). */
export function declaredUnits(st: AmState): ScheduleUnitConfig[] {
  return [...st.tasks.values()].filter((t) => t.unitSent || t.holds.size > 0).map((t) => unitOf(t));
}
