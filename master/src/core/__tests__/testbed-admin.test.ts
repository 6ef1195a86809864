import { expect } from 'chai';
import { DEFAULT_CONFIG } from '../master-core.js';
import { Harness, mockSpec, ofKind } from './core-factories.js';

const groups = { quotaGroups: [...DEFAULT_CONFIG.quotaGroups, { name: 'research', weight: 1 }] };

/** Slots of `appId` per `su@node`, as the agents' grant tables hold them. */
function slotsOf(h: Harness, appId: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [nodeId, view] of h.agents) for (const g of view.grants) if (g.appId === appId) out[`${g.suId}@${nodeId}`] = g.slots;
  return out;
}

function reserve(h: Harness, req: Parameters<Harness['core']['planTestbed']>[0]) {
  const plan = h.core.planTestbed(req, h.now);
  h.observe(h.core.addTestbed(plan.testbed, h.now));
  return plan;
}

describe('master core: testbeds', () => {
  it('planning changes nothing; once applied, other groups get nothing new on its hosts, their work stays', () => {
    const h = new Harness({ config: groups, nodes: [{ nodeId: 'n1' }, { nodeId: 'n2' }] });
    h.start(); // the AM on n1
    h.ask('job-1', 2, 'node:n2');
    expect(slotsOf(h, 'job-1')).to.deep.include({ 'map@n2': 2 });
    const plan = h.core.planTestbed({ name: 'lab', group: 'research', selector: { hosts: ['n2'] } }, h.now);
    expect(plan.ops).to.deep.equal([{ type: 'put', key: 'testbeds/lab', value: JSON.stringify(plan.testbed) }]);
    expect(plan.othersRunning).to.deep.equal([{ nodeId: 'n2', workers: 2 }]);
    expect(h.core.listTestbeds(h.now)).to.deep.equal([]);
    expect(h.core.nodeView('n2')?.testbed).to.equal(undefined);
    const effects = h.core.addTestbed(plan.testbed, h.now);
    h.observe(effects);
    expect(ofKind(effects, 'stopWorkers')).to.have.length(0);
    expect(h.core.nodeView('n2')?.testbed).to.equal('lab');
    // New slots, even asked for on n2, go to n1; the two on n2 stay.
    h.ask('job-1', 3, 'node:n2');
    expect(slotsOf(h, 'job-1')).to.deep.include({ 'map@n1': 3, 'map@n2': 2 });
    // A research job confined to the testbed: its AM and its slots on n2 only.
    h.start(mockSpec({ id: 'job-2', quotaGroup: 'research', testbed: 'lab' }));
    expect(h.core.getJob('job-2').amNodeId).to.equal('n2');
    h.ask('job-2', 2, 'node:n1');
    expect(Object.keys(slotsOf(h, 'job-2')).every((k) => k.endsWith('@n2'))).to.equal(true);
    // Deleted: n2 is ordinary again.
    expect(h.core.planDeleteTestbed('lab')).to.deep.equal([{ type: 'del', key: 'testbeds/lab' }]);
    h.observe(h.core.removeTestbed('lab', h.now));
    h.ask('job-1', 1, 'node:n2');
    expect(slotsOf(h, 'job-1')['map@n2']).to.equal(3);
  });

  it('a window: a confined job waits until it opens (a pass at the tick), other groups return when it closes', () => {
    const h = new Harness({ config: groups, nodes: [{ nodeId: 'n1' }, { nodeId: 'n2' }] });
    reserve(h, { name: 'lab', group: 'research', selector: { hosts: ['n2'] }, startMs: h.now + 1000, endMs: h.now + 2000 });
    expect(h.core.listTestbeds(h.now)[0]?.active).to.equal(false);
    const { effects } = h.submit(mockSpec({ id: 'job-2', quotaGroup: 'research', testbed: 'lab' }));
    expect(ofKind(effects, 'launchAm')).to.have.length(0);
    expect(h.core.getJob('job-2').message).to.match(/^waiting: testbed lab opens at /);
    h.advance(1000);
    const opened = h.core.tick(h.now);
    h.observe(opened);
    expect(ofKind(opened, 'launchAm').map((e) => e.nodeId)).to.deep.equal(['n2']);
    expect(h.core.nodeView('n2')?.testbed).to.equal('lab');
    expect(h.core.getJob('job-2').message).to.equal('');
    // While it is open a default job gets nothing on n2: neither its AM nor a slot asked for there.
    h.start(mockSpec({ id: 'job-1' }));
    expect(h.core.getJob('job-1').amNodeId).to.equal('n1');
    h.ask('job-1', 1, 'node:n2');
    expect(slotsOf(h, 'job-1')['map@n2']).to.equal(undefined);
    h.advance(1000);
    h.observe(h.core.tick(h.now));
    expect(h.core.nodeView('n2')?.testbed).to.equal(undefined);
    expect(h.core.getJob('job-2').message).to.match(/^waiting: testbed lab ended at /);
    h.ask('job-1', 1, 'node:n2');
    expect(slotsOf(h, 'job-1')['map@n2']).to.equal(1);
  });
});
