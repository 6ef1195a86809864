/**
 * The agent core's one state object: its configuration, the master epoch and the applied grant
 * table with its (epoch, seq), the workers and apps it knows, and what changed since the last
 * checkpoint delta. Every module of the core (grants, plans, lifecycle, retention, persistence,
 * restore, queries) is a set of free functions over it; `AgentCore` is the facade the shell calls.
 * (`AgentState` in types.ts is something else: the durable records the checkpoint holds.)
 *
 * Also here: the record types, their keys, and the copies handed out (callers never get a live
 * record), `touch`, which marks a worker for the next delta, and the only ways a worker enters,
 * changes state or leaves the registry (`putWorker`, `setWorkerState`, `dropWorker`), which keep the
 * index of live workers in step with it.
 */
import { isWorkerTerminal, type Int64, type Logger, type Resource, type WorkerState } from '@fuxi/common';
import {
  DEFAULT_FINISHED_RETENTION_MS,
  DEFAULT_MAX_FINISHED,
  DEFAULT_NO_GRANT_NO_MASTER_MS,
  DEFAULT_PENDING_TIMEOUT_MS,
  DEFAULT_RESEND_FINISHED_WITHIN_MS,
  type AgentCoreConfig,
  type CheckpointMeta,
  type GrantEntry,
  type GrantRef,
  type GrantTableId,
  type WorkerEntry,
  type WorkerInfo,
  type WorkerRef,
} from './types.js';

export interface WorkerRecord extends WorkerInfo {
  /** Acceptance order; ties in time are broken by it. */
  order: number;
  /** Order in which it was started (newest is killed first when a grant shrinks). */
  startOrder: number;
  /** The grant table the plan waits for before it starts (`PlanInput.grantTable`); absent: none. */
  grantTable?: GrantTableId;
}

/** Worker ends kept for the masters when heartbeats do not get through (the oldest go first). */
export const MAX_ENDS_TO_REPORT = 1000;

export interface AppRecord {
  /** Highest AM attempt seen for the app. */
  amAttempt: number;
  /** Address of the newest AM attempt (events go here). */
  amAddress: string;
}

/** Worker ids are unique within an app (e.g. `map.3.1`, `am.1`); the agent keys them by both. */
export const wkey = (appId: string, workerId: string) => `${appId}\u0000${workerId}`;

export const grantKey = (appId: string, suId: string): string => `${appId}\u0000${suId}`;

export class CoreState {
  readonly nodeId: string;
  readonly capacity: Resource;
  readonly pendingTimeoutMs: number;
  noGrantNoMasterMs: number;
  readonly retentionMs: number;
  readonly maxFinished: number;
  readonly resendWithinMs: number;

  /** Highest master epoch accepted. */
  epoch: Int64 = '0';
  /** Epoch of the master whose numbering `grantSeq` is in (the master that sent the table). */
  grantEpoch: Int64 = '0';
  grantSeq: Int64 = '0';
  readonly grants = new Map<string, GrantEntry>();
  /** Insertion order = acceptance order. Changed only through putWorker / setWorkerState / dropWorker. */
  readonly workers = new Map<string, WorkerRecord>();
  /**
   * The workers of `workers` that have not ended (PENDING, STARTING, RUNNING), in acceptance order.
   * Plan starts, grant enforcement, the load and the pending timeouts walk these: the registry also
   * keeps thousands of ended workers for their AMs and the retention, and a walk over all of them on
   * every grant message and plan was most of an agent's core time under many small jobs.
   */
  readonly live = new Map<string, WorkerRecord>();
  readonly apps = new Map<string, AppRecord>();
  /**
   * Workers (not AMs) that ended since the masters last heard of it, oldest first (at most
   * `MAX_ENDS_TO_REPORT`): heartbeats carry them, so the master learns attempt outcomes (its
   * failure prediction). Soft: not checkpointed; a restart loses the few not yet sent.
   */
  readonly endsToReport: WorkerInfo[] = [];
  nextOrder = 1;
  /** After a restore: no pending plan starts until the grant table is confirmed (grantsConfirmed). */
  held = false;
  /** When a master last answered (masterHeard); undefined until the first tick or answer. */
  masterHeardAtMs: number | undefined;
  /** PENDING plans told once that the node has no room for them yet (lifecycle.ts `noRoomYet`). Soft. */
  readonly roomWaits = new Set<string>();

  // What changed since the last takeDelta() (the checkpoint's delta). The meta record is written once
  // at the start so that the checkpoint names its node.
  dirtyMeta = true;
  readonly dirtyGrants = new Map<string, GrantRef>();
  readonly dirtyApps = new Set<string>();
  readonly dirtyWorkers = new Map<string, WorkerRef>();

  constructor(
    cfg: AgentCoreConfig,
    readonly log: Logger,
  ) {
    this.nodeId = cfg.nodeId;
    this.capacity = cfg.capacity;
    this.pendingTimeoutMs = cfg.pendingTimeoutMs ?? DEFAULT_PENDING_TIMEOUT_MS;
    this.noGrantNoMasterMs = cfg.noGrantNoMasterMs ?? DEFAULT_NO_GRANT_NO_MASTER_MS;
    this.retentionMs = cfg.finishedRetentionMs ?? DEFAULT_FINISHED_RETENTION_MS;
    this.maxFinished = cfg.maxFinished ?? DEFAULT_MAX_FINISHED;
    this.resendWithinMs = cfg.resendFinishedWithinMs ?? DEFAULT_RESEND_FINISHED_WITHIN_MS;
  }
}

/** Adds (or replaces) a worker in the registry, and in the live index unless it has ended. */
export function putWorker(st: CoreState, w: WorkerRecord): void {
  const k = wkey(w.appId, w.workerId);
  st.workers.set(k, w);
  if (isWorkerTerminal(w.state)) st.live.delete(k);
  else st.live.set(k, w);
}

/** Moves a worker to `state`; an ended worker leaves the live index (it never comes back). */
export function setWorkerState(st: CoreState, w: WorkerRecord, state: WorkerState): void {
  w.state = state;
  if (state !== 'PENDING') st.roomWaits.delete(wkey(w.appId, w.workerId));
  if (isWorkerTerminal(state)) st.live.delete(wkey(w.appId, w.workerId));
}

/** Forgets a worker (retention). */
export function dropWorker(st: CoreState, w: WorkerRecord): void {
  const k = wkey(w.appId, w.workerId);
  st.workers.delete(k);
  st.live.delete(k);
  st.roomWaits.delete(k);
}

/** Marks the worker's record for the next delta (put if it still exists, else delete). */
export function touch(st: CoreState, w: WorkerRecord): void {
  st.dirtyWorkers.set(wkey(w.appId, w.workerId), { appId: w.appId, workerId: w.workerId });
}

export function meta(st: CoreState): CheckpointMeta {
  return { nodeId: st.nodeId, epoch: st.epoch, grantEpoch: st.grantEpoch, grantSeq: st.grantSeq };
}

export function copyGrant(g: GrantEntry): GrantEntry {
  return {
    appId: g.appId,
    suId: g.suId,
    slots: g.slots,
    resource: { ...g.resource },
    amAttempt: g.amAttempt ?? 0,
    ...(g.amTokenHash ? { amTokenHash: g.amTokenHash } : {}),
  };
}

/** A worker as checkpointed: a copy with its orders. */
export function workerEntry(w: WorkerRecord): WorkerEntry {
  return { ...copyWorker(w), order: w.order, startOrder: w.startOrder, ...(w.grantTable ? { grantTable: { ...w.grantTable } } : {}) };
}

/** A checkpointed worker as a record again (workerEntry's inverse). */
export function workerRecord(e: WorkerEntry): WorkerRecord {
  return { ...copyWorker(e), order: e.order, startOrder: e.startOrder, ...(e.grantTable ? { grantTable: { ...e.grantTable } } : {}) };
}

/** A worker as handed out: a deep copy of its info (no orders). */
export function copyWorker(w: WorkerRecord | WorkerInfo): WorkerInfo {
  return {
    workerId: w.workerId,
    appId: w.appId,
    suId: w.suId,
    task: w.task,
    instance: w.instance,
    attempt: w.attempt,
    amAttempt: w.amAttempt,
    amAddress: w.amAddress,
    nodeId: w.nodeId,
    command: { argv: [...w.command.argv], env: { ...w.command.env }, cwd: w.command.cwd },
    resource: { ...w.resource },
    state: w.state,
    pid: w.pid,
    startTime: w.startTime,
    bootId: w.bootId,
    exitCode: w.exitCode,
    signal: w.signal,
    message: w.message,
    acceptedAtMs: w.acceptedAtMs,
    startedAtMs: w.startedAtMs,
    finishedAtMs: w.finishedAtMs,
    stopReason: w.stopReason,
  };
}
