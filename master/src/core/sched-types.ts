/**
 * The scheduler's input (a read-only snapshot of nodes, units, quota groups and their usage) and
 * output (a plan of placements and unsatisfied requests); see scheduler.ts.
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

export type UnsatisfiedReason = 'no-capacity' | 'quota-limit';

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
