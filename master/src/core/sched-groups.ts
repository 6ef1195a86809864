/**
 * Quota groups during one schedule() call: weighted dominant shares (the group with the lowest
 * goes next), quota limits, and each group's units in priority and submission order.
 */
import { add, dominantShare, fits, isNonNegative, scale, slotsThatFit, sub, ZERO } from '@fuxi/common';
import type { Resource } from '@fuxi/common';
import type { PlanBuilder } from './sched-plan.js';
import { buildUnit, type UnitState } from './sched-requests.js';
import { cmpStr, type SchedulerSnapshot } from './sched-types.js';

export class GroupState {
  head = 0;
  /** Weighted dominant share of `usage`; only the served group's changes, so it is kept here. */
  share: number;

  constructor(
    readonly name: string,
    readonly weight: number,
    readonly limit: Resource | undefined,
    private usage: Resource,
    readonly units: UnitState[],
    total: Resource,
  ) {
    this.share = this.shareWith(ZERO, total);
  }

  take(amount: Resource, total: Resource): void {
    this.usage = add(this.usage, amount);
    this.share = this.shareWith(ZERO, total);
  }

  /** Weighted dominant share after `extra` more resources. */
  shareWith(extra: Resource, total: Resource): number {
    return dominantShare(add(this.usage, extra), total) / this.weight;
  }

  /**
   * Slots of `r` the group may still take under its limit. A group already over its limit in any
   * dimension (the limit was lowered) gets nothing, not even slots that do not use that dimension.
   */
  quotaRoom(r: Resource): number {
    if (this.limit === undefined) return Infinity;
    if (!fits(this.usage, this.limit)) return 0;
    return slotsThatFit(r, sub(this.limit, this.usage));
  }

  /** Would this group still be picked, ahead of `rival`, after k more slots of `r`? */
  winsAfter(k: number, r: Resource, rival: GroupState | undefined, total: Resource): boolean {
    if (rival === undefined) return true;
    const mine = this.shareWith(scale(r, k), total);
    return mine < rival.share || (mine === rival.share && this.name < rival.name);
  }
}

export function buildGroups(snapshot: SchedulerSnapshot, total: Resource, out: PlanBuilder): Map<string, GroupState> {
  const groups = new Map<string, GroupState>();
  for (const su of snapshot.units) {
    let g = groups.get(su.quotaGroup);
    if (g === undefined) {
      const spec = snapshot.groups.get(su.quotaGroup);
      const weight = spec !== undefined && spec.weight > 0 && Number.isFinite(spec.weight) ? spec.weight : 1;
      g = new GroupState(su.quotaGroup, weight, spec?.limit, snapshot.groupUsage.get(su.quotaGroup) ?? ZERO, [], total);
      groups.set(su.quotaGroup, g);
    }
    const unit = buildUnit(su, snapshot.nodes);
    if (unit.reqs.length === 0) continue;
    if (!isValidSlot(su.resource)) {
      // A negative or non-finite slot would corrupt the capacity arithmetic: it fits nowhere.
      for (const q of unit.reqs) out.unsatisfied(su, q.remaining, 'no-capacity');
      continue;
    }
    g.units.push(unit);
  }
  for (const g of groups.values()) {
    g.units.sort((a, b) => b.su.priority - a.su.priority || a.su.submitSeq - b.su.submitSeq || cmpStr(a.su.appId, b.su.appId) || cmpStr(a.su.suId, b.su.suId));
  }
  return groups;
}

/** Index of the group to serve next, and its closest rival (the runner-up). */
export function pickGroup(active: readonly GroupState[]): [number, GroupState | undefined] {
  // A linear scan per turn: the number of groups with outstanding requests is small.
  let best = -1;
  let bestShare = Infinity;
  let second: GroupState | undefined;
  let secondShare = Infinity;
  for (let i = 0; i < active.length; i++) {
    const g = active[i];
    if (g === undefined) continue;
    const s = g.share;
    const b = active[best];
    if (b === undefined || s < bestShare || (s === bestShare && g.name < b.name)) {
      second = b;
      secondShare = bestShare;
      best = i;
      bestShare = s;
    } else if (second === undefined || s < secondShare || (s === secondShare && g.name < second.name)) {
      second = g;
      secondShare = s;
    }
  }
  return [best, second];
}

function isValidSlot(r: Resource): boolean {
  return isNonNegative(r) && Number.isFinite(r.cpuMilli) && Number.isFinite(r.memoryMb);
}
