/**
 * The master core's one state object and its parts: nodes (with their status), applications and
 * their schedule units, jobs, quota usage, the failover bookkeeping, the fault board and the
 * outbox. Every module of the core (ledger, sync, nodes, apps, jobs, recovery, scheduling) is a set
 * of free functions over this object; `MasterCore` is the facade the shell calls.
 */
import { seededRandom, ZERO, type Logger, type Resource } from '@fuxi/common';
import { connectivityBase, newConnectivity, type BrokenLink, type ConnectivityState } from './connectivity.js';
import type { DetectorConfig, FailureDetector } from './detectors.js';
import { AttemptWatch } from './attempt-verdicts.js';
import { FailurePredictor } from './failure-prediction.js';
import { FaultBoard, type SoftStateSource, type SourceTiming } from './fault-fsm.js';
import { ExternalRegistry } from './external-registry.js';
import type { ArrayMembers } from './arrays.js';
import { GrantWaits } from './grant-waits.js';
import type { AmQueue } from './sched-am-queue.js';
import { DEFAULT_PREDICTION_CONFIG, type PredictionConfig } from './prediction-config.js';
import { newProbePlan, type ProbePlan } from './probe-targets.js';
import type { QuotaGroup, SchedNode } from './scheduler.js';
import type { Testbed } from './testbeds.js';
import type { Effect, GrantEntry, JobRecord, NodeAdmin, NodeInfo, PlacementConstraints } from './types.js';

export interface MasterCoreConfig {
  heartbeatIntervalMs: number;
  /**
   * Makes each AM attempt's token (am-tokens.ts): the shell's `crypto.randomBytes`. Absent: attempts
   * get no token and are fenced by their attempt number alone (simulators, unit tests).
   */
  mintAmToken?: () => { token: string; hash: string };
  /** An agent silent this long is lost: its allocations are released. */
  agentTimeoutMs: number;
  /** How often AMs call UpdateRequests (their heartbeat). */
  amHeartbeatIntervalMs: number;
  quotaGroups: QuotaGroup[];
  /** Failover: the aggregation window closes at the latest this long after hard state is loaded. */
  recoveryDeadlineMs: number;
  /**
   * Soft-state inference on failover (default true). Off, a new master fails every unfinished job
   * and revokes every grant, as a master without failover would (the NoFO / AMFO baselines of the
   * paper's evaluation).
   */
  masterFailover?: boolean;
  /** Failover: an app whose AM has not reported this long after recovery is failed (Algorithm 2). */
  amTimeoutMs: number;
  /** An agent silent this long is timing out: not schedulable, its slots reserved, its AMs told. */
  agentTimingOutMs: number;
  /**
   * Which detector decides that an agent is timing out (detectors.ts); default the fixed
   * `agentTimingOutMs`. Adaptive kinds use `agentTimingOutMs` until they have enough arrivals.
   */
  failureDetector?: DetectorConfig;
  /**
   * How long an agent takes to notice that a peer stopped answering its probes (its probe period
   * times its misses, plus slack; agents default to 3 x 200 ms). A peer vouches for a node the master
   * cannot hear only by a heartbeat sent this long plus one heartbeat interval after the node's last
   * one: by then a dead node would be reported unreachable. Default `PROBE_DETECTION_MS`.
   */
  probeDetectionMs?: number;
  /** An AM silent this long is stalled: a new attempt starts and the old one is fenced (0 = never). */
  amStallTimeoutMs: number;
  /** AM attempts per job before the job fails. */
  maxAmAttempts: number;
  /**
   * Batch scheduling (like YARN's asynchronous scheduling interval): > 0, resource requests and
   * returns only mark a scheduling pass as due (`scheduleDue`), and the shell runs one pass for all
   * of them (`runDueSchedule`) at most this often. 0 (default): a pass inside every such call.
   */
  schedulingIntervalMs?: number;
  /**
   * A job spec larger than this (bytes, as stored) is refused with INVALID_ARGUMENT before anything
   * changes: the job's record must fit one store write. Keep it below the store's request limit
   * (etcd's --max-request-bytes, 1.5 MiB by default). Default 1 MiB; 0 = no limit.
   */
  maxJobSpecBytes?: number;
  /** Environment and instance limits of a submitted job (request-limits.ts, `checkJobInputs`; defaults DEFAULT_JOB_INPUT_LIMITS). */
  maxEnvBytes?: number;
  maxEnvVars?: number;
  maxInstancesPerJob?: number;
  /** A finished job is deleted this long after it ended (retention.ts; default 7 days). */
  jobRetentionMs?: number;
  /** At most this many finished jobs are kept; the oldest ends are deleted first (default 100,000). */
  jobRetentionCount?: number;
  /**
   * What an AM may ask for beyond its task's instances (request-limits.ts): an SU's outstanding
   * plus granted slots stay within the task's instances plus this fraction of them, rounded up, and
   * at least one slot. Default 0.1.
   */
  speculationAllowance?: number;
  /**
   * The share of the cluster's schedulable capacity application masters may hold, in every
   * dimension (sched-am-share.ts; YARN's maximum-am-resource-percent). One AM may always run.
   * Absent or 1: no limit (the daemon's config defaults to 0.1).
   */
  maxAmShare?: number;
  /**
   * Probe targets (probe-targets.ts): up to this many probing nodes every node probes every other
   * (default 64); above it, `probeSample` ring successors (default 16) plus hosts sharing an app,
   * up to `probeMaxTargets` in all (default 64).
   */
  probeAllUpTo?: number;
  probeSample?: number;
  probeMaxTargets?: number;
  /**
   * Connectivity-aware placement (default true; placement-scope.ts): a connected job's slots go
   * only to nodes that reach all its hosts, its AM to the most connected node, nothing to a node
   * partitioned from the master, and AMs get the graph; a node the master cannot hear but its
   * peers reach is partitioned, not timing out (nodes.ts). False ignores the graph (placement and
   * silent nodes as without partial-partition handling; the comparison baseline).
   */
  connectivityAware?: boolean;
  /**
   * Failure prediction (prediction-config.ts; default on with its defaults): attempt ends from the
   * agents' heartbeats train a model that keeps new workers off hosts likely to fail them.
   */
  failurePrediction?: PredictionConfig;
  /**
   * External schedulers (external-registry.ts): one silent this long (no Place call, keepalives
   * included) counts as gone: its registration ends. Default 10 s.
   */
  externalSchedulerStallMs?: number;
  /**
   * Jobs of an external scheduler that has been absent (never registered, gone or stalled) this
   * long are placed by the built-in scheduler until it registers again. Absent: they wait.
   */
  externalSchedulerFallbackMs?: number;
}

export const DEFAULT_CONFIG: MasterCoreConfig = {
  heartbeatIntervalMs: 1000,
  agentTimeoutMs: 10_000,
  amHeartbeatIntervalMs: 1000,
  quotaGroups: [{ name: 'default', weight: 1 }],
  recoveryDeadlineMs: 5000,
  amTimeoutMs: 30_000,
  agentTimingOutMs: 3000,
  amStallTimeoutMs: 30_000,
  maxAmAttempts: 4,
  maxJobSpecBytes: 1024 * 1024,
  speculationAllowance: 0.1,
};

/** Default `probeDetectionMs`: agents' default 3 missed 200 ms probes, and slack for their round trips. */
export const PROBE_DETECTION_MS = 1000;

/** AM slots go before the tasks of any job: an app cannot progress without its AM. */
export const AM_PRIORITY = 1_000_000;

/**
 * A node's status, one value set in one place (`setNodeStatus` in nodes.ts), which also posts and
 * resolves the node's fault events:
 * - `unreported`: known from the roster or registered, but this master has not heard its soft
 *   state yet (after a failover, inside the aggregation window). Not schedulable, no grant pushes.
 * - `missing`: unreported when the aggregation window closed (AGENT_TIMING open, Algorithm 1): the
 *   slots AMs claim on it are reserved until it reports or is lost.
 * - `healthy`: reported and heartbeating.
 * - `timing-out`: silent past agentTimingOutMs (AGENT_TIMING open): reserved, not schedulable.
 * - `partitioned`: silent like a timing-out node, but peers the master hears still reach it
 *   (AGENT_PARTITIONED open; in `connectivity.partitioned`): its workers and slots are kept, it is
 *   not schedulable, its AMs are not told, and it is never lost while vouched for (nodes.ts
 *   `tickNodes`).
 * - `lost`: silent past agentTimeoutMs (or never reported after a failover): its slots released.
 */
export type NodeStatus = 'unreported' | 'missing' | 'healthy' | 'timing-out' | 'partitioned' | 'lost';

export interface NodeState {
  info: NodeInfo;
  status: NodeStatus;
  lastHeartbeatMs: number;
  allocated: Resource;
  /** Last grant sequence sent to this agent. */
  grantSeq: number;
  /** Absolute grants per app/su key. */
  grants: Map<string, GrantEntry>;
  runningWorkers: number;
  /**
   * This master has heard the agent's full soft state (or made every grant on it itself). Until
   * then the node is not schedulable, gets no grant pushes, and any slots on it are only what AMs
   * claim: reserved, never sent to the agent as grants (Algorithm 1).
   */
  reported: boolean;
  /**
   * When the node last became healthy again after timing out, being missing or lost, or unreported
   * after a failover, or partitioned after timing out (0: never). Its AMs hear it a little later;
   * until then the slots on it do not count against their request limits (request-limits.ts).
   */
  backAtMs?: number;
  /**
   * The last tick at which peers vouched for the node while the master could not hear it (it was
   * partitioned): with its last heartbeat, its last sign of life, from which `agentTimeoutMs` runs.
   */
  vouchedAtMs?: number;
}

export interface ScheduleUnitState {
  suId: string;
  resource: Resource;
  priority: number;
  /** Outstanding slot requests by location. */
  requests: Map<string, number>;
  /** Assigned slots by node. */
  asgn: Map<string, number>;
  /** Assigned slots on every node: the sum of `asgn`, kept in step by `setAsgn`. */
  granted: number;
  /**
   * By node: the seq of the first grant table of the node that holds the current count, set by
   * `setAsgn` when the count rises (absent: never rose under this master). AMs get it with the
   * assignment and put it on their plans, so the agent starts none on an older table (sync.ts).
   */
  grantedAt?: Map<string, number>;
  /** Outstanding slots by when they were first seen (grant-waits.ts). */
  waits?: Array<[sinceMs: number, slots: number]>;
}

export interface AppState {
  appId: string;
  job: JobRecord;
  sus: Map<string, ScheduleUnitState>;
  /** Last assignment seq sent to the AM. */
  asgnSeq: number;
  /** When each recent push went out, by seq (the last PUSH_LOG entries; see sync.ts). */
  pushedAt?: Map<number, number>;
  /** The last assignment table that went out (its seq, and whether it was the full table). */
  lastPush?: { seq: number; full: boolean };
  lastRequestSeq: number;
  lastReturnSeq: number;
  amState: 'waiting' | 'launching' | 'running';
  /** This master has the AM's full soft state (or created the app itself). */
  reported: boolean;
  /** Last time the AM called in. */
  lastContactMs: number;
  /** Since when the app runs on a synthesized MockSU, waiting for its AM (Algorithm 2); 0 if not. */
  mockSinceMs: number;
  /** Slots returned (by `su@node`) on agents that had not reported yet after a failover. */
  pendingReturns: Map<string, number>;
  amRestarts?: number;
  /** An AM restart waiting for agents that have not reported since a failover (why it restarts). */
  pendingAmRestart?: string;
  /** Where the AM asked its new slots to go (UpdateRequests / ReportAppState), for the attempt that asked. */
  constraints?: PlacementConstraints & { attempt: number };
  /** Why its outstanding requests wait, when only connectivity holds them (placement-scope.ts); shown as the job's message. */
  waiting?: string;
  /** Last SaveAppSnapshot seq applied (per AM attempt). */
  snapshotSeq?: number;
  topologySaved?: boolean;
  /**
   * The keys of the app's hard state (under `apps/<id>/`), when this master has made every write
   * there: it made the app when the job started. Its end deletes them without listing the prefix.
   * Undefined when it cannot know (the app was rebuilt at a failover) or they are many
   * (`STORED_KEYS_KEPT`): its end lists the prefix.
   */
  storedKeys?: string[];
}

/** One use of a soft-state source by a recovery handler, as the Table 3 row allowed it. */
export interface SourceUse {
  atMs: number;
  /** The Table 3 row (1..13) that allowed it. */
  row: number;
  source: SoftStateSource;
  timing: SourceTiming;
  /** The node (agent sources) or app (AM sources) it came from or went to. */
  subject: string;
  /** What was done with it. */
  action: string;
}

export const grantKey = (appId: string, suId: string): string => `${appId}\u0000${suId}`;

/**
 * Effects gathered while the core handles one input, emptied once at its end in the order the
 * shell relies on (see `Effect`): store writes, grant tables (the last one per node: each is the
 * full table), AM launches, assignment tables and AM notices, worker stops, then job-change
 * notifications and the recovery report.
 */
export class Outbox {
  private stores: Effect[] = [];
  private grants = new Map<string, Effect>();
  private launches: Effect[] = [];
  private toAms: Effect[] = [];
  private stops: Effect[] = [];
  private changed = new Set<string>();
  private rest: Effect[] = [];

  push(...effects: Effect[]): void {
    for (const e of effects) {
      switch (e.kind) {
        case 'store':
        case 'deletePrefix':
          this.stores.push(e);
          break;
        case 'grants':
          this.grants.delete(e.nodeId);
          this.grants.set(e.nodeId, e);
          break;
        case 'launchAm':
          this.launches.push(e);
          break;
        case 'assignments':
        case 'agentsTimedOut':
          this.toAms.push(e);
          break;
        case 'stopWorkers':
          this.stops.push(e);
          break;
        case 'jobChanged':
          this.changed.add(e.jobId);
          break;
        case 'recovered':
          this.rest.push(e);
          break;
      }
    }
  }

  get empty(): boolean {
    return this.stores.length + this.grants.size + this.launches.length + this.toAms.length + this.stops.length + this.changed.size + this.rest.length === 0;
  }

  /** Everything gathered, in order; the outbox is empty afterwards. */
  take(): Effect[] {
    const out: Effect[] = [...this.stores, ...this.grants.values(), ...this.launches, ...this.toAms, ...this.stops];
    for (const jobId of this.changed) out.push({ kind: 'jobChanged', jobId });
    out.push(...this.rest);
    this.stores = [];
    this.grants = new Map();
    this.launches = [];
    this.toAms = [];
    this.stops = [];
    this.changed = new Set();
    this.rest = [];
    return out;
  }
}

/** Source uses kept for `sourceUses()` (tests, `fuxi cluster status` later). */
const SOURCE_LOG = 500;

/** The master core's state. Modules read and change it; only the facade empties the outbox. */
export class MasterState {
  readonly nodes = new Map<string, NodeState>();
  /** Operators' cordons and drains by node id (node-admin.ts; hard state). */
  readonly admin = new Map<string, NodeAdmin>();
  /** Operators' testbeds by name (testbed-admin.ts; hard state). */
  readonly testbeds = new Map<string, Testbed>();
  /** The next time a testbed's window opens or closes (a scheduling pass is due then); undefined: none. */
  testbedBoundaryMs: number | undefined;
  /** Nodes whose grant table a drain's revocation changed, pushed at the next tick (node-admin.ts). */
  readonly drainGrantsOwed = new Set<string>();
  /** Per agent: the failure detector fed with its arrivals (nodes.ts `heard`). */
  readonly detectors = new Map<string, FailureDetector>();
  readonly jobs = new Map<string, JobRecord>();
  /** Job array id -> its members and counts (arrays.ts). */
  readonly arrays = new Map<string, ArrayMembers>();
  /** When retention last ran (retention.ts). */
  lastRetentionMs = 0;
  readonly apps = new Map<string, AppState>();
  readonly groups: Map<string, QuotaGroup>;
  /** Allocation per quota group (every app), kept in step by `setAsgn` (ledger.ts). */
  readonly usage = new Map<string, Resource>();
  /** The scheduler's live view of every node (one object per node, reading its NodeState). */
  readonly schedNodes = new Map<string, SchedNode>();
  /**
   * Ids of apps that may have outstanding task requests: every app with some is here
   * (`markRequesting` at each place that adds requests), one with none leaves at the next pass. A
   * scheduling pass looks at these apps, not at every app the master holds.
   */
  readonly requesting = new Set<string>();
  /** Apps whose AM waits for its slot, per quota group, in the scheduler's order (sched-am-queue.ts). */
  readonly amQueues = new Map<string, AmQueue>();
  /** What the granted AM slots hold, kept in step by `setAsgn` (the AM share rule's input). */
  amUsed: Resource = ZERO;
  readonly out = new Outbox();
  /** Event sensor output: the bulletin board, dispatcher and system FSM (paper section 4.2.4). */
  readonly faults: FaultBoard;
  /** The last SOURCE_LOG source uses, a ring: `usesNext` is where the next one goes (`uses()`). */
  private readonly usesRing: SourceUse[] = [];
  private usesNext = 0;
  /** Which hosts cannot reach which, from the agents' probe reports (connectivity.ts). */
  readonly connectivity: ConnectivityState;
  /** Each agent's probe targets, with their versions (probe-targets.ts). */
  readonly probeTargets: ProbePlan;
  /** Apps with a `waiting` message (placement-scope.ts). */
  readonly waitingApps = new Set<string>();
  /** The connectivity version the last scheduling pass that left an app waiting saw. */
  waitingVersion = 0;
  /** The broken links of `connectivity` at its `version` (placement-scope.ts; rebuilt on a change). */
  linksCache: { version: number; links: BrokenLink[] } | undefined;
  submitSeq = 0;
  /** Slots granted and how long their requests waited (grant-waits.ts; the shell's metrics drain it). */
  readonly grantWaits = new GrantWaits();
  /** A scheduling pass is owed (batch scheduling, see MasterCoreConfig.schedulingIntervalMs). */
  due = false;
  /** The `now` of the input being handled. */
  now = 0;
  /** Attempt history, failure model and host blacklist (failure-prediction.ts); soft state. */
  readonly prediction: FailurePredictor;
  /** The training's generator, seeded from the config: the same ends train the same model. */
  readonly predictionRand: () => number;
  /** Running attempts as agents list them, and ATLAS+'s verdicts waiting for their AMs (attempt-verdicts.ts); soft state. */
  readonly attempts = new AttemptWatch();
  /** External schedulers' registrations and the history they are shown (external-registry.ts); soft state. */
  readonly external = new ExternalRegistry();
  /** Failover aggregation: from loading hard state until every roster agent and metaAM app reported. */
  recovering = false;
  recoveryStartMs = 0;
  recoveryEndMs = 0;
  /** FM_CRASH is open: from loading hard state until every agent and app missing from the window is settled. */
  failoverOpen = false;
  /** Hard state handed to the FM_CRASH handler (recovery.ts) by `loadHardState`. */
  loading: { jobs: JobRecord[]; roster: Array<Pick<NodeInfo, 'nodeId' | 'address'>> } | undefined;

  constructor(
    readonly epoch: string,
    readonly cfg: MasterCoreConfig,
    readonly log: Logger,
  ) {
    this.faults = new FaultBoard({ log, idPrefix: `e${epoch}-` });
    this.connectivity = newConnectivity(connectivityBase(epoch));
    this.probeTargets = newProbePlan(epoch);
    this.groups = new Map(cfg.quotaGroups.map((g) => [g.name, g]));
    const prediction = cfg.failurePrediction ?? DEFAULT_PREDICTION_CONFIG;
    this.prediction = new FailurePredictor(prediction);
    this.predictionRand = seededRandom(prediction.seed);
    if (!this.groups.has('default')) this.groups.set('default', { name: 'default', weight: 1 });
  }

  /** Records that a recovery handler used a soft-state source (bounded log). */
  used(use: Omit<SourceUse, 'atMs'>): void {
    const u: SourceUse = { atMs: this.now, row: use.row, source: use.source, timing: use.timing, subject: use.subject, action: use.action };
    this.usesRing[this.usesNext] = u;
    this.usesNext = (this.usesNext + 1) % SOURCE_LOG;
    this.log.debug(use, 'soft-state source used');
  }

  /** The recorded source uses, oldest first. */
  uses(): SourceUse[] {
    return [...this.usesRing.slice(this.usesNext), ...this.usesRing.slice(0, this.usesNext)];
  }
}

/** A roster placeholder: known from hard state, not registered with this master yet. */
export function placeholderNode(r: Pick<NodeInfo, 'nodeId' | 'address'>, now: number): NodeState {
  return {
    info: { nodeId: r.nodeId, address: r.address, rack: '', capacity: ZERO, labels: {}, bootId: '' },
    status: 'unreported',
    lastHeartbeatMs: now,
    allocated: ZERO,
    grantSeq: 0,
    grants: new Map(),
    runningWorkers: 0,
    reported: false,
  };
}

/** Registered with this master (its capacity is known). */
export function isRegistered(n: NodeState): boolean {
  return n.info.capacity.cpuMilli > 0;
}

/**
 * May receive grant pushes: reported and not lost. Pushes to a silent node (timing out,
 * partitioned) may not arrive; each one moves its grant seq, so its first heartbeat back gets the
 * full table.
 */
export function isLive(n: NodeState): boolean {
  return n.reported && (n.status === 'healthy' || n.status === 'timing-out' || n.status === 'partitioned');
}

/** Has not reported since a failover and is not lost yet (a node that may hold grants unknown here). */
export function isUnreported(n: NodeState): boolean {
  return !n.reported && n.status !== 'lost';
}

/**
 * The master's failover (FM_CRASH) is over once the aggregation window has closed and every agent
 * and app missing from it has reported, been lost or ended (Algorithms 1 and 2). Until then the
 * FSM is S5 / S4 / S6, not S3 / S2: the Table 3 row (which soft-state sources may be used) is that
 * of a master failover, since this master holds no grants of its own for a missing agent.
 */
export function endFailoverIfSettled(st: MasterState): void {
  if (!st.failoverOpen || st.recovering) return;
  for (const n of st.nodes.values()) if (isUnreported(n)) return;
  for (const a of st.apps.values()) if (!a.reported) return;
  st.failoverOpen = false;
  st.faults.resolve('FM_CRASH', '', st.now, `recovered ${st.now - st.recoveryStartMs} ms after hard state was loaded`);
}
