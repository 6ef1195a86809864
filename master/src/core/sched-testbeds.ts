/**
 * Testbeds during one schedule() call (testbeds.ts): a host an active testbed holds takes new slots
 * only of its quota group's units; a unit whose job names a testbed takes slots only on that
 * testbed's hosts, if the testbed is its group's (none while it is not active). One more `NodeFilter` on `find`, like the host
 * blacklists (sched-blacklist.ts); a slot that fits only where testbeds keep it off is unsatisfied
 * as 'reserved'.
 */
import type { NodeFilter } from './sched-reach.js';
import type { Reservations, SchedUnit } from './sched-types.js';

const NONE: ReadonlySet<string> = new Set();

export class TestbedState {
  constructor(private readonly res: Reservations | undefined) {}

  /**
   * The testbeds' filter for a slot of `su` on top of `base` (its scope's filter, if any): `base`
   * itself when testbeds keep the unit off no host.
   */
  filterFor(su: SchedUnit, base: NodeFilter | undefined): NodeFilter | undefined {
    const own = this.own(su);
    if (own === undefined) return base;
    return { allows: base === undefined ? own : (id) => own(id) && base.allows(id), degree: base?.degree };
  }

  /** The testbeds' rule alone for `su`; undefined when it allows every host. */
  own(su: SchedUnit): ((nodeId: string) => boolean) | undefined {
    const res = this.res;
    if (su.testbed !== undefined) {
      // Only its own group's testbed: a job naming another group's gets nothing.
      const hosts = res?.testbeds.get(su.testbed) ?? NONE;
      const groupOf = res?.groupOf;
      return (id) => hosts.has(id) && groupOf?.get(id) === su.quotaGroup;
    }
    if (res === undefined || res.groupOf.size === 0 || res.onlyGroup === su.quotaGroup) return undefined;
    const groupOf = res.groupOf;
    return (id) => {
      const g = groupOf.get(id);
      return g === undefined || g === su.quotaGroup;
    };
  }
}

/** Builds the scheduler's view of the active testbeds: each reserved host's group and each testbed's hosts. */
export function reservationsOf(active: Iterable<{ name: string; group: string; hosts: readonly string[] }>): Reservations | undefined {
  const groupOf = new Map<string, string>();
  const testbeds = new Map<string, ReadonlySet<string>>();
  const groups = new Set<string>();
  for (const tb of active) {
    testbeds.set(tb.name, new Set(tb.hosts));
    groups.add(tb.group);
    for (const h of tb.hosts) groupOf.set(h, tb.group);
  }
  if (testbeds.size === 0) return undefined;
  return { groupOf, testbeds, ...(groups.size === 1 ? { onlyGroup: [...groups][0] } : {}) };
}
