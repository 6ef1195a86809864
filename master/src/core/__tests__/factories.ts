/**
 * Small builders for scheduler tests (after nomad's `mock.Node()` / `mock.Job()`): sensible defaults,
 * override only what a test is about.
 */
import { add, res, scale, ZERO } from '@fuxi/common';
import type { Resource } from '@fuxi/common';
import { reservationsOf } from '../sched-testbeds.js';
import type { PlacementScope, Plan, QuotaGroup, Reach, SchedNode, SchedUnit, SchedulerSnapshot } from '../scheduler.js';

/** A schedulable 8-core / 16 GiB node `n1` in rack `r1`, nothing allocated. */
export function mockNode(over: Partial<SchedNode> = {}): SchedNode {
  return { id: 'n1', rack: 'r1', capacity: res(8000, 16384), allocated: ZERO, schedulable: true, ...over };
}

export type UnitOverrides = Partial<Omit<SchedUnit, 'requests'>> & {
  /** Location -> slot count, as a Map or a plain object (`{ '': 3, 'node:n1': 1 }`). */
  requests?: ReadonlyMap<string, number> | Record<string, number>;
};

/** One slot of 1 core / 1 GiB anywhere, for `app-1/su-1` in group `default`. */
export function mockUnit(over: UnitOverrides = {}): SchedUnit {
  const { requests, ...rest } = over;
  return {
    appId: 'app-1',
    suId: 'su-1',
    resource: res(1000, 1024),
    priority: 0,
    quotaGroup: 'default',
    submitSeq: 0,
    ...rest,
    requests: requests === undefined ? new Map([['', 1]]) : requests instanceof Map ? requests : new Map(Object.entries(requests)),
  };
}

export interface SnapshotParts {
  nodes?: readonly SchedNode[];
  units?: readonly SchedUnit[];
  groups?: readonly QuotaGroup[];
  groupUsage?: Record<string, Resource>;
  /** Broken links between node ids; absent: no `reach` in the snapshot. */
  links?: ReadonlyArray<readonly [string, string]>;
  /** Connected apps' scopes by app id; absent: no `scopes` in the snapshot. */
  scopes?: Record<string, PlacementScope>;
  /** Hosts failure prediction holds back; absent: no `blacklist` in the snapshot. */
  blacklist?: { blocked?: readonly string[]; gray?: readonly string[]; perApp?: Record<string, readonly string[]>; memoryCap?: Record<string, number> };
  /** Active testbeds; absent: no `reservations` in the snapshot. */
  testbeds?: ReadonlyArray<{ name: string; group: string; hosts: readonly string[] }>;
}

/** A snapshot from plain lists; defaults to one `mockNode()` and no units. */
export function mockSnapshot(parts: SnapshotParts = {}): SchedulerSnapshot {
  return {
    nodes: new Map((parts.nodes ?? [mockNode()]).map((n) => [n.id, n])),
    units: parts.units ?? [],
    groups: new Map((parts.groups ?? []).map((g) => [g.name, g])),
    groupUsage: new Map(Object.entries(parts.groupUsage ?? {})),
    ...(parts.links !== undefined ? { reach: mockReach(parts.links) } : {}),
    ...(parts.scopes !== undefined ? { scopes: new Map(Object.entries(parts.scopes)) } : {}),
    ...(parts.blacklist !== undefined
      ? {
          blacklist: {
            blocked: new Set(parts.blacklist.blocked ?? []),
            gray: new Set(parts.blacklist.gray ?? []),
            perApp: new Map(Object.entries(parts.blacklist.perApp ?? {}).map(([a, ids]) => [a, new Set(ids)])),
            ...(parts.blacklist.memoryCap !== undefined ? { memoryCap: new Map(Object.entries(parts.blacklist.memoryCap)) } : {}),
          },
        }
      : {}),
    ...(parts.testbeds !== undefined ? { reservations: reservationsOf(parts.testbeds) } : {}),
  };
}

/** Reachability with these broken links (pairs of node ids, either order, repeats ignored); every other pair reaches. */
export function mockReach(links: ReadonlyArray<readonly [string, string]>): Reach {
  const key = (a: string, b: string): string => (a < b ? `${a}|${b}` : `${b}|${a}`);
  const cut = new Set<string>();
  const peers = new Map<string, string[]>();
  for (const [a, b] of links) {
    if (a === b || cut.has(key(a, b))) continue;
    cut.add(key(a, b));
    peers.set(a, [...(peers.get(a) ?? []), b]);
    peers.set(b, [...(peers.get(b) ?? []), a]);
  }
  return {
    reachable: (a, b) => a === b || !cut.has(key(a, b)),
    brokenDegree: (id) => peers.get(id)?.length ?? 0,
    unreachablePeers: (id) => peers.get(id) ?? [],
  };
}

/** A connected app's scope: new slots must reach `anchors` and never go to `avoid`. */
export function mockScope(anchors: readonly string[] = [], avoid: readonly string[] = []): PlacementScope {
  return { anchors, avoid: new Set(avoid) };
}

/** `count` nodes `n00..` spread round-robin over `racks` racks `r0..`, all alike. */
export function mockNodes(count: number, racks = 1, over: Partial<SchedNode> = {}): SchedNode[] {
  const width = String(Math.max(0, count - 1)).length;
  return Array.from({ length: count }, (_, i) => mockNode({ id: `n${String(i).padStart(width, '0')}`, rack: `r${i % racks}`, ...over }));
}

// ---- reading plans --------------------------------------------------------------------------------

/** Resources each node receives in `plan` (nodes without placements are absent). */
export function placedByNode(snapshot: SchedulerSnapshot, plan: Plan): Map<string, Resource> {
  const units = unitsByKey(snapshot);
  const out = new Map<string, Resource>();
  for (const p of plan.placements) {
    const u = units.get(unitKey(p));
    if (u === undefined) throw new Error(`placement for unknown unit ${unitKey(p)}`);
    out.set(p.nodeId, add(out.get(p.nodeId) ?? ZERO, scale(u.resource, p.slots)));
  }
  return out;
}

/** Resources each quota group receives in `plan`. */
export function placedByGroup(snapshot: SchedulerSnapshot, plan: Plan): Map<string, Resource> {
  const units = unitsByKey(snapshot);
  const out = new Map<string, Resource>();
  for (const p of plan.placements) {
    const u = units.get(unitKey(p));
    if (u === undefined) throw new Error(`placement for unknown unit ${unitKey(p)}`);
    out.set(u.quotaGroup, add(out.get(u.quotaGroup) ?? ZERO, scale(u.resource, p.slots)));
  }
  return out;
}

/** Total slots placed per `app/su` (or per `app/su@location` with `byLocation`). */
export function slotsByUnit(plan: Plan, byLocation = false): Map<string, number> {
  const out = new Map<string, number>();
  for (const p of plan.placements) {
    const k = byLocation ? `${unitKey(p)}@${p.location}` : unitKey(p);
    out.set(k, (out.get(k) ?? 0) + p.slots);
  }
  return out;
}

export function unitKey(u: { appId: string; suId: string }): string {
  return `${u.appId}/${u.suId}`;
}

function unitsByKey(snapshot: SchedulerSnapshot): Map<string, SchedUnit> {
  return new Map(snapshot.units.map((u) => [unitKey(u), u]));
}
