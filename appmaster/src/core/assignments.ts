/**
 * Assignments: the master's table of absolute slot counts per (SU, node), accepted by (epoch, seq,
 * full) through `acceptTable` (@fuxi/common) and applied to the holds. More usable slots than
 * before are new placements (they consume outstanding requests); fewer than in use means attempts
 * lost their slots (node lost, slot revoked): shadows go first, then running instances, which are
 * stopped and run again elsewhere (the first LOST_SLOTS_FREE losses per instance not counted as
 * failed attempts). Our own returns settle when the count drops, when a full table known to include
 * them arrives (`returnsReflected`), or after `returnSettleMs`. Each hold keeps the node's grant
 * table that holds its count (`Hold.grantTable`) for the plans made on it.
 */
import { acceptTable, StaleEpochError } from '@fuxi/common';
import { byKey, key, workerIdOf, type AmState, type Hold, type Task } from './am-state.js';
import { failAttempt } from './dag.js';
import { effective, forgetIfEmpty } from './holds.js';
import { consumeOutstanding } from './requests.js';
import type { Assignment, AssignmentUpdate } from './types.js';
import { dropShadow, releaseSlot, stopWorker } from './workers.js';

/** Slot losses per instance that do not count as failed attempts (see the header). */
export const LOST_SLOTS_FREE = 3;

/** Attempts of `task` on `nodeId` to be evicted: the node lost `count` of the slots they use. */
interface Lost {
  task: Task;
  nodeId: string;
  count: number;
  reason: string;
}

/**
 * An assignment message, ordered by (epoch, seq) lexicographically (see `AssignmentUpdate`): applied
 * when `acceptTable` says so (true), else ignored (false). Throws StaleEpochError for a message from
 * an older master than the applied table's.
 */
export function acceptAssignments(st: AmState, update: AssignmentUpdate): boolean {
  const epoch = update.epoch && update.epoch !== '0' ? update.epoch : st.appliedEpoch;
  const verdict = acceptTable({ epoch: st.appliedEpoch, seq: BigInt(st.appliedSeq) }, { epoch, seq: BigInt(update.seq), full: update.full });
  if (verdict.kind === 'stale') throw new StaleEpochError('epoch', epoch, st.appliedEpoch);
  if (verdict.kind !== 'apply') {
    const why = verdict.kind === 'out-of-order' ? 'assignment message out of sequence, ignored' : 'older full assignment table ignored';
    st.log.debug({ epoch, seq: update.seq, appliedEpoch: st.appliedEpoch, applied: st.appliedSeq }, why);
    return false;
  }
  if (verdict.newerMaster && st.appliedEpoch !== '0') {
    st.log.info({ from: st.appliedEpoch, to: epoch, seq: update.seq, full: update.full, oldSeq: st.appliedSeq }, 'assignments now follow a new master');
  }
  applyTable(st, { ...update, epoch });
  return true;
}

/** Applies an accepted table (or the one held at start): absolute counts; a full table zeroes what it omits. */
export function applyTable(st: AmState, update: AssignmentUpdate): void {
  const reflected = update.full ? update.returnsReflected : undefined;
  const epoch = update.epoch && update.epoch !== '0' ? String(BigInt(update.epoch)) : st.appliedEpoch;
  const seen = new Set<string>();
  const lost: Lost[] = [];
  for (const a of update.assignments) {
    const task = st.tasks.get(a.suId);
    if (!task) continue; // not one of ours (e.g. the AM's own `__am__` slot)
    seen.add(key(a.suId, a.nodeId));
    if (a.nodeAddress) st.nodeAddresses.set(a.nodeId, a.nodeAddress);
    setHeld(st, task, a.nodeId, Math.max(0, Math.floor(a.slots)), reflected, lost);
    const h = task.holds.get(a.nodeId);
    if (h) h.grantTable = a.grantSeq ? { epoch, seq: a.grantSeq } : undefined;
  }
  if (update.full) {
    for (const t of st.tasks.values()) {
      for (const nodeId of [...t.holds.keys()]) if (!seen.has(key(t.suId, nodeId))) setHeld(st, t, nodeId, 0, reflected, lost);
    }
  }
  st.appliedSeq = update.seq;
  if (update.epoch && update.epoch !== '0') st.appliedEpoch = String(BigInt(update.epoch));
  for (const l of lost) evict(st, l);
  forgetReleasedNodes(st);
}

/**
 * A node timing out on which no task holds a slot any more was lost (the master released its
 * slots; nothing is returned from a node timing out): it is no longer waited for, and slots the
 * master places there once it is back are used like any others.
 */
function forgetReleasedNodes(st: AmState): void {
  for (const nodeId of [...st.timingOut.keys()]) {
    if ([...st.tasks.values()].some((t) => (t.holds.get(nodeId)?.held ?? 0) > 0)) continue;
    st.timingOut.delete(nodeId);
    st.log.info({ node: nodeId }, 'agent timing out holds none of our slots any more (lost); no longer waited for');
  }
}

/**
 * Sets the master's count for (task, node). With `reflected` (a full table from an UpdateRequests
 * answer) returns up to that id are known to be in the count and the rest known not to be; else a
 * drop is taken to settle our own returns first, oldest first, and only the rest as taken away.
 */
function setHeld(st: AmState, task: Task, nodeId: string, slots: number, reflected: number | undefined, lost: Lost[]): void {
  let h = task.holds.get(nodeId);
  if (!h) {
    if (slots === 0) return;
    h = { nodeId, held: 0, used: 0, returning: [] };
    task.holds.set(nodeId, h);
  }
  const hold = h;
  reshape(st, task, hold, lost, () => {
    if (reflected !== undefined) {
      hold.returning = hold.returning.filter((r) => r.id > reflected);
    } else {
      let drop = hold.held - slots;
      while (drop > 0 && hold.returning.length > 0) {
        const r = hold.returning[0]!;
        const n = Math.min(r.n, drop);
        r.n -= n;
        drop -= n;
        if (r.n === 0) hold.returning.shift();
      }
    }
    hold.held = slots;
  });
}

/**
 * Applies `change` to a hold and accounts for the difference in usable slots: more are new
 * placements (which consumed outstanding requests), fewer than in use means instances lost slots.
 */
function reshape(st: AmState, task: Task, h: Hold, lost: Lost[], change: () => void): void {
  const before = effective(h);
  change();
  const after = effective(h);
  if (after > before) consumeOutstanding(task, h.nodeId, after - before);
  const over = h.used - after;
  if (over > 0) lost.push({ task, nodeId: h.nodeId, count: over, reason: h.held === 0 ? `node lost (${h.nodeId})` : `slot revoked on node ${h.nodeId}` });
  forgetIfEmpty(task, h);
}

/**
 * Attempts on slots the master took away: shadows (already replaced) go first, quietly; running
 * instances are stopped and count a failed attempt.
 */
function evict(st: AmState, l: Lost): void {
  let count = l.count;
  for (const inst of [...l.task.instances].reverse()) {
    for (const sh of [...inst.shadows]) {
      if (count === 0 || sh.nodeId !== l.nodeId) continue;
      st.log.info({ task: l.task.spec.name, instance: inst.index, attempt: sh.attempt, node: l.nodeId }, 'slot of a replaced attempt lost');
      stopWorker(st, l.nodeId, workerIdOf(l.task.spec.name, inst.index, sh.attempt));
      dropShadow(l.task, inst, sh);
      count--;
    }
  }
  const victims = l.task.instances
    .filter((i) => i.state === 'running' && i.nodeId === l.nodeId)
    .sort((a, b) => b.index - a.index)
    .slice(0, count);
  for (const inst of victims) {
    if (st.done) return;
    const workerId = workerIdOf(l.task.spec.name, inst.index, inst.attempt);
    st.log.warn(
      { task: l.task.spec.name, instance: inst.index, attempt: inst.attempt, node: l.nodeId, reason: l.reason, lostSlots: inst.lostSlots + 1 },
      'slot lost; the attempt runs again elsewhere',
    );
    stopWorker(st, l.nodeId, workerId);
    releaseSlot(l.task, inst);
    inst.lostAttempt = inst.attempt;
    inst.lostSlots++;
    if (inst.lostSlots <= LOST_SLOTS_FREE) inst.reruns++;
    failAttempt(st, l.task, inst, l.nodeId, l.reason);
  }
}

/** Returned slots whose drop never showed within `returnSettleMs` are ours again (the master re-placed them). */
export function settleReturns(st: AmState, now: number): void {
  const lost: Lost[] = [];
  for (const t of st.tasks.values()) {
    for (const h of [...t.holds.values()]) {
      if (!h.returning.some((r) => now - r.at >= st.returnSettleMs)) continue;
      // The master re-placed the slot before we saw the drop: it is ours again.
      st.log.debug({ su: t.suId, node: h.nodeId }, 'returned slots settled without a drop in the assignment');
      reshape(st, t, h, lost, () => (h.returning = h.returning.filter((r) => now - r.at < st.returnSettleMs)));
    }
  }
  for (const l of lost) evict(st, l);
}

/** The assignment table as the core holds it (absolute counts from the master). */
export function assignmentTable(st: AmState): Assignment[] {
  const out: Assignment[] = [];
  for (const t of st.tasks.values()) {
    for (const [nodeId, h] of byKey(t.holds)) {
      if (h.held > 0) out.push({ suId: t.suId, nodeId, nodeAddress: st.nodeAddresses.get(nodeId) ?? '', slots: h.held });
    }
  }
  return out;
}
