import { expect } from 'chai';
import { InvalidArgumentError, NotFoundError, nullLogger } from '@fuxi/common';
import { DEFAULT_CONFIG, MasterCore } from '../master-core.js';
import { EPOCH, grantMap, Harness, mockNodeInfo, mockSpec, ofKind } from './core-factories.js';
import type { Effect, NodeAdmin } from '../types.js';

const by = { by: 'alice' };

function cordon(h: Harness, nodeId: string, reason = 'disk swap'): Effect[] {
  const effects = h.core.cordonNode({ nodeId, reason, ...by }, h.now);
  h.observe(effects);
  return effects;
}

function drain(h: Harness, nodeId: string, deadlineMs: number, reason = 'kernel upgrade'): Effect[] {
  const effects = h.core.drainNode({ nodeId, reason, deadlineMs, ...by }, h.now);
  h.observe(effects);
  return effects;
}

function adminOf(h: Harness, nodeId: string): NodeAdmin | undefined {
  return h.core.nodeView(nodeId)?.admin;
}

/** Slots of `job-1` per `su@node`, as the agents' grant tables (pushed by the master) hold them. */
function slotsOf(h: Harness, appId = 'job-1'): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [nodeId, view] of h.agents) for (const g of view.grants) if (g.appId === appId) out[`${g.suId}@${nodeId}`] = g.slots;
  return out;
}

describe('master core: node cordon, uncordon and drain', () => {
  it('a cordon is a durable write, shown by listNodes with reason, who and when', () => {
    const h = new Harness({ nodes: [{ nodeId: 'n1' }, { nodeId: 'n2' }] });
    const effects = cordon(h, 'n1');
    const writes = ofKind(effects, 'store').flatMap((e) => e.ops);
    expect(writes).to.have.length(1);
    expect(writes[0]).to.include({ type: 'put', key: 'nodeadmin/n1' });
    const view = h.core.nodeView('n1')!;
    expect(view.state).to.equal('cordoned');
    expect(view.admin).to.deep.include({ state: 'cordoned', reason: 'disk swap', by: 'alice', sinceMs: h.now, deadlineMs: 0 });
    expect(h.core.nodeView('n2')!.state).to.equal('ready');
  });

  it('the scheduler gives a cordoned node nothing new; what it holds stays', () => {
    const h = new Harness({ nodes: [{ nodeId: 'n1' }, { nodeId: 'n2' }] });
    h.start(); // the AM on n1 (least loaded, then by id)
    expect(h.core.getJob('job-1').amNodeId).to.equal('n1');
    h.ask('job-1', 2, 'node:n1');
    const before = slotsOf(h);
    expect(before['map@n1']).to.equal(2);
    const effects = cordon(h, 'n1');
    expect(ofKind(effects, 'grants')).to.have.length(0);
    expect(ofKind(effects, 'stopWorkers')).to.have.length(0);
    // New slots, even asked for on n1 itself, go to n2.
    h.ask('job-1', 3, 'node:n1');
    const after = slotsOf(h);
    expect(after['map@n1']).to.equal(2);
    expect(after['map@n2']).to.equal(3);
    // A new job's AM too.
    h.start(mockSpec({ id: 'job-2' }));
    expect(h.core.getJob('job-2').amNodeId).to.equal('n2');
  });

  it('a draining node gets nothing new either', () => {
    const h = new Harness({ nodes: [{ nodeId: 'n1' }, { nodeId: 'n2' }] });
    h.start();
    h.ask('job-1', 1, 'node:n1');
    drain(h, 'n1', 60_000);
    expect(h.core.nodeView('n1')!.state).to.equal('draining');
    h.ask('job-1', 2, 'node:n1');
    expect(slotsOf(h)).to.deep.include({ 'map@n1': 1, 'map@n2': 2 });
  });

  it('refuses an unknown node (NOT_FOUND) and a bad deadline (INVALID_ARGUMENT naming deadlineMs)', () => {
    const h = new Harness({ nodes: [{ nodeId: 'n1' }] });
    expect(() => h.core.cordonNode({ nodeId: 'nope', reason: '', by: '' }, h.now)).to.throw(NotFoundError);
    expect(() => h.core.drainNode({ nodeId: 'nope', reason: '', by: '', deadlineMs: 1000 }, h.now)).to.throw(NotFoundError);
    expect(() => h.core.uncordonNode({ nodeId: 'nope', by: '' }, h.now)).to.throw(NotFoundError);
    for (const bad of [-1, Number.NaN, 1.5, 31 * 86_400_000]) {
      let err: unknown;
      try {
        h.core.drainNode({ nodeId: 'n1', reason: '', by: '', deadlineMs: bad }, h.now);
      } catch (e) {
        err = e;
      }
      expect(err, String(bad)).to.be.instanceOf(InvalidArgumentError);
      expect((err as InvalidArgumentError).field).to.equal('deadlineMs');
    }
    // Nothing of a refused call changed.
    expect(h.core.nodeView('n1')!.admin).to.equal(undefined);
  });

  it('a drain with nothing on the node is drained at once (cordoned, marked drained)', () => {
    const h = new Harness({ nodes: [{ nodeId: 'n1' }] });
    const effects = drain(h, 'n1', 0);
    expect(adminOf(h, 'n1')).to.deep.include({ state: 'cordoned', drained: true, reason: 'kernel upgrade', by: 'alice' });
    expect(ofKind(effects, 'store').flatMap((e) => e.ops.map((o) => o.key))).to.deep.equal(['nodeadmin/n1', 'nodeadmin/n1']);
  });

  it('work that finishes before the deadline empties the node; its AM moves last; then it is drained', () => {
    const h = new Harness({ nodes: [{ nodeId: 'n1' }, { nodeId: 'n2' }] });
    h.start();
    h.ask('job-1', 2, 'node:n1');
    h.ask('job-1', 1, 'node:n2');
    drain(h, 'n1', 60_000);
    // Before the deadline nothing is taken: the AM stays while its workers there run.
    h.advance(1000);
    h.tick();
    expect(slotsOf(h)['map@n1']).to.equal(2);
    expect(h.core.getJob('job-1').amAttempt).to.equal(1);
    // The workers finish and the AM returns their slots: the AM moves to n2 (a new attempt).
    h.giveBack('job-1', [{ suId: 'map', nodeId: 'n1', slots: 2 }]);
    h.advance(1000);
    const effects = h.tick();
    const job = h.core.getJob('job-1');
    expect(job.amAttempt).to.equal(2);
    expect(job.amNodeId).to.equal('n2');
    expect(ofKind(effects, 'stopWorkers').map((e) => [e.nodeId, e.workerIds])).to.deep.equal([['n1', ['am.1']]]);
    // Its slot on n2 stays; nothing of the app is left on n1, so n1 is drained.
    expect(slotsOf(h)['map@n2']).to.equal(1);
    expect(grantMap(h.agents.get('n1')!.grants)).to.deep.equal({});
    expect(adminOf(h, 'n1')).to.deep.include({ state: 'cordoned', drained: true });
    expect(h.core.nodeView('n1')!.state).to.equal('cordoned');
  });

  it('at the deadline the task slots still held are revoked, the AMs told first; the agent and the AM move at the next step', () => {
    const h = new Harness({ nodes: [{ nodeId: 'n1' }, { nodeId: 'n2' }] });
    h.start();
    h.ask('job-1', 2, 'node:n1');
    drain(h, 'n1', 10_000);
    for (let t = 0; t < 9; t++) {
      h.advance(1_000);
      h.heartbeatAll();
      h.tick();
    }
    expect(slotsOf(h)['map@n1']).to.equal(2);
    h.advance(1_000);
    h.heartbeatAll();
    const effects = h.tick();
    // The AM is told first (it stops those workers itself: lost slots, not failures)...
    expect(ofKind(effects, 'assignments').map((e) => e.appId)).to.deep.equal(['job-1']);
    expect(h.ams.get('job-1')!.slots.get('map@n1')).to.equal(undefined);
    expect(ofKind(effects, 'grants')).to.have.length(0);
    expect(h.core.getJob('job-1').amAttempt).to.equal(1);
    // The AM asks again: its slots go to n2.
    h.ask('job-1', 2);
    expect(slotsOf(h)['map@n2']).to.equal(2);
    // Next step: the agent's table goes (it stops whatever still runs there), the AM moves to n2;
    // then n1 holds nothing and is drained.
    h.advance(100);
    const next = h.tick();
    expect(ofKind(next, 'grants').map((e) => e.nodeId)).to.include('n1');
    expect(grantMap(h.agents.get('n1')!.grants)).to.deep.equal({});
    expect(h.core.getJob('job-1')).to.include({ amAttempt: 2, amNodeId: 'n2' });
    expect(adminOf(h, 'n1')).to.deep.include({ state: 'cordoned', drained: true });
    expect(slotsOf(h)['map@n2']).to.equal(2);
  });

  it('uncordon makes the node schedulable again and ends a drain', () => {
    const h = new Harness({ nodes: [{ nodeId: 'n1' }, { nodeId: 'n2' }] });
    h.start();
    h.ask('job-1', 1, 'node:n1');
    drain(h, 'n1', 10_000);
    const effects = h.core.uncordonNode({ nodeId: 'n1', by: 'bob' }, h.now);
    h.observe(effects);
    expect(ofKind(effects, 'store').flatMap((e) => e.ops)).to.deep.equal([{ type: 'del', key: 'nodeadmin/n1' }]);
    expect(h.core.nodeView('n1')!.state).to.equal('ready');
    expect(h.core.nodeView('n1')!.admin).to.equal(undefined);
    // Past the old deadline nothing is revoked, and n1 takes new work.
    for (let t = 0; t < 20; t++) {
      h.advance(1_000);
      h.heartbeatAll();
      h.tick();
    }
    expect(slotsOf(h)['map@n1']).to.equal(1);
    h.ask('job-1', 1, 'node:n1');
    expect(slotsOf(h)['map@n1']).to.equal(2);
  });

  it('AMs hear which nodes are draining with the connectivity graph, and when a drain ends', () => {
    for (const connectivityAware of [true, false]) {
      const h = new Harness({ nodes: [{ nodeId: 'n1' }, { nodeId: 'n2' }], config: { connectivityAware } });
      h.start();
      h.ask('job-1', 1, 'node:n1');
      const v0 = h.request('job-1', [], { connectivityVersion: 0 }).connectivity?.version ?? 0;
      cordon(h, 'n2'); // a cordon is not a drain: nothing to tell
      expect(h.request('job-1', [], { connectivityVersion: v0 }).connectivity, String(connectivityAware)).to.equal(undefined);
      drain(h, 'n1', 60_000);
      const during = h.request('job-1', [], { connectivityVersion: v0 }).connectivity!;
      expect(during.draining, String(connectivityAware)).to.deep.equal(['n1']);
      h.observe(h.core.uncordonNode({ nodeId: 'n1', by: 'bob' }, h.now));
      const after = h.request('job-1', [], { connectivityVersion: during.version }).connectivity!;
      expect(after.draining, String(connectivityAware)).to.deep.equal([]);
      expect(after.version).to.be.greaterThan(during.version);
    }
  });

  it('a new leader loads cordons and drains with the hard state', () => {
    const core = new MasterCore('9', { ...DEFAULT_CONFIG }, nullLogger);
    const admin: NodeAdmin[] = [
      { nodeId: 'n1', state: 'cordoned', reason: 'bad disk', by: 'alice', sinceMs: 500, deadlineMs: 0 },
      { nodeId: 'n2', state: 'draining', reason: 'upgrade', by: 'bob', sinceMs: 600, deadlineMs: 60_000 },
    ];
    const roster = ['n1', 'n2', 'n3'].map((nodeId) => ({ nodeId, address: `${nodeId}:7001` }));
    core.loadHardState([], roster, 1_000, admin);
    for (const id of ['n1', 'n2', 'n3']) core.registerAgent(mockNodeInfo({ nodeId: id }), EPOCH, 1_100, []);
    expect(core.isRecovering).to.equal(false);
    expect(core.nodeView('n1')).to.deep.include({ state: 'cordoned' });
    expect(core.nodeView('n1')!.admin).to.deep.include({ by: 'alice', reason: 'bad disk' });
    // n2 held nothing: its drain finished on the first tick.
    core.tick(2_000);
    expect(core.nodeView('n2')!.admin).to.deep.include({ state: 'cordoned', drained: true, by: 'bob' });
    // A job goes to n3, the one node left schedulable.
    const { effects } = core.submitJob(mockSpec(), 2_000);
    expect(ofKind(effects, 'launchAm').map((e) => e.nodeId)).to.deep.equal(['n3']);
  });
});
