import { expect } from 'chai';
import fc from 'fast-check';
import { add, fits, res, scale, sub } from '@fuxi/common';
import { schedule } from '../scheduler.js';
import type { Plan, SchedNode, SchedulerSnapshot, SchedUnit } from '../scheduler.js';
import { mockNode, mockNodes, mockSnapshot, mockUnit, placedByNode, slotsByUnit, unitKey } from './factories.js';

const SLOT = res(1000, 1024);

function expectNoOverCommit(snapshot: SchedulerSnapshot, plan: Plan): void {
  for (const [id, placed] of placedByNode(snapshot, plan)) {
    const node = snapshot.nodes.get(id)!;
    expect(fits(add(node.allocated, placed), node.capacity), `node ${id} over-committed`).to.equal(true);
  }
}

describe('scheduler: gang scheduling', () => {
  it('places a gang whole when it fits', () => {
    const plan = schedule(mockSnapshot({ nodes: mockNodes(2, 1, { capacity: res(2000, 2048) }), units: [mockUnit({ requests: { '': 4 }, gang: 4 })] }));
    expect(slotsByUnit(plan).get('app-1/su-1')).to.equal(4);
    expect(plan.unsatisfied).to.deep.equal([]);
  });

  it('places nothing of a gang that does not fit, and says why', () => {
    const snap = mockSnapshot({ nodes: mockNodes(2, 1, { capacity: res(2000, 2048) }), units: [mockUnit({ requests: { '': 5 }, gang: 5 })] });
    const plan = schedule(snap);
    expect(plan.placements).to.deep.equal([]);
    expect(plan.unsatisfied).to.deep.equal([{ appId: 'app-1', suId: 'su-1', slots: 5, reason: 'no-capacity' }]);
  });

  it('gives the room a gang could not use to the units after it, as if it had not been tried', () => {
    const nodes = mockNodes(3, 1, { capacity: res(2000, 2048) });
    const big = mockUnit({ appId: 'big', requests: { '': 7 }, gang: 7, submitSeq: 0 });
    const small = mockUnit({ appId: 'small', requests: { '': 6 }, submitSeq: 1 });
    const plan = schedule(mockSnapshot({ nodes, units: [big, small] }));
    expect(slotsByUnit(plan).get('big/su-1')).to.equal(undefined);
    expect(slotsByUnit(plan).get('small/su-1')).to.equal(6);
    const alone = schedule(mockSnapshot({ nodes, units: [small] }));
    expect(plan.placements).to.deep.equal(alone.placements);
  });

  it('places at least k at once, the rest one by one (minInstances below instances)', () => {
    // Room for 3: a 2-gang of 5 gets 3 (2 together, 1 more), the other 2 are unsatisfied.
    const plan = schedule(mockSnapshot({ nodes: mockNodes(3, 1, { capacity: SLOT }), units: [mockUnit({ requests: { '': 5 }, gang: 2 })] }));
    expect(slotsByUnit(plan).get('app-1/su-1')).to.equal(3);
    expect(plan.unsatisfied).to.deep.equal([{ appId: 'app-1', suId: 'su-1', slots: 2, reason: 'no-capacity' }]);
  });

  it('refuses a gang its quota group cannot hold whole', () => {
    const plan = schedule(
      mockSnapshot({
        nodes: mockNodes(4, 1, { capacity: res(4000, 4096) }),
        units: [mockUnit({ requests: { '': 4 }, gang: 4, quotaGroup: 'q' })],
        groups: [{ name: 'q', weight: 1, limit: res(3000, 3072) }],
      }),
    );
    expect(plan.placements).to.deep.equal([]);
    expect(plan.unsatisfied).to.deep.equal([{ appId: 'app-1', suId: 'su-1', slots: 4, reason: 'quota-limit' }]);
  });

  it('serves node and rack requests of a gang and undoes all of them when it falls short', () => {
    const nodes = [mockNode({ id: 'a', rack: 'r0', capacity: SLOT }), mockNode({ id: 'b', rack: 'r1', capacity: SLOT })];
    const unit = mockUnit({ requests: { 'node:a': 1, 'rack:r1': 1, '': 1 }, gang: 3 });
    const plan = schedule(mockSnapshot({ nodes, units: [unit] }));
    expect(plan.placements).to.deep.equal([]);
    expect(plan.unsatisfied).to.deep.equal([{ appId: 'app-1', suId: 'su-1', slots: 3, reason: 'no-capacity' }]);
    const fits2 = schedule(mockSnapshot({ nodes, units: [mockUnit({ requests: { 'node:a': 1, 'rack:r1': 1 }, gang: 2 })] }));
    expect(fits2.placements.map((p) => [p.nodeId, p.localityLevel])).to.deep.equal([
      ['a', 'node'],
      ['b', 'rack'],
    ]);
  });

  it('of two gangs that each fit alone but not together, grants the earlier whole and nothing of the other', () => {
    const nodes = mockNodes(2, 1, { capacity: res(2000, 2048) });
    const a = mockUnit({ appId: 'a', requests: { '': 3 }, gang: 3, submitSeq: 1 });
    const b = mockUnit({ appId: 'b', requests: { '': 3 }, gang: 3, submitSeq: 0 });
    const plan = schedule(mockSnapshot({ nodes, units: [a, b] }));
    expect(slotsByUnit(plan).get('b/su-1')).to.equal(3);
    expect(slotsByUnit(plan).get('a/su-1')).to.equal(undefined);
  });

  describe('properties', () => {
    const RUNS = { numRuns: 150 };

    const nodesArb: fc.Arbitrary<SchedNode[]> = fc
      .array(fc.record({ rack: fc.constantFrom('r0', 'r1'), cpu: fc.integer({ min: 0, max: 6 }), mem: fc.integer({ min: 0, max: 6 }) }), {
        minLength: 1,
        maxLength: 6,
      })
      .map((ns) => ns.map((n, i) => mockNode({ id: `n${i}`, rack: n.rack, capacity: res(n.cpu * 500, n.mem * 512) })));

    interface Job {
      unit: SchedUnit;
      /** Slots the whole task needs; gang size (1: no gang). */
      size: number;
      gang: number;
      /** Passes each slot runs before it is freed (all at once when the job finishes). */
      runs: number;
    }

    const jobsArb: fc.Arbitrary<Job[]> = fc
      .array(
        fc.record({
          cpu: fc.integer({ min: 1, max: 3 }),
          mem: fc.integer({ min: 1, max: 3 }),
          size: fc.integer({ min: 1, max: 8 }),
          gangAll: fc.boolean(),
          gangPart: fc.integer({ min: 1, max: 8 }),
          priority: fc.integer({ min: 0, max: 1 }),
          group: fc.constantFrom('g0', 'g1'),
          loc: fc.constantFrom('', 'node:n0', 'rack:r1'),
          runs: fc.integer({ min: 1, max: 3 }),
        }),
        { minLength: 1, maxLength: 6 },
      )
      .map((js) =>
        js.map((j, i) => ({
          size: j.size,
          gang: j.gangAll ? j.size : Math.min(j.gangPart, j.size),
          runs: j.runs,
          unit: mockUnit({
            appId: `app-${i}`,
            resource: res(j.cpu * 500, j.mem * 512),
            priority: j.priority,
            quotaGroup: j.group,
            submitSeq: i,
            requests: { [j.loc]: j.size },
          }),
        })),
      );

    /**
     * Runs `passes` scheduling passes over a cluster: granted slots are held; a job that holds all
     * its slots runs `runs` passes and then frees them all. Calls `check` after every pass.
     */
    function simulate(
      nodes: SchedNode[],
      jobs: Job[],
      passes: number,
      check: (plan: Plan, snap: SchedulerSnapshot, held: Map<string, number>) => void,
    ): Map<string, number> {
      const alloc = new Map(nodes.map((n) => [n.id, n.allocated]));
      const held = new Map<string, number>();
      const where = new Map<string, Map<string, number>>();
      const left = new Map(jobs.map((j) => [unitKey(j.unit), j.runs]));
      const finished = new Map<string, number>();
      for (let pass = 0; pass < passes; pass++) {
        const units: SchedUnit[] = [];
        for (const j of jobs) {
          const k = unitKey(j.unit);
          const h = held.get(k) ?? 0;
          if (finished.has(k) || h >= j.size) continue;
          const [loc] = [...j.unit.requests.keys()];
          const unit: SchedUnit = { ...j.unit, requests: new Map([[loc ?? '', j.size - h]]) };
          if (j.gang - h > 1) unit.gang = j.gang - h;
          units.push(unit);
        }
        const snap = mockSnapshot({ nodes: nodes.map((n) => ({ ...n, allocated: alloc.get(n.id)! })), units });
        const plan = schedule(snap);
        for (const p of plan.placements) {
          const k = unitKey(p);
          held.set(k, (held.get(k) ?? 0) + p.slots);
          const w = where.get(k) ?? new Map<string, number>();
          w.set(p.nodeId, (w.get(p.nodeId) ?? 0) + p.slots);
          where.set(k, w);
          const j = jobs.find((x) => unitKey(x.unit) === k)!;
          alloc.set(p.nodeId, add(alloc.get(p.nodeId)!, scale(j.unit.resource, p.slots)));
        }
        check(plan, snap, held);
        // Jobs holding all their slots run, then free them.
        for (const j of jobs) {
          const k = unitKey(j.unit);
          if ((held.get(k) ?? 0) < j.size || finished.has(k)) continue;
          const n = left.get(k)! - 1;
          left.set(k, n);
          if (n > 0) continue;
          finished.set(k, pass);
          for (const [nodeId, slots] of where.get(k) ?? []) alloc.set(nodeId, sub(alloc.get(nodeId)!, scale(j.unit.resource, slots)));
          held.set(k, 0);
        }
      }
      return finished;
    }

    it('no pass leaves a gang with granted slots between 0 and its gang size, exclusive, nor over-commits a node', () => {
      fc.assert(
        fc.property(nodesArb, jobsArb, (nodes, jobs) => {
          simulate(nodes, jobs, 8, (plan, snap, held) => {
            expectNoOverCommit(snap, plan);
            for (const j of jobs) {
              const h = held.get(unitKey(j.unit)) ?? 0;
              expect(h === 0 || h >= j.gang, `${unitKey(j.unit)} holds ${h} of a gang of ${j.gang}`).to.equal(true);
            }
          });
        }),
        RUNS,
      );
    });

    it('two gangs that each fit alone but not together both finish, one after the other, beside smaller jobs', () => {
      fc.assert(
        fc.property(
          fc.integer({ min: 1, max: 5 }),
          fc.integer({ min: 1, max: 3 }),
          fc.integer({ min: 0, max: 1000 }),
          fc.array(fc.record({ size: fc.integer({ min: 1, max: 3 }), seq: fc.integer({ min: 0, max: 4 }), runs: fc.integer({ min: 1, max: 3 }) }), {
            maxLength: 4,
          }),
          (nodeCount, perNode, pick, smalls) => {
            const total = nodeCount * perNode;
            // Gang sizes a, b <= total with a + b > total.
            const a = 1 + (pick % total);
            const b = Math.max(total - a + 1, 1 + (Math.floor(pick / 7) % total));
            const nodes = mockNodes(nodeCount, 2, { capacity: scale(SLOT, perNode) });
            const gang = (id: string, size: number, seq: number): Job => ({
              size,
              gang: size,
              runs: 2,
              unit: mockUnit({ appId: id, requests: { '': size }, submitSeq: seq }),
            });
            const jobs: Job[] = [
              gang('ga', a, 1),
              gang('gb', b, 2),
              ...smalls.map((s, i) => ({
                size: Math.min(s.size, total),
                gang: 1,
                runs: s.runs,
                unit: mockUnit({ appId: `s${i}`, requests: { '': Math.min(s.size, total) }, submitSeq: s.seq }),
              })),
            ];
            const passes = 2 * (jobs.length * 3 + 2);
            const finished = simulate(nodes, jobs, passes, () => {});
            expect(finished.has('ga/su-1'), 'first gang finished').to.equal(true);
            expect(finished.has('gb/su-1'), 'second gang finished').to.equal(true);
          },
        ),
        RUNS,
      );
    });
  });
});
