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
 * any n above the bound: the master keeps each group's queued AMs in that order (`AmQueue`) and
 * a pass takes the first n of each. A group whose first n AMs all got a slot, or were refused for
 * a reason other than the share (a testbed, its quota), could have gone on to its next one: the
 * caller then runs the pass again with twice the n (`needsMore`), so the plan is the one that
 * every queued AM would have given, whatever the first n. That holds when the group's AMs are all
 * of one size (the share refusing one refuses every later one of the pass); a group with AMs of
 * several sizes is taken whole.
 *
 * ```ts
 * let n = amBound(amShare, total, heads) + 1;
 * for (;;) {
 *   const pick = firstPerGroup(queues, n, stillWaiting);
 *   const plan = schedule({ ...snapshot, units: [...tasks, ...pick.chosen.map(toUnit)] });
 *   if (!needsMore(pick, plan)) break;
 *   n *= 2;
 * }
 * ```
 */
import { AM_SU, isZero, scale, slotsThatFit, sub, type Resource } from '@fuxi/common';
import { cmpStr, type AmShare, type Plan } from './sched-types.js';

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
  let most = isZero(amShare.used) ? 1 : 0;
  if (left.cpuMilli < 0 || left.memoryMb < 0) return most;
  for (const q of queued) {
    if (isZero(q.resource)) return Infinity;
    most = Math.max(most, slotsThatFit(q.resource, left));
  }
  return most;
}

/**
 * The AMs of one quota group that wait for their slot, in the scheduler's order. Kept across passes
 * (MasterState.amQueues): a pass takes the first n, not all of them. Entries are added as AMs are
 * asked for (new submissions come in order, at the end); one added out of order (an AM restarted
 * for an older job, the jobs a new leader loads) makes the next `take` sort once. Entries whose AM
 * no longer waits are dropped when a `take` meets them.
 */
export class AmQueue<T extends QueuedAm = QueuedAm> {
  private entries = new Map<string, T>();
  private last: T | undefined;
  private ordered = true;
  private size0: Resource | undefined;
  /**
   * Every AM ever added asked for the same slot size. Only then does the share's refusal of one
   * mean it refuses every later one in the pass (its room only shrinks); a queue of several sizes
   * is taken whole, since a smaller AM further on may fit where a larger one was refused.
   */
  uniform = true;

  get size(): number {
    return this.entries.size;
  }

  has(appId: string): boolean {
    return this.entries.has(appId);
  }

  add(q: T): void {
    if (this.entries.has(q.appId)) {
      this.entries.set(q.appId, q);
      return;
    }
    if (this.last !== undefined && before(q, this.last) < 0) this.ordered = false;
    this.size0 ??= q.resource;
    if (q.resource.cpuMilli !== this.size0.cpuMilli || q.resource.memoryMb !== this.size0.memoryMb) this.uniform = false;
    this.entries.set(q.appId, q);
    this.last = q;
  }

  /**
   * The first `n` entries that are `waiting`, in the scheduler's order; entries that are not are
   * dropped. `more`: entries are left after them (waiting or not).
   */
  take(n: number, waiting: (q: T) => boolean): { first: T[]; more: boolean } {
    if (!this.ordered) {
      this.entries = new Map([...this.entries.values()].sort(before).map((q) => [q.appId, q]));
      this.last = [...this.entries.values()].at(-1);
      this.ordered = true;
    }
    const first: T[] = [];
    for (const [id, q] of this.entries) {
      if (first.length >= n) return { first, more: true };
      if (waiting(q)) first.push(q);
      else this.entries.delete(id);
    }
    return { first, more: false };
  }
}

/**
 * Per quota group, its first `n` waiting AMs of `queues` (by group; all of them when the group's
 * AMs are of several sizes), and the groups that had more.
 */
export function firstPerGroup<T extends QueuedAm>(queues: ReadonlyMap<string, AmQueue<T>>, n: number, waiting: (q: T) => boolean): AmPick<T> {
  const chosen: T[] = [];
  const cut = new Set<string>();
  for (const [group, queue] of queues) {
    const { first, more } = queue.take(queue.uniform ? n : Infinity, waiting);
    chosen.push(...first);
    if (more) cut.add(group);
  }
  return { chosen, cut };
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
