/**
 * Read-only views of the agent core: resources in use, worker counts, workers by key, app, task
 * instance or su, the grant table, AM attempt bars, and the whole snapshot. Every worker and grant
 * handed out is a copy.
 */
import { add, AM_SU, isWorkerActive, isWorkerTerminal, ZERO, type Resource, type WorkerState } from '@fuxi/common';
import { copyGrant, copyWorker, wkey, type CoreState, type WorkerRecord } from './core-state.js';
import type { AgentSnapshot, GrantEntry, WorkerInfo, WorkerSummary } from './types.js';

/** Sum of the resources of spawning and running workers. */
export function used(st: CoreState): Resource {
  let u: Resource = ZERO;
  for (const w of st.live.values()) if (isWorkerActive(w.state)) u = add(u, w.resource);
  return u;
}

export function summary(st: CoreState): WorkerSummary {
  const s = { running: 0, pending: 0, finished: st.workers.size - st.live.size };
  for (const w of st.live.values()) {
    if (isWorkerActive(w.state)) s.running++;
    else s.pending++;
  }
  return s;
}

/**
 * Workers in the registry by state, AM processes (su `__am__`) apart from the rest: what the
 * agent's `fuxi_agent_workers` gauge shows. Every state is there, zero or not.
 */
export function workerCounts(st: CoreState): { am: Record<WorkerState, number>; task: Record<WorkerState, number> } {
  const zero = (): Record<WorkerState, number> => ({ PENDING: 0, STARTING: 0, RUNNING: 0, SUCCEEDED: 0, FAILED: 0, KILLED: 0, REJECTED: 0 });
  const out = { am: zero(), task: zero() };
  for (const w of st.workers.values()) out[w.suId === AM_SU ? 'am' : 'task'][w.state]++;
  return out;
}

/** Every application-master process (su `__am__`) known, finished ones included. */
export function amWorkers(st: CoreState): WorkerInfo[] {
  return [...st.workers.values()].filter((w) => w.suId === AM_SU).map(copyWorker);
}

/**
 * The application-master processes a heartbeat reports: every one not ended, and the ended ones
 * whose app still holds a grant here (the master has not let the app's slots here go, so it may not
 * have heard of the end yet). An ended AM whose app holds nothing here any more was dealt with (its
 * job ended, or a newer attempt runs): every heartbeat carried every one of them kept (thousands
 * after a day of short jobs), and the master walked them for each AM it was launching.
 */
export function amWorkersToReport(st: CoreState): WorkerInfo[] {
  const held = new Set<string>();
  for (const g of st.grants.values()) held.add(g.appId);
  const out: WorkerInfo[] = [];
  for (const w of st.workers.values()) if (w.suId === AM_SU && (!isWorkerTerminal(w.state) || held.has(w.appId))) out.push(copyWorker(w));
  return out;
}

/** The workers running now (copies), in acceptance order. */
export function runningWorkers(st: CoreState): WorkerInfo[] {
  const out: WorkerInfo[] = [];
  for (const w of st.live.values()) if (w.state === 'RUNNING') out.push(copyWorker(w));
  return out;
}

/** At most this many running task workers go in a heartbeat (`runningTaskWorkers`). */
export const MAX_RUNNING_REPORTED = 1000;

/**
 * The task workers (not AMs) running now, oldest started first, at most MAX_RUNNING_REPORTED: the
 * attempts the master's failure prediction weighs one by one.
 */
export function runningTaskWorkers(st: CoreState): Array<Pick<WorkerInfo, 'workerId' | 'appId' | 'task' | 'instance' | 'attempt' | 'startedAtMs'>> {
  return [...st.live.values()]
    .filter((w) => w.suId !== AM_SU && w.state === 'RUNNING')
    .sort((a, b) => a.startedAtMs - b.startedAtMs || (a.workerId < b.workerId ? -1 : a.workerId > b.workerId ? 1 : 0))
    .slice(0, MAX_RUNNING_REPORTED)
    .map((w) => ({ workerId: w.workerId, appId: w.appId, task: w.task, instance: w.instance, attempt: w.attempt, startedAtMs: w.startedAtMs }));
}

export function worker(st: CoreState, appId: string, workerId: string): WorkerInfo | undefined {
  const w = st.workers.get(wkey(appId, workerId));
  return w ? copyWorker(w) : undefined;
}

/** The known workers among `ids` of the app, in the order of `ids` (unknown ones left out). */
export function workersById(st: CoreState, appId: string, ids: readonly string[]): WorkerInfo[] {
  return ids
    .map((id) => st.workers.get(wkey(appId, id)))
    .filter((w): w is WorkerRecord => w !== undefined)
    .map(copyWorker);
}

/** Workers of an app (every worker when `appId` is empty), in acceptance order. */
export function listWorkers(st: CoreState, appId: string): WorkerInfo[] {
  return [...st.workers.values()].filter((w) => !appId || w.appId === appId).map(copyWorker);
}

/**
 * The worker of instance `instance` of `task` in `appId`: the given attempt, or the latest one
 * (highest attempt, then most recently accepted) when `attempt` is 0.
 */
export function findWorker(st: CoreState, appId: string, task: string, instance: number, attempt: number): WorkerInfo | undefined {
  let best: WorkerRecord | undefined;
  for (const w of st.workers.values()) {
    if (w.appId !== appId || w.task !== task || w.instance !== instance) continue;
    if (attempt > 0 && w.attempt !== attempt) continue;
    if (!best || w.attempt > best.attempt || (w.attempt === best.attempt && w.order > best.order)) best = w;
  }
  return best ? copyWorker(best) : undefined;
}

export function grantTable(st: CoreState): GrantEntry[] {
  return [...st.grants.values()].map(copyGrant);
}

/** Highest AM attempt seen for the app (0 when unknown). */
export function amAttemptOf(st: CoreState, appId: string): number {
  return st.apps.get(appId)?.amAttempt ?? 0;
}

/** Address of the app's newest AM attempt ('' when unknown). */
export function amAddressOf(st: CoreState, appId: string): string {
  return st.apps.get(appId)?.amAddress ?? '';
}

export function snapshot(st: CoreState): AgentSnapshot {
  return {
    nodeId: st.nodeId,
    capacity: { ...st.capacity },
    epoch: st.epoch,
    grantEpoch: st.grantEpoch,
    grantSeq: st.grantSeq,
    grants: grantTable(st),
    workers: listWorkers(st, ''),
    used: used(st),
  };
}
