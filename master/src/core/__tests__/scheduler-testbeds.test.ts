import { expect } from 'chai';
import fc from 'fast-check';
import { res } from '@fuxi/common';
import { schedule } from '../scheduler.js';
import type { Plan, SchedUnit } from '../scheduler.js';
import { mockNodes, mockScope, mockSnapshot, mockUnit } from './factories.js';

function slotsOn(plan: Plan, nodeIds: readonly string[], appId?: string): number {
  return plan.placements.filter((p) => nodeIds.includes(p.nodeId) && (appId === undefined || p.appId === appId)).reduce((s, p) => s + p.slots, 0);
}

function placed(plan: Plan, appId?: string): number {
  return plan.placements.filter((p) => appId === undefined || p.appId === appId).reduce((s, p) => s + p.slots, 0);
}

describe('scheduler: testbeds', () => {
  // n0..n3 in one rack, 8 slots of the default unit each; n1 and n2 reserved for `research`.
  const nodes = mockNodes(4);
  const testbeds = [{ name: 'ml', group: 'research', hosts: ['n1', 'n2'] }];

  it("gives another group's job no slot on a testbed host, not even one asked for there", () => {
    const units = [mockUnit({ requests: { 'node:n1': 2, '': 30 } })];
    const plan = schedule(mockSnapshot({ nodes, units, testbeds }));
    expect(slotsOn(plan, ['n1', 'n2'])).to.equal(0);
    expect(placed(plan)).to.equal(16);
    expect(plan.unsatisfied).to.deep.equal([{ appId: 'app-1', suId: 'su-1', slots: 16, reason: 'reserved' }]);
  });

  it("the group's jobs may use the testbed and the rest of the cluster", () => {
    const units = [mockUnit({ quotaGroup: 'research', requests: { '': 32 } })];
    const plan = schedule(mockSnapshot({ nodes, units, testbeds }));
    expect(placed(plan)).to.equal(32);
  });

  it('a job that names the testbed gets only its hosts (its AM too)', () => {
    const units = [
      mockUnit({ quotaGroup: 'research', suId: 'am', testbed: 'ml', requests: { 'node:n0': 1 } }),
      mockUnit({ quotaGroup: 'research', testbed: 'ml', requests: { 'rack:r1': 20 } }),
    ];
    const plan = schedule(mockSnapshot({ nodes, units, testbeds }));
    expect(slotsOn(plan, ['n0', 'n3'])).to.equal(0);
    expect(placed(plan)).to.equal(16);
    expect(plan.unsatisfied.map((u) => u.reason)).to.deep.equal(['reserved']);
  });

  it("a job that names another group's testbed gets nothing", () => {
    const plan = schedule(mockSnapshot({ nodes, units: [mockUnit({ testbed: 'ml', requests: { '': 2 } })], testbeds }));
    expect(placed(plan)).to.equal(0);
    expect(plan.unsatisfied[0]?.reason).to.equal('reserved');
  });

  it('a job that names a testbed that is not active gets nothing', () => {
    const plan = schedule(mockSnapshot({ nodes, units: [mockUnit({ quotaGroup: 'research', testbed: 'ghost', requests: { '': 2 } })], testbeds }));
    expect(placed(plan)).to.equal(0);
    expect(plan.unsatisfied[0]?.reason).to.equal('reserved');
  });

  it("a job of the group fits around reservations: other groups' work fills the rest first, it takes the testbed", () => {
    const units = [mockUnit({ appId: 'other', requests: { '': 16 } }), mockUnit({ appId: 'mine', quotaGroup: 'research', requests: { '': 16 } })];
    const plan = schedule(mockSnapshot({ nodes, units, testbeds }));
    expect(placed(plan, 'other')).to.equal(16);
    expect(slotsOn(plan, ['n0', 'n3'], 'other')).to.equal(16);
    expect(placed(plan, 'mine')).to.equal(16);
    expect(slotsOn(plan, ['n1', 'n2'], 'mine')).to.equal(16);
  });

  it('a gang confined to a testbed too small for it places nothing', () => {
    const units = [mockUnit({ quotaGroup: 'research', testbed: 'ml', gang: 17, requests: { '': 17 } })];
    const plan = schedule(mockSnapshot({ nodes, units, testbeds }));
    expect(placed(plan)).to.equal(0);
    const fits = schedule(mockSnapshot({ nodes, units: [mockUnit({ quotaGroup: 'research', testbed: 'ml', gang: 16, requests: { '': 16 } })], testbeds }));
    expect(slotsOn(fits, ['n1', 'n2'])).to.equal(16);
  });

  it('keeps a connectivity scope as well as the testbed', () => {
    const units = [mockUnit({ quotaGroup: 'research', testbed: 'ml', requests: { '': 16 } })];
    const plan = schedule(mockSnapshot({ nodes, units, testbeds, scopes: { 'app-1': mockScope([], ['n1']) } }));
    expect(slotsOn(plan, ['n2'])).to.equal(8);
    expect(placed(plan)).to.equal(8);
  });

  it('no testbeds: the same plan as without the field', () => {
    const units = [mockUnit({ requests: { 'node:n1': 3, '': 12 } }), mockUnit({ appId: 'app-2', quotaGroup: 'research', requests: { '': 9 } })];
    expect(schedule(mockSnapshot({ nodes, units, testbeds: [] }))).to.deep.equal(schedule(mockSnapshot({ nodes, units })));
  });
});

describe('scheduler: testbeds (properties)', () => {
  const GROUPS = ['default', 'research', 'batch'];
  const HOSTS = ['n0', 'n1', 'n2', 'n3', 'n4', 'n5'];
  const unitsArb = fc.array(
    fc.record({
      group: fc.constantFrom(...GROUPS),
      confined: fc.constantFrom(undefined, 'ml', 'etl', 'ghost'),
      loc: fc.constantFrom('', 'node:n0', 'node:n2', 'rack:r0', 'rack:r1'),
      slots: fc.integer({ min: 1, max: 12 }),
      cpu: fc.integer({ min: 1, max: 4 }),
      gang: fc.boolean(),
    }),
    { minLength: 1, maxLength: 6 },
  );
  const reservedArb = fc.record({
    ml: fc.subarray(HOSTS.slice(0, 3), { minLength: 1 }),
    etl: fc.subarray(HOSTS.slice(3), { minLength: 0 }),
  });

  it("another group's unit never gets a testbed host's slot; a confined unit gets only its testbed's hosts", () => {
    fc.assert(
      fc.property(unitsArb, reservedArb, (us, r) => {
        const testbeds = [
          { name: 'ml', group: 'research', hosts: r.ml },
          { name: 'etl', group: 'batch', hosts: r.etl },
        ];
        const units: SchedUnit[] = us.map((u, i) => ({
          ...mockUnit({ appId: `app-${i}`, quotaGroup: u.group, resource: res(u.cpu * 1000, 1024), requests: { [u.loc]: u.slots } }),
          ...(u.confined !== undefined ? { testbed: u.confined } : {}),
          ...(u.gang ? { gang: u.slots } : {}),
        }));
        const plan = schedule(mockSnapshot({ nodes: mockNodes(6, 2), units, testbeds }));
        const groupOf = new Map(testbeds.flatMap((t) => t.hosts.map((h) => [h, t.group] as const)));
        const hostsOf = new Map(testbeds.map((t) => [t.name, t.hosts]));
        for (const p of plan.placements) {
          const u = units.find((x) => x.appId === p.appId)!;
          const holder = groupOf.get(p.nodeId);
          expect(holder === undefined || holder === u.quotaGroup, `${p.appId} of ${u.quotaGroup} on ${p.nodeId} (held by ${holder})`).to.equal(true);
          // Confined: only the named testbed's hosts, and only if it is the unit's group's.
          if (u.testbed !== undefined) expect(hostsOf.get(u.testbed) ?? []).to.include(p.nodeId);
        }
      }),
      { numRuns: 300 },
    );
  });
});
