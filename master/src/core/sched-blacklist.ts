/**
 * Host blacklists during one schedule() call (failure prediction, blacklist.ts): a unit's slots
 * never go to a host blocked for the cluster or for its app, and go to a gray host only when no
 * other allowed node has room. A unit whose job set `failurePrediction: off` ignores all of it.
 * Skipping works as for unreachable hosts (sched-reach.ts): one more `NodeFilter` on `find`.
 */
import type { NodeFilter } from './sched-reach.js';
import type { HostBlacklist, SchedUnit } from './sched-types.js';

/** The filters for one unit's slot: `first` (no gray hosts), then `fallback` (gray allowed). */
export interface BlacklistFilters {
  first: NodeFilter;
  /** Undefined when there are no gray hosts (the first pass is the only one). */
  fallback: NodeFilter | undefined;
}

export class BlacklistState {
  constructor(private readonly list: HostBlacklist | undefined) {}

  /** Filters for a slot of `su` on top of `base` (its scope's filter, if any); undefined: nothing to skip. */
  filtersFor(su: SchedUnit, base: NodeFilter | undefined): BlacklistFilters | undefined {
    const list = this.list;
    if (list === undefined || su.predictionOff === true) return undefined;
    const app = list.perApp.get(su.appId);
    const noApp = app === undefined || app.size === 0;
    if (list.blocked.size === 0 && list.gray.size === 0 && noApp) return undefined;
    const degree = base?.degree;
    const allowed = (id: string): boolean => !list.blocked.has(id) && (app === undefined || !app.has(id)) && (base === undefined || base.allows(id));
    const fallback: NodeFilter | undefined = list.gray.size === 0 ? undefined : { allows: allowed, degree };
    const first: NodeFilter = list.gray.size === 0 ? { allows: allowed, degree } : { allows: (id) => !list.gray.has(id) && allowed(id), degree };
    return { first, fallback };
  }
}
