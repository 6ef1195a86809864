import { expect } from 'chai';
import { InvalidArgumentError, NotFoundError, res } from '@fuxi/common';
import { diffViews } from '../external-view.js';
import { Harness, mockSpec, ofKind, type HarnessOptions } from './core-factories.js';
import type { Testbed } from '../testbeds.js';

/** Testbeds as if created by an operator (their writes durable). */
function setTestbeds(h: { core: { addTestbed(tb: Testbed, now: number): unknown }; now: number }, testbeds: ReadonlyMap<string, Testbed>): void {
  for (const tb of testbeds.values()) h.core.addTestbed(tb, h.now);
}

/** Two 4-core nodes; job-1 (`scheduler: ffd`, task map of 1 core) started, its AM asking for `ask` slots. */
function setup(ask = 3, opts: HarnessOptions = {}, task: Record<string, unknown> = {}): Harness {
  const h = new Harness({
    nodes: [
      { nodeId: 'n1', capacity: res(4000, 8192) },
      { nodeId: 'n2', capacity: res(4000, 8192) },
    ],
    ...opts,
  });
  h.start(mockSpec({ scheduler: 'ffd', tasks: [{ name: 'map', instances: 8, resources: { cpu: 1, memory: 1024 }, command: ['true'], ...task }] }));
  h.ask('job-1', ask);
  return h;
}

const register = (h: Harness, over: Partial<{ name: string; testbed: string; quotaGroup: string; style: string }> = {}) =>
  h.core.registerScheduler({ name: 'ffd', testbed: '', quotaGroup: '', style: 'slot', ...over }, h.now).registration;

const taskSlots = (h: Harness) => [...(h.ams.get('job-1')?.slots.entries() ?? [])].filter(([k]) => k.startsWith('map@')).reduce((s, [, v]) => s + v, 0);

describe('external schedulers (master core)', () => {
  it('leaves a job of an external scheduler to it: the built-in scheduler grants only its AM, the job says why it waits', () => {
    const h = setup();
    expect(taskSlots(h)).to.equal(0);
    expect(h.core.getJob('job-1').message).to.equal('waiting for external scheduler ffd');
    h.run(5000);
    expect(taskSlots(h)).to.equal(0);
  });

  it('shows the registered scheduler its hosts and pending requests, and applies its placements as grants', () => {
    const h = setup();
    const reg = register(h);
    expect(reg.epoch).to.equal('7000001');
    const v = h.core.schedulerView('ffd', reg.epoch, 0, h.now)!;
    expect([...v.view.hosts.keys()]).to.deep.equal(['n1', 'n2']);
    expect([...v.view.pending.values()]).to.deep.equal([
      { appId: 'job-1', unit: 'map', resource: res(1000, 1024), count: 3, gang: 1, waitingSinceMs: 1000, queueOrder: 0, priority: 0 },
    ]);
    const r = h.core.placeExternal({ name: 'ffd', epoch: reg.epoch, placements: [{ appId: 'job-1', unit: 'map', nodeId: 'n2', count: 3 }] }, h.now);
    h.observe(r.effects);
    expect(r).to.include({ applied: 1 });
    expect(r.rejected).to.deep.equal([]);
    expect(h.ams.get('job-1')?.slots.get('map@n2')).to.equal(3);
    expect(ofKind(r.effects, 'grants').map((g) => g.nodeId)).to.deep.equal(['n2']);
    const after = h.core.schedulerView('ffd', reg.epoch, 0, h.now)!;
    expect(after.view.pending.size).to.equal(0);
    expect(after.history.map((e) => `${e.kind} ${e.appId}/${e.unit}@${e.nodeId} x${e.count}`)).to.deep.equal(['placed job-1/map@n2 x3']);
    expect(diffViews(v.view, after.view)).to.deep.include({ removedPending: ['job-1/map'], removedHosts: [] });
    expect(h.core.getJob('job-1').message).to.equal('');
  });

  it('rejects an over-committing placement and one outside the scope, and grants nothing of them', () => {
    const h = setup(6);
    const reg = register(h);
    const r = h.core.placeExternal(
      {
        name: 'ffd',
        epoch: reg.epoch,
        placements: [
          { appId: 'job-1', unit: 'map', nodeId: 'n1', count: 5 },
          { appId: 'job-1', unit: 'map', nodeId: 'n9', count: 1 },
        ],
      },
      h.now,
    );
    h.observe(r.effects);
    expect(r.applied).to.equal(0);
    expect(r.rejected.map((x) => x.code)).to.deep.equal(['OVER_CAPACITY', 'OUT_OF_SCOPE']);
    expect(taskSlots(h)).to.equal(0);
  });

  it('fences an older registration of the same name', () => {
    const h = setup();
    const old = register(h);
    const fresh = register(h);
    const r = h.core.placeExternal({ name: 'ffd', epoch: old.epoch, placements: [{ appId: 'job-1', unit: 'map', nodeId: 'n1', count: 1 }] }, h.now);
    expect(r.rejected.map((x) => x.code)).to.deep.equal(['FENCED']);
    expect(h.core.schedulerView('ffd', old.epoch, 0, h.now)).to.equal(undefined);
    expect(h.core.schedulerView('ffd', fresh.epoch, 0, h.now)).to.not.equal(undefined);
  });

  it('rejects a partial gang whole and grants a whole one', () => {
    const h = setup(4, {}, { minInstances: 4 });
    const reg = register(h);
    const place = (counts: Array<[string, number]>) =>
      h.core.placeExternal(
        { name: 'ffd', epoch: reg.epoch, placements: counts.map(([nodeId, count]) => ({ appId: 'job-1', unit: 'map', nodeId, count })) },
        h.now,
      );
    expect(h.core.schedulerView('ffd', reg.epoch, 0, h.now)!.view.pending.get('job-1/map')?.gang).to.equal(4);
    const partial = place([['n1', 3]]);
    expect(partial.rejected.map((x) => x.code)).to.deep.equal(['PARTIAL_GANG']);
    const whole = place([
      ['n1', 2],
      ['n2', 2],
    ]);
    h.observe(whole.effects);
    expect(whole.applied).to.equal(2);
    expect(taskSlots(h)).to.equal(4);
  });

  it('validates registrations: name, style, scope', () => {
    const h = setup();
    expect(() => register(h, { name: 'no spaces' })).to.throw(InvalidArgumentError, /^name: /);
    expect(() => register(h, { style: 'fifo' })).to.throw(InvalidArgumentError, 'style: must be "queue" or "slot", got "fifo"');
    expect(() => register(h, { testbed: 'tb', quotaGroup: 'default' })).to.throw(InvalidArgumentError, /^testbed: /);
    expect(() => register(h, { testbed: 'tb' })).to.throw(NotFoundError, 'testbed "tb" not found');
  });

  it('scopes a testbed registration to its hosts', () => {
    const h = setup();
    setTestbeds(h, new Map([['tb', { name: 'tb', group: 'default', selector: { hosts: ['n2'] }, hosts: ['n2'], createdMs: 0 }]]));
    const reg = register(h, { testbed: 'tb' });
    expect([...h.core.schedulerView('ffd', reg.epoch, 0, h.now)!.view.hosts.keys()]).to.deep.equal(['n2']);
    const r = h.core.placeExternal({ name: 'ffd', epoch: reg.epoch, placements: [{ appId: 'job-1', unit: 'map', nodeId: 'n1', count: 1 }] }, h.now);
    expect(r.rejected.map((x) => x.code)).to.deep.equal(['OUT_OF_SCOPE']);
  });

  it('a stalled scheduler loses its registration; its jobs wait by default', () => {
    const h = setup(3, { config: { externalSchedulerStallMs: 3000 } });
    const reg = register(h);
    h.run(5000);
    const r = h.core.placeExternal({ name: 'ffd', epoch: reg.epoch, placements: [{ appId: 'job-1', unit: 'map', nodeId: 'n1', count: 1 }] }, h.now);
    expect(r.rejected.map((x) => x.code)).to.deep.equal(['NOT_REGISTERED']);
    h.run(60_000);
    expect(taskSlots(h)).to.equal(0);
    expect(h.core.getJob('job-1').message).to.equal('waiting for external scheduler ffd');
  });

  it('keepalives keep a registration; with a fallback time the built-in scheduler takes the jobs of an absent scheduler', () => {
    const h = setup(3, { config: { externalSchedulerStallMs: 3000, externalSchedulerFallbackMs: 10_000 } });
    const reg = register(h);
    for (let i = 0; i < 5; i++) {
      h.run(2000);
      expect(h.core.placeExternal({ name: 'ffd', epoch: reg.epoch, placements: [] }, h.now).rejected).to.deep.equal([]);
    }
    expect(taskSlots(h)).to.equal(0);
    h.observe(h.core.detachScheduler('ffd', reg.epoch, h.now));
    h.run(9000);
    expect(taskSlots(h)).to.equal(0);
    h.run(2000);
    expect(taskSlots(h)).to.equal(3);
  });
});
