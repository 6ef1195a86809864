import { expect } from 'chai';
import fc from 'fast-check';
import { AM_SU, res, ZERO, type Resource } from '@fuxi/common';
import { AmQueue, amBound, firstPerGroup, needsMore, type QueuedAm } from '../sched-am-queue.js';
import { schedulableTotal } from '../sched-nodes.js';
import { schedule, type Plan, type SchedulerSnapshot, type SchedUnit } from '../scheduler.js';
import { mockNodes, mockSnapshot, mockUnit } from './factories.js';

interface Queued extends QueuedAm {
  unit: SchedUnit;
}

const queued = (u: SchedUnit): Queued => ({
  appId: u.appId,
  quotaGroup: u.quotaGroup,
  priority: u.priority,
  submitSeq: u.submitSeq,
  resource: u.resource,
  unit: u,
});

/** The units as the master queues them: per quota group, added in the order given. */
function queuesOf(units: readonly SchedUnit[]): Map<string, AmQueue<Queued>> {
  const queues = new Map<string, AmQueue<Queued>>();
  for (const u of units) {
    let q = queues.get(u.quotaGroup);
    if (q === undefined) queues.set(u.quotaGroup, (q = new AmQueue<Queued>()));
    q.add(queued(u));
  }
  return queues;
}

const always = () => true;

function amUnit(i: number, over: Partial<SchedUnit> = {}): SchedUnit {
  return mockUnit({
    appId: `app-${String(i).padStart(4, '0')}`,
    suId: AM_SU,
    resource: res(20, 32),
    priority: 1_000_000,
    submitSeq: i,
    requests: { '': 1 },
    ...over,
  });
}

/** The pass as runScheduler makes it: the queued AMs it needs, more when a group may have placed more. */
function planWithQueue(snapshot: SchedulerSnapshot, tasks: SchedUnit[], ams: SchedUnit[]): { plan: Plan; passes: number } {
  const queues = queuesOf(ams);
  let n = amBound(snapshot.amShare, schedulableTotal(snapshot.nodes.values()), firstPerGroup(queues, 1, always).chosen) + 1;
  for (let passes = 1; ; passes++) {
    const pick = firstPerGroup(queues, n, always);
    const plan = schedule({ ...snapshot, units: [...tasks, ...pick.chosen.map((c) => c.unit)] });
    if (!needsMore(pick, plan)) return { plan, passes };
    n *= 2;
  }
}

const sorted = (plan: Plan) => plan.placements.map((p) => `${p.appId}/${p.suId}@${p.nodeId}x${p.slots}`).sort();

describe('scheduler: which queued AMs a pass looks at', () => {
  const nodes = mockNodes(2); // 16 cores, 32 GiB
  const total = schedulableTotal(nodes);

  it('firstPerGroup: per quota group, the first n in the scheduler order (priority, submission, app id)', () => {
    const units = [
      amUnit(5),
      amUnit(1, { quotaGroup: 'b' }),
      amUnit(3),
      amUnit(4, { priority: 2_000_000 }),
      amUnit(2),
      amUnit(0, { quotaGroup: 'b' }),
      amUnit(6, { quotaGroup: 'c' }),
    ];
    const pick = firstPerGroup(queuesOf(units), 2, always);
    const byGroup = (g: string) =>
      pick.chosen
        .filter((c) => c.quotaGroup === g)
        .map((c) => c.appId)
        .sort();
    // app-0004 first by its priority, then app-0002 by submission.
    expect(byGroup('default')).to.deep.equal(['app-0002', 'app-0004']);
    expect(byGroup('b')).to.deep.equal(['app-0000', 'app-0001']);
    expect(byGroup('c')).to.deep.equal(['app-0006']);
    expect([...pick.cut]).to.deep.equal(['default']);
    expect(firstPerGroup(queuesOf(units), Infinity, always).cut.size).to.equal(0);
    // Entries whose AM no longer waits are dropped when met.
    const queues = queuesOf(units);
    const gone = new Set(['app-0004', 'app-0002']);
    expect(
      firstPerGroup(queues, 2, (q) => !gone.has(q.appId))
        .chosen.filter((c) => c.quotaGroup === 'default')
        .map((c) => c.appId),
    ).to.deep.equal(['app-0003', 'app-0005']);
    expect(queues.get('default')?.size).to.equal(2);
  });

  it('amBound: the slots of the smallest queued AM the share has room for; one when none runs; none without a share', () => {
    const q = [amUnit(1), amUnit(2, { resource: res(40, 32) })].map(queued);
    expect(amBound({ share: 0.1, used: ZERO }, total, q)).to.equal(80); // 1,600 m / 20 m
    expect(amBound({ share: 0.1, used: res(1600, 64) }, total, q)).to.equal(0);
    expect(amBound({ share: 0.1, used: ZERO }, total, [queued(amUnit(1, { resource: res(4000, 32) }))])).to.equal(1);
    expect(amBound({ share: 1, used: ZERO }, total, q)).to.equal(Infinity);
    expect(amBound(undefined, total, q)).to.equal(Infinity);
  });

  it('a flood of 10,000 queued AMs: the pass builds about as many as it places, and plans the same', () => {
    const ams = Array.from({ length: 10_000 }, (_, i) => amUnit(i));
    const snapshot = { ...mockSnapshot({ nodes }), amShare: { share: 0.1, used: res(1000, 1000) } };
    const pick = firstPerGroup(queuesOf(ams), amBound(snapshot.amShare, total, [queued(ams[0]!)]) + 1, always);
    expect(pick.chosen.length).to.equal(31); // 600 m left: 30 AMs, and one more
    const { plan, passes } = planWithQueue(snapshot, [], ams);
    expect(passes).to.equal(1);
    expect(sorted(plan)).to.deep.equal(sorted(schedule({ ...snapshot, units: ams })));
  });

  it('a group whose first AMs are refused for another reason (a testbed that does not exist) looks further', () => {
    const ams = [...Array.from({ length: 5 }, (_, i) => amUnit(i, { testbed: 'gone' })), ...Array.from({ length: 5 }, (_, i) => amUnit(10 + i))];
    const snapshot = { ...mockSnapshot({ nodes }), amShare: { share: 0.1, used: res(1540, 1000) } }; // room for 3
    const { plan, passes } = planWithQueue(snapshot, [], ams);
    expect(passes).to.be.greaterThan(1);
    expect(sorted(plan)).to.deep.equal(sorted(schedule({ ...snapshot, units: ams })));
    expect(plan.placements.map((p) => p.appId).sort()).to.deep.equal(['app-0010', 'app-0011', 'app-0012']);
  });

  it('property: the plan is the one every queued AM would have given', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            group: fc.constantFrom('a', 'b', 'c'),
            cpu: fc.constantFrom(20, 40, 100, 900),
            priority: fc.constantFrom(1_000_000, 2_000_000),
            testbed: fc.boolean(),
            seq: fc.integer({ min: 0, max: 50 }),
          }),
          { maxLength: 60 },
        ),
        fc.integer({ min: 0, max: 20 }),
        fc.double({ min: 0.01, max: 1, noNaN: true }),
        fc.integer({ min: 0, max: 1600 }),
        fc.option(fc.integer({ min: 100, max: 3000 }), { nil: undefined }),
        (specs, taskCount, share, usedCpu, limitB) => {
          const ams = specs.map((s, i) =>
            amUnit(i, {
              quotaGroup: s.group,
              resource: res(s.cpu, 32),
              priority: s.priority,
              submitSeq: s.seq,
              ...(s.testbed && i % 3 === 0 ? { testbed: 'gone' } : {}),
            }),
          );
          const tasks = Array.from({ length: taskCount }, (_, i) =>
            mockUnit({ appId: `task-${i}`, suId: 't', resource: res(1000, 64), submitSeq: i, quotaGroup: i % 2 ? 'a' : 'b', requests: { '': 2 } }),
          );
          const used: Resource = usedCpu === 0 ? ZERO : res(usedCpu, 64);
          const snapshot = {
            ...mockSnapshot({ nodes, groups: limitB === undefined ? [] : [{ name: 'b', weight: 1, limit: res(limitB, 100_000) }] }),
            amShare: { share, used },
          };
          const { plan } = planWithQueue(snapshot, tasks, ams);
          expect(sorted(plan)).to.deep.equal(sorted(schedule({ ...snapshot, units: [...tasks, ...ams] })));
        },
      ),
      { numRuns: 300 },
    );
  });
});
