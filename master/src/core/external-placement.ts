/**
 * The checks an external scheduler's placements pass before the master grants them: a pure
 * function of the placements and a read-only view of what they name (the scheduler's current
 * registration, its scope, the hosts' free room, the jobs' outstanding requests and gangs).
 *
 * A call is checked as a whole, in order: its registration epoch must be the name's current one
 * (a newer registration fences an older: FENCED). Then each placement on its own: well formed
 * (INVALID), a schedule unit that exists (UNKNOWN_UNIT), of a job that names this scheduler
 * (NOT_ITS_JOB), on a host in the scheduler's scope (OUT_OF_SCOPE) that takes new work
 * (HOST_UNSCHEDULABLE: cordoned, draining, lost, timing out, unknown), no more slots than the unit
 * still asks for (OVER_REQUEST) and room on the host for them after the placements before it in
 * the call (OVER_CAPACITY). Last, gangs: a unit that must get `gang` slots at once and gets fewer
 * (but some) from the call has every placement of it rejected (PARTIAL_GANG), and the checks run
 * again without it, so the room its placements took is free for the others. Nothing is partly
 * accepted: a placement is applied with all its slots or rejected.
 *
 * ```ts
 * const { accepted, rejected } = checkPlacements(view, { name: 'ffd', epoch, placements });
 * applyExternalPlacements(st, accepted); // the same grant path as the built-in scheduler
 * ```
 */
import { fits, scale, sub, type Resource } from '@fuxi/common';

export type RejectCode =
  | 'FENCED'
  | 'NOT_REGISTERED'
  | 'NOT_ITS_JOB'
  | 'UNKNOWN_UNIT'
  | 'OUT_OF_SCOPE'
  | 'HOST_UNSCHEDULABLE'
  | 'OVER_CAPACITY'
  | 'OVER_REQUEST'
  | 'PARTIAL_GANG'
  | 'INVALID'
  | 'RECOVERING';

export interface ExternalPlacement {
  appId: string;
  unit: string;
  nodeId: string;
  count: number;
}

export interface Rejection {
  /** Index of the placement in the call. */
  index: number;
  code: RejectCode;
  message: string;
}

/** What the checks read; the master builds it over its state (external-schedulers.ts). */
export interface PlacementCheckView {
  /** The name's current registration epoch; undefined when it is not registered. */
  currentEpoch: string | undefined;
  inScope(nodeId: string): boolean;
  /** A host's free room and whether it takes new work; undefined for an unknown host. */
  host(nodeId: string): { free: Resource; schedulable: boolean } | undefined;
  /** A schedule unit: its job's scheduler, one slot's resource, slots still asked for, its gang (<= 1: none). */
  unit(appId: string, unit: string): { scheduler: string | undefined; resource: Resource; outstanding: number; gang: number } | undefined;
}

export interface PlacementCall {
  name: string;
  epoch: string;
  placements: readonly ExternalPlacement[];
}

export interface CheckResult {
  accepted: ExternalPlacement[];
  rejected: Rejection[];
}

const unitKey = (p: Pick<ExternalPlacement, 'appId' | 'unit'>): string => `${p.appId}/${p.unit}`;

/** Checks one call's placements (see the header). Pure: the view is only read. */
export function checkPlacements(view: PlacementCheckView, call: PlacementCall): CheckResult {
  const all = call.placements;
  if (view.currentEpoch === undefined) {
    return { accepted: [], rejected: all.map((_, index) => ({ index, code: 'NOT_REGISTERED', message: `no scheduler named ${call.name} is registered` })) };
  }
  if (call.epoch !== view.currentEpoch) {
    const message = `registration epoch ${call.epoch} of ${call.name} is fenced by a newer registration (epoch ${view.currentEpoch})`;
    return { accepted: [], rejected: all.map((_, index) => ({ index, code: 'FENCED', message })) };
  }
  const partialGangs = new Map<string, Rejection[]>();
  for (;;) {
    const r = onePass(view, call, partialGangs);
    if (r.newGangs.length === 0) {
      const rejected = [...r.rejected, ...[...partialGangs.values()].flat()].sort((a, b) => a.index - b.index);
      return { accepted: r.accepted.map((i) => all[i]!), rejected };
    }
    for (const [key, rej] of r.newGangs) partialGangs.set(key, rej);
  }
}

/** One pass over the placements, units in `excluded` left out; returns gangs found partial in it. */
function onePass(
  view: PlacementCheckView,
  call: PlacementCall,
  excluded: ReadonlyMap<string, Rejection[]>,
): { accepted: number[]; rejected: Rejection[]; newGangs: Array<[string, Rejection[]]> } {
  const free = new Map<string, Resource>();
  const asked = new Map<string, number>();
  const accepted: number[] = [];
  const rejected: Rejection[] = [];
  call.placements.forEach((p, index) => {
    if (excluded.has(unitKey(p))) return;
    const why = checkOne(view, call.name, p, free, asked);
    if (why !== undefined) rejected.push({ index, ...why });
    else accepted.push(index);
  });
  // Gangs: a unit that gets some but fewer than its gang's slots from this call gets none.
  const newGangs: Array<[string, Rejection[]]> = [];
  const seen = new Set<string>();
  for (const i of accepted) {
    const p = call.placements[i]!;
    const key = unitKey(p);
    if (seen.has(key)) continue;
    seen.add(key);
    const gang = view.unit(p.appId, p.unit)?.gang ?? 1;
    const got = asked.get(key) ?? 0;
    if (gang > 1 && got < gang) {
      const message = `${key} is a gang of ${gang}: all ${gang} slots at once or none, this call places ${got}`;
      const idx = call.placements.map((q, j) => (unitKey(q) === key ? j : -1)).filter((j) => j >= 0);
      newGangs.push([key, idx.map((index) => ({ index, code: 'PARTIAL_GANG' as const, message }))]);
    }
  }
  return { accepted, rejected, newGangs };
}

/** One placement's checks; on success its room and slots are taken from `free` and added to `asked`. */
function checkOne(
  view: PlacementCheckView,
  name: string,
  p: ExternalPlacement,
  free: Map<string, Resource>,
  asked: Map<string, number>,
): { code: RejectCode; message: string } | undefined {
  const no = (code: RejectCode, message: string) => ({ code, message });
  if (!Number.isInteger(p.count) || p.count < 1) return no('INVALID', `count must be an integer >= 1, got ${p.count}`);
  if (p.appId === '' || p.unit === '' || p.nodeId === '') return no('INVALID', 'app_id, unit and node_id are required');
  const u = view.unit(p.appId, p.unit);
  if (u === undefined) return no('UNKNOWN_UNIT', `no running app ${p.appId} with a task ${p.unit}`);
  if (u.scheduler !== name)
    return no('NOT_ITS_JOB', `job ${p.appId} is scheduled by ${u.scheduler === undefined ? 'the built-in scheduler' : u.scheduler}, not ${name}`);
  if (!view.inScope(p.nodeId)) return no('OUT_OF_SCOPE', `host ${p.nodeId} is outside the scope of ${name}`);
  const h = view.host(p.nodeId);
  if (h === undefined) return no('HOST_UNSCHEDULABLE', `host ${p.nodeId} is unknown`);
  if (!h.schedulable) return no('HOST_UNSCHEDULABLE', `host ${p.nodeId} takes no new work (cordoned, draining, timing out or lost)`);
  const key = unitKey(p);
  const already = asked.get(key) ?? 0;
  if (already + p.count > u.outstanding) return no('OVER_REQUEST', `${key} asks for ${u.outstanding} more slots; this call places ${already + p.count}`);
  const room = free.get(p.nodeId) ?? h.free;
  const need = scale(u.resource, p.count);
  if (!fits(need, room)) {
    return no(
      'OVER_CAPACITY',
      `host ${p.nodeId} has ${room.cpuMilli}m CPU and ${room.memoryMb} MiB free; ${p.count} slots of ${key} need ${need.cpuMilli}m and ${need.memoryMb} MiB`,
    );
  }
  free.set(p.nodeId, sub(room, need));
  asked.set(key, already + p.count);
  return undefined;
}
