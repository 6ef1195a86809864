import { expect } from 'chai';
import fc from 'fast-check';
import { add, dominantShare, fits, isZero, res, slotsThatFit, sub, ZERO } from '@fuxi/common';
import type { Resource } from '@fuxi/common';
import { schedule } from '../scheduler.js';
import type { PlacementScope, Placement, Plan, QuotaGroup, Reach, SchedNode, SchedulerSnapshot, SchedUnit, UnsatisfiedReason } from '../scheduler.js';
import { mockReach, mockScope, mockSnapshot, placedByGroup, placedByNode, slotsByUnit, unitKey } from './factories.js';

const RUNS = { numRuns: 200 };
const NODE_IDS = ['n0', 'n1', 'n2', 'n3', 'n4', 'n5', 'n6', 'n7'];
const LOCATIONS = ['', 'node:n0', 'node:n1', 'node:n2', 'node:n5', 'node:ghost', 'rack:r0', 'rack:r1', 'rack:r2', 'rack:nowhere'];
const GROUPS = ['g0', 'g1', 'g2'];

// Small clusters: a node holds a handful of slots, so capacity is often scarce.
const resource = (maxCpu: number, maxMem: number): fc.Arbitrary<Resource> =>
  fc.record({ cpu: fc.integer({ min: 0, max: maxCpu }), mem: fc.integer({ min: 0, max: maxMem }) }).map(({ cpu, mem }) => res(cpu * 500, mem * 512));

const nodesArb: fc.Arbitrary<SchedNode[]> = fc
  .array(
    fc.record({
      rack: fc.constantFrom('r0', 'r1', 'r2'),
      capacity: resource(8, 8),
      allocated: resource(6, 6), // sometimes more than the capacity: such a node must get nothing
      schedulable: fc.integer({ min: 0, max: 3 }).map((v) => v > 0), // mostly schedulable
    }),
    { maxLength: NODE_IDS.length },
  )
  .map((ns) => ns.map((n, i) => ({ id: NODE_IDS[i] ?? `n${i}`, ...n })));

const unitsArb: fc.Arbitrary<SchedUnit[]> = fc
  .array(
    fc.record({
      resource: resource(4, 4),
      priority: fc.integer({ min: 0, max: 2 }),
      quotaGroup: fc.constantFrom(...GROUPS),
      submitSeq: fc.integer({ min: 0, max: 5 }),
      requests: fc.array(fc.tuple(fc.constantFrom(...LOCATIONS), fc.integer({ min: 1, max: 8 })), { minLength: 1, maxLength: 4 }),
    }),
    { maxLength: 6 },
  )
  .map((us) =>
    us.map(({ requests, ...u }, i) => {
      const m = new Map<string, number>();
      for (const [loc, n] of requests) m.set(loc, (m.get(loc) ?? 0) + n);
      return { appId: `app-${i % 3}`, suId: `su-${i}`, ...u, requests: m };
    }),
  );

const groupsArb: fc.Arbitrary<QuotaGroup[]> = fc
  .tuple(
    ...GROUPS.map((name) =>
      fc.option(
        fc
          .record({ weight: fc.integer({ min: 1, max: 4 }), limit: fc.option(resource(16, 16), { nil: undefined }) })
          .map(({ weight, limit }) => (limit === undefined ? { name, weight } : { name, weight, limit })),
        { nil: undefined },
      ),
    ),
  )
  .map((gs) => gs.filter((g): g is QuotaGroup => g !== undefined));

const usageArb: fc.Arbitrary<Record<string, Resource>> = fc
  .tuple(...GROUPS.map(() => fc.option(resource(8, 8), { nil: undefined })))
  .map((us) => Object.fromEntries(us.flatMap((u, i) => (u === undefined ? [] : [[GROUPS[i] ?? '', u]]))));

const snapshotArb: fc.Arbitrary<SchedulerSnapshot> = fc
  .record({ nodes: nodesArb, units: unitsArb, groups: groupsArb, groupUsage: usageArb })
  .map((parts) => mockSnapshot(parts));

/** Look-alike nodes, two slot shapes, small weights: exact ties in load and share are common. */
const uniformArb: fc.Arbitrary<SchedulerSnapshot> = fc
  .record({
    nodes: fc.array(fc.tuple(fc.constantFrom('r0', 'r1'), fc.boolean()), { maxLength: 6 }).map((ns) =>
      ns.map(([rack, busy], i) => ({
        id: NODE_IDS[i] ?? `n${i}`,
        rack,
        capacity: res(2000, 2048),
        allocated: busy ? res(1000, 1024) : ZERO,
        schedulable: true,
      })),
    ),
    units: fc.array(
      fc.record({
        big: fc.boolean(),
        quotaGroup: fc.constantFrom(...GROUPS),
        requests: fc.array(fc.tuple(fc.constantFrom('', 'node:n0', 'rack:r1'), fc.integer({ min: 1, max: 6 })), { minLength: 1, maxLength: 2 }),
      }),
      { maxLength: 5 },
    ),
    weights: fc.tuple(fc.constantFrom(1, 2), fc.constantFrom(1, 2), fc.constantFrom(1, 2)),
  })
  .map(({ nodes, units, weights }) =>
    mockSnapshot({
      nodes,
      units: units.map(({ big, quotaGroup, requests }, i) => ({
        appId: `app-${i}`,
        suId: 'su',
        quotaGroup,
        priority: 0,
        submitSeq: i,
        resource: big ? res(1000, 1024) : res(500, 512),
        requests: new Map(requests.map(([loc, n]) => [loc, n])),
      })),
      groups: GROUPS.map((name, i) => ({ name, weight: weights[i] ?? 1 })),
    }),
  );

/** Free room on each node after the plan. */
function freeAfter(snap: SchedulerSnapshot, plan: Plan): Map<string, Resource> {
  const placed = placedByNode(snap, plan);
  return new Map([...snap.nodes.values()].map((n) => [n.id, sub(n.capacity, add(n.allocated, placed.get(n.id) ?? ZERO))]));
}

function canHost(node: SchedNode, free: Resource, slot: Resource): boolean {
  return node.schedulable && !isZero(node.capacity) && fits(slot, free);
}

describe('scheduler properties', () => {
  it('never over-commits a node', () => {
    fc.assert(
      fc.property(snapshotArb, (snap) => {
        const plan = schedule(snap);
        for (const [id, placed] of placedByNode(snap, plan)) {
          const n = snap.nodes.get(id);
          expect(n, id).to.not.equal(undefined);
          if (n) expect(fits(add(n.allocated, placed), n.capacity), `node ${id}`).to.equal(true);
        }
      }),
      RUNS,
    );
  });

  it('places only on schedulable nodes with capacity, with positive slot counts', () => {
    fc.assert(
      fc.property(snapshotArb, (snap) => {
        for (const p of schedule(snap).placements) {
          const n = snap.nodes.get(p.nodeId);
          expect(n?.schedulable, p.nodeId).to.equal(true);
          expect(isZero(n?.capacity ?? ZERO)).to.equal(false);
          expect(Number.isInteger(p.slots) && p.slots > 0).to.equal(true);
        }
      }),
      RUNS,
    );
  });

  it('never over-satisfies a (unit, location) and accounts for every requested slot', () => {
    fc.assert(
      fc.property(snapshotArb, (snap) => {
        const plan = schedule(snap);
        const byLoc = slotsByUnit(plan, true);
        const missing = new Map<string, number>();
        for (const u of plan.unsatisfied) missing.set(unitKey(u), (missing.get(unitKey(u)) ?? 0) + u.slots);
        for (const u of snap.units) {
          let asked = 0;
          for (const [loc, n] of u.requests) {
            expect(byLoc.get(`${unitKey(u)}@${loc}`) ?? 0).to.be.at.most(n);
            asked += n;
          }
          expect((slotsByUnit(plan).get(unitKey(u)) ?? 0) + (missing.get(unitKey(u)) ?? 0), unitKey(u)).to.equal(asked);
        }
      }),
      RUNS,
    );
  });

  it('never exceeds a group limit', () => {
    fc.assert(
      fc.property(snapshotArb, (snap) => {
        const placed = placedByGroup(snap, schedule(snap));
        for (const g of snap.groups.values()) {
          const got = placed.get(g.name) ?? ZERO;
          if (g.limit === undefined || isZero(got)) continue;
          expect(fits(add(snap.groupUsage.get(g.name) ?? ZERO, got), g.limit), g.name).to.equal(true);
        }
      }),
      RUNS,
    );
  });

  it('is maximal: a unit left short for capacity fits on no node afterwards', () => {
    fc.assert(
      fc.property(snapshotArb, (snap) => {
        const plan = schedule(snap);
        const free = freeAfter(snap, plan);
        const units = new Map(snap.units.map((u) => [unitKey(u), u]));
        for (const miss of plan.unsatisfied.filter((u) => u.reason === 'no-capacity')) {
          const u = units.get(unitKey(miss));
          if (u === undefined) throw new Error(`unknown unit ${unitKey(miss)}`);
          for (const n of snap.nodes.values()) {
            expect(canHost(n, free.get(n.id) ?? ZERO, u.resource), `${unitKey(u)} fits on ${n.id}`).to.equal(false);
          }
        }
        // And a unit short on quota really is at its group's limit for one more slot.
        const placed = placedByGroup(snap, plan);
        for (const miss of plan.unsatisfied.filter((u) => u.reason === 'quota-limit')) {
          const u = units.get(unitKey(miss));
          const limit = u && snap.groups.get(u.quotaGroup)?.limit;
          expect(limit, unitKey(miss)).to.not.equal(undefined);
          if (u && limit) {
            const used = add(snap.groupUsage.get(u.quotaGroup) ?? ZERO, placed.get(u.quotaGroup) ?? ZERO);
            expect(fits(add(used, u.resource), limit)).to.equal(false);
          }
        }
      }),
      RUNS,
    );
  });

  it('relaxes locality only when the preferred place is full', () => {
    fc.assert(
      fc.property(snapshotArb, (snap) => {
        const plan = schedule(snap);
        const free = freeAfter(snap, plan);
        const units = new Map(snap.units.map((u) => [unitKey(u), u]));
        for (const p of plan.placements) {
          const slot = units.get(unitKey(p))?.resource ?? ZERO;
          const landed = snap.nodes.get(p.nodeId);
          if (p.location.startsWith('node:')) {
            const wanted = snap.nodes.get(p.location.slice(5));
            if (wanted === undefined) {
              expect(p.localityLevel).to.equal('any');
              continue;
            }
            if (p.localityLevel === 'node') expect(p.nodeId).to.equal(wanted.id);
            else expect(canHost(wanted, free.get(wanted.id) ?? ZERO, slot), `${p.location} had room`).to.equal(false);
            if (p.localityLevel === 'rack') expect(landed?.rack).to.equal(wanted.rack);
            if (p.localityLevel === 'any') {
              for (const n of snap.nodes.values()) if (n.rack === wanted.rack) expect(canHost(n, free.get(n.id) ?? ZERO, slot)).to.equal(false);
            }
          } else if (p.location.startsWith('rack:')) {
            const rack = p.location.slice(5);
            expect(p.localityLevel).to.not.equal('node');
            if (p.localityLevel === 'rack') expect(landed?.rack).to.equal(rack);
            else for (const n of snap.nodes.values()) if (n.rack === rack) expect(canHost(n, free.get(n.id) ?? ZERO, slot)).to.equal(false);
          } else {
            expect(p.localityLevel).to.equal('any');
          }
        }
      }),
      RUNS,
    );
  });

  it('is deterministic and independent of input order', () => {
    fc.assert(
      fc.property(snapshotArb, fc.integer(), (snap, seed) => {
        const plan = schedule(snap);
        expect(schedule(snap)).to.deep.equal(plan);
        const shuffled: SchedulerSnapshot = {
          nodes: new Map(shuffle([...snap.nodes], seed)),
          units: shuffle([...snap.units], seed + 1),
          groups: new Map(shuffle([...snap.groups], seed + 2)),
          groupUsage: new Map(shuffle([...snap.groupUsage], seed + 3)),
        };
        expect(schedule(shuffled)).to.deep.equal(plan);
      }),
      RUNS,
    );
  });

  it('merges placements per (unit, node, location)', () => {
    fc.assert(
      fc.property(snapshotArb, (snap) => {
        const keys = schedule(snap).placements.map((p) => `${unitKey(p)}|${p.nodeId}|${p.location}`);
        expect(new Set(keys).size).to.equal(keys.length);
      }),
      RUNS,
    );
  });

  it('makes exactly the choices of the one-slot-at-a-time reference (batching changes nothing)', () => {
    fc.assert(
      fc.property(snapshotArb, (snap) => {
        expect(sorted(schedule(snap))).to.deep.equal(sorted(referenceSchedule(snap)));
      }),
      { numRuns: 500 },
    );
    fc.assert(
      fc.property(uniformArb, (snap) => {
        expect(sorted(schedule(snap))).to.deep.equal(sorted(referenceSchedule(snap)));
      }),
      { numRuns: 500 },
    );
  });

  it('gives a lone group everything that fits (fair share never idles capacity)', () => {
    fc.assert(
      fc.property(nodesArb, fc.integer({ min: 1, max: 4 }), fc.integer({ min: 1, max: 40 }), (nodes, cores, slots) => {
        const slot = res(cores * 500, 512);
        const snap = mockSnapshot({
          nodes,
          units: [{ appId: 'a', suId: 's', resource: slot, priority: 0, quotaGroup: 'g', submitSeq: 0, requests: new Map([['', slots]]) }],
        });
        const plan = schedule(snap);
        let room = 0;
        for (const n of nodes) {
          if (!n.schedulable || isZero(n.capacity)) continue;
          room += slotsThatFit(slot, sub(n.capacity, n.allocated));
        }
        expect(slotsByUnit(plan).get('a/s') ?? 0).to.equal(Math.min(room, slots));
      }),
      RUNS,
    );
  });
});

// ---- with reachability ----------------------------------------------------------------------

const APPS = ['app-0', 'app-1', 'app-2'];

/** Random broken links among the nodes (a few, or many: sometimes no node reaches every other). */
const linksArb: fc.Arbitrary<Array<[string, string]>> = fc
  .array(fc.tuple(fc.constantFrom(...NODE_IDS), fc.constantFrom(...NODE_IDS)), { maxLength: 10 })
  .map((ls) => ls.filter(([a, b]) => a !== b));

const scopeArb: fc.Arbitrary<PlacementScope> = fc
  .record({ anchors: fc.subarray([...NODE_IDS, 'ghost'], { maxLength: 3 }), avoid: fc.subarray(NODE_IDS, { maxLength: 2 }) })
  .map(({ anchors, avoid }) => mockScope(anchors, avoid));

/** The snapshots above with broken links, some apps connected (a scope) and some units first slots (mostConnected). */
const reachArb: fc.Arbitrary<SchedulerSnapshot> = fc
  .record({
    snap: snapshotArb,
    links: linksArb,
    scopes: fc.tuple(...APPS.map(() => fc.option(scopeArb, { nil: undefined }))),
    first: fc.array(fc.boolean(), { minLength: 6, maxLength: 6 }),
    peersKnown: fc.boolean(),
  })
  .map(({ snap, links, scopes, first, peersKnown }) => ({
    ...snap,
    units: snap.units.map((u, i) => (first[i] === true ? { ...u, mostConnected: true } : u)),
    reach: peersKnown ? mockReach(links) : withoutPeers(mockReach(links)),
    scopes: new Map(scopes.flatMap((sc, i) => (sc === undefined ? [] : [[APPS[i] ?? '', sc] as const]))),
  }));

/** The nodes an app's slots must reach after the plan: its scope's anchors (bar avoided ones) and every node the plan gave it. */
function anchorsAfter(snap: SchedulerSnapshot, plan: Plan, appId: string): Set<string> {
  const sc = snap.scopes?.get(appId);
  const out = new Set([...(sc?.anchors ?? [])].filter((a) => !sc?.avoid.has(a)));
  for (const p of plan.placements) if (p.appId === appId) out.add(p.nodeId);
  return out;
}

/** The same reachability, checked anchor by anchor (no list of a node's broken links). */
function withoutPeers(r: Reach): Reach {
  return { reachable: (a, b) => r.reachable(a, b), brokenDegree: (id) => r.brokenDegree(id) };
}

function withoutConnectivity(snap: SchedulerSnapshot): SchedulerSnapshot {
  return { nodes: snap.nodes, units: snap.units, groups: snap.groups, groupUsage: snap.groupUsage };
}

describe('scheduler properties with reachability', () => {
  it('never places a connected app on a node it avoids or that cannot reach one of its anchors (or its other new slots)', () => {
    fc.assert(
      fc.property(reachArb, (snap) => {
        const plan = schedule(snap);
        for (const [appId, sc] of snap.scopes ?? []) {
          const anchors = anchorsAfter(snap, plan, appId);
          for (const p of plan.placements.filter((x) => x.appId === appId)) {
            expect(sc.avoid.has(p.nodeId), `${appId} on avoided ${p.nodeId}`).to.equal(false);
            for (const a of anchors) expect(snap.reach?.reachable(p.nodeId, a), `${appId} on ${p.nodeId}, cut from ${a}`).to.equal(true);
          }
        }
      }),
      RUNS,
    );
  });

  it('leaves independent apps as they were: with no connected app, broken links change nothing', () => {
    fc.assert(
      fc.property(reachArb, (snap) => {
        const independent = { ...snap, scopes: new Map<string, PlacementScope>() };
        expect(schedule(independent)).to.deep.equal(schedule(withoutConnectivity(snap)));
      }),
      RUNS,
    );
  });

  it('places exactly as without connectivity when no link is broken and nothing is avoided', () => {
    fc.assert(
      fc.property(reachArb, (snap) => {
        const scopes = new Map([...(snap.scopes ?? [])].map(([id, sc]) => [id, mockScope([...sc.anchors])]));
        const whole = { ...snap, reach: mockReach([]), scopes };
        expect(schedule(whole)).to.deep.equal(schedule(withoutConnectivity(snap)));
      }),
      RUNS,
    );
  });

  it('keeps the capacity invariants and accounts for every requested slot', () => {
    fc.assert(
      fc.property(reachArb, (snap) => {
        const plan = schedule(snap);
        for (const [id, placed] of placedByNode(snap, plan)) {
          const n = snap.nodes.get(id);
          expect(n?.schedulable, id).to.equal(true);
          if (n) expect(fits(add(n.allocated, placed), n.capacity), `node ${id}`).to.equal(true);
        }
        const missing = new Map<string, number>();
        for (const u of plan.unsatisfied) missing.set(unitKey(u), (missing.get(unitKey(u)) ?? 0) + u.slots);
        for (const u of snap.units) {
          const asked = [...u.requests.values()].reduce((a, b) => a + b, 0);
          expect((slotsByUnit(plan).get(unitKey(u)) ?? 0) + (missing.get(unitKey(u)) ?? 0), unitKey(u)).to.equal(asked);
        }
      }),
      RUNS,
    );
  });

  it("is maximal: a unit left short as 'unreachable' is connected and fits on no node its scope allows afterwards", () => {
    fc.assert(
      fc.property(reachArb, (snap) => {
        const plan = schedule(snap);
        const free = freeAfter(snap, plan);
        const units = new Map(snap.units.map((u) => [unitKey(u), u]));
        for (const miss of plan.unsatisfied.filter((u) => u.reason === 'unreachable')) {
          const u = units.get(unitKey(miss));
          const sc = snap.scopes?.get(miss.appId);
          expect(sc, `${unitKey(miss)} is connected`).to.not.equal(undefined);
          if (u === undefined || sc === undefined) continue;
          const anchors = anchorsAfter(snap, plan, miss.appId);
          for (const n of snap.nodes.values()) {
            if (!canHost(n, free.get(n.id) ?? ZERO, u.resource)) continue;
            const ok = !sc.avoid.has(n.id) && [...anchors].every((a) => snap.reach?.reachable(n.id, a) !== false);
            expect(ok, `${unitKey(u)} fits on ${n.id}, which its scope allows`).to.equal(false);
          }
        }
        for (const miss of plan.unsatisfied.filter((u) => u.reason === 'no-capacity')) {
          const u = units.get(unitKey(miss));
          if (u) for (const n of snap.nodes.values()) expect(canHost(n, free.get(n.id) ?? ZERO, u.resource), `${unitKey(u)} fits on ${n.id}`).to.equal(false);
        }
      }),
      RUNS,
    );
  });

  it('makes exactly the choices of the one-slot-at-a-time reference, and is independent of input order', () => {
    fc.assert(
      fc.property(reachArb, fc.integer(), (snap, seed) => {
        const plan = schedule(snap);
        expect(sorted(plan)).to.deep.equal(sorted(referenceSchedule(snap)));
        const shuffled: SchedulerSnapshot = {
          ...snap,
          nodes: new Map(shuffle([...snap.nodes], seed)),
          units: shuffle([...snap.units], seed + 1),
          scopes: new Map(shuffle([...(snap.scopes ?? [])], seed + 2)),
        };
        expect(schedule(shuffled)).to.deep.equal(plan);
      }),
      { numRuns: 500 },
    );
  });
});

/**
 * The specification, executed naively: one slot per turn, linear scans everywhere. schedule()
 * batches turns and uses heaps, and must produce exactly this plan.
 */
function referenceSchedule(snap: SchedulerSnapshot): Plan {
  const nodes = [...snap.nodes.values()].filter((n) => n.schedulable && !isZero(n.capacity));
  // Connectivity: a connected app (with a scope) takes only nodes it does not avoid that reach
  // every anchor (its scope's, bar avoided ones, and every node this plan gave it); its
  // mostConnected units prefer the fewest broken links.
  const reach = snap.reach;
  const anchors = new Map<string, Set<string>>();
  for (const [appId, sc] of snap.scopes ?? []) anchors.set(appId, new Set([...sc.anchors].filter((a) => !sc.avoid.has(a))));
  const allowed = (u: SchedUnit, n: SchedNode): boolean => {
    const sc = snap.scopes?.get(u.appId);
    if (sc === undefined) return true;
    return !sc.avoid.has(n.id) && [...(anchors.get(u.appId) ?? [])].every((a) => reach === undefined || reach.reachable(n.id, a));
  };
  const degree = (u: SchedUnit, n: SchedNode): number => (u.mostConnected === true && snap.scopes?.has(u.appId) && reach ? reach.brokenDegree(n.id) : 0);
  const alloc = new Map(nodes.map((n) => [n.id, n.allocated]));
  const total = nodes.reduce((t, n) => add(t, n.capacity), ZERO);
  const load = (n: SchedNode): number => dominantShare(alloc.get(n.id) ?? ZERO, n.capacity);
  const room = (n: SchedNode, r: Resource): boolean => fits(r, sub(n.capacity, alloc.get(n.id) ?? ZERO));
  const kind = (loc: string): number => (loc.startsWith('node:') && snap.nodes.has(loc.slice(5)) ? 0 : loc.startsWith('rack:') ? 1 : 2);
  const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
  const usage = new Map<string, Resource>();
  const todo = snap.units.map((u) => ({
    u,
    reqs: [...u.requests]
      .filter(([, n]) => n > 0)
      .map(([loc, n]) => ({ loc, n }))
      .sort((a, b) => kind(a.loc) - kind(b.loc) || cmp(a.loc, b.loc)),
  }));
  todo.sort((a, b) => b.u.priority - a.u.priority || a.u.submitSeq - b.u.submitSeq || cmp(a.u.appId, b.u.appId) || cmp(a.u.suId, b.u.suId));
  const placements = new Map<string, Placement>();
  const unsatisfied = new Map<string, Plan['unsatisfied'][number]>();
  const miss = (u: SchedUnit, slots: number, reason: UnsatisfiedReason): void => {
    const k = `${unitKey(u)}|${reason}`;
    const m = unsatisfied.get(k) ?? { appId: u.appId, suId: u.suId, slots: 0, reason };
    m.slots += slots;
    unsatisfied.set(k, m);
  };
  const best = (u: SchedUnit, ns: SchedNode[], r: Resource): SchedNode | undefined =>
    ns.filter((n) => room(n, r) && allowed(u, n)).sort((a, b) => degree(u, a) - degree(u, b) || load(a) - load(b) || cmp(a.id, b.id))[0];
  for (;;) {
    const open = todo.filter((t) => t.reqs.some((q) => q.n > 0));
    const share = (g: string): number => dominantShare(usage.get(g) ?? snap.groupUsage.get(g) ?? ZERO, total) / (snap.groups.get(g)?.weight ?? 1);
    const group = [...new Set(open.map((t) => t.u.quotaGroup))].sort((a, b) => share(a) - share(b) || cmp(a, b))[0];
    const t = open.find((x) => x.u.quotaGroup === group);
    const q = t?.reqs.find((x) => x.n > 0);
    if (group === undefined || t === undefined || q === undefined) break;
    const r = t.u.resource;
    const used = usage.get(group) ?? snap.groupUsage.get(group) ?? ZERO;
    const limit = snap.groups.get(group)?.limit;
    if (limit !== undefined && !fits(add(used, r), limit)) {
      for (const x of t.reqs) (miss(t.u, x.n, 'quota-limit'), (x.n = 0));
      continue;
    }
    const wantedNode = q.loc.startsWith('node:') ? snap.nodes.get(q.loc.slice(5)) : undefined;
    const rack = wantedNode?.rack ?? (q.loc.startsWith('rack:') ? q.loc.slice(5) : undefined);
    const onNode = nodes.find((n) => n.id === wantedNode?.id && room(n, r) && allowed(t.u, n));
    const n =
      onNode ??
      best(
        t.u,
        nodes.filter((x) => x.rack === rack),
        r,
      ) ??
      best(t.u, nodes, r);
    if (n === undefined) {
      miss(t.u, q.n, snap.scopes?.has(t.u.appId) && nodes.some((x) => room(x, r)) ? 'unreachable' : 'no-capacity');
      q.n = 0;
      continue;
    }
    anchors.get(t.u.appId)?.add(n.id);
    alloc.set(n.id, add(alloc.get(n.id) ?? ZERO, r));
    usage.set(group, add(used, r));
    q.n--;
    const level = n.id === wantedNode?.id ? 'node' : n.rack === rack ? 'rack' : 'any';
    const k = `${unitKey(t.u)}|${n.id}|${q.loc}`;
    const p = placements.get(k) ?? { appId: t.u.appId, suId: t.u.suId, nodeId: n.id, slots: 0, location: q.loc, localityLevel: level };
    p.slots++;
    placements.set(k, p);
  }
  return { placements: [...placements.values()], unsatisfied: [...unsatisfied.values()] };
}

function sorted(plan: Plan): Plan {
  const key = (x: object): string => JSON.stringify(x);
  return {
    placements: [...plan.placements].sort((a, b) => (key(a) < key(b) ? -1 : 1)),
    unsatisfied: [...plan.unsatisfied].sort((a, b) => (key(a) < key(b) ? -1 : 1)),
  };
}

/** Deterministic Fisher-Yates with a small LCG, so a failing case replays from fast-check's seed. */
function shuffle<T>(xs: T[], seed: number): T[] {
  let s = seed >>> 0;
  for (let i = xs.length - 1; i > 0; i--) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    const j = s % (i + 1);
    const a = xs[i] as T;
    xs[i] = xs[j] as T;
    xs[j] = a;
  }
  return xs;
}
