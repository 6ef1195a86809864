/**
 * Worker events: a status change an agent reports (or the shell synthesizes for a failed plan) is
 * matched to the instance's running attempt, or to one of its shadows, by attempt and node; a
 * success of an attempt whose slot was counted lost still counts. Repeated and stale events change
 * nothing. An attempt that read a stale FUXI_UPSTREAM (planned before an output it reads ran again
 * in a partition) and ends without success runs again uncounted (partitions.ts). Outcomes go to dag.ts (success, failed attempt and its retry).
 */
import { idOf, workerIdOf, type AmState, type Instance, type Shadow, type Task } from './am-state.js';
import { failAttempt, succeed } from './dag.js';
import { excuseStaleUpstream } from './partitions.js';
import type { WorkerEvent } from './types.js';
import { dropShadow, releaseSlot, stopWorker } from './workers.js';

/** Why an attempt failed, for logs and the job's failure message. */
/** The agent's message for a worker killed for using more memory than its grant (`OOM: used X of Y`). */
export function isOomMessage(message: string): boolean {
  return message.startsWith('OOM: ');
}

export function failureReason(ev: Pick<WorkerEvent, 'state' | 'exitCode' | 'signal' | 'message'>): string {
  let base: string;
  switch (ev.state) {
    case 'failed':
      base = ev.signal ? `killed by signal ${ev.signal}` : `exit code ${ev.exitCode}`;
      break;
    case 'killed':
      base = ev.signal ? `killed by signal ${ev.signal}` : 'killed';
      break;
    case 'rejected':
      base = 'rejected by the agent';
      break;
    default:
      base = ev.state;
  }
  const msg = ev.message.trim();
  return msg ? `${base} (${msg})` : base;
}

/** Status changes of workers on `nodeId`, in order, until the job is over. */
export function onWorkerEvents(st: AmState, nodeId: string, events: readonly WorkerEvent[]): void {
  for (const ev of events) {
    if (st.done) break;
    onWorkerEvent(st, nodeId, ev);
  }
}

/** A status change of one worker, reported by the agent of `reportingNode`. */
export function onWorkerEvent(st: AmState, reportingNode: string, ev: WorkerEvent): void {
  const id = idOf(ev);
  if (!id) return;
  const task = st.tasks.get(id.task);
  const inst = task?.instances[id.instance];
  if (!task || !inst) {
    st.log.debug({ workerId: ev.workerId }, 'event for an unknown worker, ignored');
    return;
  }
  // An attempt we never planned (an earlier AM attempt's): later attempts must get a higher number.
  if (id.attempt > inst.highest) inst.highest = id.attempt;
  if (inst.state === 'running' && id.attempt === inst.attempt && sameNode(inst.nodeId, reportingNode)) {
    onCurrentEvent(st, task, inst, reportingNode, ev);
    return;
  }
  const shadow = inst.shadows.find((sh) => sh.attempt === id.attempt && sameNode(sh.nodeId, reportingNode));
  if (shadow) {
    onShadowEvent(st, task, inst, shadow, ev);
    return;
  }
  if (ev.state === 'succeeded' && inst.state === 'pending' && id.attempt === inst.attempt && inst.lostAttempt === inst.attempt) {
    // Its slot was counted lost, but the attempt got to finish: the work is done.
    st.log.info(
      { task: task.spec.name, instance: inst.index, attempt: inst.attempt, node: reportingNode },
      'attempt counted lost has succeeded; instance done',
    );
    succeed(st, task, inst, inst.attempt, reportingNode);
  }
  // Otherwise an older attempt (or one we never planned): ignored.
}

/** An event of the instance's running attempt. */
function onCurrentEvent(st: AmState, task: Task, inst: Instance, reportingNode: string, ev: WorkerEvent): void {
  const log = { task: task.spec.name, instance: inst.index, attempt: inst.attempt, node: inst.nodeId || reportingNode };
  switch (ev.state) {
    case 'pending':
      return;
    case 'running':
      if (!inst.started) {
        inst.started = true;
        st.log.debug(log, 'instance running');
      }
      return;
    case 'succeeded': {
      const nodeId = inst.nodeId || reportingNode;
      releaseSlot(task, inst);
      succeed(st, task, inst, inst.attempt, nodeId);
      return;
    }
    case 'failed':
    case 'killed':
    case 'rejected': {
      releaseSlot(task, inst);
      const nodeId = inst.nodeId || reportingNode;
      // Planned before an output it reads ran again in a partition: a re-execution, not a failure.
      if (excuseStaleUpstream(st, task, inst, nodeId, failureReason(ev))) return;
      // Killed for memory past its grant (the agent's `OOM: used X of Y`): the task's fault, not the node's.
      failAttempt(st, task, inst, nodeId, failureReason(ev), ev.state === 'failed' && isOomMessage(ev.message));
      return;
    }
  }
}

/** An event of a replaced (or duplicate adopted) attempt: a success decides the instance, if still open. */
function onShadowEvent(st: AmState, task: Task, inst: Instance, sh: Shadow, ev: WorkerEvent): void {
  const log = { task: task.spec.name, instance: inst.index, attempt: sh.attempt, node: sh.nodeId };
  switch (ev.state) {
    case 'pending':
      return;
    case 'running':
      sh.started = true;
      return;
    case 'succeeded':
      dropShadow(task, inst, sh);
      if (inst.state === 'succeeded' || inst.state === 'failed') return;
      st.log.info({ ...log, replacedBy: inst.state === 'running' ? inst.attempt : 0 }, 'replaced attempt succeeded first; instance done');
      if (inst.state === 'running') {
        stopWorker(st, inst.nodeId, workerIdOf(task.spec.name, inst.index, inst.attempt));
        releaseSlot(task, inst);
      }
      succeed(st, task, inst, sh.attempt, sh.nodeId);
      return;
    case 'failed':
    case 'killed':
    case 'rejected':
      st.log.debug({ ...log, reason: failureReason(ev) }, 'replaced attempt ended');
      if (sh.nodeId) inst.failedNodes.add(sh.nodeId);
      dropShadow(task, inst, sh);
      return;
  }
}

/** Empty ids match any node (events synthesized without one, or from older agents). */
function sameNode(a: string, b: string): boolean {
  return !a || !b || a === b;
}
