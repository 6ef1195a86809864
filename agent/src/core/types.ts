/**
 * The node agent core's vocabulary: the inputs it takes (grants, plans, stops), what it tells about
 * workers (`WorkerInfo`, `SpawnSpec`), the effects it returns, its durable state and deltas (what
 * the local checkpoint holds), the liveness the shell reports on restart, and its configuration
 * with defaults. Types and constants only.
 */
import type { Int64, Resource, WorkerState } from '@fuxi/common';

export interface CommandSpec {
  argv: string[];
  env: Record<string, string>;
  cwd: string;
}

export interface GrantEntry {
  appId: string;
  suId: string;
  slots: number;
  /** Resource of one slot. */
  resource: Resource;
  /**
   * The app's current AM attempt as the master knows it (0 / absent = not given). A higher one than
   * the agent has seen raises the app's bar: plans and stops from older attempts are then refused.
   */
  amAttempt?: number;
  /** sha-256 (hex) of that attempt's token: plans and stops must present the token (plan-tokens.ts). */
  amTokenHash?: string;
  /** The job's quota group (the master's word): picks the user its job processes run as. */
  quotaGroup?: string;
}

export interface PlanInput {
  workerId: string;
  suId: string;
  task: string;
  instance: number;
  attempt: number;
  command: CommandSpec;
  resource: Resource;
  /**
   * The grant table (master epoch, seq) that holds the plan's slot, as the AM's assignment named
   * it: the plan starts only once this agent has applied it or a newer one. Absent: on any table.
   */
  grantTable?: GrantTableId;
}

/** A grant table message: the epoch of the master that sent it and its seq in that master's numbering. */
export interface GrantTableId {
  epoch: Int64;
  seq: Int64;
}

export interface UpdateGrantsInput {
  epoch: Int64;
  seq: Int64;
  /** True: `grants` is the whole table (absent entries are revoked); false: the entries that changed (0 slots: revoked). */
  full: boolean;
  grants: GrantEntry[];
  /** A delta's base: it applies only on this table of the same master (absent: `seq` - 1). */
  baseSeq?: Int64;
}

export interface StartWorkersInput {
  appId: string;
  amAttempt: number;
  /** Where worker events go; empty for AM processes (sent by the master). */
  amAddress: string;
  /** > 0 when the master sends the plan (AM processes only); '0' from an AM. */
  epoch: Int64;
  plans: PlanInput[];
}

export interface StopWorkersInput {
  appId: string;
  /** Empty = every worker of the app. */
  workerIds: string[];
  amAttempt: number;
  /** > 0 when the master sends it; '0' from an AM. */
  epoch: Int64;
  reason: string;
}

/** One worker as the agent knows it (a copy; mutating it changes nothing). */
export interface WorkerInfo {
  workerId: string;
  appId: string;
  suId: string;
  task: string;
  instance: number;
  attempt: number;
  amAttempt: number;
  amAddress: string;
  nodeId: string;
  /** The plan's command, before substitution. */
  command: CommandSpec;
  /** Resource accounted for this worker: the grant's slot resource (the plan's while pending). */
  resource: Resource;
  state: WorkerState;
  /** 0 until spawned. */
  pid: number;
  /** Process start time (clock ticks since boot, /proc/<pid>/stat field 22); '' until spawned. */
  startTime: string;
  /** Host boot id when the process was started ('' until spawned, or when unknown). */
  bootId: string;
  exitCode: number | null;
  signal: string | null;
  message: string;
  acceptedAtMs: number;
  startedAtMs: number;
  finishedAtMs: number;
  /** Set when a stop was requested (the reason); the exit is then reported as KILLED. */
  stopReason: string;
}

/** What the shell hands to the process driver: the command after substitution. */
export interface SpawnSpec {
  workerId: string;
  appId: string;
  suId: string;
  task: string;
  instance: number;
  attempt: number;
  argv: string[];
  env: Record<string, string>;
  /** '' = the worker's own directory. */
  cwd: string;
  /** The worker's grant (its slot resource): the limits it runs under (core/resource-limits.ts). Absent: none. */
  resource?: Resource;
}

export type Effect =
  | { kind: 'spawn'; worker: SpawnSpec }
  | { kind: 'kill'; appId: string; workerId: string; pid: number; reason: string }
  /** Push to the AM of `appId` at `amAddress` (never for AM processes). */
  | { kind: 'event'; appId: string; amAddress: string; status: WorkerInfo }
  /**
   * The master should hear this before the next heartbeat is due (an application master failed:
   * the master restarts it as soon as it knows). Shells heartbeat within a few milliseconds,
   * coalescing bursts (a dead AM host ends all its AMs at once).
   */
  | { kind: 'tellMaster'; why: string }
  | { kind: 'log'; level: 'debug' | 'info' | 'warn' | 'error'; msg: string; fields: Record<string, unknown> };

export interface WorkerSummary {
  running: number;
  pending: number;
  finished: number;
}

export interface AgentSnapshot {
  nodeId: string;
  capacity: Resource;
  epoch: Int64;
  /** Epoch of the master that sent the applied grant table (its `grantSeq` is in its numbering). */
  grantEpoch: Int64;
  grantSeq: Int64;
  grants: GrantEntry[];
  workers: WorkerInfo[];
  used: Resource;
}

/** Where the agent stands with the master, and whose node this is (one checkpoint record). */
export interface CheckpointMeta {
  nodeId: string;
  /** Highest master epoch accepted. */
  epoch: Int64;
  /** Epoch of the master whose numbering `grantSeq` is in. */
  grantEpoch: Int64;
  grantSeq: Int64;
}

/** What the agent knows of an app: the newest AM attempt (the fencing bar) and where it listens. */
export interface AppEntry {
  appId: string;
  amAttempt: number;
  amAddress: string;
}

/** A worker as checkpointed: its info plus its place in acceptance and start order. */
export interface WorkerEntry extends WorkerInfo {
  order: number;
  startOrder: number;
  /** A plan's `PlanInput.grantTable` (kept while it waits). */
  grantTable?: GrantTableId;
}

/** The whole durable state of the agent: what its local checkpoint holds. */
export interface AgentState {
  meta: CheckpointMeta;
  grants: GrantEntry[];
  apps: AppEntry[];
  /** In acceptance order. */
  workers: WorkerEntry[];
}

export interface GrantRef {
  appId: string;
  suId: string;
}
export interface WorkerRef {
  appId: string;
  workerId: string;
}

/**
 * The changes since the previous delta (the paper's delta checkpoint): whole records to put and
 * keys to delete. One delta is written as one atomic batch.
 */
export interface StateDelta {
  meta?: CheckpointMeta;
  putGrants: GrantEntry[];
  delGrants: GrantRef[];
  putApps: AppEntry[];
  delApps: string[];
  putWorkers: WorkerEntry[];
  delWorkers: WorkerRef[];
}

/**
 * What became of a checkpointed worker's process while the agent was down (found by the shell):
 * still the same process (`alive`: pid, start time and boot id match), ended with an exit code the
 * wrapper recorded (`exited`; `atMs` = when, if known), or gone without a trace (`gone`).
 */
export type Liveness =
  { kind: 'alive'; pid: number; startTime: string; bootId: string } | { kind: 'exited'; exitCode: number; atMs?: number } | { kind: 'gone' };

export interface AgentCoreConfig {
  nodeId: string;
  capacity: Resource;
  /** A plan that found no grant with room for this long is REJECTED (default 60 s). */
  pendingTimeoutMs?: number;
  /**
   * A plan with no grant at all is REJECTED sooner, after this long, while no master process has
   * answered (`masterHeard`; a standby's redirect in a failover counts) for as long: the grant it
   * names cannot arrive while the agent is cut off from the masters (default 3 s; the shell passes
   * three heartbeat intervals, at least 1 s).
   */
  noGrantNoMasterMs?: number;
  /** Finished workers are forgotten after this long (default 24 h). */
  finishedRetentionMs?: number;
  /** At most this many finished workers are kept (oldest forgotten first; default 10000). */
  maxFinished?: number;
  /**
   * On restore, the final status of workers that finished this recently is pushed to their AM again
   * (the agent may have crashed before delivering it; default 10 min).
   */
  resendFinishedWithinMs?: number;
}

export const DEFAULT_PENDING_TIMEOUT_MS = 60_000;
export const DEFAULT_NO_GRANT_NO_MASTER_MS = 3_000;
export const DEFAULT_FINISHED_RETENTION_MS = 24 * 3600_000;
export const DEFAULT_MAX_FINISHED = 10_000;
export const DEFAULT_RESEND_FINISHED_WITHIN_MS = 10 * 60_000;

/** Message of a worker whose process ended while the agent was down, without a recorded exit code. */
export const ENDED_WHILE_DOWN = 'ended while the agent was down';
