/**
 * Mapping between wire types (@fuxi/proto) and the agent core's domain types, at the edge.
 */
import type {
  Grant,
  Grant__Output,
  Resource as WireResource,
  StartWorkersRequest__Output,
  StopWorkersRequest__Output,
  UpdateGrantsRequest__Output,
  WorkerStatus,
  WorkerState__Output as WireWorkerState,
} from '@fuxi/proto';
import type { Resource } from '@fuxi/common';
import { isWorkerTerminal, type WorkerState } from '@fuxi/common';
import type { GrantEntry, StartWorkersInput, StopWorkersInput, UpdateGrantsInput, WorkerInfo } from '../core/agent-core.js';

export function fromWireResource(r: { cpuMilli?: number; memoryMb?: number } | null | undefined): Resource {
  return { cpuMilli: r?.cpuMilli ?? 0, memoryMb: r?.memoryMb ?? 0 };
}

export function toWireResource(r: Resource): WireResource {
  return { cpuMilli: r.cpuMilli, memoryMb: r.memoryMb };
}

export function fromWireGrant(g: Grant__Output): GrantEntry {
  return {
    appId: g.appId,
    suId: g.suId,
    slots: g.slots,
    resource: fromWireResource(g.resource),
    amAttempt: g.amAttempt ?? 0,
    ...(g.amTokenHash ? { amTokenHash: g.amTokenHash } : {}),
    ...(g.quotaGroup ? { quotaGroup: g.quotaGroup } : {}),
  };
}

export function toWireGrant(g: GrantEntry): Grant {
  return {
    appId: g.appId,
    suId: g.suId,
    slots: g.slots,
    resource: toWireResource(g.resource),
    amAttempt: g.amAttempt ?? 0,
    amTokenHash: g.amTokenHash ?? '',
    quotaGroup: g.quotaGroup ?? '',
  };
}

export function fromWireUpdateGrants(req: UpdateGrantsRequest__Output): UpdateGrantsInput {
  const base = req.baseSeq && req.baseSeq !== '0' ? { baseSeq: req.baseSeq } : {};
  return { epoch: req.epoch || '0', seq: req.seq || '0', full: req.full, grants: req.grants.map(fromWireGrant), ...base };
}

export function fromWireStartWorkers(req: StartWorkersRequest__Output): StartWorkersInput {
  return {
    appId: req.appId,
    amAttempt: req.amAttempt,
    amAddress: req.amAddress,
    epoch: req.epoch || '0',
    plans: req.plans.map((p) => ({
      workerId: p.workerId,
      suId: p.suId,
      task: p.task,
      instance: p.instance,
      attempt: p.attempt,
      command: { argv: [...(p.command?.argv ?? [])], env: { ...(p.command?.env ?? {}) }, cwd: p.command?.cwd ?? '' },
      resource: fromWireResource(p.resource),
      ...(p.grantSeq && p.grantSeq !== '0' ? { grantTable: { epoch: p.grantEpoch || '0', seq: p.grantSeq } } : {}),
    })),
  };
}

export function fromWireStopWorkers(req: StopWorkersRequest__Output): StopWorkersInput {
  return { appId: req.appId, workerIds: [...req.workerIds], amAttempt: req.amAttempt, epoch: req.epoch || '0', reason: req.reason };
}

const STATE: Record<WorkerState, WireWorkerState> = {
  PENDING: 'WORKER_STATE_PENDING',
  // Being spawned: reported as RUNNING (it holds its slot); pid is 0 until the spawn completes.
  STARTING: 'WORKER_STATE_RUNNING',
  RUNNING: 'WORKER_STATE_RUNNING',
  SUCCEEDED: 'WORKER_STATE_SUCCEEDED',
  FAILED: 'WORKER_STATE_FAILED',
  KILLED: 'WORKER_STATE_KILLED',
  REJECTED: 'WORKER_STATE_REJECTED',
};

export function toWireState(s: WorkerState): WireWorkerState {
  return STATE[s];
}

const WIRE_ENDS: ReadonlySet<string> = new Set(
  Object.entries(STATE)
    .filter(([s]) => isWorkerTerminal(s as WorkerState))
    .map(([, w]) => w),
);

/** A wire state that is an end (`isWorkerTerminal` of the state it stands for). */
export function isWireEnd(s: WorkerStatus['state']): boolean {
  return WIRE_ENDS.has(String(s ?? ''));
}

/** A worker as a wire WorkerStatus. `exitCode` is -1 when unknown (running, or ended by a signal). */
export function toWireStatus(w: WorkerInfo): WorkerStatus {
  return {
    workerId: w.workerId,
    appId: w.appId,
    suId: w.suId,
    task: w.task,
    instance: w.instance,
    attempt: w.attempt,
    amAttempt: w.amAttempt,
    nodeId: w.nodeId,
    state: toWireState(w.state),
    pid: w.pid,
    exitCode: w.exitCode ?? -1,
    signal: w.signal ?? '',
    message: w.message,
    startedAtMs: String(w.startedAtMs),
    finishedAtMs: String(w.finishedAtMs),
    resource: toWireResource(w.resource),
  };
}
