import { expect } from 'chai';
import { res } from '@fuxi/common';
import { schedule } from '../scheduler.js';
import type { Plan } from '../scheduler.js';
import { mockNodes, mockScope, mockSnapshot, mockUnit } from './factories.js';

function slotsOn(plan: Plan, nodeId: string, appId?: string): number {
  return plan.placements.filter((p) => p.nodeId === nodeId && (appId === undefined || p.appId === appId)).reduce((s, p) => s + p.slots, 0);
}

function placed(plan: Plan): number {
  return plan.placements.reduce((s, p) => s + p.slots, 0);
}

describe('scheduler: blacklisted hosts', () => {
  // n0..n3 in one rack, 8 slots of the default unit each.
  const nodes = mockNodes(4);

  it('gives a blocked host nothing, not even the slot asked for on it', () => {
    const units = [mockUnit({ requests: { 'node:n1': 2, 'rack:r1': 3, '': 20 } }), mockUnit({ appId: 'app-2', requests: { '': 4 } })];
    const plan = schedule(mockSnapshot({ nodes, units, blacklist: { blocked: ['n1'] } }));
    expect(slotsOn(plan, 'n1')).to.equal(0);
    expect(placed(plan)).to.equal(24); // three hosts of 8 slots
    expect(plan.unsatisfied.reduce((s, u) => s + u.slots, 0)).to.equal(5);
  });

  it("says 'blacklisted' when the slot fits only on blocked hosts", () => {
    const small = mockNodes(2, 1, { capacity: res(1000, 1024) });
    const plan = schedule(mockSnapshot({ nodes: small, units: [mockUnit({ requests: { '': 2 } })], blacklist: { blocked: ['n0'] } }));
    expect(slotsOn(plan, 'n0')).to.equal(0);
    expect(plan.unsatisfied).to.deep.equal([{ appId: 'app-1', suId: 'su-1', slots: 1, reason: 'blacklisted' }]);
  });

  it('blocks a host for one app only', () => {
    const units = [mockUnit({ requests: { '': 8 } }), mockUnit({ appId: 'app-2', submitSeq: 1, requests: { '': 8 } })];
    const plan = schedule(mockSnapshot({ nodes, units, blacklist: { perApp: { 'app-1': ['n0', 'n1'] } } }));
    expect(slotsOn(plan, 'n0', 'app-1') + slotsOn(plan, 'n1', 'app-1')).to.equal(0);
    expect(slotsOn(plan, 'n0', 'app-2') + slotsOn(plan, 'n1', 'app-2')).to.be.greaterThan(0);
    expect(placed(plan)).to.equal(16);
  });

  it('uses a gray host only once every other node is full', () => {
    const few = schedule(mockSnapshot({ nodes, units: [mockUnit({ requests: { '': 10 } })], blacklist: { gray: ['n2'] } }));
    expect(slotsOn(few, 'n2')).to.equal(0);
    const many = schedule(mockSnapshot({ nodes, units: [mockUnit({ requests: { '': 28 } })], blacklist: { gray: ['n2'] } }));
    expect(slotsOn(many, 'n2')).to.equal(4);
    expect(placed(many)).to.equal(28);
  });

  it('ignores every list for a job with failurePrediction off', () => {
    const units = [mockUnit({ requests: { 'node:n1': 1, '': 31 }, predictionOff: true })];
    const listed = schedule(mockSnapshot({ nodes, units, blacklist: { blocked: ['n1'], gray: ['n2'], perApp: { 'app-1': ['n3'] } } }));
    const plain = schedule(mockSnapshot({ nodes, units }));
    expect(listed).to.deep.equal(plain);
    expect(slotsOn(listed, 'n1')).to.equal(8);
  });

  it('keeps both a scope and the blacklist', () => {
    const plan = schedule(
      mockSnapshot({ nodes, units: [mockUnit({ requests: { '': 30 } })], scopes: { 'app-1': mockScope([], ['n0']) }, blacklist: { blocked: ['n3'] } }),
    );
    expect(slotsOn(plan, 'n0') + slotsOn(plan, 'n3')).to.equal(0);
    expect(placed(plan)).to.equal(16);
  });

  it('plans as without a list when the list is empty', () => {
    const units = [mockUnit({ requests: { '': 13, 'node:n2': 3 } })];
    expect(schedule(mockSnapshot({ nodes, units, blacklist: {} }))).to.deep.equal(schedule(mockSnapshot({ nodes, units })));
  });

  it('fills a memory-capped host only below its cap, the slots batched on it included', () => {
    // 8 cores / 8 GiB each: at most 5 GiB of n1 stays below 0.75 (6 GiB is not below it).
    const small = mockNodes(4, 1, { capacity: res(8000, 8192) });
    const plan = schedule(mockSnapshot({ nodes: small, units: [mockUnit({ requests: { '': 32 } })], blacklist: { memoryCap: { n1: 0.75 } } }));
    expect(slotsOn(plan, 'n1')).to.equal(5);
    expect(placed(plan)).to.equal(29);
    // Memory already allocated counts: with 4 GiB in use, one more slot.
    const busy = small.map((n) => (n.id === 'n1' ? { ...n, allocated: res(1000, 4096) } : n));
    const later = schedule(mockSnapshot({ nodes: busy, units: [mockUnit({ requests: { '': 32 } })], blacklist: { memoryCap: { n1: 0.75 } } }));
    expect(slotsOn(later, 'n1')).to.equal(1);
    // A job with prediction off is not capped.
    const off = schedule(
      mockSnapshot({ nodes: small, units: [mockUnit({ requests: { '': 32 }, predictionOff: true })], blacklist: { memoryCap: { n1: 0.75 } } }),
    );
    expect(slotsOn(off, 'n1')).to.equal(8);
  });
});
