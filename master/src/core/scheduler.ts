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
 * has room (sched-blacklist.ts); a slot that fits only on blocked hosts is unsatisfied as 'blacklisted'.
 * Conceptually one slot is placed per turn; a turn places a batch of k slots only when k one-slot
 * turns would have made exactly the same choice, so batching changes speed, never the plan.
 *
 * ```ts
 * const plan = schedule({ nodes, units, groups, groupUsage });
 * for (const p of plan.placements) grant(p.nodeId, p.appId, p.suId, p.slots);
 * ```
 */
import { isZero, scale, slotsThatFit } from '@fuxi/common';
import { BlacklistState } from './sched-blacklist.js';
import { buildGroups, pickGroup } from './sched-groups.js';
import { ClusterState } from './sched-nodes.js';
import { PlanBuilder } from './sched-plan.js';
import { ScopeState } from './sched-reach.js';
import { levelOf } from './sched-requests.js';
import type { NodeFilter } from './sched-reach.js';
import type { Request } from './sched-requests.js';
import type { Plan, SchedulerSnapshot, UnsatisfiedReason } from './sched-types.js';
import type { Resource } from '@fuxi/common';

export * from './sched-types.js';

/** Computes a plan for every outstanding request in `snapshot`. Pure and deterministic. */
export function schedule(snapshot: SchedulerSnapshot): Plan {
  const cluster = new ClusterState(snapshot.nodes);
  const out = new PlanBuilder();
  const groups = buildGroups(snapshot, cluster.total, out);
  const scopes = new ScopeState(snapshot);
  const blacklist = new BlacklistState(snapshot.blacklist);
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

    const quotaRoom = group.quotaRoom(r);
    if (quotaRoom === 0) {
      for (const q of unit.reqs.slice(unit.cur)) out.unsatisfied(unit.su, q.remaining, 'quota-limit');
      group.head++;
      continue;
    }

    const scoped = scopes.filterFor(unit.su);
    const listed = blacklist.filtersFor(unit.su, scoped);
    let pick = cluster.find(r, req, listed?.first ?? scoped);
    if (pick === undefined && listed?.fallback !== undefined) pick = cluster.find(r, req, listed.fallback);
    if (pick === undefined) {
      out.unsatisfied(unit.su, req.remaining, unplacedReason(cluster, r, req, scoped, listed !== undefined));
      req.remaining = 0;
      continue;
    }

    // How many consecutive one-slot turns would make this same choice.
    const cap = Math.min(req.remaining, quotaRoom, slotsThatFit(r, cluster.free(pick.node)));
    let k = 1;
    if (isZero(r))
      k = cap; // no share moves, so every later turn repeats this one
    else if (pick.single !== true) while (k < cap && group.winsAfter(k, r, rival, cluster.total) && cluster.winsAfter(pick, k, r)) k++;

    cluster.place(pick.node, scale(r, k));
    group.take(scale(r, k), cluster.total);
    req.remaining -= k;
    scopes.placed(unit.su.appId, cluster.nodeId(pick.node));
    out.place(unit.su, cluster.nodeId(pick.node), k, req, levelOf(req, cluster.nodeOf(pick.node)));
  }
  return out.build();
}

/** Why a slot found no node: blocked hosts, broken links, or no room anywhere. */
function unplacedReason(cluster: ClusterState, r: Resource, req: Request, scoped: NodeFilter | undefined, listed: boolean): UnsatisfiedReason {
  if (!cluster.fitsSomewhere(r)) return 'no-capacity';
  if (listed && (scoped === undefined || cluster.find(r, req, scoped) !== undefined)) return 'blacklisted';
  return scoped !== undefined ? 'unreachable' : 'no-capacity';
}
