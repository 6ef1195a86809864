/**
 * Agent restart (docs/design.md, "Failover", agent crash): the checkpointed state is loaded into a fresh
 * core, every worker that was starting or running is re-adopted or finished by what the shell
 * found of its process (`Liveness`), recent final statuses are pushed to the AMs again, and pending
 * plans are held until the grant table is confirmed (`grantsConfirmed`).
 */
import { FailedPreconditionError, isWorkerActive, isWorkerTerminal, type WorkerState } from '@fuxi/common';
import { copyGrant, copyWorker, grantKey, putWorker, setWorkerState, touch, workerRecord, type CoreState, type WorkerRecord } from './core-state.js';
import { event, finish, startPending } from './lifecycle.js';
import { summary } from './queries.js';
import { ENDED_WHILE_DOWN, type AgentState, type CheckpointMeta, type Effect, type Liveness, type WorkerInfo } from './types.js';

export interface Restored {
  adopted: WorkerInfo[];
  ended: WorkerInfo[];
  effects: Effect[];
}

type Alive = Extract<Liveness, { kind: 'alive' }>;
type Ended = Exclude<Liveness, { kind: 'alive' }>;

/**
 * Agent restart: loads the checkpointed `saved` state into this fresh core. For every worker that
 * was STARTING or RUNNING, `liveness` (the shell's look at /proc and the worker's exit file)
 * decides: `alive` -> re-adopted as RUNNING, keeping its slot (and killed again if a stop had been
 * requested); `exited` -> SUCCEEDED / FAILED with that exit code (KILLED when it was being
 * stopped); `gone` -> FAILED (KILLED when being stopped) "ended while the agent was down". Every
 * re-adopted or ended worker's status goes to its AM; so does that of workers that finished within
 * `resendFinishedWithinMs` (the crash may have lost its delivery). Pending plans stay pending, and
 * none starts until `grantsConfirmed()` or an applied grant message. The master epoch, the grant
 * table with its (epoch, seq) and the AM attempt bars are those of the checkpoint.
 *
 * Throws FailedPreconditionError when the core is not fresh, or the checkpoint is another node's.
 */
export function restore(st: CoreState, saved: AgentState, liveness: (w: WorkerInfo) => Liveness, now: number): Restored {
  checkRestorable(st, saved);
  loadMeta(st, saved.meta);
  loadRecords(st, saved);
  const out: Restored = { adopted: [], ended: [], effects: [] };
  for (const w of st.workers.values()) {
    if (isWorkerActive(w.state)) {
      const l = liveness(copyWorker(w));
      if (l.kind === 'alive') readopt(st, w, l, now, out);
      else endWhileDown(st, w, l, now, out);
    } else if (isWorkerTerminal(w.state) && now - w.finishedAtMs <= st.resendWithinMs) {
      out.effects.push(...event(st, w));
    }
  }
  st.held = true;
  out.effects.push({
    kind: 'log',
    level: 'info',
    msg: 'state restored from the local checkpoint',
    fields: {
      epoch: st.epoch,
      grantEpoch: st.grantEpoch,
      grantSeq: st.grantSeq,
      grants: st.grants.size,
      adopted: out.adopted.length,
      ended: out.ended.length,
      pending: summary(st).pending,
    },
  });
  return out;
}

/** Only a fresh core of the checkpoint's own node restores. */
function checkRestorable(st: CoreState, saved: AgentState): void {
  if (st.workers.size > 0 || st.grants.size > 0 || st.apps.size > 0 || st.epoch !== '0') {
    throw new FailedPreconditionError('restore needs a fresh agent core');
  }
  if (saved.meta.nodeId && saved.meta.nodeId !== st.nodeId) {
    throw new FailedPreconditionError(
      `the checkpoint belongs to node "${saved.meta.nodeId}", not "${st.nodeId}": start with --node-id ${saved.meta.nodeId}, or with another --work-dir`,
      { checkpointNodeId: saved.meta.nodeId, nodeId: st.nodeId },
    );
  }
}

function loadMeta(st: CoreState, m: CheckpointMeta): void {
  st.epoch = String(BigInt(m.epoch || '0'));
  st.grantEpoch = String(BigInt(m.grantEpoch || '0'));
  st.grantSeq = String(BigInt(m.grantSeq || '0'));
  st.dirtyMeta = true;
}

/** Grants, apps and workers (in acceptance order); an app known only from its workers is recorded anew. */
function loadRecords(st: CoreState, saved: AgentState): void {
  for (const g of saved.grants) {
    if (g.slots <= 0) continue;
    st.grants.set(grantKey(g.appId, g.suId), copyGrant(g));
  }
  for (const a of saved.apps) st.apps.set(a.appId, { amAttempt: a.amAttempt, amAddress: a.amAddress });
  const sorted = [...saved.workers].sort((a, b) => a.order - b.order);
  for (const s of sorted) {
    const w = workerRecord(s);
    putWorker(st, w);
    st.nextOrder = Math.max(st.nextOrder, w.order + 1, w.startOrder + 1);
    if (!st.apps.has(w.appId)) {
      st.apps.set(w.appId, { amAttempt: w.amAttempt, amAddress: w.amAddress });
      st.dirtyApps.add(w.appId);
    }
  }
}

/** The same process still runs: RUNNING with its pid, and killed again when a stop was requested. */
function readopt(st: CoreState, w: WorkerRecord, l: Alive, now: number, out: Restored): void {
  setWorkerState(st, w, 'RUNNING');
  w.pid = l.pid;
  w.startTime = l.startTime;
  w.bootId = l.bootId;
  if (!w.startedAtMs) w.startedAtMs = now;
  touch(st, w);
  out.adopted.push(copyWorker(w));
  out.effects.push({
    kind: 'log',
    level: 'debug',
    msg: 'worker re-adopted',
    fields: { workerId: w.workerId, appId: w.appId, task: w.task, instance: w.instance, attempt: w.attempt, pid: w.pid },
  });
  out.effects.push(...event(st, w));
  if (w.stopReason) out.effects.push({ kind: 'kill', appId: w.appId, workerId: w.workerId, pid: w.pid, reason: w.stopReason });
}

/** The process ended while the agent was down: finished with its recorded exit code (and time), if any. */
function endWhileDown(st: CoreState, w: WorkerRecord, l: Ended, now: number, out: Restored): void {
  w.exitCode = l.kind === 'exited' ? l.exitCode : null;
  w.signal = null;
  const { state, message } = endedOutcome(w, l);
  out.effects.push(...finish(st, w, state, now, message));
  if (l.kind === 'exited' && l.atMs !== undefined && l.atMs > 0 && l.atMs <= now) w.finishedAtMs = l.atMs;
  out.ended.push(copyWorker(w));
}

function endedOutcome(w: WorkerRecord, l: Ended): { state: WorkerState; message: string } {
  if (w.stopReason) return { state: 'KILLED', message: w.stopReason };
  if (l.kind === 'exited' && l.exitCode === 0) return { state: 'SUCCEEDED', message: '' };
  if (l.kind === 'exited') return { state: 'FAILED', message: `exit code ${l.exitCode} (${ENDED_WHILE_DOWN})` };
  return { state: 'FAILED', message: `${ENDED_WHILE_DOWN} (no exit code recorded)` };
}

/**
 * The grant table is confirmed (the master answered and either accepted our (epoch, seq) or sent
 * its table), or the shell runs from the checkpoint's grants because the master cannot be reached:
 * pending plans may start.
 */
export function grantsConfirmed(st: CoreState, now: number): Effect[] {
  if (!st.held) return [];
  st.held = false;
  return startPending(st, now);
}
