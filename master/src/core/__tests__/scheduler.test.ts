import { expect } from 'chai';
import { add, fits, res, ZERO } from '@fuxi/common';
import { schedule } from '../scheduler.js';
import type { Plan, SchedulerSnapshot } from '../scheduler.js';
import { mockNode, mockNodes, mockSnapshot, mockUnit, placedByGroup, placedByNode, slotsByUnit } from './factories.js';

/** Every node with placements stays within its capacity. */
function expectNoOverCommit(snapshot: SchedulerSnapshot, plan: Plan): void {
  for (const [id, placed] of placedByNode(snapshot, plan)) {
    const node = snapshot.nodes.get(id);
    expect(node, id).to.not.equal(undefined);
    if (node) expect(fits(add(node.allocated, placed), node.capacity), `node ${id} over-committed`).to.equal(true);
  }
}

function slotsOn(plan: Plan, nodeId: string): number {
  return plan.placements.filter((p) => p.nodeId === nodeId).reduce((s, p) => s + p.slots, 0);
}

describe('scheduler', () => {
  describe('capacity', () => {
    it('never over-commits a node and reports what did not fit', () => {
      const snap = mockSnapshot({
        nodes: [mockNode({ id: 'a', capacity: res(4000, 8192) }), mockNode({ id: 'b', capacity: res(4000, 8192), allocated: res(1000, 1024) })],
        units: [mockUnit({ requests: { '': 20 } })],
      });
      const plan = schedule(snap);
      expectNoOverCommit(snap, plan);
      expect(slotsOn(plan, 'a')).to.equal(4);
      expect(slotsOn(plan, 'b')).to.equal(3);
      expect(plan.unsatisfied).to.deep.equal([{ appId: 'app-1', suId: 'su-1', slots: 13, reason: 'no-capacity' }]);
    });

    it('respects every dimension (memory-bound)', () => {
      const snap = mockSnapshot({
        nodes: [mockNode({ id: 'a', capacity: res(64000, 4096) })],
        units: [mockUnit({ resource: res(100, 1500), requests: { '': 5 } })],
      });
      const plan = schedule(snap);
      expect(slotsOn(plan, 'a')).to.equal(2);
      expect(plan.unsatisfied[0]?.slots).to.equal(3);
    });

    it('skips unschedulable and zero-capacity nodes', () => {
      const snap = mockSnapshot({
        nodes: [mockNode({ id: 'down', schedulable: false }), mockNode({ id: 'empty', capacity: ZERO }), mockNode({ id: 'ok', capacity: res(2000, 2048) })],
        units: [mockUnit({ requests: { '': 5 } }), mockUnit({ suId: 'tiny', resource: ZERO, requests: { '': 3 } })],
      });
      const plan = schedule(snap);
      expect(plan.placements.every((p) => p.nodeId === 'ok')).to.equal(true);
      expect(slotsByUnit(plan).get('app-1/su-1')).to.equal(2);
      expect(slotsByUnit(plan).get('app-1/tiny')).to.equal(3);
    });

    it('reports a slot larger than any node as no-capacity', () => {
      const snap = mockSnapshot({
        nodes: mockNodes(3),
        units: [mockUnit({ resource: res(9000, 1024), requests: { '': 2, 'node:n0': 1, 'rack:r0': 1 } })],
      });
      const plan = schedule(snap);
      expect(plan.placements).to.deep.equal([]);
      expect(plan.unsatisfied).to.deep.equal([{ appId: 'app-1', suId: 'su-1', slots: 4, reason: 'no-capacity' }]);
    });

    it('returns an empty plan for an empty snapshot', () => {
      expect(schedule(mockSnapshot({ nodes: [] }))).to.deep.equal({ placements: [], unsatisfied: [] });
      const plan = schedule(mockSnapshot({ nodes: [], units: [mockUnit()] }));
      expect(plan.unsatisfied).to.deep.equal([{ appId: 'app-1', suId: 'su-1', slots: 1, reason: 'no-capacity' }]);
    });

    it('ignores non-positive request counts', () => {
      const plan = schedule(mockSnapshot({ units: [mockUnit({ requests: { '': 0, 'rack:r1': -2 } })] }));
      expect(plan).to.deep.equal({ placements: [], unsatisfied: [] });
    });
  });

  describe('locality', () => {
    // r0: n0 n2, r1: n1 n3; each node holds 8 slots of the default unit.
    const nodes = mockNodes(4, 2);

    it('puts a node request on that node, in one merged placement', () => {
      const plan = schedule(mockSnapshot({ nodes, units: [mockUnit({ requests: { 'node:n2': 5 } })] }));
      expect(plan.placements).to.deep.equal([{ appId: 'app-1', suId: 'su-1', nodeId: 'n2', slots: 5, location: 'node:n2', localityLevel: 'node' }]);
    });

    it('relaxes node > rack > any', () => {
      const plan = schedule(mockSnapshot({ nodes, units: [mockUnit({ requests: { 'node:n0': 20 } })] }));
      const byLevel = (l: string): number => plan.placements.filter((p) => p.localityLevel === l).reduce((s, p) => s + p.slots, 0);
      expect(slotsOn(plan, 'n0')).to.equal(8);
      expect(slotsOn(plan, 'n2')).to.equal(8);
      expect(byLevel('node')).to.equal(8);
      expect(byLevel('rack')).to.equal(8);
      expect(byLevel('any')).to.equal(4);
      expect(plan.placements.every((p) => p.location === 'node:n0')).to.equal(true);
      expect(plan.placements.filter((p) => p.localityLevel === 'any').every((p) => p.nodeId === 'n1' || p.nodeId === 'n3')).to.equal(true);
    });

    it('sends a rack request to the rack, then anywhere', () => {
      const plan = schedule(mockSnapshot({ nodes, units: [mockUnit({ requests: { 'rack:r1': 18 } })] }));
      expect(slotsOn(plan, 'n1') + slotsOn(plan, 'n3')).to.equal(16);
      expect(plan.placements.filter((p) => p.localityLevel === 'rack').every((p) => p.nodeId === 'n1' || p.nodeId === 'n3')).to.equal(true);
      expect(plan.placements.filter((p) => p.localityLevel === 'any').reduce((s, p) => s + p.slots, 0)).to.equal(2);
    });

    it('spreads a rack request inside the rack', () => {
      const plan = schedule(mockSnapshot({ nodes, units: [mockUnit({ requests: { 'rack:r0': 4 } })] }));
      expect(slotsOn(plan, 'n0')).to.equal(2);
      expect(slotsOn(plan, 'n2')).to.equal(2);
    });

    it('treats an unknown node or rack as any', () => {
      const plan = schedule(mockSnapshot({ nodes, units: [mockUnit({ requests: { 'node:ghost': 2, 'rack:nowhere': 2 } })] }));
      expect(plan.placements.reduce((s, p) => s + p.slots, 0)).to.equal(4);
      expect(plan.placements.every((p) => p.localityLevel === 'any')).to.equal(true);
    });

    it('uses the rack of an unschedulable requested node', () => {
      const down = nodes.map((n) => (n.id === 'n0' ? { ...n, schedulable: false } : n));
      const plan = schedule(mockSnapshot({ nodes: down, units: [mockUnit({ requests: { 'node:n0': 3 } })] }));
      expect(plan.placements).to.deep.equal([{ appId: 'app-1', suId: 'su-1', nodeId: 'n2', slots: 3, location: 'node:n0', localityLevel: 'rack' }]);
    });

    it("serves node requests before the same unit's any requests", () => {
      const small = mockNodes(2, 2, { capacity: res(2000, 2048) });
      const plan = schedule(mockSnapshot({ nodes: small, units: [mockUnit({ requests: { '': 2, 'node:n1': 2 } })] }));
      expect(plan.placements.find((p) => p.location === 'node:n1')).to.include({ nodeId: 'n1', slots: 2, localityLevel: 'node' });
      expect(plan.placements.find((p) => p.location === '')).to.include({ nodeId: 'n0', slots: 2 });
    });
  });

  describe('spreading', () => {
    it('puts any-requests on the least-loaded node, ties by node id', () => {
      const snap = mockSnapshot({
        nodes: [mockNode({ id: 'c', allocated: res(4000, 0) }), mockNode({ id: 'b' }), mockNode({ id: 'a' })],
        units: [mockUnit({ requests: { '': 3 } })],
      });
      const plan = schedule(snap);
      // a and b are empty: a (id), then b, then a or b? a=1/8, b=1/8, c=4/8 -> a again by id.
      expect(slotsOn(plan, 'a')).to.equal(2);
      expect(slotsOn(plan, 'b')).to.equal(1);
      expect(slotsOn(plan, 'c')).to.equal(0);
    });

    it('uses the dominant dimension to compare load', () => {
      const snap = mockSnapshot({
        nodes: [mockNode({ id: 'a', allocated: res(0, 12288) }), mockNode({ id: 'b', allocated: res(4000, 0) })],
        units: [mockUnit({ resource: res(100, 100), requests: { '': 1 } })],
      });
      expect(schedule(snap).placements[0]?.nodeId).to.equal('b'); // a is 75% full on memory, b 50% on cpu
    });

    it('skips a lightly loaded node that cannot hold the slot', () => {
      const snap = mockSnapshot({
        nodes: [mockNode({ id: 'small', capacity: res(1000, 1024) }), mockNode({ id: 'big', capacity: res(16000, 32768), allocated: res(8000, 0) })],
        units: [mockUnit({ resource: res(2000, 1024), requests: { '': 2 } })],
      });
      expect(schedule(snap).placements).to.deep.equal([{ appId: 'app-1', suId: 'su-1', nodeId: 'big', slots: 2, location: '', localityLevel: 'any' }]);
    });
  });

  describe('ordering within a group', () => {
    const scarce = [mockNode({ id: 'n', capacity: res(3000, 3072) })];

    it('serves higher priority first', () => {
      const plan = schedule(
        mockSnapshot({
          nodes: scarce,
          units: [
            mockUnit({ appId: 'low', priority: 1, submitSeq: 0, requests: { '': 3 } }),
            mockUnit({ appId: 'high', priority: 5, submitSeq: 9, requests: { '': 2 } }),
          ],
        }),
      );
      expect(slotsByUnit(plan).get('high/su-1')).to.equal(2);
      expect(slotsByUnit(plan).get('low/su-1')).to.equal(1);
      expect(plan.unsatisfied).to.deep.equal([{ appId: 'low', suId: 'su-1', slots: 2, reason: 'no-capacity' }]);
    });

    it('serves earlier submissions first among equal priorities (FIFO)', () => {
      const plan = schedule(
        mockSnapshot({
          nodes: scarce,
          units: [mockUnit({ appId: 'late', submitSeq: 7, requests: { '': 3 } }), mockUnit({ appId: 'early', submitSeq: 2, requests: { '': 2 } })],
        }),
      );
      expect(slotsByUnit(plan).get('early/su-1')).to.equal(2);
      expect(slotsByUnit(plan).get('late/su-1')).to.equal(1);
    });

    it('lets a smaller unit behind a blocked one use what is left', () => {
      const plan = schedule(
        mockSnapshot({
          nodes: scarce,
          units: [mockUnit({ appId: 'big', priority: 9, resource: res(4000, 1024) }), mockUnit({ appId: 'small', priority: 0, requests: { '': 3 } })],
        }),
      );
      expect(slotsByUnit(plan).get('small/su-1')).to.equal(3);
      expect(plan.unsatisfied).to.deep.equal([{ appId: 'big', suId: 'su-1', slots: 1, reason: 'no-capacity' }]);
    });
  });

  describe('quota groups', () => {
    // 4 nodes x 4 cores = 16 one-core slots; cpu is the dominant dimension.
    const nodes = mockNodes(4, 2, { capacity: res(4000, 65536) });
    const demand = (group: string, slots = 100): ReturnType<typeof mockUnit> => mockUnit({ appId: `app-${group}`, quotaGroup: group, requests: { '': slots } });

    it('shares a scarce cluster 1:1 between equal weights', () => {
      const snap = mockSnapshot({
        nodes,
        units: [demand('a'), demand('b')],
        groups: [
          { name: 'a', weight: 1 },
          { name: 'b', weight: 1 },
        ],
      });
      const plan = schedule(snap);
      expect(slotsByUnit(plan).get('app-a/su-1')).to.equal(8);
      expect(slotsByUnit(plan).get('app-b/su-1')).to.equal(8);
      expectNoOverCommit(snap, plan);
    });

    it('breaks equal shares by group name, one slot per turn', () => {
      const three = [mockNode({ id: 'n', capacity: res(3000, 65536) })];
      const snap = mockSnapshot({ nodes: three, units: [demand('b'), demand('a')] });
      const plan = schedule(snap);
      // a (tie, by name), b (lower share), a (tie again, by name): 2 to 1, not 1 to 2.
      expect(slotsByUnit(plan).get('app-a/su-1')).to.equal(2);
      expect(slotsByUnit(plan).get('app-b/su-1')).to.equal(1);
    });

    it('shares a scarce cluster 3:1 by weight', () => {
      const snap = mockSnapshot({
        nodes,
        units: [demand('a'), demand('b')],
        groups: [
          { name: 'a', weight: 3 },
          { name: 'b', weight: 1 },
        ],
      });
      const plan = schedule(snap);
      expect(slotsByUnit(plan).get('app-a/su-1')).to.equal(12);
      expect(slotsByUnit(plan).get('app-b/su-1')).to.equal(4);
    });

    it("counts the group's current usage", () => {
      const snap = mockSnapshot({
        nodes: mockNodes(4, 2, { capacity: res(4000, 65536), allocated: res(2000, 0) }), // 8 slots used by a, 8 free
        units: [demand('a'), demand('b')],
        groupUsage: { a: res(8000, 8192) },
      });
      const plan = schedule(snap);
      expect(slotsByUnit(plan).get('app-a/su-1') ?? 0).to.equal(0);
      expect(slotsByUnit(plan).get('app-b/su-1')).to.equal(8);
    });

    it('never exceeds a hard limit and reports quota-limit', () => {
      const snap = mockSnapshot({
        nodes,
        units: [demand('a', 6), demand('b', 2)],
        groups: [{ name: 'a', weight: 1, limit: res(3000, 1 << 20) }],
        groupUsage: { a: res(1000, 1024) },
      });
      const plan = schedule(snap);
      expect(slotsByUnit(plan).get('app-a/su-1')).to.equal(2);
      expect(slotsByUnit(plan).get('app-b/su-1')).to.equal(2);
      expect(plan.unsatisfied).to.deep.equal([{ appId: 'app-a', suId: 'su-1', slots: 4, reason: 'quota-limit' }]);
      const a = placedByGroup(snap, plan).get('a') ?? ZERO;
      expect(fits(add(res(1000, 1024), a), res(3000, 1 << 20))).to.equal(true);
    });

    it('lets a smaller unit of a limited group use the remaining quota', () => {
      const snap = mockSnapshot({
        nodes,
        units: [
          mockUnit({ appId: 'big', quotaGroup: 'a', priority: 9, resource: res(2000, 1024), requests: { '': 2 } }),
          mockUnit({ appId: 'small', quotaGroup: 'a', resource: res(500, 512), requests: { '': 2 } }),
        ],
        groups: [{ name: 'a', weight: 1, limit: res(3000, 4096) }],
      });
      const plan = schedule(snap);
      expect(slotsByUnit(plan).get('big/su-1')).to.equal(1);
      expect(slotsByUnit(plan).get('small/su-1')).to.equal(2);
      expect(plan.unsatisfied).to.deep.equal([{ appId: 'big', suId: 'su-1', slots: 1, reason: 'quota-limit' }]);
    });

    it('gives an unlimited group what a limited one cannot use', () => {
      const snap = mockSnapshot({
        nodes,
        units: [demand('a'), demand('b')],
        groups: [{ name: 'a', weight: 10, limit: res(2000, 1 << 20) }],
      });
      const plan = schedule(snap);
      expect(slotsByUnit(plan).get('app-a/su-1')).to.equal(2);
      expect(slotsByUnit(plan).get('app-b/su-1')).to.equal(14);
    });
  });

  describe('determinism', () => {
    it('returns the same plan for the same input, whatever the input order', () => {
      const nodes = mockNodes(12, 3, { capacity: res(4000, 8192) });
      const units = Array.from({ length: 10 }, (_, i) =>
        mockUnit({
          appId: `app-${i % 4}`,
          suId: `su-${i}`,
          priority: i % 3,
          submitSeq: i % 4,
          quotaGroup: `g${i % 2}`,
          resource: res(500 * (1 + (i % 3)), 1024),
          requests: { '': 3, [`node:n${String(i).padStart(2, '0')}`]: 2, [`rack:r${i % 3}`]: 2 },
        }),
      );
      const snap = mockSnapshot({ nodes, units, groups: [{ name: 'g0', weight: 2 }] });
      const again = mockSnapshot({ nodes: [...nodes].reverse(), units: [...units].reverse(), groups: [{ name: 'g0', weight: 2 }] });
      const first = schedule(snap);
      expect(first.placements.length).to.be.greaterThan(0);
      expect(schedule(snap)).to.deep.equal(first);
      expect(schedule(again)).to.deep.equal(first);
    });

    it('does not modify the snapshot', () => {
      const node = Object.freeze(mockNode());
      const unit = Object.freeze(mockUnit({ requests: { '': 3 } }));
      const snap = mockSnapshot({ nodes: [node], units: [unit] });
      schedule(snap);
      expect(node.allocated).to.deep.equal(ZERO);
      expect(unit.requests.get('')).to.equal(3);
    });
  });

  describe('scale', () => {
    it('places 10,000 slots from 200 units on 1,000 nodes without over-commit', () => {
      const nodes = mockNodes(1000, 25, { capacity: res(32000, 131072) });
      const units = Array.from({ length: 200 }, (_, i) =>
        mockUnit({
          appId: `app-${i}`,
          quotaGroup: `g${i % 5}`,
          priority: i % 4,
          submitSeq: i,
          resource: res(1000 + 500 * (i % 3), 2048),
          requests: { '': 30, [`rack:r${i % 25}`]: 10, [`node:n${String((i * 7) % 1000).padStart(3, '0')}`]: 10 },
        }),
      );
      const snap = mockSnapshot({ nodes, units });
      const plan = schedule(snap);
      expectNoOverCommit(snap, plan);
      expect(plan.placements.reduce((s, p) => s + p.slots, 0)).to.equal(10_000);
      expect(plan.unsatisfied).to.deep.equal([]);
    });
  });
});
