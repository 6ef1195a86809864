/**
 * External schedulers' calls (SchedulerService): registering under a name (a newer registration
 * fences the older), keepalives, the end of a registration, and placements, checked by
 * external-placement.ts and applied through the same path as the built-in scheduler's plans
 * (scheduling.ts `applyPlacements`): the same ledger, grants and assignment pushes, so an applied
 * placement is a grant like any other and survives a failover as grants do.
 */
import { AM_SU, gangSize, InvalidArgumentError, NotFoundError, SCHEDULER_NAME_PATTERN, sub } from '@fuxi/common';
import { checkPlacements, type ExternalPlacement, type PlacementCheckView, type Rejection } from './external-placement.js';
import { liveRegistration, type Registration, type SchedulingStyle } from './external-registry.js';
import { inScope } from './external-view.js';
import type { MasterState } from './master-state.js';
import { applyPlacements, nodeSchedulable } from './scheduling.js';
import { NODE_PREFIX, RACK_PREFIX, type Placement } from './scheduler.js';

export interface RegisterSchedulerInput {
  name: string;
  testbed: string;
  quotaGroup: string;
  style: string;
}

/** Registers `name`; any earlier registration of it is fenced from now on. */
export function registerScheduler(st: MasterState, req: RegisterSchedulerInput): Registration {
  if (!SCHEDULER_NAME_PATTERN.test(req.name)) {
    throw new InvalidArgumentError(
      'name',
      `must be 1-63 characters of letters, digits, '.', '_' or '-' (${SCHEDULER_NAME_PATTERN.source}), got ${JSON.stringify(req.name)}`,
    );
  }
  if (req.style !== 'queue' && req.style !== 'slot') throw new InvalidArgumentError('style', `must be "queue" or "slot", got ${JSON.stringify(req.style)}`);
  if (req.testbed !== '' && req.quotaGroup !== '') throw new InvalidArgumentError('testbed', 'give a testbed or a quota group as the scope, not both');
  if (req.testbed !== '' && !st.testbeds.has(req.testbed)) throw new NotFoundError('testbed', req.testbed);
  const reg: Registration = {
    name: req.name,
    epoch: st.external.nextEpoch(st.epoch),
    testbed: req.testbed,
    quotaGroup: req.quotaGroup,
    style: req.style as SchedulingStyle,
    registeredMs: st.now,
    lastHeardMs: st.now,
  };
  const was = st.external.regs.get(req.name);
  st.external.regs.set(req.name, reg);
  st.external.absentSince.delete(req.name);
  st.external.fellBack.delete(req.name);
  st.log.info(
    { scheduler: reg.name, epoch: reg.epoch, testbed: reg.testbed, quotaGroup: reg.quotaGroup, style: reg.style, fenced: was?.epoch },
    'external scheduler registered',
  );
  return reg;
}

/** The registration `name` holds with `epoch`, when it is the current one. */
export function currentRegistration(st: MasterState, name: string, epoch: string): Registration | undefined {
  const r = st.external.regs.get(name);
  return r !== undefined && r.epoch === epoch ? r : undefined;
}

/** The registration's stream ended (the scheduler went away): its jobs wait or fall back. */
export function detachScheduler(st: MasterState, name: string, epoch: string): boolean {
  if (currentRegistration(st, name, epoch) === undefined) return false;
  st.external.regs.delete(name);
  st.external.absentSince.set(name, st.now);
  st.log.warn({ scheduler: name, epoch }, 'external scheduler detached');
  return true;
}

/** The placement checks' view over the master's state, for one registration (or none). */
function checkView(st: MasterState, reg: Registration | undefined): PlacementCheckView {
  return {
    currentEpoch: reg?.epoch,
    inScope: (nodeId) => reg !== undefined && inScope(st, reg, nodeId),
    host: (nodeId) => {
      const n = st.nodes.get(nodeId);
      return n && { free: sub(n.info.capacity, n.allocated), schedulable: nodeSchedulable(st, n) };
    },
    unit: (appId, unit) => {
      const app = st.apps.get(appId);
      const su = unit === AM_SU ? undefined : app?.sus.get(unit);
      const task = app?.job.spec.tasks.find((t) => t.name === unit);
      if (app === undefined || su === undefined || task === undefined) return undefined;
      let outstanding = 0;
      for (const v of su.requests.values()) outstanding += v;
      const gang = gangSize(task) - su.granted;
      return { scheduler: app.job.spec.scheduler, resource: su.resource, outstanding, gang };
    },
  };
}

/**
 * Placements from scheduler `name` (registration `epoch`): each checked (external-placement.ts) and
 * applied, or rejected with its reason. Any call, an empty one too, counts as the scheduler's keepalive.
 */
export function placeExternal(
  st: MasterState,
  call: { name: string; epoch: string; placements: readonly ExternalPlacement[] },
): { applied: number; rejected: Rejection[] } {
  const reg = currentRegistration(st, call.name, call.epoch);
  if (reg !== undefined) reg.lastHeardMs = st.now;
  if (st.recovering && call.placements.length > 0) {
    return {
      applied: 0,
      rejected: call.placements.map((_, index) => ({
        index,
        code: 'RECOVERING',
        message: 'the master is recovering from a failover: place again once it has',
      })),
    };
  }
  const current = liveRegistration(st, call.name) ?? st.external.regs.get(call.name);
  const { accepted, rejected } = checkPlacements(checkView(st, current), call);
  if (accepted.length === 0) return { applied: 0, rejected };
  const plan: Placement[] = [];
  for (const p of accepted) plan.push(...consume(st, p));
  applyPlacements(st, plan);
  for (const p of accepted) st.external.record({ kind: 'placed', atMs: st.now, appId: p.appId, unit: p.unit, nodeId: p.nodeId, count: p.count });
  return { applied: accepted.length, rejected };
}

/**
 * The scheduler's placement as the built-in scheduler's placements: slots taken from the unit's
 * requests for that node first, then its rack, then anywhere, then the others.
 */
function consume(st: MasterState, p: ExternalPlacement): Placement[] {
  const su = st.apps.get(p.appId)?.sus.get(p.unit);
  const rack = st.nodes.get(p.nodeId)?.info.rack ?? '';
  if (su === undefined) return [];
  const order = [`${NODE_PREFIX}${p.nodeId}`, `${RACK_PREFIX}${rack}`, '', ...su.requests.keys()];
  const out: Placement[] = [];
  let left = p.count;
  const used = new Map<string, number>();
  for (const location of order) {
    if (left === 0) break;
    const have = (su.requests.get(location) ?? 0) - (used.get(location) ?? 0);
    if (have <= 0) continue;
    const k = Math.min(have, left);
    used.set(location, (used.get(location) ?? 0) + k);
    left -= k;
    const localityLevel = location.startsWith(NODE_PREFIX)
      ? location === order[0]
        ? 'node'
        : 'any'
      : location.startsWith(RACK_PREFIX)
        ? location === order[1]
          ? 'rack'
          : 'any'
        : 'any';
    out.push({ appId: p.appId, suId: p.unit, nodeId: p.nodeId, slots: k, location, localityLevel });
  }
  return out;
}
