/**
 * Holds: the slots of each task's SU per node as the core counts them. `held` is the master's
 * absolute count, `used` the slots bound to live attempts, `returning` the slots given back whose
 * drop the master has not shown yet; the usable ones are held minus returning. A hold with nothing
 * in it is forgotten. Returns go out in the step's `return` effect, each with the id of that effect.
 */
import { key, type AmState, type Hold, type Task } from './am-state.js';

function returningOf(h: Hold): number {
  let n = 0;
  for (const r of h.returning) n += r.n;
  return n;
}

/** Slots of the hold that are ours to use: assigned, minus returned ones not yet dropped. */
export function effective(h: Hold): number {
  return Math.max(0, h.held - returningOf(h));
}

/** The hold of `task` on `nodeId`, created (0 slots) when absent. */
export function holdFor(task: Task, nodeId: string): Hold {
  let h = task.holds.get(nodeId);
  if (!h) {
    h = { nodeId, held: 0, used: 0, returning: [] };
    task.holds.set(nodeId, h);
  }
  return h;
}

/** Gives `n` slots of the hold back to the master: counted as returning until the drop shows (or settles). */
export function returnSlots(st: AmState, task: Task, h: Hold, n: number, now: number): void {
  if (n <= 0) return;
  h.returning.push({ n, at: now, id: st.returnEffects + 1 });
  const k = key(task.suId, h.nodeId);
  const r = st.out.returns.get(k);
  if (r) r.slots += n;
  else st.out.returns.set(k, { suId: task.suId, nodeId: h.nodeId, slots: n });
  st.log.debug({ su: task.suId, node: h.nodeId, slots: n }, 'returning slots');
}

/** A live attempt ended or moved off `nodeId`: one slot of the hold there is free again. */
export function freeSlot(task: Task, nodeId: string): void {
  const h = task.holds.get(nodeId);
  if (!h) return;
  h.used = Math.max(0, h.used - 1);
  forgetIfEmpty(task, h);
}

/** A hold with no slots held, used or returning is forgotten. */
export function forgetIfEmpty(task: Task, h: Hold): void {
  if (h.held === 0 && h.used === 0 && h.returning.length === 0) task.holds.delete(h.nodeId);
}
