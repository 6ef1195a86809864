/**
 * The task graph's progression: an instance's outcome (a success is logged in the snapshot and
 * stops the instance's other live attempts; a failed attempt is retried until the task's
 * `maxAttempts`, not counting re-runs and the first lost slots, then the job fails), a task that
 * becomes active once every task it depends on succeeded, and the job's finish (every live
 * attempt stopped, every slot returned, every request cancelled). The spec has passed
 * `validateJobSpec`, so dependencies are known and acyclic.
 */
import { DEFAULT_RERUN_AFTER_MS, speculationOf } from '@fuxi/common';
import {
  locate,
  newTask,
  setInstanceState,
  setOutput,
  logEntry,
  taskFraction,
  plural,
  workerIdOf,
  type AmState,
  type Instance,
  type Task,
  type TaskState,
} from './am-state.js';
import { effective, returnSlots } from './holds.js';
import { cancelOutstanding } from './requests.js';
import type { JobSpec, TaskProgress } from './types.js';
import { releaseSlot, stopShadows, stopWorker } from './workers.js';

/** The job starts: its policy and tasks (every one waiting, with its instances), from the validated spec. */
export function beginJob(st: AmState, spec: JobSpec, restart: boolean): void {
  st.spec = spec;
  st.policy = spec.onAgentTimeout === 'wait' ? 'wait' : 'rerun';
  st.rerunAfterMs = Number.isFinite(spec.rerunAfterMs) && spec.rerunAfterMs >= 0 ? spec.rerunAfterMs : DEFAULT_RERUN_AFTER_MS;
  spec.tasks.forEach((ts, index) => st.tasks.set(ts.name, newTask(spec, ts, index)));
  st.speculation.mode = speculationOf(spec);
  st.log.info({ job: spec.jobId, name: spec.name, tasks: spec.tasks.length, onAgentTimeout: st.policy, rerunAfterMs: st.rerunAfterMs, restart }, 'job started');
}

/** `attempt` on `nodeId` succeeded: the instance is done (logged in the snapshot); other live attempts are stopped. */
export function succeed(st: AmState, task: Task, inst: Instance, attempt: number, nodeId: string): void {
  setInstanceState(task, inst, 'succeeded');
  inst.attempt = attempt;
  stopShadows(st, task, inst);
  const output = locate(st, nodeId, workerIdOf(task.spec.name, inst.index, attempt));
  setOutput(task, inst, output);
  logEntry(st, {
    task: task.spec.name,
    instance: inst.index,
    attempt,
    nodeId,
    workerId: output.workerId,
    nodeAddress: output.nodeAddress,
    state: 'succeeded',
  });
  st.log.debug({ task: task.spec.name, instance: inst.index, attempt, node: nodeId }, 'instance succeeded');
  if (task.state === 'active' && task.counts.succeeded === task.instances.length) {
    setTaskState(st, task, 'succeeded');
    activateReady(st);
  }
}

/**
 * The instance's current attempt failed on `nodeId` (its slot already released): retried (pending
 * again, preferring other nodes) while attempts remain, else the instance, its task and the job fail.
 */
/**
 * An attempt of `inst` failed on `nodeId`. The instance avoids that node from then on unless the
 * failure was the task's own (`taskFault`: killed for using more memory than its grant), not the
 * node's.
 */
export function failAttempt(st: AmState, task: Task, inst: Instance, nodeId: string, reason: string, taskFault = false): void {
  if (nodeId && !taskFault) inst.failedNodes.add(nodeId);
  inst.lastError = reason;
  inst.declined = false;
  const log = { task: task.spec.name, instance: inst.index, attempt: inst.attempt, node: nodeId, reason };
  // Attempts used: every number handed out (by any AM attempt), less the re-runs of timing-out nodes.
  const used = Math.max(inst.attempt, inst.highest) - inst.reruns;
  if (used >= task.maxAttempts) {
    setInstanceState(task, inst, 'failed');
    st.log.warn(log, 'instance failed for good');
    setTaskState(st, task, 'failed');
    const uncounted = inst.reruns > 0 ? ` (plus ${inst.reruns} not counted: lost slots, re-runs off timing-out or cut-off nodes)` : '';
    const message = `task "${task.spec.name}" instance ${inst.index} failed after ${plural(used, 'attempt')}${uncounted}: ${reason}`;
    logEntry(st, {
      task: task.spec.name,
      instance: inst.index,
      attempt: inst.attempt,
      nodeId,
      workerId: workerIdOf(task.spec.name, inst.index, inst.attempt),
      state: 'failed',
      message,
    });
    finishJob(st, false, message);
    return;
  }
  setInstanceState(task, inst, 'pending');
  task.retries++;
  st.log.info({ ...log, maxAttempts: task.maxAttempts }, 'instance failed; will retry');
}

export function setTaskState(st: AmState, task: Task, state: TaskState): void {
  const from = task.state;
  task.state = state;
  st.log.info({ task: task.spec.name, from, to: state, instances: task.instances.length, retries: task.retries }, `task ${state}`);
}

/** Activates every waiting task whose dependencies have all succeeded; finishes the job when all did. */
export function activateReady(st: AmState): void {
  for (let changed = true; changed && !st.done;) {
    changed = false;
    for (const t of st.tasks.values()) {
      if (t.state !== 'waiting') continue;
      if (!t.spec.dependsOn.every((d) => st.tasks.get(d)?.state === 'succeeded')) continue;
      setTaskState(st, t, 'active');
      // After a restart some instances may already be done or running (adopted).
      if (t.counts.waiting > 0) for (const i of t.instances) if (i.state === 'waiting') setInstanceState(t, i, 'pending');
      if (t.counts.succeeded === t.instances.length) setTaskState(st, t, 'succeeded');
      changed = true;
    }
  }
  if (!st.done && [...st.tasks.values()].every((t) => t.state === 'succeeded')) {
    const n = st.tasks.size;
    finishJob(st, true, `${plural(n, 'task')} succeeded`);
  }
}

/** The job is over: live attempts are stopped, slots returned, requests cancelled, `finish` emitted. */
export function finishJob(st: AmState, succeeded: boolean, message: string): void {
  if (st.done) return;
  st.done = { succeeded, message };
  for (const t of st.tasks.values()) {
    for (const inst of t.instances) {
      stopShadows(st, t, inst);
      if (inst.state !== 'running') continue;
      stopWorker(st, inst.nodeId, workerIdOf(t.spec.name, inst.index, inst.attempt));
      releaseSlot(t, inst);
      setInstanceState(t, inst, 'pending');
    }
    for (const h of [...t.holds.values()]) {
      const n = effective(h);
      if (n > 0) returnSlots(st, t, h, n, 0);
    }
    cancelOutstanding(st, t, Infinity);
  }
  st.out.finish = { succeeded, message };
  if (succeeded) st.log.info({ message }, 'job succeeded');
  else st.log.warn({ message }, 'job failed');
}

/** Each task's instance counts by state, its retries and its re-executions (network partitions). */
export function progress(st: AmState): TaskProgress[] {
  return [...st.tasks.values()].map((t) => {
    const c = t.counts;
    return {
      name: t.spec.name,
      total: t.instances.length,
      pending: c.waiting + c.pending,
      running: c.running,
      succeeded: c.succeeded,
      failed: c.failed,
      retries: t.retries,
      reexecutions: t.reexecutions,
      progress: taskFraction(st, t),
      backups: t.backups,
    };
  });
}
