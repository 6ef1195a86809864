/**
 * Which queued AMs a scheduling pass looks at. A flood of submissions leaves thousands of jobs
 * waiting for their AM's slot while the AM share (sched-am-share.ts) lets a few run at a time;
 * building every queued AM's unit and refusing it on every pass made the master's work per pass
 * grow with the queue (10,000 queued jobs: every pass walked them all, and a 1,000-job SubmitJobs
 * ran past its deadline).
 *
 * A pass places at most `bound` AM slots (what the share has room for), and a quota group serves
 * its units in the scheduler's order (priority, then submission, then app id: sched-groups.ts).
 * So the pass needs, per quota group, only the group's first `n` queued AMs in that order, for
 * any n above the bound. A group whose first n AMs all got a slot, or were refused for a reason
 * other than the share (a testbed, its quota), could have gone on to its next one: the caller
 * then runs the pass again with twice the n (`needsMore`), so the plan is the one that every queued
 * AM would have given.
 *
 * ```ts
 * let n = amBound(amShare, total, queued) + 1;
 * for (;;) {
 *   const pick = firstPerGroup(queued, n);
 *   const plan = schedule({ ...snapshot, units: [...tasks, ...pick.chosen.map(toUnit)] });
 *   if (!needsMore(pick, plan)) break;
 *   n *= 2;
 * }
 * ```
 */
import { AM_SU, isZero, scale, slotsThatFit, sub, type Resource } from '@fuxi/common';
import type { AmShare, Plan } from './sched-types.js';
import { cmpStr } from './sched-types.js';

/** A queued AM slot request: what ordering and the share need of it. */
export interface QueuedAm {
  appId: string;
  quotaGroup: string;
  priority: number;
  submitSeq: number;
  resource: Resource;
}

export interface AmPick<T extends QueuedAm> {
  chosen: T[];
  /** Quota groups that had more queued AMs than were chosen. */
  cut: Set<string>;
}

/** The scheduler's order of units within a quota group (sched-groups.ts `buildGroups`). */
function before(a: QueuedAm, b: QueuedAm): number {
  return b.priority - a.priority || a.submitSeq - b.submitSeq || cmpStr(a.appId, b.appId);
}

/**
 * At most how many AM slots a pass can place: the most slots of any queued AM's size that fit in
 * what the share leaves (at least one when no AM runs); Infinity without a share.
 */
export function amBound(amShare: AmShare | undefined, total: Resource, queued: readonly QueuedAm[]): number {
  if (amShare === undefined || amShare.share >= 1) return Infinity;
  const left = sub(scale(total, amShare.share), amShare.used);
  const sizes = new Map<string, Resource>();
  for (const q of queued) sizes.set(`${q.resource.cpuMilli}/${q.resource.memoryMb}`, q.resource);
  let most = isZero(amShare.used) ? 1 : 0;
  for (const r of sizes.values()) {
    if (isZero(r)) return Infinity;
    if (left.cpuMilli >= 0 && left.memoryMb >= 0) most = Math.max(most, slotsThatFit(r, left));
  }
  return most;
}

/** Per quota group, its first `n` queued AMs in the scheduler's order. */
export function firstPerGroup<T extends QueuedAm>(queued: readonly T[], n: number): AmPick<T> {
  const byGroup = new Map<string, T[]>();
  for (const q of queued) {
    let g = byGroup.get(q.quotaGroup);
    if (g === undefined) byGroup.set(q.quotaGroup, (g = []));
    g.push(q);
  }
  const chosen: T[] = [];
  const cut = new Set<string>();
  for (const [group, list] of byGroup) {
    if (list.length > n) {
      cut.add(group);
      chosen.push(...smallest(list, n));
    } else chosen.push(...list);
  }
  return { chosen, cut };
}

/** The `n` first of `list` in the scheduler's order (a bounded insertion pass: n is small). */
function smallest<T extends QueuedAm>(list: readonly T[], n: number): T[] {
  const out: T[] = [];
  for (const q of list) {
    if (out.length === n && before(q, out[n - 1]!) >= 0) continue;
    let i = out.length;
    while (i > 0 && before(q, out[i - 1]!) < 0) i--;
    out.splice(i, 0, q);
    if (out.length > n) out.pop();
  }
  return out;
}

/**
 * Whether the pass must run again with more queued AMs: some group that had AMs left out got
 * through all of its chosen ones without the share refusing any (each was placed, or refused for
 * another reason), so the share might have had room for the next.
 */
export function needsMore(pick: AmPick<QueuedAm>, plan: Plan): boolean {
  if (pick.cut.size === 0) return false;
  const groupOf = new Map<string, string>();
  for (const q of pick.chosen) if (pick.cut.has(q.quotaGroup)) groupOf.set(q.appId, q.quotaGroup);
  const refused = new Set<string>();
  for (const u of plan.unsatisfied) {
    if (u.suId !== AM_SU || u.reason !== 'am-share') continue;
    const g = groupOf.get(u.appId);
    if (g !== undefined) refused.add(g);
  }
  for (const g of pick.cut) if (!refused.has(g)) return true;
  return false;
}
