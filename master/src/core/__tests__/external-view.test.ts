import { expect } from 'chai';
import { res } from '@fuxi/common';
import { diffViews, type HostView, type PendingView, type SchedulerViewState } from '../external-view.js';
import { delta, Harness, mockSpec, SLOT, unit } from './core-factories.js';
import type { Testbed } from '../testbeds.js';

/** Testbeds as if created by an operator (their writes durable). */
function setTestbeds(h: { core: { addTestbed(tb: Testbed, now: number): unknown }; now: number }, testbeds: ReadonlyMap<string, Testbed>): void {
  for (const tb of testbeds.values()) h.core.addTestbed(tb, h.now);
}

const hostView = (nodeId: string, cpu = 4000): HostView => ({ nodeId, rack: 'r1', capacity: res(4000, 4096), free: res(cpu, 4096), schedulable: true });
const pendingView = (appId: string, count: number, queueOrder = 0): PendingView => ({
  appId,
  unit: 'map',
  resource: res(1000, 1024),
  count,
  gang: 1,
  waitingSinceMs: 0,
  queueOrder,
  priority: 0,
});
const state = (hosts: HostView[], pending: PendingView[]): SchedulerViewState => ({
  hosts: new Map(hosts.map((h) => [h.nodeId, h])),
  pending: new Map(pending.map((p) => [`${p.appId}/${p.unit}`, p])),
});

describe('external scheduler views', () => {
  it('diffs two views: changed and new entries, removed keys; nothing when equal', () => {
    const a = state([hostView('h1'), hostView('h2')], [pendingView('a', 2), pendingView('b', 1, 1)]);
    expect(diffViews(a, state([hostView('h1'), hostView('h2')], [pendingView('a', 2), pendingView('b', 1, 1)]))).to.equal(undefined);
    const b = state([hostView('h1', 3000), hostView('h3')], [pendingView('b', 1, 0), pendingView('c', 4, 1)]);
    expect(diffViews(a, b)).to.deep.equal({
      hosts: [hostView('h1', 3000), hostView('h3')],
      pending: [pendingView('b', 1, 0), pendingView('c', 4, 1)],
      removedHosts: ['h2'],
      removedPending: ['a/map'],
    });
  });

  it('lists the pending requests of its jobs in queue order (priority, then submission), not other jobs', () => {
    const h = new Harness({ nodes: [{ nodeId: 'n1' }] });
    const task = { name: 'map', instances: 8, resources: { cpu: 1, memory: 1024 }, command: ['true'] };
    h.start(mockSpec({ id: 'early', scheduler: 'ffd', tasks: [task] }));
    h.start(mockSpec({ id: 'urgent', scheduler: 'ffd', priority: 5, tasks: [task] }));
    h.start(mockSpec({ id: 'other', tasks: [task] }));
    // The AM gives each unit its task's priority (the job's, 5, for `urgent`).
    for (const id of ['early', 'other']) h.ask(id, 2);
    h.request('urgent', [delta('map', 2)], { units: [unit('map', SLOT, 5)] });
    const reg = h.core.registerScheduler({ name: 'ffd', testbed: '', quotaGroup: '', style: 'queue' }, h.now).registration;
    const v = h.core.schedulerView('ffd', reg.epoch, 0, h.now)!.view;
    expect([...v.pending.values()].map((p) => `${p.queueOrder}:${p.appId}`)).to.deep.equal(['0:urgent', '1:early']);
  });

  it('keeps a quota-group scheduler off hosts reserved for another group, and shows a testbed scheduler only its hosts in their window', () => {
    const h = new Harness({ nodes: [{ nodeId: 'n1' }, { nodeId: 'n2' }, { nodeId: 'n3' }] });
    setTestbeds(
      h,
      new Map([
        ['gold-bed', { name: 'gold-bed', group: 'gold', selector: { hosts: ['n2'] }, hosts: ['n2'], createdMs: 0 }],
        ['later', { name: 'later', group: 'default', selector: { count: 1 }, hosts: ['n3'], startMs: h.now + 10_000, createdMs: 0 }],
      ]),
    );
    const group = h.core.registerScheduler({ name: 'g', testbed: '', quotaGroup: 'default', style: 'slot' }, h.now).registration;
    expect([...h.core.schedulerView('g', group.epoch, 0, h.now)!.view.hosts.keys()]).to.deep.equal(['n1', 'n3']);
    const bed = h.core.registerScheduler({ name: 't', testbed: 'later', quotaGroup: '', style: 'slot' }, h.now).registration;
    expect([...h.core.schedulerView('t', bed.epoch, 0, h.now)!.view.hosts.keys()]).to.deep.equal([]);
    expect([...h.core.schedulerView('t', bed.epoch, 0, h.now + 10_000)!.view.hosts.keys()]).to.deep.equal(['n3']);
  });
});
