/**
 * Small builders for DAG AM core tests: sensible defaults, override only what a test is about.
 */
import { res } from '@fuxi/common';
import { DagAppMaster, parseWorkerId, type DagAmOptions } from '../dag-am.js';
import type { AmEffect, Assignment, JobSpec, RequestDelta, SlotReturn, TaskSpec, WorkerEvent, WorkerPlan, WorkerState } from '../types.js';

/** Task `map`: one instance of 1 core / 1 GiB, 3 attempts, no dependencies, no locality. */
export function mockTask(over: Partial<TaskSpec> = {}): TaskSpec {
  return {
    name: 'map',
    instances: 1,
    resource: res(1000, 1024),
    command: { argv: ['run', '${task}', '${instance}'], env: {}, cwd: '' },
    maxAttempts: 3,
    dependsOn: [],
    locality: { nodes: [], racks: [] },
    priority: 0,
    ...over,
  };
}

export function mockJob(tasks: TaskSpec[], over: Partial<JobSpec> = {}): JobSpec {
  return {
    jobId: 'job-1',
    name: 'wordcount',
    quotaGroup: 'default',
    priority: 5,
    env: {},
    amResource: res(500, 512),
    amMode: 'shared',
    tasks,
    onAgentTimeout: 'rerun',
    rerunAfterMs: 30_000,
    ...over,
  };
}

export function asg(suId: string, nodeId: string, slots: number): Assignment {
  return { suId, nodeId, nodeAddress: `${nodeId}.addr:7071`, slots };
}

/** A status event for `workerId` (`task.instance.attempt`). */
export function ev(workerId: string, state: WorkerState, over: Partial<WorkerEvent> = {}): WorkerEvent {
  const id = parseWorkerId(workerId);
  if (!id) throw new Error(`bad worker id ${workerId}`);
  return { workerId, ...id, state, exitCode: state === 'failed' ? 1 : 0, signal: '', message: '', ...over };
}

export const plansOf = (effects: AmEffect[]): WorkerPlan[] => effects.flatMap((e) => (e.kind === 'plan' ? e.plans : []));
export const planIds = (effects: AmEffect[]): string[] => plansOf(effects).map((p) => p.workerId);
export const deltasOf = (effects: AmEffect[]): RequestDelta[] => effects.flatMap((e) => (e.kind === 'request' ? e.deltas : []));
export const unitsOf = (effects: AmEffect[]): string[] => effects.flatMap((e) => (e.kind === 'request' ? e.units.map((u) => u.suId) : []));
export const returnsOf = (effects: AmEffect[]): SlotReturn[] => effects.flatMap((e) => (e.kind === 'return' ? e.returns : []));
export const stopsOf = (effects: AmEffect[]): string[] => effects.flatMap((e) => (e.kind === 'stop' ? e.workerIds : []));
export const finishOf = (effects: AmEffect[]) => effects.find((e) => e.kind === 'finish') as Extract<AmEffect, { kind: 'finish' }> | undefined;

/**
 * The core plus a fake master's side of the assignment protocol: `assign` sends the next delta
 * message (absolute counts), `events` delivers worker events; the clock only moves when told.
 */
export class Harness {
  readonly am: DagAppMaster;
  now = 1000;
  seq = 0;

  constructor(opts: DagAmOptions = {}) {
    this.am = new DagAppMaster(opts);
  }

  start(spec: JobSpec, held: Assignment[] = []): AmEffect[] {
    return this.am.start(spec, { seq: this.seq, assignments: held }, this.now);
  }

  assign(...assignments: Assignment[]): AmEffect[] {
    return this.am.assignments({ seq: ++this.seq, full: false, assignments }, this.now);
  }

  events(nodeId: string, ...events: WorkerEvent[]): AmEffect[] {
    return this.am.workerEvents(nodeId, events, this.now);
  }

  /** Every worker of `ids` reports SUCCEEDED on `nodeId`, one event per call; returns all effects. */
  succeed(nodeId: string, ...ids: string[]): AmEffect[] {
    return ids.flatMap((id) => this.events(nodeId, ev(id, 'succeeded')));
  }

  progressOf(task: string) {
    return this.am.progress().find((p) => p.name === task);
  }
}
