/**
 * The edge between wire types (`@fuxi/proto`) and the core's domain types: `__Output` optionality,
 * int64 strings and enum names stop here. (The job spec is mapped by `jobSpecFromProto` of
 * `@fuxi/rpc`.)
 */
import type { Assignment__Output, PathRecord__Output, WorkerState__Output, WorkerStatus, WorkerStatus__Output } from '@fuxi/proto';
import type { Assignment, ListedWorker, PathRecord, RunningWorker, WorkerEvent, WorkerState } from '../core/types.js';

export function assignmentFromProto(a: Assignment__Output): Assignment {
  const grantSeq = int64ToNumber(a.grantSeq);
  return { suId: a.suId ?? '', nodeId: a.nodeId ?? '', nodeAddress: a.nodeAddress ?? '', slots: a.slots ?? 0, ...(grantSeq > 0 ? { grantSeq } : {}) };
}

/** Decimal int64 string (or number) to a JS number; sequence numbers stay far below 2^53. */
export function int64ToNumber(v: string | number | null | undefined): number {
  const n = Number(v ?? 0);
  return Number.isFinite(n) ? n : 0;
}

const FROM_WIRE: Partial<Record<WorkerState__Output, WorkerState>> = {
  WORKER_STATE_PENDING: 'pending',
  WORKER_STATE_RUNNING: 'running',
  WORKER_STATE_SUCCEEDED: 'succeeded',
  WORKER_STATE_FAILED: 'failed',
  WORKER_STATE_KILLED: 'killed',
  WORKER_STATE_REJECTED: 'rejected',
};

/** A worker status as a core event; undefined for an unspecified state. */
export function workerEventFromProto(s: WorkerStatus__Output): WorkerEvent | undefined {
  const state = FROM_WIRE[s.state];
  if (!state) return undefined;
  return {
    workerId: s.workerId ?? '',
    task: s.task ?? '',
    instance: s.instance ?? 0,
    attempt: s.attempt ?? 0,
    state,
    exitCode: s.exitCode ?? 0,
    signal: s.signal ?? '',
    message: s.message ?? '',
    ...(s.progress ? { progress: s.progress } : {}),
    ...(s.paths?.length ? { paths: s.paths.map(pathFromProto) } : {}),
  };
}

/** A data path record as the core takes it. */
export function pathFromProto(p: PathRecord__Output): PathRecord {
  return {
    srcNode: p.srcNode ?? '',
    dstNode: p.dstNode ?? '',
    srcWorker: p.srcWorker ?? '',
    readerWorker: p.readerWorker ?? '',
    bytes: int64ToNumber(p.bytes),
    elapsedMs: int64ToNumber(p.elapsedMs),
    done: p.done ?? false,
  };
}

/** A worker as `ListWorkers` on `nodeId` reports it; undefined for an unspecified state. */
export function listedWorkerFromProto(s: WorkerStatus__Output, nodeId: string): ListedWorker | undefined {
  const ev = workerEventFromProto(s);
  return ev ? { ...ev, nodeId } : undefined;
}

/** What GetAppState reports for a worker the AM believes is running. */
export function runningWorkerToProto(w: RunningWorker, appId: string, amAttempt: number): WorkerStatus {
  return {
    workerId: w.workerId,
    appId,
    suId: w.suId,
    task: w.task,
    instance: w.instance,
    attempt: w.attempt,
    amAttempt,
    nodeId: w.nodeId,
    state: w.started ? 'WORKER_STATE_RUNNING' : 'WORKER_STATE_PENDING',
    resource: w.resource,
  };
}
