/**
 * Domain types of the DAG application master's core. The shell maps the wire types of
 * `@fuxi/proto` to and from these at the edge (`src/shell/mapping.ts`), so `__Output` optionality
 * and int64 strings never reach the core.
 *
 * The job spec types are the shared domain types of `@fuxi/common` (job-spec.ts).
 */
import type { CommandSpec, Resource } from '@fuxi/common';

export type { CommandSpec, JobSpec, TaskSpec } from '@fuxi/common';

/** "You hold `slots` slots of SU `suId` on node `nodeId`" (absolute, never a delta). */
export interface Assignment {
  suId: string;
  nodeId: string;
  nodeAddress: string;
  slots: number;
  /** Seq of the node's first grant table that holds these slots (in the numbering of the table's master); absent or 0: unknown. */
  grantSeq?: number;
}

/**
 * One assignment message from the master. A delta (`full` false) is applied only when `seq` is
 * exactly one past the applied seq (of the same master epoch) and changes only the entries it
 * lists; `full` replaces the whole table (entries absent are 0), unless it is older than the
 * applied one from the same master. A newer master's full table always applies.
 */
export interface AssignmentUpdate {
  /**
   * Epoch of the master that sent it (decimal int64). Messages are ordered by (epoch, seq): every
   * master numbers its own, so from a newer master the applied seq counts as 0. Absent or '0':
   * the epoch of the table applied last (tests, pre-HA masters).
   */
  epoch?: string;
  seq: number;
  full: boolean;
  assignments: readonly Assignment[];
  /**
   * Only for a full table that answers an UpdateRequests: `DagAppMaster.returnsIssued` as read when
   * that request was queued behind the ReturnSlots calls. Those returns are in the table, later
   * ones are not, so returned slots settle exactly. Absent: returns settle when counts drop.
   */
  returnsReflected?: number;
}

export type WorkerState = 'pending' | 'running' | 'succeeded' | 'failed' | 'killed' | 'rejected';

/** A worker status change as pushed by an agent (or synthesized by the shell for a failed plan). */
export interface WorkerEvent {
  workerId: string;
  task: string;
  instance: number;
  attempt: number;
  state: WorkerState;
  exitCode: number;
  signal: string;
  /** For failures: the reason, e.g. the last line of stderr. */
  message: string;
  /** Fraction done the worker reported (0-1; 0 or absent: none reported). */
  progress?: number;
  /** The worker's reads from other hosts, as its SDK measured them. */
  paths?: readonly PathRecord[];
}

/**
 * One data path: reader worker `readerWorker` on `dstNode` fetching the output of `srcWorker` on
 * `srcNode`, as measured by the reader's SDK or the serving agent's data service: `bytes` moved in
 * `elapsedMs`, `done` once the transfer ended.
 */
export interface PathRecord {
  srcNode: string;
  dstNode: string;
  srcWorker: string;
  readerWorker: string;
  bytes: number;
  elapsedMs: number;
  done: boolean;
}

export interface ScheduleUnitConfig {
  suId: string;
  resource: Resource;
  priority: number;
}

/** `location` is '' (anywhere), `node:<id>` or `rack:<name>`. */
export interface RequestDelta {
  suId: string;
  location: string;
  delta: number;
}

export interface SlotReturn {
  suId: string;
  nodeId: string;
  slots: number;
}

export interface WorkerPlan {
  workerId: string;
  suId: string;
  task: string;
  instance: number;
  attempt: number;
  command: CommandSpec;
  resource: Resource;
  /**
   * The node's grant table that holds the slot (master epoch, seq; see `Hold.grantTable`): the
   * agent starts the plan only once it has applied it or a newer one. Absent when unknown.
   */
  grantEpoch?: string;
  grantSeq?: number;
}

export interface TaskProgress {
  name: string;
  total: number;
  /** Not yet started: waiting for dependencies or for a slot. */
  pending: number;
  running: number;
  succeeded: number;
  /** Instances that failed for good. */
  failed: number;
  /** Attempts that failed and were retried. */
  retries: number;
  /** Instances run again because a network partition cut their worker or output off (not failed attempts). */
  reexecutions: number;
  /** Fraction done over the instances (0-1): succeeded ones count 1, running ones what they report. */
  progress: number;
  /** Speculative attempts started (backups beside slow attempts, work moved off a slow host). */
  backups: number;
}

/** An outstanding request as the AM sees it (for ReportAppState). */
export interface OutstandingRequest {
  suId: string;
  location: string;
  count: number;
}

/** A worker the AM believes is running (planned and not finished). */
export interface RunningWorker {
  workerId: string;
  suId: string;
  task: string;
  instance: number;
  attempt: number;
  nodeId: string;
  /** The agent reported it RUNNING (else it was planned and may still wait for its grant). */
  started: boolean;
  resource: Resource;
}

/** A worker as an agent lists it (`AgentService.ListWorkers`): planned by this or an earlier AM attempt. */
export interface ListedWorker extends WorkerEvent {
  /** The node whose agent listed it. */
  nodeId: string;
}

/**
 * What a restarted AM (attempt > 1) knows before it starts: its hard state from the master's store
 * (`GetAppSnapshot`) and the soft state of the agents holding its slots (`ListWorkers`).
 */
export interface Recovery {
  /** The snapshot as stored: the topology ('' = none written) and the log entries, in order. */
  snapshot: { topology: string; entries: readonly string[] };
  /** Every worker of the app listed by the agents that answered. */
  workers: readonly ListedWorker[];
  /**
   * Nodes holding slots of the app whose agent did not answer `ListWorkers`: their slots stay
   * reserved (nothing planned there, nothing returned) until `workersListed` brings their workers.
   */
  unlistedNodes: readonly string[];
}

/**
 * What the core asks its shell to do. Within one step's list the order is: snapshot, stop, return,
 * request, plan, finish; at most one `snapshot`, one `request` and one `return` per step, at most
 * one `plan` and one `stop` per node per step.
 */
export type AmEffect =
  /**
   * `SaveAppSnapshot`: `topology` ('' = unchanged) is written once per app, `entries` are appended
   * to the log (one JSON object per finished instance, see `snapshot.ts`). Goes to the master before
   * the requests and the finish of the same step (one FIFO queue), so a task's instances can only
   * run once the instances it depends on are in the log.
   */
  | { kind: 'snapshot'; topology: string; entries: string[] }
  /** `UpdateRequests`: `units` holds the config of SUs asked for the first time. */
  | { kind: 'request'; units: ScheduleUnitConfig[]; deltas: RequestDelta[] }
  /** `AgentService.StartWorkers` on `nodeAddress`. */
  | { kind: 'plan'; nodeId: string; nodeAddress: string; plans: WorkerPlan[] }
  /** `ReturnSlots`. */
  | { kind: 'return'; returns: SlotReturn[] }
  /** `AgentService.StopWorkers` on `nodeAddress`. */
  | { kind: 'stop'; nodeId: string; nodeAddress: string; workerIds: string[] }
  /** `FinishApp`; the core accepts no further input after it. */
  | { kind: 'finish'; succeeded: boolean; message: string };
