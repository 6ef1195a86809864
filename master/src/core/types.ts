/**
 * Domain types of the master core. Shells map wire (proto) types to these at the edge.
 */
import type { JobSpec, Resource } from '@fuxi/common';
import type { ConnectivityDeltaInput } from './connectivity.js';
import type { StoreOp } from './store-ops.js';

export type JobState = 'submitted' | 'running' | 'succeeded' | 'failed' | 'killed';

export const TERMINAL_STATES: ReadonlySet<JobState> = new Set(['succeeded', 'failed', 'killed']);

export interface TaskProgress {
  name: string;
  total: number;
  pending: number;
  running: number;
  succeeded: number;
  failed: number;
  retries: number;
  /** Instances the AM ran again because a network partition cut them off (absent in records of older versions). */
  reexecutions?: number;
  /** Fraction done (0-1) as the AM last reported it. */
  progress?: number;
  /** Speculative attempts the AM started (backups, work moved off a slow host). */
  backups?: number;
}

/** A job as the master keeps it; the persisted part is `JobRecord`. */
export interface JobRecord {
  jobId: string;
  spec: JobSpec;
  state: JobState;
  message: string;
  submittedAtMs: number;
  finishedAtMs: number;
  /** Order of submission; FIFO tie-break in the scheduler. */
  submitSeq: number;
  amAttempt: number;
  amNodeId: string;
  amAddress: string;
  progress: TaskProgress[];
  /** Who submitted the job (the caller's name; absent in records of older versions: nobody). */
  owner?: string;
  /** The current AM attempt's token and its sha-256 (am-tokens.ts); never shown to clients or logged. */
  amToken?: string;
  amTokenHash?: string;
  /** Hashes of earlier attempts' tokens, so that a call with one is refused as old (PERMISSION_DENIED). */
  retiredAmTokenHashes?: string[];
  /** A job array member held by its array's maxRunning (arrays.ts); written, so a new leader holds it too. */
  held?: boolean;
}

export interface NodeInfo {
  nodeId: string;
  address: string;
  rack: string;
  capacity: Resource;
  labels: Record<string, string>;
  bootId: string;
  /** UDP port of the agent's probe responder on the host of `address` (0 or absent: it does not probe). */
  probePort?: number;
  /** How the agent holds workers to their grants ('cgroup-v1', 'rss', ...; absent: not said). */
  resourceEnforcement?: string;
  /** Who the agent runs job processes as (absent: not said). */
  workerUser?: string;
}

export type AdminState = 'cordoned' | 'draining';

/** An operator's decision about a node, as stored (`nodeadmin/<id>`). */
export interface NodeAdmin {
  nodeId: string;
  state: AdminState;
  reason: string;
  /** Who asked (the caller's user name as the client sent it). */
  by: string;
  /** When it was asked (ms since the epoch). */
  sinceMs: number;
  /** Draining: when the slots still held on the node are revoked (ms since the epoch); else 0. */
  deadlineMs: number;
  /** Cordoned because a drain finished. */
  drained?: boolean;
}

export interface AmWorkerReport {
  appId: string;
  amAttempt: number;
  state: 'pending' | 'running' | 'succeeded' | 'failed' | 'killed' | 'rejected';
  exitCode: number;
  signal: string;
  message: string;
}

/** A worker (not an AM) that ended, as its agent's heartbeat reports it (failure prediction's input). */
export interface WorkerEndReport {
  appId: string;
  workerId: string;
  task: string;
  state: 'succeeded' | 'failed' | 'killed' | 'rejected' | 'pending' | 'running';
  exitCode: number;
  signal: string;
  resource: Resource;
  startedAtMs: number;
  finishedAtMs: number;
  /** The agent's message ('' or absent: none); `OOM: used X of Y` for a worker killed for memory. */
  message?: string;
}

/** A task worker running on an agent, as its heartbeat lists it (the per-attempt decision's input). */
export interface RunningWorkerReport {
  appId: string;
  workerId: string;
  task: string;
  startedAtMs: number;
}

export interface HeartbeatInput {
  nodeId: string;
  epoch: string;
  grantSeq: number;
  used: Resource;
  running: number;
  pending: number;
  amWorkers: AmWorkerReport[];
  /** The agent's probe report (absent: it does not probe). */
  connectivity?: ConnectivityDeltaInput;
  /** The version of the probe targets the agent holds (0: none). */
  probeTargetsVersion?: number;
  /** Workers that ended since a master last answered this agent (absent: none, or an older agent). */
  workerEnds?: WorkerEndReport[];
  /** The task workers running on the node now (absent: an older agent, or a simulated one). */
  runningWorkers?: RunningWorkerReport[];
}

export interface GrantEntry {
  appId: string;
  suId: string;
  slots: number;
  resource: Resource;
  /** The app's current AM attempt (agents fence older attempts with it). */
  amAttempt?: number;
  /** sha-256 of the current attempt's token: agents accept plans only with that token. */
  amTokenHash?: string;
  /** The job's quota group (agents pick the worker user by it). */
  quotaGroup?: string;
}

export interface AssignmentEntry {
  suId: string;
  nodeId: string;
  nodeAddress: string;
  slots: number;
  /** The node's grant table seq from which on its grants hold these slots (`ScheduleUnitState.grantedAt`). */
  grantSeq?: number;
}

export interface UnitConfig {
  suId: string;
  resource: Resource;
  priority: number;
}

export interface RequestDelta {
  suId: string;
  location: string;
  delta: number;
}

/** An app's schedule unit as the master keeps it, with the numbers of its request limit (request-limits.ts). */
export interface UnitView {
  suId: string;
  resource: Resource;
  priority: number;
  /** Outstanding slot requests, over every location. */
  outstanding: number;
  /** Slots assigned, on every node. */
  granted: number;
  /** The granted slots that count against the limit (on nodes healthy and back for a while). */
  counted: number;
  /** Outstanding plus counted may not grow beyond this: the task's instances plus the speculation allowance (0: not a task's unit). */
  limit: number;
}

/** Where an AM asks its app's new slots to go (beyond reaching its AM's host and its slots' hosts). */
export interface PlacementConstraints {
  /** Hosts every new slot must reach (e.g. those serving outputs later tasks read). */
  reach: string[];
  /** Hosts the app gave up: no new slot there. */
  avoid: string[];
}

/** The connectivity graph as an AM gets it (UpdateRequests answers). */
export interface ConnectivityView {
  version: number;
  brokenLinks: Array<{ a: string; b: string; sinceMs: number }>;
  /** Nodes partitioned from the master (peers still reach them). */
  partitioned: string[];
  /** Nodes being drained (node-admin.ts): AMs plan nothing new there and give back free slots there. */
  draining?: string[];
}

export interface SlotReturn {
  suId: string;
  nodeId: string;
  slots: number;
}

/**
 * What the core asks its shell to do. The core hands them over once per input, in this order
 * (master-state.ts `Outbox`), which the shell keeps when it carries them out:
 * 1. `store` and `deletePrefix`: hard-state writes, in the order made;
 * 2. `grants`: one full table per agent (the last one made in the input);
 * 3. `launchAm`: AM plans, after the grants that hold their slots;
 * 4. `assignments` and `agentsTimedOut`: what AMs are told, in the order made;
 * 5. `stopWorkers`;
 * 6. `jobChanged` (once per job) and `recovered`.
 */
export type Effect =
  | { kind: 'store'; ops: StoreOp[] }
  | { kind: 'grants'; nodeId: string; address: string; epoch: string; seq: number; full: boolean; grants: GrantEntry[] }
  | { kind: 'assignments'; appId: string; address: string; epoch: string; seq: number; full: boolean; assignments: AssignmentEntry[] }
  | { kind: 'launchAm'; appId: string; attempt: number; nodeId: string; address: string; resource: Resource; epoch: string }
  | { kind: 'stopWorkers'; nodeId: string; address: string; appId: string; epoch: string; reason: string; workerIds?: string[] }
  | { kind: 'deletePrefix'; prefix: string }
  | { kind: 'jobChanged'; jobId: string }
  | { kind: 'agentsTimedOut'; appId: string; address: string; epoch: string; nodeIds: string[]; recoveredNodeIds?: string[] }
  | { kind: 'recovered'; aggregationMs: number; agentsReported: number; agentsMissing: number; appsReported: number; appsMissing: number };

export interface NodeView {
  info: NodeInfo;
  /** Registered and not lost (it may be timing out: see `state`). */
  healthy: boolean;
  /** 'ready', 'timing out', 'partitioned', 'lost', 'unreported' or 'missing' (`fuxi nodes`). */
  state: string;
  allocated: Resource;
  free: Resource;
  runningWorkers: number;
  lastHeartbeatMs: number;
  /** Peers it cannot reach or be reached by (connectivity.ts `unreachablePeers`). */
  unreachablePeers: string[];
  /** Its operator's cordon or drain (node-admin.ts), if any. */
  admin?: NodeAdmin;
  /** Failure prediction's listing of the host (blacklist.ts), when listed. */
  prediction?: { level: 'gray' | 'blocked' | 'job' | 'memory'; reason: string; jobs: string[] };
  /** The testbed holding it now (testbed-admin.ts), if any. */
  testbed?: string;
}

export interface FaultEventView {
  id: string;
  kind: string;
  subject: string;
  sinceMs: number;
  state: string;
  detail: string;
}

export interface ClusterStatusView {
  fsmState: string;
  openEvents: FaultEventView[];
  recovery: {
    phase: 'aggregating' | 'recovered' | 'normal';
    agentsReported: number;
    agentsExpected: number;
    appsReported: number;
    appsExpected: number;
    startedAtMs: number;
    finishedAtMs: number;
  };
  nodesHealthy: number;
  nodesTimingOut: number;
  nodesLost: number;
  appsRunning: number;
  /** Broken links and nodes partitioned from the master. */
  connectivity: ConnectivityView;
}
