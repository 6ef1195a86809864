/**
 * The master's scheduler core: a pure function from a read-only snapshot of the cluster to a plan
 * (in the manner of nomad's `scheduler/`). The master applies the plan; nothing here does IO, reads
 * the clock or draws random numbers, so the same snapshot always yields the same plan.
 *
 * Algorithm, in one paragraph: quota groups take turns, the group with the lowest weighted dominant
 * share (its usage, plus what this plan gave it, over the cluster's schedulable capacity, over its
 * weight) goes next. The group serves its head unit (priority, then submission order), and within
 * the unit its node requests, then rack requests, then "any" requests. A request lands on the
 * requested node if it has room, else on the least-loaded node of the rack, else on the least-loaded
 * node of the cluster ("least loaded" = lowest dominant share of allocated/capacity, ties by node id).
 * A connected app (one with a `scope`) only takes nodes that reach all its anchors and that it does
 * not avoid, and its first slot (`mostConnected`, its AM) the node with the fewest broken links at
 * the level it lands on (CASPR Algorithm 1, sched-reach.ts); a slot that fits somewhere, but on no
 * node its scope allows, is unsatisfied as 'unreachable'. With no broken link and nothing avoided,
 * every app places as if it had no scope. Hosts failure prediction blocks (the cluster's, or the
 * app's own) get no slot of a unit whose job has prediction on, gray ones only when no other node
 * has room, memory-capped ones only below their cap (sched-blacklist.ts); a slot that fits only on
 * blocked hosts is unsatisfied as 'blacklisted'.
 * A host an active testbed holds takes only its quota group's units, and a unit whose job names a
 * testbed goes only to its hosts (sched-testbeds.ts); a slot kept off every host with room by that
 * rule is unsatisfied as 'reserved'.
 * AM slots are placed only while the AMs hold at most their share of the cluster (`amShare`, one
 * AM always allowed when none runs; sched-am-share.ts); an AM slot past it is unsatisfied as
 * 'am-share'.
 * Conceptually one slot is placed per turn; a turn places a batch of k slots only when k one-slot
 * turns would have made exactly the same choice, so batching changes speed, never the plan.
 *
 * Gang scheduling (Volcano's and coscheduling's minMember): a unit with `gang: k` (k > 1) takes its
 * turn whole. Its first k slots are placed tentatively, one after another on the nodes the usual
 * rules choose, and kept only if all k found room within the group's quota; if one did not, every
 * tentative placement is undone (nodes, the group's usage, the plan) and the unit's requests are
 * unsatisfied this pass. Its slots beyond k (minInstances below instances) then go one by one.
 * Nothing is reserved or held from one pass to the next, so two gangs that each fit alone but not
 * together cannot deadlock: a pass grants a whole gang or nothing of it. Gangs are served in the
 * usual order (group share, then priority, then submission), so of two such gangs the earlier one
 * goes first and the other follows once its slots are freed. There is no backfill protection: a
 * large gang waits while smaller units keep taking the room it needs (policy; see
 * docs/architecture.md, "Gang scheduling").
 *
 * ```ts
 * const plan = schedule({ nodes, units, groups, groupUsage });
 * for (const p of plan.placements) grant(p.nodeId, p.appId, p.suId, p.slots);
 * ```
 */
import { isZero, scale, slotsThatFit } from '@fuxi/common';
import { AmShareState } from './sched-am-share.js';
import { BlacklistState } from './sched-blacklist.js';
import { buildGroups, pickGroup } from './sched-groups.js';
import { ClusterState } from './sched-nodes.js';
import { PlanBuilder } from './sched-plan.js';
import { ScopeState } from './sched-reach.js';
import { TestbedState } from './sched-testbeds.js';
import { levelOf } from './sched-requests.js';
import type { NodeFilter } from './sched-reach.js';
import type { GroupState } from './sched-groups.js';
import type { Request, UnitState } from './sched-requests.js';
import type { Plan, SchedulerSnapshot, SchedUnit, UnsatisfiedReason } from './sched-types.js';
import type { Resource } from '@fuxi/common';

export * from './sched-types.js';

/** Computes a plan for every outstanding request in `snapshot`. Pure and deterministic. */
export function schedule(snapshot: SchedulerSnapshot): Plan {
  const cluster = new ClusterState(snapshot.nodes);
  const out = new PlanBuilder();
  const groups = buildGroups(snapshot, cluster.total, out);
  const scopes = new ScopeState(snapshot);
  const blacklist = new BlacklistState(snapshot.blacklist, (id) => cluster.memoryOf(id));
  const testbeds = new TestbedState(snapshot.reservations);
  const amShare = new AmShareState(snapshot.amShare, cluster.total);
  const active = [...groups.values()].filter((g) => g.units.length > 0);

  while (active.length > 0) {
    const [gi, rival] = pickGroup(active);
    const group = active[gi];
    if (group === undefined) break;
    const unit = group.units[group.head];
    if (unit === undefined) {
      active.splice(gi, 1);
      continue;
    }
    const req = unit.reqs[unit.cur];
    if (req === undefined || req.remaining === 0) {
      if (req === undefined) group.head++;
      else unit.cur++;
      continue;
    }
    const r = unit.su.resource;

    if (unit.gangLeft > 0) {
      if (!placeGang(unit, group, cluster, scopes, testbeds, blacklist, out)) group.head++;
      continue;
    }

    const quotaRoom = group.quotaRoom(r);
    if (quotaRoom === 0) {
      for (const q of unit.reqs.slice(unit.cur)) out.unsatisfied(unit.su, q.remaining, 'quota-limit');
      group.head++;
      continue;
    }

    const amRoom = amShare.room(unit.su);
    if (amRoom === 0) {
      for (const q of unit.reqs.slice(unit.cur)) out.unsatisfied(unit.su, q.remaining, 'am-share');
      group.head++;
      continue;
    }

    const scope = scopes.filterFor(unit.su);
    const scoped = testbeds.filterFor(unit.su, scope);
    const listed = blacklist.filtersFor(unit.su, scoped);
    let pick = cluster.find(r, req, listed?.first ?? scoped);
    if (pick === undefined && listed?.fallback !== undefined) pick = cluster.find(r, req, listed.fallback);
    if (pick === undefined) {
      out.unsatisfied(unit.su, req.remaining, unplacedReason(cluster, r, req, { scope, scoped, testbeds, su: unit.su, listed: listed !== undefined }));
      req.remaining = 0;
      continue;
    }

    // How many consecutive one-slot turns would make this same choice.
    const cap = Math.min(req.remaining, quotaRoom, amRoom, slotsThatFit(r, cluster.free(pick.node)), listed?.room(cluster.nodeId(pick.node)) ?? Infinity);
    let k = 1;
    if (isZero(r))
      k = cap; // no share moves, so every later turn repeats this one
    else if (pick.single !== true) while (k < cap && group.winsAfter(k, r, rival, cluster.total) && cluster.winsAfter(pick, k, r)) k++;

    cluster.place(pick.node, scale(r, k));
    group.take(scale(r, k), cluster.total);
    amShare.take(unit.su, k);
    req.remaining -= k;
    scopes.placed(unit.su.appId, cluster.nodeId(pick.node));
    out.place(unit.su, cluster.nodeId(pick.node), k, req, levelOf(req, cluster.nodeOf(pick.node)));
  }
  return out.build();
}

/**
 * A gang's turn: its first `gangLeft` slots placed at once, or none of them (see the header). On
 * success the unit goes on with its other slots one by one; on failure every request of the unit
 * is unsatisfied (the reason of the slot that found no room) and the caller moves past it.
 */
function placeGang(
  unit: UnitState,
  group: GroupState,
  cluster: ClusterState,
  scopes: ScopeState,
  testbeds: TestbedState,
  blacklist: BlacklistState,
  out: PlanBuilder,
): boolean {
  const r = unit.su.resource;
  const need = unit.gangLeft;
  const fail = (reason: UnsatisfiedReason): false => {
    for (const q of unit.reqs.slice(unit.cur)) {
      out.unsatisfied(unit.su, q.remaining, reason);
      q.remaining = 0;
    }
    return false;
  };
  if (group.quotaRoom(r) < need) return fail('quota-limit');
  const mark = cluster.hopelessMark();
  const done: Array<{ node: number; k: number; req: Request }> = [];
  let placed = 0;
  let reason: UnsatisfiedReason | undefined;
  const scope = scopes.filterFor(unit.su);
  const scoped = testbeds.filterFor(unit.su, scope);
  const listed = blacklist.filtersFor(unit.su, scoped);
  for (let c = unit.cur; c < unit.reqs.length && placed < need && reason === undefined; c++) {
    const req = unit.reqs[c]!;
    while (req.remaining > 0 && placed < need) {
      let pick = cluster.find(r, req, listed?.first ?? scoped);
      if (pick === undefined && listed?.fallback !== undefined) pick = cluster.find(r, req, listed.fallback);
      if (pick === undefined) {
        reason = unplacedReason(cluster, r, req, { scope, scoped, testbeds, su: unit.su, listed: listed !== undefined });
        break;
      }
      // As many slots as consecutive one-slot placements would put on the same node.
      const cap = Math.min(req.remaining, need - placed, slotsThatFit(r, cluster.free(pick.node)), listed?.room(cluster.nodeId(pick.node)) ?? Infinity);
      let k = 1;
      if (isZero(r)) k = cap;
      else if (pick.single !== true) while (k < cap && cluster.winsAfter(pick, k, r)) k++;
      cluster.place(pick.node, scale(r, k));
      req.remaining -= k;
      placed += k;
      done.push({ node: pick.node, k, req });
      // A connected app's later slots must reach this one. Anchors of a gang that is undone stay
      // for the rest of the pass: that only narrows where the app's other units may go.
      scopes.placed(unit.su.appId, cluster.nodeId(pick.node));
      out.place(unit.su, cluster.nodeId(pick.node), k, req, levelOf(req, cluster.nodeOf(pick.node)));
    }
  }
  if (placed >= need) {
    group.take(scale(r, placed), cluster.total);
    unit.gangLeft = 0;
    return true;
  }
  for (const d of done) {
    cluster.place(d.node, scale(r, -d.k));
    d.req.remaining += d.k;
    out.unplace(unit.su, cluster.nodeId(d.node), d.k, d.req);
  }
  cluster.forgetSince(mark);
  return fail(reason ?? 'no-capacity');
}

/** The filters a slot was placed under: its connectivity scope, that with the testbeds' rule, blacklists. */
interface SlotFilters {
  scope: NodeFilter | undefined;
  scoped: NodeFilter | undefined;
  testbeds: TestbedState;
  su: SchedUnit;
  listed: boolean;
}

/** Why a slot found no node: blocked hosts, testbeds, broken links, or no room anywhere. */
function unplacedReason(cluster: ClusterState, r: Resource, req: Request, f: SlotFilters): UnsatisfiedReason {
  if (!cluster.fitsSomewhere(r)) return 'no-capacity';
  if (f.listed && (f.scoped === undefined || cluster.find(r, req, f.scoped) !== undefined)) return 'blacklisted';
  const own = f.testbeds.own(f.su);
  if (own !== undefined && cluster.find(r, req, { allows: own, degree: undefined }) === undefined) return 'reserved';
  return f.scope !== undefined ? 'unreachable' : 'no-capacity';
}
