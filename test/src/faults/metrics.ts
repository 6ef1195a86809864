/**
 * What the fault matrix measures for a row, computed from what the agents and the master report
 * (pure functions: no processes, no clock).
 *
 * - healthy workers restarted: a task worker that ran before the fault on a node that did not die,
 *   and that afterwards is not running as the same process (gone from its agent's list, another
 *   pid, process dead, ended other than by succeeding), or whose instance ran again elsewhere;
 * - instances rescheduled: the larger of the jobs' task `retries` and the instances the agents
 *   list as having run again (another node, worker id, pid or attempt than before the fault: a
 *   restarted AM that starts an instance again under the same attempt number counts too);
 * - allowed reschedules: instances on nodes that really died, plus, for jobs whose policy is
 *   `rerun`, instances on an agent that was timing out for longer than the job's `rerunAfterMs`.
 */

import { AM_SU } from '@fuxi/common';

/** A worker as an agent lists it (GetAgentState / ListWorkers), with the node that listed it. */
export interface WorkerRef {
  nodeId: string;
  appId: string;
  workerId: string;
  suId: string;
  task: string;
  instance: number;
  attempt: number;
  amAttempt: number;
  pid: number;
  /** 'WORKER_STATE_RUNNING', ... */
  state: string;
}

export const workerKey = (w: Pick<WorkerRef, 'nodeId' | 'appId' | 'workerId'>): string => `${w.nodeId}/${w.appId}/${w.workerId}`;
export const instanceKey = (w: Pick<WorkerRef, 'appId' | 'task' | 'instance'>): string => `${w.appId}/${w.task}/${w.instance}`;
export const isAmWorker = (w: Pick<WorkerRef, 'suId' | 'task'>): boolean => w.suId === AM_SU || w.task === AM_SU;

export interface RestartedWorker {
  /** node/app/worker */
  worker: string;
  pid: number;
  why: string;
}

export interface HealthyInput {
  /** Task workers running (with a pid) just before the fault. */
  before: readonly WorkerRef[];
  /** Every worker the agents listed once every component had recovered (jobs not released yet). */
  afterRecovery: readonly WorkerRef[];
  /** Every worker the agents listed after the jobs ended. */
  final: readonly WorkerRef[];
  /** Whether each `before` worker's pid was alive at the after-recovery check (by workerKey). */
  aliveAtCheck: ReadonlyMap<string, boolean>;
  /** Nodes whose machine died: their workers may be gone. */
  deadNodes?: ReadonlySet<string>;
}

/** The healthy workers that were disturbed, each with the reason (empty = C2 held). */
export function restartedHealthyWorkers(input: HealthyInput): RestartedWorker[] {
  const after = new Map(input.afterRecovery.map((w) => [workerKey(w), w] as const));
  const final = new Map(input.final.map((w) => [workerKey(w), w] as const));
  const others = otherRuns(input.before, [...input.afterRecovery, ...input.final]);
  const out: RestartedWorker[] = [];
  for (const w of input.before) {
    if (isAmWorker(w) || input.deadNodes?.has(w.nodeId)) continue;
    const key = workerKey(w);
    const why: string[] = [];
    const a = after.get(key);
    if (!a) why.push('its agent no longer lists it after recovery');
    else {
      if (a.state !== 'WORKER_STATE_RUNNING') why.push(`${shortState(a.state)} after recovery`);
      if (a.pid !== w.pid) why.push(`pid ${w.pid} -> ${a.pid}`);
    }
    if (input.aliveAtCheck.get(key) === false) why.push(`process ${w.pid} is gone`);
    const again = others.get(instanceKey(w));
    if (again) why.push(`instance ran again as ${[...again].join(', ')}`);
    const f = final.get(key);
    if (f && f.state !== 'WORKER_STATE_SUCCEEDED' && f.state !== 'WORKER_STATE_RUNNING') why.push(`ended ${shortState(f.state)}`);
    if (why.length > 0) out.push({ worker: key, pid: w.pid, why: why.join('; ') });
  }
  return out;
}

/** Progress of one task as the master reports it (JobInfo.tasks). */
export interface TaskRetries {
  name: string;
  retries: number;
}

/** Instances that ran another attempt: by the jobs' retries, and by the attempts the agents list. */
export function rescheduledInstances(
  jobs: ReadonlyArray<{ appId: string; tasks: readonly TaskRetries[] }>,
  before: readonly WorkerRef[],
  seen: readonly WorkerRef[],
): { byRetries: number; byRuns: number; instances: string[] } {
  const byRetries = jobs.reduce((n, j) => n + j.tasks.reduce((m, t) => m + Math.max(0, t.retries), 0), 0);
  const rerun = [...otherRuns(before, seen).keys()].sort();
  return { byRetries, byRuns: rerun.length, instances: rerun };
}

/**
 * Per instance that ran before the fault: the other runs of it the agents list afterwards (another
 * node, another worker id, another pid, or a later attempt), as `node/worker:pid (attempt n)`.
 * A re-run that keeps the attempt number (the same instance started again by a restarted AM) counts.
 */
export function otherRuns(before: readonly WorkerRef[], seen: readonly WorkerRef[]): Map<string, Set<string>> {
  const original = new Map<string, WorkerRef>();
  for (const w of before) if (!isAmWorker(w)) original.set(instanceKey(w), w);
  const out = new Map<string, Set<string>>();
  for (const w of seen) {
    if (isAmWorker(w)) continue;
    const o = original.get(instanceKey(w));
    if (!o) continue;
    const same = w.nodeId === o.nodeId && w.workerId === o.workerId && (w.pid === o.pid || w.pid <= 0) && w.attempt === o.attempt;
    if (same) continue;
    const k = instanceKey(w);
    if (!out.has(k)) out.set(k, new Set());
    out.get(k)!.add(`${w.nodeId}/${w.workerId}:${w.pid} (attempt ${w.attempt})`);
  }
  return out;
}

export interface AllowedInput {
  before: readonly WorkerRef[];
  deadNodes: ReadonlySet<string>;
  /** Agents that were timing out, with how long (ms) the master saw them silent at most. */
  timingNodes: ReadonlyMap<string, number>;
  /** Per app: its onAgentTimeout policy and rerunAfterMs. */
  policies: ReadonlyMap<string, { policy: string; rerunAfterMs: number }>;
}

/** How many instances may legitimately have been re-run in this row. */
export function allowedReschedules(input: AllowedInput): number {
  let n = 0;
  for (const w of input.before) {
    if (isAmWorker(w)) continue;
    if (input.deadNodes.has(w.nodeId)) {
      n++;
      continue;
    }
    const silent = input.timingNodes.get(w.nodeId);
    const p = input.policies.get(w.appId);
    if (silent !== undefined && p && p.policy === 'rerun' && silent > p.rerunAfterMs) n++;
  }
  return n;
}

function shortState(s: string): string {
  return s.replace(/^WORKER_STATE_/, '').toLowerCase();
}
