/**
 * What an external scheduler sees (SchedulerService.Watch): the free room of every host in its
 * scope and the pending requests of its jobs in queue order (priority, then submission), built
 * over the master's state; and the delta between two views, so the stream sends a full view once
 * and then only what changed. `diffViews` is pure over two views.
 *
 * ```ts
 * const next = buildView(st, reg);
 * const delta = diffViews(prev, next); // undefined: nothing changed
 * ```
 */
import { AM_SU, equals, gangSize, sub, type Resource } from '@fuxi/common';
import { externalHolds, type Registration } from './external-registry.js';
import type { MasterState } from './master-state.js';
import { nodeSchedulable } from './scheduling.js';
import { activeTestbedOf, testbedHosts } from './testbeds.js';

export interface HostView {
  nodeId: string;
  rack: string;
  capacity: Resource;
  free: Resource;
  schedulable: boolean;
}

export interface PendingView {
  appId: string;
  unit: string;
  resource: Resource;
  count: number;
  /** Slots the unit's next placement must bring at once (<= 1: no gang). */
  gang: number;
  waitingSinceMs: number;
  queueOrder: number;
  priority: number;
}

export interface SchedulerViewState {
  hosts: Map<string, HostView>;
  /** By `appId/unit`. */
  pending: Map<string, PendingView>;
}

export interface ViewDelta {
  hosts: HostView[];
  pending: PendingView[];
  removedHosts: string[];
  removedPending: string[];
}

/**
 * Whether `nodeId` is in the registration's scope: a testbed's hosts; for a quota group (or none),
 * every known host not reserved by an active testbed of another group.
 */
export function inScope(st: MasterState, reg: Registration, nodeId: string): boolean {
  if (!st.nodes.has(nodeId)) return false;
  if (reg.testbed !== '') return testbedHosts(st.testbeds, reg.testbed, st.now).includes(nodeId);
  const tb = activeTestbedOf(st.testbeds, nodeId, st.now);
  return tb === undefined || tb.group === reg.quotaGroup;
}

/** The hosts in scope and the pending task requests of the scheduler's jobs (held for it). */
export function buildView(st: MasterState, reg: Registration): SchedulerViewState {
  const hosts = new Map<string, HostView>();
  const ids = reg.testbed !== '' ? testbedHosts(st.testbeds, reg.testbed, st.now) : [...st.nodes.keys()];
  for (const id of ids) {
    const n = st.nodes.get(id);
    if (n === undefined || n.info.capacity.cpuMilli <= 0 || (reg.testbed === '' && !inScope(st, reg, id))) continue;
    hosts.set(id, { nodeId: id, rack: n.info.rack, capacity: n.info.capacity, free: sub(n.info.capacity, n.allocated), schedulable: nodeSchedulable(st, n) });
  }
  const items: Array<PendingView & { seq: number }> = [];
  for (const app of st.apps.values()) {
    if (app.job.spec.scheduler !== reg.name || !externalHolds(st, app, false)) continue;
    for (const su of app.sus.values()) {
      if (su.suId === AM_SU || su.requests.size === 0) continue;
      let count = 0;
      for (const v of su.requests.values()) count += v;
      const task = app.job.spec.tasks.find((t) => t.name === su.suId);
      const gang = task === undefined ? 1 : Math.max(1, gangSize(task) - su.granted);
      items.push({
        appId: app.appId,
        unit: su.suId,
        resource: su.resource,
        count,
        gang,
        waitingSinceMs: su.waits?.[0]?.[0] ?? st.now,
        queueOrder: 0,
        priority: su.priority,
        seq: app.job.submitSeq,
      });
    }
  }
  items.sort((a, b) => b.priority - a.priority || a.seq - b.seq || (a.appId < b.appId ? -1 : a.appId > b.appId ? 1 : a.unit < b.unit ? -1 : 1));
  const pending = new Map<string, PendingView>();
  items.forEach(({ seq: _seq, ...p }, i) => pending.set(`${p.appId}/${p.unit}`, { ...p, queueOrder: i }));
  return { hosts, pending };
}

function sameHost(a: HostView, b: HostView): boolean {
  return a.schedulable === b.schedulable && a.rack === b.rack && equals(a.free, b.free) && equals(a.capacity, b.capacity);
}

function samePending(a: PendingView, b: PendingView): boolean {
  return a.count === b.count && a.gang === b.gang && a.queueOrder === b.queueOrder && a.priority === b.priority && equals(a.resource, b.resource);
}

/** What changed from `prev` to `next`; undefined when nothing did. */
export function diffViews(prev: SchedulerViewState, next: SchedulerViewState): ViewDelta | undefined {
  const d: ViewDelta = { hosts: [], pending: [], removedHosts: [], removedPending: [] };
  for (const [id, h] of next.hosts) {
    const was = prev.hosts.get(id);
    if (was === undefined || !sameHost(was, h)) d.hosts.push(h);
  }
  for (const id of prev.hosts.keys()) if (!next.hosts.has(id)) d.removedHosts.push(id);
  for (const [key, p] of next.pending) {
    const was = prev.pending.get(key);
    if (was === undefined || !samePending(was, p)) d.pending.push(p);
  }
  for (const key of prev.pending.keys()) if (!next.pending.has(key)) d.removedPending.push(key);
  return d.hosts.length + d.pending.length + d.removedHosts.length + d.removedPending.length === 0 ? undefined : d;
}
