import { expect } from 'chai';
import { res } from '@fuxi/common';
import { schedule } from '../scheduler.js';
import type { Plan } from '../scheduler.js';
import { mockNode, mockNodes, mockScope, mockSnapshot, mockUnit } from './factories.js';

function nodesOf(plan: Plan, appId = 'app-1'): string[] {
  return [...new Set(plan.placements.filter((p) => p.appId === appId).map((p) => p.nodeId))].sort();
}

function slotsOn(plan: Plan, nodeId: string): number {
  return plan.placements.filter((p) => p.nodeId === nodeId).reduce((s, p) => s + p.slots, 0);
}

describe('scheduler: connectivity', () => {
  // n0..n3 in one rack, 8 slots of the default unit each.
  const nodes = mockNodes(4);

  describe('no broken links', () => {
    it('places a connected app exactly as an independent one', () => {
      const units = [mockUnit({ requests: { '': 13, 'node:n2': 3 } }), mockUnit({ appId: 'app-2', suId: 'am', mostConnected: true })];
      const plain = schedule(mockSnapshot({ nodes, units }));
      const scoped = schedule(mockSnapshot({ nodes, units, links: [], scopes: { 'app-1': mockScope(['n1']), 'app-2': mockScope() } }));
      expect(scoped).to.deep.equal(plain);
    });

    it('never puts a slot on a node the app avoids, even the one it asked for', () => {
      const plan = schedule(mockSnapshot({ nodes, units: [mockUnit({ requests: { 'node:n0': 2, '': 4 } })], scopes: { 'app-1': mockScope([], ['n0']) } }));
      expect(slotsOn(plan, 'n0')).to.equal(0);
      expect(plan.placements.reduce((s, p) => s + p.slots, 0)).to.equal(6);
    });
  });

  describe('anchors', () => {
    it('puts slots only on nodes that reach every anchor', () => {
      // n1 is the least loaded, but cut from the app's host n0.
      const loaded = [mockNode({ id: 'n0', allocated: res(6000, 6144) }), mockNode({ id: 'n1' }), mockNode({ id: 'n2', allocated: res(2000, 2048) })];
      const snap = mockSnapshot({ nodes: loaded, units: [mockUnit({ requests: { '': 3 } })], links: [['n0', 'n1']], scopes: { 'app-1': mockScope(['n0']) } });
      const plan = schedule(snap);
      expect(nodesOf(plan)).to.deep.equal(['n2']);
      expect(slotsOn(plan, 'n2')).to.equal(3);
    });

    it('leaves an independent app free to use any node', () => {
      const snap = mockSnapshot({ nodes, units: [mockUnit({ requests: { '': 4 } })], links: [['n0', 'n1']], scopes: { 'app-2': mockScope(['n0']) } });
      expect(nodesOf(schedule(snap))).to.deep.equal(['n0', 'n1', 'n2', 'n3']);
    });

    it("makes each new slot an anchor for the app's next ones", () => {
      // One slot fits per node; the first goes to n0 (ties by id), so n1 (cut from n0) is out.
      const small = mockNodes(3, 1, { capacity: res(1000, 1024) });
      const snap = mockSnapshot({ nodes: small, units: [mockUnit({ requests: { '': 3 } })], links: [['n0', 'n1']], scopes: { 'app-1': mockScope() } });
      const plan = schedule(snap);
      expect(nodesOf(plan)).to.deep.equal(['n0', 'n2']);
      expect(plan.unsatisfied).to.deep.equal([{ appId: 'app-1', suId: 'su-1', slots: 1, reason: 'unreachable' }]);
    });

    it('holds across units of one app, and not across apps', () => {
      const small = mockNodes(3, 1, { capacity: res(1000, 1024) });
      const snap = mockSnapshot({
        nodes: small,
        units: [
          mockUnit({ suId: 'a', submitSeq: 0, requests: { 'node:n0': 1 } }),
          mockUnit({ suId: 'b', requests: { 'node:n1': 1 } }),
          mockUnit({ appId: 'app-2', requests: { 'node:n1': 1 } }),
        ],
        links: [['n0', 'n1']],
        scopes: { 'app-1': mockScope(), 'app-2': mockScope() },
      });
      const plan = schedule(snap);
      // app-1's unit b asked for n1, which is cut from n0 where unit a went: it lands on n2.
      expect(plan.placements.filter((p) => p.appId === 'app-1').map((p) => [p.suId, p.nodeId, p.localityLevel])).to.deep.equal([
        ['a', 'n0', 'node'],
        ['b', 'n2', 'rack'],
      ]);
      // app-2 is not bound by app-1's hosts: it gets the n1 it asked for.
      expect(plan.placements.filter((p) => p.appId === 'app-2').map((p) => [p.nodeId, p.localityLevel])).to.deep.equal([['n1', 'node']]);
    });

    it('ignores anchors the app gave up (avoid)', () => {
      const snap = mockSnapshot({
        nodes,
        units: [mockUnit({ requests: { '': 1 } })],
        links: [['n0', 'n1']],
        scopes: { 'app-1': mockScope(['n0', 'n2'], ['n0']) },
      });
      expect(nodesOf(schedule(snap))).to.deep.equal(['n1']);
    });

    it("tells 'unreachable' (room only where the scope forbids) from 'no-capacity' (no room anywhere)", () => {
      const two = [mockNode({ id: 'n0' }), mockNode({ id: 'n1' })];
      const cut = mockSnapshot({ nodes: two, units: [mockUnit({ requests: { '': 2 } })], links: [['n0', 'n1']], scopes: { 'app-1': mockScope(['n0', 'n1']) } });
      expect(schedule(cut).unsatisfied).to.deep.equal([{ appId: 'app-1', suId: 'su-1', slots: 2, reason: 'unreachable' }]);
      const big = mockSnapshot({
        nodes: two,
        units: [mockUnit({ resource: res(9000, 1024), requests: { '': 1 } })],
        links: [['n0', 'n1']],
        scopes: { 'app-1': mockScope(['n0', 'n1']) },
      });
      expect(schedule(big).unsatisfied).to.deep.equal([{ appId: 'app-1', suId: 'su-1', slots: 1, reason: 'no-capacity' }]);
    });

    it('honours a node request when the node reaches the anchors, and falls back when it does not', () => {
      const snap = (want: string): Plan =>
        schedule(
          mockSnapshot({ nodes, units: [mockUnit({ requests: { [`node:${want}`]: 1 } })], links: [['n0', 'n1']], scopes: { 'app-1': mockScope(['n0']) } }),
        );
      expect(snap('n3').placements.map((p) => [p.nodeId, p.localityLevel])).to.deep.equal([['n3', 'node']]);
      expect(snap('n1').placements.map((p) => [p.nodeId, p.localityLevel])).to.deep.equal([['n0', 'rack']]);
    });
  });

  describe("the AM's slot (CASPR's first pod)", () => {
    it('goes to the node with the fewest broken links, then the least loaded', () => {
      const loaded = [
        mockNode({ id: 'n0' }),
        mockNode({ id: 'n1' }),
        mockNode({ id: 'n2', allocated: res(6000, 6144) }),
        mockNode({ id: 'n3', allocated: res(4000, 4096) }),
      ];
      const am = mockUnit({ suId: 'am', mostConnected: true });
      // n0 and n1 are cut from each other: n2 and n3 have no broken link; n3 is the less loaded.
      const plan = schedule(mockSnapshot({ nodes: loaded, units: [am], links: [['n0', 'n1']], scopes: { 'app-1': mockScope() } }));
      expect(nodesOf(plan)).to.deep.equal(['n3']);
      // Without the preference (not the first slot), the least loaded node wins.
      const task = schedule(mockSnapshot({ nodes: loaded, units: [{ ...am, mostConnected: false }], links: [['n0', 'n1']], scopes: { 'app-1': mockScope() } }));
      expect(nodesOf(task)).to.deep.equal(['n0']);
    });

    it('takes the fewest broken links when every node has some, ties by load then id', () => {
      const links: Array<[string, string]> = [
        ['n0', 'n1'],
        ['n0', 'n2'],
        ['n1', 'n3'],
        ['n2', 'n3'],
        ['n0', 'n3'],
      ];
      // Degrees: n0 3, n1 2, n2 2, n3 3; n2 is less loaded than n1.
      const loaded = mockNodes(4).map((n) => (n.id === 'n1' ? { ...n, allocated: res(1000, 1024) } : n));
      const plan = schedule(mockSnapshot({ nodes: loaded, units: [mockUnit({ mostConnected: true })], links, scopes: { 'app-1': mockScope() } }));
      expect(nodesOf(plan)).to.deep.equal(['n2']);
    });

    it('is placed as today by an independent app (no scope), whatever the links', () => {
      const plan = schedule(mockSnapshot({ nodes, units: [mockUnit({ mostConnected: true })], links: [['n0', 'n1']] }));
      expect(nodesOf(plan)).to.deep.equal(['n0']);
    });

    it('still reaches the anchors of a restarted AM (the hosts of its workers)', () => {
      const links: Array<[string, string]> = [
        ['n0', 'n3'],
        ['n1', 'n2'],
      ];
      // Every node has one broken link; the workers run on n3, so n0 is out: n1 (ties by id).
      const plan = schedule(mockSnapshot({ nodes, units: [mockUnit({ suId: 'am', mostConnected: true })], links, scopes: { 'app-1': mockScope(['n3']) } }));
      expect(nodesOf(plan)).to.deep.equal(['n1']);
    });
  });
});
