/**
 * Live attempts and the slots they use: an instance's running attempt and its shadows (older
 * attempts still alive after a re-run, or duplicates adopted after a restart), adopting workers of
 * an earlier AM attempt, releasing their slots, and stopping workers (a stop a node cannot hear
 * while it times out or is unlisted is sent again when it is back). Also the views over them.
 */
import { blocked, parseWorkerId, setInstanceState, workerIdOf, type AmState, type Instance, type Shadow, type Task } from './am-state.js';
import { freeSlot, holdFor } from './holds.js';
import type { ListedWorker, RunningWorker } from './types.js';

/** Asks the agent of `nodeId` to stop `workerId` (again once the node is back, if it cannot hear it now). */
export function stopWorker(st: AmState, nodeId: string, workerId: string): void {
  if (!nodeId) return;
  const list = st.out.stops.get(nodeId);
  if (list) {
    if (!list.includes(workerId)) list.push(workerId);
  } else st.out.stops.set(nodeId, [workerId]);
  if (blocked(st, nodeId)) {
    const later = st.stopsWhenBack.get(nodeId) ?? new Set<string>();
    later.add(workerId);
    st.stopsWhenBack.set(nodeId, later);
  }
}

/** Sends again the stops a node could not hear while it was timing out or unlisted. */
export function resendStops(st: AmState, nodeId: string): void {
  const later = st.stopsWhenBack.get(nodeId);
  if (!later || blocked(st, nodeId)) return;
  st.stopsWhenBack.delete(nodeId);
  for (const w of later) stopWorker(st, nodeId, w);
}

/** The instance's running attempt no longer holds its slot (it ended, or is being stopped). */
export function releaseSlot(task: Task, inst: Instance): void {
  freeSlot(task, inst.nodeId);
  inst.nodeId = '';
  inst.started = false;
  inst.adopted = false;
}

/** A shadow ended (or was given up): its slot is free. */
export function dropShadow(task: Task, inst: Instance, sh: Shadow): void {
  const k = inst.shadows.indexOf(sh);
  if (k >= 0) inst.shadows.splice(k, 1);
  if (k >= 0 && sh.speculative) task.speculating--;
  freeSlot(task, sh.nodeId);
}

/** Stops every shadow of a decided instance and frees their slots. */
export function stopShadows(st: AmState, task: Task, inst: Instance): void {
  for (const sh of [...inst.shadows]) {
    stopWorker(st, sh.nodeId, workerIdOf(task.spec.name, inst.index, sh.attempt));
    dropShadow(task, inst, sh);
  }
}

/** An attempt (planned by an earlier AM attempt) found running: it becomes the instance's current one and keeps its slot. */
export function adopt(st: AmState, task: Task, inst: Instance, w: ListedWorker): void {
  holdFor(task, w.nodeId).used++;
  setInstanceState(task, inst, 'running');
  inst.attempt = w.attempt;
  inst.nodeId = w.nodeId;
  inst.started = w.state === 'running';
  inst.adopted = true;
  inst.lostAttempt = 0;
  st.log.info({ task: task.spec.name, instance: inst.index, attempt: w.attempt, node: w.nodeId, state: w.state }, 'worker adopted');
}

/** An older attempt of a running instance, found alive: it keeps its slot as a shadow. */
export function addShadow(st: AmState, task: Task, inst: Instance, w: ListedWorker): void {
  holdFor(task, w.nodeId).used++;
  inst.shadows.push({ attempt: w.attempt, nodeId: w.nodeId, started: w.state === 'running', adopted: true });
  st.log.info(
    { task: task.spec.name, instance: inst.index, attempt: w.attempt, node: w.nodeId, current: inst.attempt },
    'older attempt of a running instance adopted as a shadow',
  );
}

/** Every live attempt: each instance's running one, then older ones still alive (shadows). */
export function liveWorkers(st: AmState): RunningWorker[] {
  const out: RunningWorker[] = [];
  for (const t of st.tasks.values()) {
    const w = (i: Instance, attempt: number, nodeId: string, started: boolean): RunningWorker => ({
      workerId: workerIdOf(t.spec.name, i.index, attempt),
      suId: t.suId,
      task: t.spec.name,
      instance: i.index,
      attempt,
      nodeId,
      started,
      resource: t.spec.resource,
    });
    for (const i of t.instances) {
      if (i.state === 'running') out.push(w(i, i.attempt, i.nodeId, i.started));
      for (const s of i.shadows) out.push(w(i, s.attempt, s.nodeId, s.started));
    }
  }
  return out;
}

/** Nodes running workers adopted from an earlier AM attempt, and nodes that have not listed their workers yet. */
export function nodesToPoll(st: AmState): string[] {
  const out = new Set(st.unlisted);
  if (!st.done) {
    for (const t of st.tasks.values()) {
      for (const i of t.instances) {
        if (i.state === 'running' && i.adopted) out.add(i.nodeId);
        for (const s of i.shadows) if (s.adopted) out.add(s.nodeId);
      }
    }
  }
  return [...out].sort();
}

/** True while `workerId` is the running attempt of its instance (and the job is not over). */
export function isCurrentWorker(st: AmState, workerId: string): boolean {
  if (st.done) return false;
  const parsed = parseWorkerId(workerId);
  if (!parsed) return false;
  const inst = st.tasks.get(parsed.task)?.instances[parsed.instance];
  return inst !== undefined && inst.state === 'running' && inst.attempt === parsed.attempt;
}
