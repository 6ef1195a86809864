/**
 * Host blacklists during one schedule() call (failure prediction, blacklist.ts): a unit's slots
 * never go to a host blocked for the cluster or for its app, and go to a gray host only when no
 * other allowed node has room. A host capped for memory pressure takes a slot only while its memory
 * allocated, that slot's included, stays below its cap (the ATLAS+ "wait until the success
 * conditions are met": the slot goes elsewhere, or waits). A unit whose job set
 * `failurePrediction: off` ignores all of it. Skipping works as for unreachable hosts
 * (sched-reach.ts): one more `NodeFilter` on `find`.
 */
import type { NodeFilter } from './sched-reach.js';
import type { HostBlacklist, SchedUnit } from './sched-types.js';

/** The filters for one unit's slot: `first` (no gray hosts), then `fallback` (gray allowed). */
export interface BlacklistFilters {
  first: NodeFilter;
  /** Undefined when there are no gray hosts (the first pass is the only one). */
  fallback: NodeFilter | undefined;
  /** How many of the unit's slots the node may still take (Infinity unless memory-capped). */
  room: (nodeId: string) => number;
}

/** A candidate node's memory now (sched-nodes.ts `memoryOf`). */
export type MemoryOf = (nodeId: string) => { allocatedMb: number; capacityMb: number } | undefined;

export class BlacklistState {
  constructor(
    private readonly list: HostBlacklist | undefined,
    private readonly memoryOf: MemoryOf = () => undefined,
  ) {}

  /** Filters for a slot of `su` on top of `base` (its scope's filter, if any); undefined: nothing to skip. */
  filtersFor(su: SchedUnit, base: NodeFilter | undefined): BlacklistFilters | undefined {
    const list = this.list;
    if (list === undefined || su.predictionOff === true) return undefined;
    const app = list.perApp.get(su.appId);
    const noApp = app === undefined || app.size === 0;
    const caps = list.memoryCap;
    const noCaps = caps === undefined || caps.size === 0;
    if (list.blocked.size === 0 && list.gray.size === 0 && noApp && noCaps) return undefined;
    const slotMb = su.resource.memoryMb;
    const room = (id: string): number => {
      const cap = caps?.get(id);
      const m = cap === undefined ? undefined : this.memoryOf(id);
      if (cap === undefined || m === undefined || m.capacityMb <= 0) return Infinity;
      if (slotMb <= 0) return m.allocatedMb / m.capacityMb < cap ? Infinity : 0;
      // Slots k with (allocated + k x slot) / capacity < cap.
      return Math.max(0, Math.ceil((cap * m.capacityMb - m.allocatedMb) / slotMb) - 1);
    };
    const degree = base?.degree;
    const allowed = (id: string): boolean =>
      !list.blocked.has(id) && (app === undefined || !app.has(id)) && (base === undefined || base.allows(id)) && (noCaps || room(id) > 0);
    const fallback: NodeFilter | undefined = list.gray.size === 0 ? undefined : { allows: allowed, degree };
    const first: NodeFilter = list.gray.size === 0 ? { allows: allowed, degree } : { allows: (id) => !list.gray.has(id) && allowed(id), degree };
    return { first, fallback, room };
  }
}
