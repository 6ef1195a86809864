/**
 * The master core: the cluster state (nodes, applications and their schedule units) and every
 * decision the master makes, as a deterministic state machine. Each input method takes the current
 * time and returns the effects the shell must carry out (store writes, grant and assignment
 * pushes, AM launches, worker stops). No IO, no clock, no randomness (STYLE.md 1-3).
 */
import {
  add,
  AM_SU,
  FailedPreconditionError,
  fits,
  InvalidArgumentError,
  NotFoundError,
  scale,
  StaleEpochError,
  sub,
  validateJobSpec,
  ZERO,
  type JobSpec,
  type Logger,
  type Resource,
} from '@fuxi/common';
import { schedule, type QuotaGroup, type SchedNode, type SchedUnit } from './scheduler.js';
import { KEYS, type StoreOp } from './store-ops.js';
import {
  TERMINAL_STATES,
  type AssignmentEntry,
  type Effect,
  type GrantEntry,
  type HeartbeatInput,
  type JobRecord,
  type JobState,
  type NodeInfo,
  type NodeView,
  type RequestDelta,
  type SlotReturn,
  type TaskProgress,
  type UnitConfig,
  type ClusterStatusView,
} from './types.js';
import { FaultBoard } from './fault-fsm.js';

/** The schedule unit of an application's own AM process. */
/** Assignment pushes list every entry up to this many, only the changed ones above (see pushAssignments). */
const FULL_TABLE_MAX = 64;
/** How long an assignment push may take to reach the AM before a call lacking it gets the full table. */
const IN_FLIGHT_GRACE_MS = 1000;
/** Recent pushes remembered per app (their times, for IN_FLIGHT_GRACE_MS). */
const PUSH_LOG = 64;
/** AM slots go before the tasks of any job: an app cannot progress without its AM. */
const AM_PRIORITY = 1_000_000;

export interface MasterCoreConfig {
  heartbeatIntervalMs: number;
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
};

interface NodeState {
  info: NodeInfo;
  healthy: boolean;
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
  /** Declared lost after never reporting following a failover. */
  lostAfterFailover?: boolean;
  /** Silent past agentTimingOutMs but not yet lost: reserved, not schedulable. */
  timingOut?: boolean;
}

interface ScheduleUnitState {
  suId: string;
  resource: Resource;
  priority: number;
  /** Outstanding slot requests by location. */
  requests: Map<string, number>;
  /** Assigned slots by node. */
  asgn: Map<string, number>;
}

interface AppState {
  appId: string;
  job: JobRecord;
  sus: Map<string, ScheduleUnitState>;
  /** Last assignment seq sent to the AM. */
  asgnSeq: number;
  /** When each recent push went out, by seq (the last PUSH_LOG entries; see updateRequests). */
  pushedAt?: Map<number, number>;
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
  /** Last SaveAppSnapshot seq applied (per AM attempt). */
  snapshotSeq?: number;
  topologySaved?: boolean;
}

const grantKey = (appId: string, suId: string) => `${appId}\u0000${suId}`;

/** A node as the scheduler sees it, read live from its state. */
function schedView(n: NodeState): SchedNode {
  return {
    get id() {
      return n.info.nodeId;
    },
    get rack() {
      return n.info.rack;
    },
    get capacity() {
      return n.info.capacity;
    },
    get allocated() {
      return n.allocated;
    },
    get schedulable() {
      return n.healthy && n.reported && !n.timingOut;
    },
  };
}

export interface SubmitResult {
  jobId: string;
  created: boolean;
}

export class MasterCore {
  private readonly nodes = new Map<string, NodeState>();
  private readonly jobs = new Map<string, JobRecord>();
  private readonly apps = new Map<string, AppState>();
  private readonly groups: Map<string, QuotaGroup>;
  /** Allocation per quota group (every app), kept in step by `setAsgn`. */
  private readonly usage = new Map<string, Resource>();
  /** The scheduler's live view of every node (one object per node, reading its NodeState). */
  private readonly schedNodes = new Map<string, SchedNode>();
  private submitSeq = 0;
  /** A scheduling pass is owed (batch scheduling, see MasterCoreConfig.schedulingIntervalMs). */
  private due = false;
  /** The `now` of the call being handled (for bookkeeping deep in helpers that take no time). */
  private clock = 0;
  /** Failover aggregation: from loading hard state until every roster agent and metaAM app reported. */
  private recovering = false;
  private recoveryStartMs = 0;
  private recoveryEndMs = 0;
  /** FM_CRASH is open: from loading hard state until every agent and app missing from the window is settled. */
  private failoverOpen = false;
  /** Event sensor output: the bulletin board, dispatcher and system FSM (paper section 4.2.4). */
  readonly faults: FaultBoard;

  constructor(
    readonly epoch: string,
    private readonly cfg: MasterCoreConfig,
    private readonly log: Logger,
  ) {
    this.faults = new FaultBoard({ log, idPrefix: `e${epoch}-` });
    this.groups = new Map(cfg.quotaGroups.map((g) => [g.name, g]));
    if (!this.groups.has('default')) this.groups.set('default', { name: 'default', weight: 1 });
  }

  // ---------------------------------------------------------------- hard state

  /**
   * Loads hard state read from the store (a new leader, or the embedded master restarting in
   * place) and opens the aggregation window of soft-state inference: roster agents become
   * placeholders until they report their grants, apps of unfinished jobs wait for their AMs.
   * Submissions are accepted from now on; scheduling resumes when recovery completes.
   */
  loadHardState(jobs: JobRecord[], roster: Array<Pick<NodeInfo, 'nodeId' | 'address'>>, now: number): Effect[] {
    this.clock = now;
    if (this.cfg.masterFailover === false) return this.loadWithoutFailover(jobs, now);
    this.recovering = true;
    this.failoverOpen = true;
    this.recoveryStartMs = now;
    this.faults.post('FM_CRASH', '', now, `epoch ${this.epoch} rebuilding soft state`);
    this.faults.recovering('FM_CRASH', '', now);
    for (const r of roster) {
      this.nodes.set(r.nodeId, {
        info: { nodeId: r.nodeId, address: r.address, rack: '', capacity: ZERO, labels: {}, bootId: '' },
        healthy: false,
        lastHeartbeatMs: now,
        allocated: ZERO,
        grantSeq: 0,
        grants: new Map(),
        runningWorkers: 0,
        reported: false,
      });
    }
    for (const j of [...jobs].sort((a, b) => a.submitSeq - b.submitSeq)) {
      this.submitSeq = Math.max(this.submitSeq, j.submitSeq);
      this.jobs.set(j.jobId, j);
      if (TERMINAL_STATES.has(j.state)) continue;
      const placed = j.amNodeId !== '';
      const app: AppState = {
        appId: j.jobId,
        job: j,
        sus: new Map(),
        asgnSeq: 0,
        lastRequestSeq: 0,
        lastReturnSeq: 0,
        amState: !placed ? 'waiting' : j.amAddress ? 'running' : 'launching',
        // An app whose AM was never placed has nothing to report.
        reported: !placed,
        lastContactMs: now,
        mockSinceMs: 0,
        pendingReturns: new Map(),
      };
      app.sus.set(AM_SU, { suId: AM_SU, resource: j.spec.amResource, priority: AM_PRIORITY, requests: placed ? new Map() : new Map([['', 1]]), asgn: new Map() });
      this.apps.set(app.appId, app);
    }
    this.log.info({ jobs: jobs.length, unfinished: this.apps.size, roster: roster.length }, 'hard state loaded; aggregating soft state');
    return this.maybeFinishRecovery(now);
  }

  /** Baseline without master failover: unfinished jobs fail; agents (re)registering get empty tables. */
  private loadWithoutFailover(jobs: JobRecord[], now: number): Effect[] {
    const effects: Effect[] = [];
    for (const j of [...jobs].sort((a, b) => a.submitSeq - b.submitSeq)) {
      this.submitSeq = Math.max(this.submitSeq, j.submitSeq);
      this.jobs.set(j.jobId, j);
      if (TERMINAL_STATES.has(j.state)) continue;
      j.state = 'failed';
      j.message = 'the master failed over while the job was running (master failover disabled)';
      j.finishedAtMs = now;
      effects.push(this.persist(j), { kind: 'deletePrefix', prefix: KEYS.appPrefix(j.jobId) });
    }
    this.log.info({ jobs: jobs.length }, 'hard state loaded without failover: unfinished jobs failed');
    return effects;
  }

  /** True while the aggregation window of a failover is open. */
  get isRecovering(): boolean {
    return this.recovering;
  }

  // ---------------------------------------------------------------- clients

  submitJob(submitted: JobSpec, now: number): { result: SubmitResult; effects: Effect[] } {
    this.clock = now;
    const existing = this.jobs.get(submitted.jobId);
    if (existing) return { result: { jobId: submitted.jobId, created: false }, effects: [] };
    const capacities = [...this.nodes.values()].filter((n) => n.healthy).map((n) => n.info.capacity);
    // The validator's copy has proto3 zero values replaced by defaults (quota group, AM resource).
    const spec = validateJobSpec(submitted, capacities.length > 0 ? { nodeCapacities: capacities } : {});
    if (!this.groups.has(spec.quotaGroup)) {
      throw new InvalidArgumentError('quotaGroup', `unknown quota group "${spec.quotaGroup}" (known: ${[...this.groups.keys()].join(', ')})`);
    }
    const job: JobRecord = {
      jobId: spec.jobId,
      spec,
      state: 'submitted',
      message: '',
      submittedAtMs: now,
      finishedAtMs: 0,
      submitSeq: ++this.submitSeq,
      amAttempt: 0,
      amNodeId: '',
      amAddress: '',
      progress: spec.tasks.map((t) => ({ name: t.name, total: t.instances, pending: t.instances, running: 0, succeeded: 0, failed: 0, retries: 0 })),
    };
    this.jobs.set(job.jobId, job);
    const effects: Effect[] = [this.persist(job), { kind: 'jobChanged', jobId: job.jobId }];
    effects.push(...this.startAttempt(job, now));
    this.log.info({ jobId: job.jobId, name: spec.name, tasks: spec.tasks.length }, 'job submitted');
    return { result: { jobId: job.jobId, created: true }, effects };
  }

  getJob(jobId: string): JobRecord {
    const j = this.jobs.get(jobId);
    if (!j) throw new NotFoundError('job', jobId);
    return j;
  }

  listJobs(states: readonly JobState[] = []): JobRecord[] {
    const all = [...this.jobs.values()].sort((a, b) => a.submitSeq - b.submitSeq);
    return states.length === 0 ? all : all.filter((j) => states.includes(j.state));
  }

  killJob(jobId: string, reason: string, now: number): Effect[] {
    this.clock = now;
    const job = this.getJob(jobId);
    if (TERMINAL_STATES.has(job.state)) return [];
    return this.endJob(job, 'killed', reason || 'killed by user', now);
  }

  listNodes(): NodeView[] {
    return [...this.nodes.values()]
      .sort((a, b) => (a.info.nodeId < b.info.nodeId ? -1 : 1))
      .map((n) => ({
        info: n.info,
        healthy: n.healthy,
        allocated: n.allocated,
        free: sub(n.info.capacity, n.allocated),
        runningWorkers: n.runningWorkers,
        lastHeartbeatMs: n.lastHeartbeatMs,
      }));
  }

  // ---------------------------------------------------------------- agents

  /** Whether this master knows the node (registered, or from the roster after a failover). */
  knowsNode(nodeId: string): boolean {
    return this.nodes.has(nodeId);
  }

  registerAgent(info: NodeInfo, epochSeen: string, now: number): { effects: Effect[]; heartbeatIntervalMs: number; reportState: boolean } {
    this.clock = now;
    if (BigInt(epochSeen || '0') > BigInt(this.epoch)) {
      throw new StaleEpochError('epoch', this.epoch, epochSeen);
    }
    if (info.capacity.cpuMilli <= 0 || info.capacity.memoryMb <= 0) {
      throw new InvalidArgumentError('node.capacity', `must be positive in every dimension, got cpuMilli=${info.capacity.cpuMilli} memoryMb=${info.capacity.memoryMb}`);
    }
    const effects: Effect[] = [];
    const known = this.nodes.get(info.nodeId);
    if (known) {
      if (!fits(known.allocated, info.capacity)) {
        this.log.warn({ nodeId: info.nodeId, capacity: info.capacity, allocated: known.allocated }, 'agent re-registered with less capacity than is allocated on it');
      }
      const moved = known.info.address !== info.address;
      if (known.reported && known.info.bootId && info.bootId && known.info.bootId !== info.bootId) {
        // The host rebooted: every worker it ran is gone. Release its slots so the AMs re-run them.
        this.log.warn({ nodeId: info.nodeId }, 'agent host rebooted: its workers are gone');
        this.faults.post('AGENT_CRASH', info.nodeId, now, 'host rebooted');
        known.info = info;
        effects.push(...this.releaseNode(known, now));
        this.faults.resolve('AGENT_CRASH', info.nodeId, now, 'slots released');
      }
      if (known.reported) {
        // The agent restarted (crash and recovery): this master's grants for it are authoritative.
        this.faults.post('AGENT_CRASH', info.nodeId, now, 're-registered');
        this.faults.resolve('AGENT_CRASH', info.nodeId, now, 'grants re-sent by the master');
        // Its AMs were told it was timing out: tell them it is back, as a heartbeat would.
        if (known.timingOut) effects.push(...this.noticeAgents(info.nodeId, false));
        known.timingOut = false;
        this.faults.resolve('AGENT_TIMING', info.nodeId, now, 're-registered');
      }
      known.info = info;
      known.lastHeartbeatMs = now;
      if (!known.healthy) this.log.info({ nodeId: info.nodeId }, 'agent is back');
      known.healthy = true;
      if (moved) {
        effects.push({ kind: 'store', ops: [{ type: 'put', key: KEYS.agent(info.nodeId), value: JSON.stringify({ nodeId: info.nodeId, address: info.address }) }] });
        // AMs address the agent by what their assignments say: tell them where it is now.
        for (const app of this.apps.values()) {
          if ([...app.sus.values()].some((su) => su.suId !== AM_SU && (su.asgn.get(info.nodeId) ?? 0) > 0)) effects.push(...this.pushAssignments(app, [{ nodeId: info.nodeId }]));
        }
      }
      this.log.info({ nodeId: info.nodeId, address: info.address }, 'agent re-registered');
    } else {
      // A node new to this master holds nothing it made; during a failover it may hold grants of
      // the previous master (a roster write lost), so it is asked for its state like the others.
      this.nodes.set(info.nodeId, { info, healthy: true, lastHeartbeatMs: now, allocated: ZERO, grantSeq: 0, grants: new Map(), runningWorkers: 0, reported: !this.recovering });
      effects.push({ kind: 'store', ops: [{ type: 'put', key: KEYS.agent(info.nodeId), value: JSON.stringify({ nodeId: info.nodeId, address: info.address }) }] });
      this.log.info({ nodeId: info.nodeId, address: info.address, rack: info.rack, capacity: info.capacity }, 'agent registered');
    }
    // A restarted agent gets its full table from the master (highest confidence) at once.
    if (known?.reported) effects.push(...this.pushGrants([info.nodeId]));
    effects.push(...this.runScheduler(now));
    return { effects, heartbeatIntervalMs: this.cfg.heartbeatIntervalMs, reportState: !this.nodes.get(info.nodeId)!.reported };
  }

  /**
   * An agent's full soft state (FAgentFullCapFromFM), asked for after a failover. Its grants are
   * believed (agent > AM) when they belong to an unfinished app this master knows and fit the
   * node; anything else is rejected, logged, and revoked by the full table pushed back.
   */
  reportAgentState(req: { nodeId: string; epoch: string; grants: GrantEntry[] }, now: number): Effect[] {
    this.clock = now;
    const node = this.nodes.get(req.nodeId);
    if (!node || node.info.capacity.cpuMilli <= 0) throw new FailedPreconditionError(`agent "${req.nodeId}" must register before reporting its state`);
    if (req.epoch !== this.epoch) throw new StaleEpochError('epoch', req.epoch, this.epoch);
    node.lastHeartbeatMs = now;
    node.healthy = true;
    if (node.reported) return this.pushGrants([node.info.nodeId]);
    const nodeId = node.info.nodeId;
    const touched = new Set<AppState>();
    // What AMs claimed on this node is replaced by what the agent holds (degree of confidence).
    for (const app of this.apps.values()) {
      for (const su of app.sus.values()) {
        if (su.asgn.has(nodeId)) {
          this.setAsgn(app, su, nodeId, 0);
          touched.add(app);
        }
      }
    }
    const sorted = [...req.grants].sort((a, b) => (a.appId === b.appId ? (a.suId < b.suId ? -1 : 1) : a.appId < b.appId ? -1 : 1));
    for (const g of sorted) {
      const why = this.adoptGrant(node, g);
      if (why) this.log.warn({ nodeId, appId: g.appId, suId: g.suId, slots: g.slots, reason: why }, 'agent reported a grant this master does not believe; revoking it');
      else {
        const app = this.apps.get(g.appId);
        if (app) touched.add(app);
      }
    }
    node.reported = true;
    this.faults.resolve('AGENT_TIMING', nodeId, now, 'reported its state');
    this.log.info({ nodeId, grants: req.grants.length, allocated: node.allocated }, 'agent state adopted');
    const effects = this.pushGrants([nodeId]);
    for (const app of touched) effects.push(...this.pushAssignments(app, [{ nodeId }]));
    effects.push(...this.maybeFinishRecovery(now));
    this.maybeEndFailover(now);
    effects.push(...this.runPendingAmRestarts(now));
    if (!this.recovering) effects.push(...this.runScheduler(now));
    return effects;
  }

  /** Adopts one reported grant onto a node; returns why it was not believed, or ''. */
  private adoptGrant(node: NodeState, reported: GrantEntry): string {
    let g = reported;
    const app = this.apps.get(g.appId);
    if (!app) return this.jobs.has(g.appId) ? 'the app has finished' : 'unknown app';
    if (!Number.isInteger(g.slots) || g.slots <= 0) return 'slot count must be positive';
    const returnedKey = `${g.suId}@${node.info.nodeId}`;
    const returned = Math.min(g.slots, app.pendingReturns.get(returnedKey) ?? 0);
    if (returned > 0) {
      app.pendingReturns.delete(returnedKey);
      if (returned === g.slots) return 'the AM returned these slots during the failover';
      g = { ...g, slots: g.slots - returned };
    }
    let su = app.sus.get(g.suId);
    if (su && (su.resource.cpuMilli !== g.resource.cpuMilli || su.resource.memoryMb !== g.resource.memoryMb)) return 'slot size differs from the schedule unit';
    if (!fits(add(node.allocated, scale(g.resource, g.slots)), node.info.capacity)) return 'more than the node can hold';
    if (!su) {
      // A MockSU (Algorithm 2): the app's granted resources, until its AM reports the real units.
      su = { suId: g.suId, resource: g.resource, priority: app.job.spec.priority, requests: new Map(), asgn: new Map() };
      app.sus.set(g.suId, su);
    }
    this.setAsgn(app, su, node.info.nodeId, (su.asgn.get(node.info.nodeId) ?? 0) + g.slots);
    if (g.suId === AM_SU) {
      // The AM's slot exists: never launch a second AM of this attempt.
      su.requests.clear();
      app.job.amNodeId = node.info.nodeId;
      if (app.amState === 'waiting') app.amState = 'launching';
    }
    return '';
  }

  heartbeat(hb: HeartbeatInput, now: number): { reregister: boolean; reportState?: boolean; full?: { seq: number; grants: GrantEntry[] }; effects: Effect[] } {
    this.clock = now;
    const node = this.nodes.get(hb.nodeId);
    // A roster placeholder has not registered with this master yet (no capacity known).
    if (!node || node.info.capacity.cpuMilli <= 0) return { reregister: true, effects: [] };
    if (!node.reported) {
      node.lastHeartbeatMs = now;
      node.healthy = true;
      return { reregister: false, reportState: true, effects: [] };
    }
    if (hb.epoch && hb.epoch !== '0' && BigInt(hb.epoch) > BigInt(this.epoch)) throw new StaleEpochError('epoch', this.epoch, hb.epoch);
    const effects: Effect[] = [];
    node.lastHeartbeatMs = now;
    node.runningWorkers = hb.running;
    if (node.timingOut) {
      node.timingOut = false;
      this.faults.resolve('AGENT_TIMING', hb.nodeId, now, 'back before it was lost');
      this.log.info({ nodeId: hb.nodeId }, 'agent back from timing out: nothing lost');
      effects.push(...this.noticeAgents(hb.nodeId, false));
      effects.push(...this.runScheduler(now));
    }
    if (!node.healthy) {
      node.healthy = true;
      this.log.info({ nodeId: hb.nodeId }, 'agent is back');
      effects.push(...this.runScheduler(now));
    }
    for (const am of hb.amWorkers) effects.push(...this.onAmWorker(hb.nodeId, am, now));
    if (hb.grantSeq !== node.grantSeq) {
      return { reregister: false, full: { seq: node.grantSeq, grants: [...node.grants.values()] }, effects };
    }
    return { reregister: false, effects };
  }

  /** Periodic: agents silent past the timeout are lost; their allocations are released. */
  tick(now: number): Effect[] {
    this.clock = now;
    const effects: Effect[] = [];
    if (this.recovering) {
      if (now - this.recoveryStartMs >= this.cfg.recoveryDeadlineMs) effects.push(...this.finishRecovery(now));
      return effects;
    }
    // Algorithm 1, second half: an agent that never reported after a failover is lost once it has
    // been silent for the agent timeout; the slots AMs claimed on it are released.
    for (const node of this.nodes.values()) {
      if (node.reported || node.lostAfterFailover) continue;
      if (now - Math.max(node.lastHeartbeatMs, this.recoveryEndMs) > this.cfg.agentTimeoutMs) {
        node.lostAfterFailover = true;
        node.healthy = false;
        this.faults.resolve('AGENT_TIMING', node.info.nodeId, now, 'lost: never reported after the failover');
        this.log.warn({ nodeId: node.info.nodeId }, 'agent did not report after the failover: lost');
        effects.push(...this.releaseNode(node, now));
        effects.push(...this.runPendingAmRestarts(now));
      }
    }
    // Algorithm 2, second half: a MockSU is released when its AM does not come back in time.
    for (const app of [...this.apps.values()]) {
      if (app.mockSinceMs > 0 && now - app.mockSinceMs > this.cfg.amTimeoutMs) {
        effects.push(...this.endJob(app.job, 'failed', `the application master did not report within ${this.cfg.amTimeoutMs} ms after a master failover`, now));
      }
    }
    this.maybeEndFailover(now);
    // Mark every silent agent lost before releasing any: work freed by one lost agent (a failed
    // AM's slots) must not be placed on another agent that is being lost in this same tick.
    const lost = [...this.nodes.values()].filter((n) => n.healthy && n.reported && now - n.lastHeartbeatMs > this.cfg.agentTimeoutMs);
    for (const node of lost) {
      node.healthy = false;
      node.timingOut = false;
      this.faults.resolve('AGENT_TIMING', node.info.nodeId, now, 'lost: its slots were released');
      this.log.warn({ nodeId: node.info.nodeId, silentMs: now - node.lastHeartbeatMs }, 'agent lost: no heartbeat');
    }
    // Agent timing failure: silent past agentTimingOutMs but not lost yet. Its slots stay reserved
    // (workers there may well be running) and its AMs are told; their policy decides.
    for (const node of this.nodes.values()) {
      if (!node.healthy || !node.reported || node.timingOut || lost.includes(node)) continue;
      if (now - node.lastHeartbeatMs > this.cfg.agentTimingOutMs) {
        node.timingOut = true;
        this.faults.post('AGENT_TIMING', node.info.nodeId, now, `silent for ${now - node.lastHeartbeatMs} ms`);
        this.log.warn({ nodeId: node.info.nodeId, silentMs: now - node.lastHeartbeatMs }, 'agent timing out: slots reserved');
        effects.push(...this.noticeAgents(node.info.nodeId, true));
      }
    }
    // AM timing failure: a stalled AM is replaced by a new attempt; the old one is fenced.
    if (this.cfg.amStallTimeoutMs > 0) {
      for (const app of [...this.apps.values()]) {
        // A launched AM that never registers counts as stalled too (lastContactMs is its launch).
        if ((app.amState !== 'running' && app.amState !== 'launching') || !app.reported || app.pendingAmRestart) continue;
        // Starting a process can be slow on a loaded host: a launching AM gets three times longer.
        const limit = app.amState === 'launching' ? 3 * this.cfg.amStallTimeoutMs : this.cfg.amStallTimeoutMs;
        if (now - app.lastContactMs > limit) {
          this.faults.post('AM_TIMING', app.appId, now, `silent for ${now - app.lastContactMs} ms`);
          this.faults.recovering('AM_TIMING', app.appId, now);
          effects.push(...this.restartAm(app, `application master silent for ${now - app.lastContactMs} ms`, now));
        }
      }
    }
    for (const node of lost) effects.push(...this.releaseNode(node, now));
    if (effects.length > 0) effects.push(...this.runScheduler(now));
    return effects;
  }

  // ---------------------------------------------------------------- application masters

  registerApp(appId: string, attempt: number, address: string, now: number): { effects: Effect[]; spec: JobSpec; assignments: AssignmentEntry[]; seq: number; heartbeatIntervalMs: number } {
    this.clock = now;
    const app = this.requireApp(appId, attempt);
    app.job.amAddress = address;
    app.lastContactMs = now;
    const effects: Effect[] = [];
    if (!app.reported) {
      // A (re)starting AM holds no requests or assignments of its own to report.
      app.reported = true;
      app.mockSinceMs = 0;
      effects.push(...this.maybeFinishRecovery(now));
      this.maybeEndFailover(now);
    }
    if (app.amState !== 'running') {
      this.faults.resolve('AM_CRASH', appId, now, `attempt ${attempt} registered`);
      this.faults.resolve('AM_TIMING', appId, now, `attempt ${attempt} registered`);
      app.amState = 'running';
      if (app.job.state === 'submitted') app.job.state = 'running';
      effects.push(this.persist(app.job), { kind: 'jobChanged', jobId: appId });
      this.log.info({ appId, attempt, address }, 'application master registered');
    }
    return { effects, spec: app.job.spec, assignments: this.assignmentsOf(app), seq: app.asgnSeq, heartbeatIntervalMs: this.cfg.amHeartbeatIntervalMs };
  }

  updateRequests(
    req: { appId: string; attempt: number; seq: number; units: UnitConfig[]; deltas: RequestDelta[]; assignmentSeq: number; progress: TaskProgress[] },
    now: number,
  ): { effects: Effect[]; reportState?: boolean; full?: { seq: number; assignments: AssignmentEntry[] } } {
    this.clock = now;
    const app = this.requireApp(req.appId, req.attempt);
    app.lastContactMs = now;
    const seqBefore = app.asgnSeq;
    const effects: Effect[] = [];
    if (!app.reported) {
      // After a failover: nothing is applied until the AM has reported its full state, which
      // includes whatever this call asks for.
      return { effects, reportState: true };
    }
    if (req.seq > app.lastRequestSeq) this.checkRequest(app, req.units, req.deltas);
    if (req.progress.length > 0 && JSON.stringify(req.progress) !== JSON.stringify(app.job.progress)) {
      app.job.progress = req.progress;
      effects.push({ kind: 'jobChanged', jobId: app.appId });
    }
    if (req.seq > app.lastRequestSeq) {
      app.lastRequestSeq = req.seq;
      for (const u of req.units) this.declareUnit(app, u);
      for (const d of req.deltas) {
        const su = app.sus.get(d.suId);
        if (!su) continue; // checkRequest made sure it exists
        const next = Math.max(0, (su.requests.get(d.location) ?? 0) + d.delta);
        if (next === 0) su.requests.delete(d.location);
        else su.requests.set(d.location, next);
      }
      if (req.deltas.length > 0) effects.push(...this.scheduleOrDefer(now));
    }
    // The reply carries the full table when the AM does not hold the current one, unless this very
    // call pushes it (a full table, or deltas that follow on what the AM holds), or the pushes it
    // lacks went out less than IN_FLIGHT_GRACE_MS ago and are still on their way (under load the AM
    // often asks again before the last push has arrived; a full table then would cost the size of
    // the app for nothing). A push that was lost is made up for by the next call after the grace.
    const pushed = effects.some((e) => e.kind === 'assignments' && e.appId === app.appId && e.seq === app.asgnSeq && (e.full || req.assignmentSeq === seqBefore));
    if (req.assignmentSeq !== app.asgnSeq && !pushed && !this.pushesInFlight(app, req.assignmentSeq, now)) return { effects, full: { seq: app.asgnSeq, assignments: this.assignmentsOf(app) } };
    return { effects };
  }

  /** Throws the first problem of an UpdateRequests before any of it is applied (all or nothing). */
  private checkRequest(app: AppState, units: readonly UnitConfig[], deltas: readonly RequestDelta[]): void {
    for (const u of units) {
      if (u.suId === AM_SU) throw new InvalidArgumentError('units.suId', `"${AM_SU}" is reserved`);
      if (u.resource.cpuMilli <= 0 || u.resource.memoryMb <= 0) {
        throw new InvalidArgumentError(`units[${u.suId}].resource`, 'must be positive in every dimension');
      }
    }
    const declared = new Set(units.map((u) => u.suId));
    for (const d of deltas) {
      if (d.suId === AM_SU || (!app.sus.has(d.suId) && !declared.has(d.suId))) {
        throw new InvalidArgumentError('deltas.suId', `unknown schedule unit "${d.suId}" (declare it in units first)`);
      }
      if (d.location !== '' && !/^(node|rack):.+$/.test(d.location)) {
        throw new InvalidArgumentError('deltas.location', `must be "", "node:<id>" or "rack:<name>", got "${d.location}"`);
      }
    }
  }

  returnSlots(req: { appId: string; attempt: number; seq: number; returns: SlotReturn[] }, now: number): Effect[] {
    this.clock = now;
    const app = this.requireApp(req.appId, req.attempt);
    app.lastContactMs = now;
    if (req.seq <= app.lastReturnSeq) return [];
    app.lastReturnSeq = req.seq;
    const changed = new Set<string>();
    for (const r of req.returns) {
      // The AM's own slot is released by FinishApp / the end of the job, never by the AM returning it.
      if (r.suId === AM_SU || r.slots <= 0) continue;
      const node = this.nodes.get(r.nodeId);
      if (node && !node.reported && !node.lostAfterFailover) {
        // After a failover, before the agent reported: remember the return for when its grants come in.
        const k = `${r.suId}@${r.nodeId}`;
        app.pendingReturns.set(k, (app.pendingReturns.get(k) ?? 0) + r.slots);
      }
      const su = app.sus.get(r.suId);
      if (!su) continue;
      const held = su.asgn.get(r.nodeId) ?? 0;
      const n = Math.min(held, Math.max(0, r.slots));
      if (n === 0) continue;
      this.setAsgn(app, su, r.nodeId, held - n);
      changed.add(r.nodeId);
    }
    const effects = this.pushGrants(changed);
    // The AM learns the reduced absolute counts in their own message.
    effects.push(...this.pushAssignments(app, [...changed].map((nodeId) => ({ nodeId }))));
    effects.push(...this.scheduleOrDefer(now));
    return effects;
  }

  /**
   * An AM's full soft state (AMFullReqResFromFM), asked for after a failover: its units and
   * outstanding requests replace the master's; its assignments are believed only as reservations
   * on agents that have not reported (never as grants; agents that reported win).
   */
  reportAppState(
    req: { appId: string; attempt: number; address: string; units: UnitConfig[]; requests: Array<{ suId: string; location: string; count: number }>; assignments: Array<{ suId: string; nodeId: string; slots: number }> },
    now: number,
  ): Effect[] {
    this.clock = now;
    const app = this.requireApp(req.appId, req.attempt);
    this.checkRequest(
      app,
      req.units,
      req.requests.map((r) => ({ suId: r.suId, location: r.location, delta: r.count })),
    );
    app.lastContactMs = now;
    if (req.address) app.job.amAddress = req.address;
    for (const u of req.units) {
      const su = app.sus.get(u.suId);
      if (su && (su.resource.cpuMilli !== u.resource.cpuMilli || su.resource.memoryMb !== u.resource.memoryMb)) {
        this.log.warn({ appId: app.appId, suId: u.suId }, 'AM reports a slot size that differs from its granted one; keeping the agents\' (higher confidence)');
      }
      this.declareUnit(app, u);
    }
    for (const su of app.sus.values()) if (su.suId !== AM_SU) su.requests.clear();
    for (const r of req.requests) {
      const su = app.sus.get(r.suId);
      if (!su || r.count <= 0) continue;
      su.requests.set(r.location, (su.requests.get(r.location) ?? 0) + r.count);
    }
    for (const a of req.assignments) {
      const node = this.nodes.get(a.nodeId);
      const su = app.sus.get(a.suId);
      if (!node || node.reported || node.lostAfterFailover || !su || su.suId === AM_SU || a.slots <= 0) continue;
      this.setAsgn(app, su, a.nodeId, Math.max(su.asgn.get(a.nodeId) ?? 0, a.slots));
    }
    const wasReported = app.reported;
    this.faults.resolve('AM_TIMING', app.appId, now, 'reported its state');
    app.reported = true;
    app.mockSinceMs = 0;
    app.amState = 'running';
    if (!wasReported) this.log.info({ appId: app.appId, units: req.units.length, requests: req.requests.length, claims: req.assignments.length }, 'application state adopted');
    const effects = this.pushAssignments(app, [{ nodeId: '' }]);
    effects.push(...this.maybeFinishRecovery(now));
    this.maybeEndFailover(now);
    effects.push(...this.runPendingAmRestarts(now));
    if (!this.recovering) effects.push(...this.runScheduler(now));
    return effects;
  }

  finishApp(req: { appId: string; attempt: number; succeeded: boolean; message: string; progress: TaskProgress[] }, now: number): Effect[] {
    this.clock = now;
    const app = this.requireApp(req.appId, req.attempt);
    if (req.progress.length > 0) app.job.progress = req.progress;
    this.log.info({ appId: req.appId, succeeded: req.succeeded, message: req.message }, 'application finished');
    return this.endJob(app.job, req.succeeded ? 'succeeded' : 'failed', req.message, now);
  }

  /** The shell could not hand the AM plan to its agent. */
  amLaunchFailed(appId: string, attempt: number, message: string, now: number): Effect[] {
    this.clock = now;
    const app = this.apps.get(appId);
    if (!app || app.job.amAttempt !== attempt) return [];
    return this.endJob(app.job, 'failed', `could not start the application master: ${message}`, now);
  }

  private unreportedAgents(): number {
    let n = 0;
    for (const node of this.nodes.values()) if (!node.reported && !node.lostAfterFailover) n++;
    return n;
  }

  /** Runs AM restarts that were waiting for agents to report, once none is left unreported. */
  private runPendingAmRestarts(now: number): Effect[] {
    if (this.recovering || this.unreportedAgents() > 0) return [];
    const effects: Effect[] = [];
    for (const app of [...this.apps.values()]) {
      if (app.pendingAmRestart && this.apps.has(app.appId)) effects.push(...this.restartAm(app, app.pendingAmRestart, now));
    }
    return effects;
  }

  /** AgentsTimedOut to every AM holding slots on the node (timing out, or back). */
  private noticeAgents(nodeId: string, timingOut: boolean): Effect[] {
    const effects: Effect[] = [];
    for (const app of this.apps.values()) {
      if (!app.reported || app.amState !== 'running' || !app.job.amAddress) continue;
      const holds = [...app.sus.values()].some((su) => su.suId !== AM_SU && (su.asgn.get(nodeId) ?? 0) > 0);
      if (!holds) continue;
      effects.push({
        kind: 'agentsTimedOut',
        appId: app.appId,
        address: app.job.amAddress,
        epoch: this.epoch,
        nodeIds: timingOut ? [nodeId] : [],
        recoveredNodeIds: timingOut ? [] : [nodeId],
      });
    }
    return effects;
  }

  /** The AM's hard state: topology once, then its log of finished instances (idempotent by seq). */
  saveAppSnapshot(req: { appId: string; attempt: number; topology: string; seq: number; entries: string[] }, now: number): Effect[] {
    this.clock = now;
    const app = this.requireApp(req.appId, req.attempt);
    app.lastContactMs = now;
    const ops: StoreOp[] = [];
    if (req.topology && !app.topologySaved) {
      app.topologySaved = true;
      ops.push({ type: 'put', key: KEYS.appTopology(app.appId), value: req.topology });
    }
    if (req.entries.length > 0) {
      if (req.seq <= (app.snapshotSeq ?? 0)) return ops.length > 0 ? [{ kind: 'store', ops }] : [];
      app.snapshotSeq = req.seq;
      req.entries.forEach((e, i) => ops.push({ type: 'put', key: KEYS.appLogEntry(app.appId, req.attempt, req.seq, i), value: e }));
    }
    return ops.length > 0 ? [{ kind: 'store', ops }] : [];
  }

  /** What `fuxi cluster status` shows. */
  clusterStatus(now: number): ClusterStatusView {
    this.clock = now;
    void now;
    const nodes = [...this.nodes.values()];
    return {
      fsmState: this.faults.state,
      openEvents: this.faults.open(),
      recovery: {
        phase: this.recovering ? 'aggregating' : this.recoveryEndMs > 0 ? 'recovered' : 'normal',
        agentsReported: nodes.filter((n) => n.reported).length,
        agentsExpected: nodes.length,
        appsReported: [...this.apps.values()].filter((a) => a.reported).length,
        appsExpected: this.apps.size,
        startedAtMs: this.recoveryStartMs,
        finishedAtMs: this.recoveryEndMs,
      },
      nodesHealthy: nodes.filter((n) => n.healthy && n.reported && !n.timingOut).length,
      nodesTimingOut: nodes.filter((n) => n.timingOut || (!n.reported && !n.lostAfterFailover)).length,
      nodesLost: nodes.filter((n) => !n.healthy && n.reported).length + nodes.filter((n) => n.lostAfterFailover).length,
      appsRunning: [...this.apps.values()].filter((a) => a.amState === 'running').length,
    };
  }

  // ---------------------------------------------------------------- failover

  /** Closes the aggregation window early once every roster agent and metaAM app has reported. */
  private maybeFinishRecovery(now: number): Effect[] {
    if (!this.recovering) return [];
    const agentsPending = [...this.nodes.values()].some((n) => !n.reported);
    const appsPending = [...this.apps.values()].some((a) => !a.reported);
    return agentsPending || appsPending ? [] : this.finishRecovery(now);
  }

  /**
   * The master's failover (FM_CRASH) is over once the aggregation window has closed and every agent
   * and app missing from it has reported, been lost or ended (Algorithms 1 and 2). Until then the
   * FSM is S5 / S4 / S6, not S3 / S2: the Table 3 row (which soft-state sources may be used) is that
   * of a master failover, since this master holds no grants of its own for a missing agent.
   */
  private maybeEndFailover(now: number): void {
    if (!this.failoverOpen || this.recovering) return;
    if ([...this.nodes.values()].some((n) => !n.reported && !n.lostAfterFailover)) return;
    if ([...this.apps.values()].some((a) => !a.reported)) return;
    this.failoverOpen = false;
    this.faults.resolve('FM_CRASH', '', now, `recovered ${now - this.recoveryStartMs} ms after hard state was loaded`);
  }

  /** Recovery: Algorithm 1 for agents that did not report, Algorithm 2 for AMs; then schedule. */
  private finishRecovery(now: number): Effect[] {
    this.recovering = false;
    this.recoveryEndMs = now;
    const effects: Effect[] = [];
    const missingAgents = [...this.nodes.values()].filter((n) => !n.reported).map((n) => n.info.nodeId);
    const missingApps = [...this.apps.values()].filter((a) => !a.reported);
    // Algorithm 1: agents timing out keep the slots AMs claim on them reserved; their AMs are told.
    if (missingAgents.length > 0) {
      const missing = new Set(missingAgents);
      for (const app of this.apps.values()) {
        if (!app.reported || !app.job.amAddress) continue;
        const hit = new Set<string>();
        for (const su of app.sus.values()) for (const nodeId of su.asgn.keys()) if (missing.has(nodeId)) hit.add(nodeId);
        if (hit.size > 0) effects.push({ kind: 'agentsTimedOut', appId: app.appId, address: app.job.amAddress, epoch: this.epoch, nodeIds: [...hit].sort() });
      }
    }
    // Algorithm 2: apps whose AM did not report keep their granted resources as a MockSU.
    for (const app of missingApps) {
      app.mockSinceMs = now;
      this.faults.post('AM_TIMING', app.appId, now, 'did not report after the master failover');
    }
    for (const nodeId of missingAgents) this.faults.post('AGENT_TIMING', nodeId, now, 'did not report after the master failover');
    // FM_CRASH stays open (S5 / S4 / S6) while Algorithms 1 and 2 still wait for what is missing.
    this.maybeEndFailover(now);
    const stats = {
      aggregationMs: now - this.recoveryStartMs,
      agentsReported: [...this.nodes.values()].filter((n) => n.reported).length,
      agentsMissing: missingAgents.length,
      appsReported: this.apps.size - missingApps.length,
      appsMissing: missingApps.length,
    };
    this.log.info({ ...stats, missingAgents, missingApps: missingApps.map((a) => a.appId) }, 'soft state recovered; scheduling resumes');
    effects.push({ kind: 'recovered', ...stats });
    effects.push(...this.runPendingAmRestarts(now));
    effects.push(...this.runScheduler(now));
    return effects;
  }

  // ---------------------------------------------------------------- internals

  private startAttempt(job: JobRecord, now: number): Effect[] {
    job.amAttempt += 1;
    const app: AppState = { appId: job.jobId, job, sus: new Map(), asgnSeq: 0, lastRequestSeq: 0, lastReturnSeq: 0, amState: 'waiting', reported: true, lastContactMs: now, mockSinceMs: 0, pendingReturns: new Map() };
    app.sus.set(AM_SU, { suId: AM_SU, resource: job.spec.amResource, priority: AM_PRIORITY, requests: new Map([['', 1]]), asgn: new Map() });
    this.apps.set(app.appId, app);
    return this.runScheduler(now);
  }

  private onAmWorker(nodeId: string, am: HeartbeatInput['amWorkers'][number], now: number): Effect[] {
    const app = this.apps.get(am.appId);
    if (!app || app.job.amAttempt !== am.amAttempt) return [];
    if (am.state === 'pending' || am.state === 'running') return [];
    const how = am.signal ? `signal ${am.signal}` : `exit code ${am.exitCode}`;
    const detail = am.message ? `: ${am.message}` : '';
    this.log.warn({ appId: am.appId, nodeId, state: am.state, exitCode: am.exitCode, signal: am.signal }, 'application master process ended before finishing the app');
    this.faults.post('AM_CRASH', app.appId, now, `${how}${detail}`);
    this.faults.recovering('AM_CRASH', app.appId, now);
    return this.restartAm(app, `application master exited (${how})${detail}`, now);
  }

  /**
   * AM failover: a new attempt on the same node if it is healthy, else wherever the scheduler puts
   * it. The app keeps every slot it holds (its workers keep running); the new attempt's number
   * reaches agents with the grants, which fences the old one.
   */
  private restartAm(app: AppState, why: string, now: number): Effect[] {
    if (app.job.amAttempt >= this.cfg.maxAmAttempts) {
      return this.endJob(app.job, 'failed', `${why}; no AM attempts left (${this.cfg.maxAmAttempts})`, now);
    }
    // After a failover, agents that have not reported may run this app's workers and hold its
    // grants; a new AM would see neither and run those instances again (Table 3, row 13). Its
    // restart waits until every such agent has reported or been declared lost.
    if (this.unreportedAgents() > 0) {
      if (!app.pendingAmRestart) this.log.warn({ appId: app.appId, reason: why, waitingFor: this.unreportedAgents() }, 'AM restart waits for agents that have not reported');
      app.pendingAmRestart = why;
      app.amState = 'waiting';
      return [{ kind: 'jobChanged', jobId: app.appId }];
    }
    app.pendingAmRestart = undefined;
    const oldAttempt = app.job.amAttempt;
    const oldNodeId = app.job.amNodeId;
    app.job.amAttempt += 1;
    app.job.amAddress = '';
    app.amState = 'waiting';
    app.lastRequestSeq = 0;
    app.lastReturnSeq = 0;
    app.lastContactMs = now;
    app.amRestarts = (app.amRestarts ?? 0) + 1;
    app.snapshotSeq = 0;
    // The new attempt asks again from zero.
    for (const su of app.sus.values()) if (su.suId !== AM_SU) su.requests.clear();
    this.log.warn({ appId: app.appId, attempt: app.job.amAttempt, reason: why, sources: this.faults.sources() }, 'restarting the application master');
    const effects: Effect[] = [{ kind: 'jobChanged', jobId: app.appId }];
    const amSu = app.sus.get(AM_SU)!;
    const node = this.nodes.get(oldNodeId);
    // Every grant of the app now names the new attempt.
    const nodesOfApp = new Set<string>();
    for (const su of app.sus.values()) for (const n of su.asgn.keys()) nodesOfApp.add(n);
    for (const n of nodesOfApp) {
      const ns = this.nodes.get(n);
      if (!ns) continue;
      for (const [k, g] of ns.grants) if (g.appId === app.appId) ns.grants.set(k, { ...g, amAttempt: app.job.amAttempt });
    }
    if (node && node.healthy && node.reported && !node.timingOut && (amSu.asgn.get(oldNodeId) ?? 0) > 0) {
      // Same node: the old AM's slot is the new one's (the agent starts it once the old one is gone).
      effects.push(...this.pushGrants(nodesOfApp));
      if (node) effects.push({ kind: 'stopWorkers', nodeId: oldNodeId, address: node.info.address, appId: app.appId, epoch: this.epoch, reason: why, workerIds: [`am.${oldAttempt}`] });
      app.amState = 'launching';
      effects.push(this.persist(app.job));
      effects.push({ kind: 'launchAm', appId: app.appId, attempt: app.job.amAttempt, nodeId: oldNodeId, address: node.info.address, resource: amSu.resource, epoch: this.epoch });
      return effects;
    }
    if (oldNodeId && (amSu.asgn.get(oldNodeId) ?? 0) > 0) {
      if (node) effects.push({ kind: 'stopWorkers', nodeId: oldNodeId, address: node.info.address, appId: app.appId, epoch: this.epoch, reason: why, workerIds: [`am.${oldAttempt}`] });
      this.setAsgn(app, amSu, oldNodeId, 0);
    }
    app.job.amNodeId = '';
    amSu.requests.set('', 1);
    effects.push(...this.pushGrants(nodesOfApp));
    effects.push(this.persist(app.job));
    effects.push(...this.runScheduler(now));
    return effects;
  }

  private endJob(job: JobRecord, state: JobState, message: string, now: number): Effect[] {
    this.faults.resolve('AM_CRASH', job.jobId, now, `job ${state}`);
    this.faults.resolve('AM_TIMING', job.jobId, now, `job ${state}`);
    job.state = state;
    job.message = message;
    job.finishedAtMs = now;
    const effects: Effect[] = [];
    const app = this.apps.get(job.jobId);
    if (app) {
      const nodesTouched = new Set<string>();
      for (const su of app.sus.values()) {
        for (const nodeId of [...su.asgn.keys()]) {
          nodesTouched.add(nodeId);
          this.setAsgn(app, su, nodeId, 0);
        }
        su.requests.clear();
      }
      if (app.job.amNodeId) nodesTouched.add(app.job.amNodeId);
      this.apps.delete(job.jobId);
      effects.push(...this.pushGrants(nodesTouched));
      if (state === 'killed' || state === 'failed') {
        for (const nodeId of nodesTouched) {
          const node = this.nodes.get(nodeId);
          if (node) effects.push({ kind: 'stopWorkers', nodeId, address: node.info.address, appId: job.jobId, epoch: this.epoch, reason: message });
        }
      }
    }
    effects.push(this.persist(job), { kind: 'deletePrefix', prefix: KEYS.appPrefix(job.jobId) }, { kind: 'jobChanged', jobId: job.jobId });
    effects.push(...this.runScheduler(now));
    this.maybeEndFailover(now);
    this.log.info({ jobId: job.jobId, state, message }, 'job ended');
    return effects;
  }

  /** Releases everything allocated on a lost node and tells the affected AMs. */
  private releaseNode(node: NodeState, now: number): Effect[] {
    const effects: Effect[] = [];
    const nodeId = node.info.nodeId;
    for (const app of [...this.apps.values()]) {
      let touched = false;
      for (const su of app.sus.values()) {
        if ((su.asgn.get(nodeId) ?? 0) > 0) {
          this.setAsgn(app, su, nodeId, 0);
          touched = true;
        }
      }
      if (app.job.amNodeId === nodeId && app.amState !== 'waiting') {
        if (touched) effects.push(...this.pushAssignments(app, [{ nodeId }]));
        // The AM went with its node: an AM failure like a crash (S2) until the new attempt registers.
        this.faults.post('AM_CRASH', app.appId, now, `its node ${nodeId} was lost`);
        this.faults.recovering('AM_CRASH', app.appId, now);
        effects.push(...this.restartAm(app, `application master's node ${nodeId} was lost`, now));
        continue;
      }
      if (touched) effects.push(...this.pushAssignments(app, [{ nodeId }]));
    }
    node.grants.clear();
    node.allocated = ZERO;
    // The agent must drop these grants when it comes back: its next heartbeat gets the full table.
    node.grantSeq += 1;
    return effects;
  }

  /** Declares or updates a unit; `checkRequest` has validated it. */
  private declareUnit(app: AppState, u: UnitConfig): void {
    const su = app.sus.get(u.suId);
    if (su) {
      su.priority = u.priority;
      return;
    }
    app.sus.set(u.suId, { suId: u.suId, resource: u.resource, priority: u.priority, requests: new Map(), asgn: new Map() });
  }

  private requireApp(appId: string, attempt: number): AppState {
    const app = this.apps.get(appId);
    if (!app) {
      const job = this.jobs.get(appId);
      if (job) throw new FailedPreconditionError(`application "${appId}" is ${job.state}`);
      throw new NotFoundError('application', appId);
    }
    if (attempt !== app.job.amAttempt) throw new StaleEpochError('am attempt', attempt, app.job.amAttempt);
    return app;
  }

  /** Sets the assigned slot count of an SU on a node, keeping node and grant tables in step. */
  private setAsgn(app: AppState, su: ScheduleUnitState, nodeId: string, slots: number): void {
    const before = su.asgn.get(nodeId) ?? 0;
    if (slots === before) return;
    if (slots === 0) su.asgn.delete(nodeId);
    else su.asgn.set(nodeId, slots);
    const group = app.job.spec.quotaGroup;
    this.usage.set(group, add(this.usage.get(group) ?? ZERO, scale(su.resource, slots - before)));
    const node = this.nodes.get(nodeId);
    if (!node) return;
    node.allocated = add(node.allocated, scale(su.resource, slots - before));
    const key = grantKey(app.appId, su.suId);
    if (slots === 0) node.grants.delete(key);
    else node.grants.set(key, { appId: app.appId, suId: su.suId, slots, resource: su.resource, amAttempt: app.job.amAttempt });
  }

  private pushGrants(nodeIds: Iterable<string>): Effect[] {
    const effects: Effect[] = [];
    for (const nodeId of nodeIds) {
      const node = this.nodes.get(nodeId);
      if (!node || !node.healthy || !node.reported) continue;
      node.grantSeq += 1;
      // The full table is small (one entry per app/SU on the node) and idempotent to apply.
      effects.push({ kind: 'grants', nodeId, address: node.info.address, epoch: this.epoch, seq: node.grantSeq, full: true, grants: [...node.grants.values()] });
    }
    return effects;
  }

  /**
   * Tells the AM its counts on `changed` nodes (nodeId '' = all). Up to FULL_TABLE_MAX entries it
   * gets the whole table (small, and it heals any message lost before); above, only the changed
   * entries, as a delta with the next seq: a push costs what changed, not the size of the app (a
   * few slots placed for an app holding thousands would otherwise re-send thousands of entries).
   * An AM that missed a message ignores deltas until its next UpdateRequests, whose answer then
   * carries the full table.
   */
  /** Whether every push after `held` (up to the current seq) went out within the grace period. */
  private pushesInFlight(app: AppState, held: number, now: number): boolean {
    if (held >= app.asgnSeq || held < 0 || !app.pushedAt) return false;
    for (let seq = held + 1; seq <= app.asgnSeq; seq++) {
      const at = app.pushedAt.get(seq);
      if (at === undefined || now - at > IN_FLIGHT_GRACE_MS) return false;
    }
    return true;
  }

  private pushAssignments(app: AppState, changed: Array<{ nodeId: string }>): Effect[] {
    if (changed.length === 0) return [];
    app.asgnSeq += 1;
    // An app that has not reported since a failover would take a partial table for lost slots.
    if (app.amState !== 'running' || !app.reported) return [];
    const log = (app.pushedAt ??= new Map());
    log.set(app.asgnSeq, this.clock);
    for (const seq of log.keys()) {
      if (log.size <= PUSH_LOG) break;
      log.delete(seq);
    }
    const full = changed.some((c) => c.nodeId === '') || this.assignmentCount(app) <= FULL_TABLE_MAX;
    const assignments = full ? this.assignmentsOf(app) : this.assignmentsOn(app, changed);
    return [{ kind: 'assignments', appId: app.appId, address: app.job.amAddress, epoch: this.epoch, seq: app.asgnSeq, full, assignments }];
  }

  private assignmentCount(app: AppState): number {
    let n = 0;
    for (const su of app.sus.values()) if (su.suId !== AM_SU) n += su.asgn.size;
    return n;
  }

  /** The app's absolute counts on the given nodes (0 where it holds nothing). */
  private assignmentsOn(app: AppState, changed: Array<{ nodeId: string }>): AssignmentEntry[] {
    const nodeIds = new Set(changed.map((c) => c.nodeId));
    const out: AssignmentEntry[] = [];
    for (const su of app.sus.values()) {
      if (su.suId === AM_SU) continue;
      for (const nodeId of nodeIds) {
        out.push({ suId: su.suId, nodeId, nodeAddress: this.nodes.get(nodeId)?.info.address ?? '', slots: su.asgn.get(nodeId) ?? 0 });
      }
    }
    return out;
  }

  private assignmentsOf(app: AppState): AssignmentEntry[] {
    const out: AssignmentEntry[] = [];
    for (const su of app.sus.values()) {
      if (su.suId === AM_SU) continue;
      for (const [nodeId, slots] of su.asgn) {
        out.push({ suId: su.suId, nodeId, nodeAddress: this.nodes.get(nodeId)?.info.address ?? '', slots });
      }
    }
    return out;
  }

  /** Allocation per quota group, recomputed from every app's assignments (invariant checks). */
  private groupUsage(): Map<string, Resource> {
    const usage = new Map<string, Resource>();
    for (const app of this.apps.values()) {
      let total = usage.get(app.job.spec.quotaGroup) ?? ZERO;
      for (const su of app.sus.values()) {
        for (const slots of su.asgn.values()) total = add(total, scale(su.resource, slots));
      }
      usage.set(app.job.spec.quotaGroup, total);
    }
    return usage;
  }

  /**
   * The nodes as the scheduler sees them. Views are made once per node (nodes are never removed)
   * and read the node's current state, so a scheduling pass allocates nothing per node.
   */
  private schedulerNodes(): ReadonlyMap<string, SchedNode> {
    if (this.schedNodes.size !== this.nodes.size) {
      for (const [id, n] of this.nodes) if (!this.schedNodes.has(id)) this.schedNodes.set(id, schedView(n));
    }
    return this.schedNodes;
  }

  /** Runs the scheduler over the current state and applies its plan. */
  /** A scheduling pass is owed: the shell should call runDueSchedule (batch scheduling only). */
  get scheduleDue(): boolean {
    return this.due;
  }

  /** Runs the owed scheduling pass, if any (batch scheduling). */
  runDueSchedule(now: number): Effect[] {
    this.clock = now;
    if (!this.due) return [];
    return this.runScheduler(now);
  }

  private scheduleOrDefer(now: number): Effect[] {
    if ((this.cfg.schedulingIntervalMs ?? 0) > 0) {
      this.due = true;
      return [];
    }
    return this.runScheduler(now);
  }

  private runScheduler(now: number): Effect[] {
    this.due = false;
    if (this.recovering) return [];
    const units: SchedUnit[] = [];
    for (const app of this.apps.values()) {
      for (const su of app.sus.values()) {
        if (su.requests.size === 0) continue;
        units.push({
          appId: app.appId,
          suId: su.suId,
          resource: su.resource,
          priority: su.priority,
          quotaGroup: app.job.spec.quotaGroup,
          submitSeq: app.job.submitSeq,
          requests: su.requests,
        });
      }
    }
    if (units.length === 0) return [];
    const plan = schedule({ nodes: this.schedulerNodes(), units, groups: this.groups, groupUsage: this.usage });
    if (plan.placements.length === 0) return [];
    const grantNodes = new Set<string>();
    const appChanges = new Map<string, Array<{ nodeId: string }>>();
    const launches: Effect[] = [];
    for (const p of plan.placements) {
      const app = this.apps.get(p.appId);
      const su = app?.sus.get(p.suId);
      if (!app || !su) continue;
      const left = (su.requests.get(p.location) ?? 0) - p.slots;
      if (left > 0) su.requests.set(p.location, left);
      else su.requests.delete(p.location);
      this.setAsgn(app, su, p.nodeId, (su.asgn.get(p.nodeId) ?? 0) + p.slots);
      grantNodes.add(p.nodeId);
      if (p.suId === AM_SU) {
        const node = this.nodes.get(p.nodeId);
        app.job.amNodeId = p.nodeId;
        if (app.amState === 'waiting') app.amState = 'launching'; // never demote a registered AM
        app.lastContactMs = now;
        launches.push({ kind: 'launchAm', appId: app.appId, attempt: app.job.amAttempt, nodeId: p.nodeId, address: node?.info.address ?? '', resource: su.resource, epoch: this.epoch });
        // The AM's location is hard state (metaAM): a new master must not launch it twice.
        launches.push(this.persist(app.job), { kind: 'jobChanged', jobId: app.appId });
        this.log.info({ appId: app.appId, nodeId: p.nodeId, attempt: app.job.amAttempt }, 'launching application master');
      } else {
        const list = appChanges.get(app.appId) ?? [];
        list.push({ nodeId: p.nodeId });
        appChanges.set(app.appId, list);
      }
    }
    // Grants reach agents before assignments reach AMs, so plans rarely wait for their grant.
    const effects = this.pushGrants(grantNodes);
    effects.push(...launches);
    for (const [appId, changed] of appChanges) {
      const app = this.apps.get(appId);
      if (app) effects.push(...this.pushAssignments(app, changed));
    }
    return effects;
  }

  private persist(job: JobRecord): Effect {
    return { kind: 'store', ops: [{ type: 'put', key: KEYS.job(job.jobId), value: JSON.stringify(job) }] };
  }

  // ---------------------------------------------------------------- invariants (tests, debugging)

  /** Throws when any node is over-committed or a grant table disagrees with the assignments. */
  checkInvariants(): void {
    for (const n of this.nodes.values()) {
      // Slots on a node that has not reported are AM claims (reservations), not grants.
      if (n.reported && !fits(n.allocated, n.info.capacity)) throw new Error(`node ${n.info.nodeId} over-committed`);
      let sum = ZERO;
      for (const g of n.grants.values()) sum = add(sum, scale(g.resource, g.slots));
      if (sum.cpuMilli !== n.allocated.cpuMilli || sum.memoryMb !== n.allocated.memoryMb) throw new Error(`node ${n.info.nodeId} grants disagree with allocation`);
    }
    const usage = this.groupUsage();
    for (const g of new Set([...usage.keys(), ...this.usage.keys()])) {
      const a = usage.get(g) ?? ZERO;
      const b = this.usage.get(g) ?? ZERO;
      if (a.cpuMilli !== b.cpuMilli || a.memoryMb !== b.memoryMb) throw new Error(`quota group ${g}: usage ${JSON.stringify(b)} disagrees with the assignments ${JSON.stringify(a)}`);
    }
  }
}
