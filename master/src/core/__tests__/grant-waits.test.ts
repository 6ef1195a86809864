import { expect } from 'chai';
import { GrantWaits, MAX_PENDING_WAITS, type WaitingUnit } from '../grant-waits.js';
import { Harness, mockSpec } from './core-factories.js';

function unitAsking(n: number): WaitingUnit & { requests: Map<string, number> } {
  return { requests: new Map(n > 0 ? [['', n]] : []) };
}

describe('GrantWaits', () => {
  it('serves the oldest requests first and records each slot’s wait', () => {
    const gw = new GrantWaits();
    const su = unitAsking(2);
    gw.noteRequests(su, 1000);
    su.requests.set('', 5);
    gw.noteRequests(su, 1100); // 3 more
    gw.placed(su, 3, 1300); // 2 waited 300 ms, 1 waited 200 ms
    expect(gw.drain()).to.deep.equal({
      granted: 3,
      waits: [
        [300, 2],
        [200, 1],
      ],
    });
    expect(su.waits).to.deep.equal([[1100, 2]]);
    expect(gw.drain().waits).to.deep.equal([]);
  });

  it('takes cancelled requests off the newest end', () => {
    const gw = new GrantWaits();
    const su = unitAsking(2);
    gw.noteRequests(su, 1000);
    su.requests.set('', 4);
    gw.noteRequests(su, 2000);
    su.requests.set('', 1); // three cancelled: both of 2000 and one of 1000
    gw.noteRequests(su, 2500);
    expect(su.waits).to.deep.equal([[1000, 1]]);
    su.requests.clear();
    gw.noteRequests(su, 2600);
    expect(su.waits).to.deep.equal([]);
  });

  it('counts a grant with no request on record without a wait', () => {
    const gw = new GrantWaits();
    gw.placed(unitAsking(0), 2, 5000);
    expect(gw.drain()).to.deep.equal({ granted: 2, waits: [] });
  });

  it('keeps at most MAX_PENDING_WAITS undrained entries', () => {
    const gw = new GrantWaits();
    const su = unitAsking(0);
    for (let i = 0; i < MAX_PENDING_WAITS + 5; i++) {
      su.requests.set('', 1);
      gw.noteRequests(su, i * 10);
      gw.placed(su, 1, i * 10 + (i % 7) + 1);
      su.requests.clear();
    }
    const d = gw.drain();
    expect(d.granted).to.equal(MAX_PENDING_WAITS + 5);
    expect(d.waits.length).to.be.at.most(MAX_PENDING_WAITS);
  });
});

describe('MasterCore metrics views', () => {
  it('counts nodes, jobs, AMs and outstanding slots, and drains the grants a pass made', () => {
    const h = new Harness({ nodes: [{ nodeId: 'n1' }, { nodeId: 'n2', rack: 'r2' }] });
    h.heartbeatAll();
    h.submit(mockSpec({ id: 'job-1' }));
    // The AM slot was granted at once (no batch scheduling): no wait.
    expect(h.core.drainGrantStats()).to.deep.equal({ granted: 1, waits: [[0, 1]] });
    h.registerApp('job-1');
    h.advance(40);
    h.ask('job-1', 20); // two 8-core nodes minus the AM: 15 of 20 placed at once
    const g = h.core.gauges();
    expect(g.nodes.healthy).to.equal(2);
    expect(g.jobs.running + g.jobs.submitted).to.equal(1);
    expect(g.ams.running).to.equal(1);
    expect(g.pendingSlots).to.deep.equal({ am: 0, task: 5 });
    expect(g.recovering).to.equal(false);
    const d = h.core.drainGrantStats();
    expect(d.granted).to.equal(16);
    expect(d.waits).to.deep.equal([[0, 15]]);
  });
});
