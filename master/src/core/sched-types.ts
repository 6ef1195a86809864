/**
 * The scheduler's input (a read-only snapshot of nodes, units, quota groups and their usage, and
 * optionally the hosts' reachability and where connected apps may go) and output (a plan of
 * placements and unsatisfied requests); see scheduler.ts.
 */
import type { Resource } from '@fuxi/common';

export interface SchedNode {
  id: string;
  rack: string;
  capacity: Resource;
  allocated: Resource;
  schedulable: boolean;
}

export interface SchedUnit {
  appId: string;
  suId: string;
  /** Resource of one slot. */
  resource: Resource;
  /** Higher is served first (within the unit's quota group). */
  priority: number;
  quotaGroup: string;
  /** App submission order; lower is served first among equal priorities (FIFO). */
  submitSeq: number;
  /** Location -> outstanding slot count. Location is '' (any), 'node:<id>' or 'rack:<name>'. */
  requests: ReadonlyMap<string, number>;
  preemptible?: boolean;
  /**
   * The first slot of a connected app (its AM, CASPR's first pod): among the nodes it may go to,
   * the one with the fewest broken links, then the usual choice. Only with a `scope` for its app.
   */
  mostConnected?: boolean;
  /** The job set `failurePrediction: off`: host blacklists do not apply to it (sched-blacklist.ts). */
  predictionOff?: boolean;
  /**
   * Gang scheduling: this pass places at least this many of the unit's slots at once, or none of
   * them (its task's gang size less the slots it already holds; see scheduler.ts). Absent or <= 1:
   * no gang, slots are placed one by one.
   */
  gang?: number;
  /**
   * The job names a testbed (testbeds.ts): its slots go only to that testbed's hosts, and nowhere
   * while the testbed is not active (not in `reservations`).
   */
  testbed?: string;
}

/**
 * Which hosts reach which (CASPR's connectivity matrix). Only broken links matter: a node with no
 * broken link reaches every other.
 */
export interface Reach {
  reachable(a: string, b: string): boolean;
  /** How many peers `nodeId` cannot reach or be reached by; 0 for a node with no broken link. */
  brokenDegree(nodeId: string): number;
  /** Those peers, when known: a node is then checked against its few broken links, not every anchor. */
  unreachablePeers?(nodeId: string): Iterable<string>;
}

/**
 * Where a connected app's new slots may go: only to nodes that reach every anchor (its AM's host,
 * the hosts of its slots, the hosts its AM asked to stay in reach of), never to an avoided one.
 * Slots the plan gives the app become anchors for its later turns. Anchors are read only when a
 * node with a broken link is considered (they may be computed lazily by the iterable).
 */
export interface PlacementScope {
  anchors: Iterable<string>;
  avoid: ReadonlySet<string>;
}

/**
 * Hosts failure prediction keeps new slots off (blacklist.ts): `blocked` get none, `gray` only when
 * no other node has room; `perApp` blocks hosts for one app only; `memoryCap` (hosts whose attempts
 * fail under memory pressure) takes a slot only while the host's memory allocated, the slot's
 * included, stays below the fraction given. Units with `predictionOff` ignore it.
 */
export interface HostBlacklist {
  blocked: ReadonlySet<string>;
  gray: ReadonlySet<string>;
  perApp: ReadonlyMap<string, ReadonlySet<string>>;
  memoryCap?: ReadonlyMap<string, number>;
}

/**
 * Hosts active testbeds hold (testbeds.ts): a host in `groupOf` takes new slots only of units of that
 * quota group; a unit with a `testbed` only on that testbed's hosts.
 */
export interface Reservations {
  groupOf: ReadonlyMap<string, string>;
  /** Active testbeds by name: their hosts. */
  testbeds: ReadonlyMap<string, ReadonlySet<string>>;
  /** Set when every reserved host belongs to this one group (its units then skip the filter). */
  onlyGroup?: string;
}

export interface QuotaGroup {
  name: string;
  /** Fair-share weight, > 0. */
  weight: number;
  /** Hard cap on the group's total allocation. */
  limit?: Resource;
}

export interface SchedulerSnapshot {
  nodes: ReadonlyMap<string, SchedNode>;
  /** Only units with outstanding requests need be present. */
  units: readonly SchedUnit[];
  /** A group not listed behaves as `{ weight: 1 }` with no limit. */
  groups: ReadonlyMap<string, QuotaGroup>;
  /** Current allocation of each group (all apps). */
  groupUsage: ReadonlyMap<string, Resource>;
  /** The hosts' reachability; absent: every node reaches every other. */
  reach?: Reach;
  /** Connected apps by app id; an app not listed (an independent one) may go anywhere. */
  scopes?: ReadonlyMap<string, PlacementScope>;
  /** Hosts failure prediction holds back; absent: none. */
  blacklist?: HostBlacklist;
  /** Hosts active testbeds hold; absent: none. */
  reservations?: Reservations;
  /** The share of the cluster AMs may hold, and what they hold now (sched-am-share.ts); absent: no limit. */
  amShare?: AmShare;
}

/** The AM share rule's input: a fraction (0, 1] of the schedulable capacity, and the AMs' current total. */
export interface AmShare {
  share: number;
  used: Resource;
}

export type LocalityLevel = 'node' | 'rack' | 'any';

export interface Placement {
  appId: string;
  suId: string;
  nodeId: string;
  slots: number;
  /** The request key that was consumed ('', 'node:<id>' or 'rack:<name>'). */
  location: string;
  /** Where the slots actually landed relative to `location`. */
  localityLevel: LocalityLevel;
}

/**
 * 'am-share': an AM slot fits on some node, but AMs already hold their share of the cluster
 * (sched-am-share.ts). 'unreachable': a slot fits on some node, but on none its app's scope allows (a connected app
 * whose anchors no free node reaches, or only nodes it avoids have room). 'blacklisted': a slot fits
 * on some node, but only on hosts failure prediction blocks for its app. 'reserved': a slot fits on
 * some node, but only on hosts testbeds keep it off (another group's testbed, or outside the
 * testbed its job names).
 */
export type UnsatisfiedReason = 'no-capacity' | 'quota-limit' | 'unreachable' | 'blacklisted' | 'reserved' | 'am-share';

export interface Unsatisfied {
  appId: string;
  suId: string;
  slots: number;
  reason: UnsatisfiedReason;
}

export interface Plan {
  placements: Placement[];
  unsatisfied: Unsatisfied[];
}

export const NODE_PREFIX = 'node:';
export const RACK_PREFIX = 'rack:';

/** Code-unit string order: locale-independent, so plans are the same on every machine. */
export function cmpStr(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
