/**
 * How much of the cluster application masters may hold: the scheduler's AM share rule (YARN's
 * `maximum-am-resource-percent`, the Fair Scheduler's `maxAMShare`). Without it a flood of
 * submissions fills every node with AMs (each a slot of its own), and no AM finds room for a
 * single worker: a cluster that deadlocks the moment a workflow engine submits a thousand jobs.
 *
 * AM slots are placed only while the AMs' total stays within `share` of the cluster's schedulable
 * capacity in every dimension; one AM may always run when none does, so a small cluster (or a
 * large AM) still makes progress. A slot refused by the rule is unsatisfied as 'am-share' and is
 * placed on a later pass, once AMs have ended.
 *
 * ```ts
 * const am = new AmShareState(snapshot.amShare, cluster.total);
 * const room = am.room(unit.su);      // Infinity for task units
 * am.take(unit.su, k);
 * ```
 */
import { AM_SU, add, isZero, scale, slotsThatFit, sub, ZERO, type Resource } from '@fuxi/common';
import { schedulableTotal } from './sched-nodes.js';
import type { AmShare, SchedNode, SchedUnit } from './sched-types.js';

export class AmShareState {
  private used: Resource;
  private readonly limit: Resource | undefined;

  constructor(amShare: AmShare | undefined, total: Resource) {
    this.used = amShare?.used ?? ZERO;
    this.limit = amShare && amShare.share < 1 ? scale(total, amShare.share) : undefined;
  }

  /** How many more slots of `su` the rule allows (Infinity for tasks, or without a limit). */
  room(su: SchedUnit): number {
    if (su.suId !== AM_SU || this.limit === undefined) return Infinity;
    if (isZero(this.used)) return Math.max(1, this.fitting(su.resource));
    return this.fitting(su.resource);
  }

  /** No AM slot can be placed: AMs run and hold the whole share in some dimension. */
  full(): boolean {
    const l = this.limit;
    return l !== undefined && !isZero(this.used) && (this.used.cpuMilli >= l.cpuMilli || this.used.memoryMb >= l.memoryMb);
  }

  take(su: SchedUnit, slots: number): void {
    if (su.suId === AM_SU) this.used = add(this.used, scale(su.resource, slots));
  }

  private fitting(r: Resource): number {
    const left = sub(this.limit!, this.used);
    if (left.cpuMilli < 0 || left.memoryMb < 0) return 0;
    return isZero(r) ? Infinity : slotsThatFit(r, left);
  }
}

/**
 * Whether AMs already hold their whole share in some dimension, so that no AM slot can be placed
 * this pass: the caller leaves AM units out of the snapshot (with a thousand queued AMs, building
 * and refusing each on every pass was most of the master's scheduling time).
 */
export function amShareFull(amShare: AmShare | undefined, nodes: ReadonlyMap<string, SchedNode>): boolean {
  return new AmShareState(amShare, schedulableTotal(nodes.values())).full();
}
