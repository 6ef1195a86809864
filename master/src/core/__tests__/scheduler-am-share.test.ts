import { expect } from 'chai';
import fc from 'fast-check';
import { AM_SU, res, ZERO } from '@fuxi/common';
import { amShareFull } from '../sched-am-share.js';
import { schedule } from '../scheduler.js';
import type { Plan, SchedUnit } from '../scheduler.js';
import { mockNodes, mockSnapshot, mockUnit } from './factories.js';

const AM = res(20, 32);

function am(i: number): SchedUnit {
  return mockUnit({ appId: `app-${i}`, suId: AM_SU, resource: AM, priority: 1_000_000, submitSeq: i, requests: { '': 1 } });
}

function task(i: number, slots = 1): SchedUnit {
  return mockUnit({ appId: `app-${i}`, suId: 't', resource: res(1000, 64), submitSeq: i, requests: { '': slots } });
}

function slots(plan: Plan, suId: string): number {
  return plan.placements.filter((p) => p.suId === suId).reduce((s, p) => s + p.slots, 0);
}

describe('scheduler: AM share', () => {
  // 2 nodes of 8 cores and 16 GiB: 16 cores, 32 GiB.
  const nodes = mockNodes(2);

  it('a flood of AMs takes at most its share, and the rest of the cluster stays for workers', () => {
    const units = [...Array.from({ length: 1000 }, (_, i) => am(i)), ...Array.from({ length: 50 }, (_, i) => task(i))];
    const plan = schedule({ ...mockSnapshot({ nodes, units }), amShare: { share: 0.1, used: ZERO } });
    // 10 % of 16 cores is 1,600 m: 80 AMs of 20 m (memory would allow 102 of 32 MiB).
    expect(slots(plan, AM_SU)).to.equal(80);
    // 40 AMs on each node take 800 m of its 8 cores: 7 workers of a core fit on each.
    expect(slots(plan, 't')).to.equal(14);
    const waiting = plan.unsatisfied.filter((u) => u.reason === 'am-share');
    expect(waiting).to.have.length(1000 - 80);
  });

  it('without the rule the same flood leaves no room for a single worker', () => {
    const units = [...Array.from({ length: 1000 }, (_, i) => am(i)), task(0)];
    const plan = schedule(mockSnapshot({ nodes, units }));
    expect(slots(plan, AM_SU)).to.equal(800); // 16 cores / 20 m
    expect(slots(plan, 't')).to.equal(0);
  });

  it('counts the AMs already running', () => {
    const units = [am(1), am(2), task(1)];
    const plan = schedule({ ...mockSnapshot({ nodes, units }), amShare: { share: 0.1, used: res(1600, 100) } });
    expect(slots(plan, AM_SU)).to.equal(0);
    expect(plan.unsatisfied.map((u) => [u.appId, u.reason])).to.deep.equal([
      ['app-1', 'am-share'],
      ['app-2', 'am-share'],
    ]);
    expect(slots(plan, 't')).to.equal(1);
  });

  it('always lets one AM run when none does, however large', () => {
    const big = mockUnit({ appId: 'big', suId: AM_SU, resource: res(4000, 4096), priority: 1_000_000, requests: { '': 1 } });
    const plan = schedule({ ...mockSnapshot({ nodes, units: [big, am(2)] }), amShare: { share: 0.1, used: ZERO } });
    expect(plan.placements.map((p) => p.appId)).to.deep.equal(['big']);
    expect(plan.unsatisfied.map((u) => u.reason)).to.deep.equal(['am-share']);
  });

  it('a share of 1 is no limit', () => {
    const units = Array.from({ length: 100 }, (_, i) => am(i));
    const plan = schedule({ ...mockSnapshot({ nodes, units }), amShare: { share: 1, used: ZERO } });
    expect(slots(plan, AM_SU)).to.equal(100);
  });

  it('property: placed plus running AMs stay within the share (or are the one AM allowed alone)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 300 }),
        fc.double({ min: 0.01, max: 1, noNaN: true }),
        fc.integer({ min: 0, max: 4000 }),
        fc.integer({ min: 10, max: 2000 }),
        (count, share, usedCpu, amCpu) => {
          const units = Array.from({ length: count }, (_, i) =>
            mockUnit({ appId: `a${i}`, suId: AM_SU, resource: res(amCpu, 16), priority: 1_000_000, submitSeq: i, requests: { '': 1 } }),
          );
          const used = res(usedCpu, usedCpu === 0 ? 0 : 16);
          const plan = schedule({ ...mockSnapshot({ nodes, units }), amShare: { share, used } });
          const n = slots(plan, AM_SU);
          const cpu = usedCpu + n * amCpu;
          if (share >= 1 || n === 0) return true;
          if (usedCpu === 0 && n === 1) return true;
          return cpu <= 16_000 * share + 1e-6;
        },
      ),
    );
  });

  it('amShareFull: true once AMs hold their share in some dimension (then AM units need not be built)', () => {
    const map = new Map(nodes.map((n) => [n.id, n]));
    expect(amShareFull(undefined, map)).to.equal(false);
    expect(amShareFull({ share: 0.1, used: ZERO }, map)).to.equal(false);
    expect(amShareFull({ share: 0.1, used: res(1500, 100) }, map)).to.equal(false);
    expect(amShareFull({ share: 0.1, used: res(1600, 100) }, map)).to.equal(true);
    expect(amShareFull({ share: 0.1, used: res(10, 3277) }, map)).to.equal(true);
    expect(amShareFull({ share: 1, used: res(16_000, 32_768) }, map)).to.equal(false);
  });
});
