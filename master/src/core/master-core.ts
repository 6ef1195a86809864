/**
 * The master core: the cluster state (nodes, applications and their schedule units) and every
 * decision the master makes, as a deterministic state machine. Each input method takes the current
 * time and returns the effects the shell must carry out (store writes, grant and assignment
 * pushes, AM launches, worker stops). No IO, no clock, no randomness (STYLE.md 1-3).
 */
import {
  add,
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
import { KEYS } from './store-ops.js';
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
} from './types.js';

/** The schedule unit of an application's own AM process. */
export const AM_SU = '__am__';
/** AM slots go before the tasks of any job: an app cannot progress without its AM. */
const AM_PRIORITY = 1_000_000;

export interface MasterCoreConfig {
  heartbeatIntervalMs: number;
  /** An agent silent this long is lost: its allocations are released. */
  agentTimeoutMs: number;
  /** How often AMs call UpdateRequests (their heartbeat). */
  amHeartbeatIntervalMs: number;
  quotaGroups: QuotaGroup[];
}

export const DEFAULT_CONFIG: MasterCoreConfig = {
  heartbeatIntervalMs: 1000,
  agentTimeoutMs: 10_000,
  amHeartbeatIntervalMs: 1000,
  quotaGroups: [{ name: 'default', weight: 1 }],
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
  lastRequestSeq: number;
  lastReturnSeq: number;
  amState: 'waiting' | 'launching' | 'running';
}

const grantKey = (appId: string, suId: string) => `${appId}\u0000${suId}`;

export interface SubmitResult {
  jobId: string;
  created: boolean;
}

export class MasterCore {
  private readonly nodes = new Map<string, NodeState>();
  private readonly jobs = new Map<string, JobRecord>();
  private readonly apps = new Map<string, AppState>();
  private readonly groups: Map<string, QuotaGroup>;
  private submitSeq = 0;

  constructor(
    readonly epoch: string,
    private readonly cfg: MasterCoreConfig,
    private readonly log: Logger,
  ) {
    this.groups = new Map(cfg.quotaGroups.map((g) => [g.name, g]));
    if (!this.groups.has('default')) this.groups.set('default', { name: 'default', weight: 1 });
  }

  // ---------------------------------------------------------------- hard state

  /**
   * Loads hard state read from the store at start. Jobs that were still running when the previous
   * master stopped cannot be recovered by this master (their soft state is gone): they are failed
   * with a clear reason.
   */
  loadHardState(jobs: JobRecord[], roster: Array<Pick<NodeInfo, 'nodeId' | 'address'>>, now: number): Effect[] {
    const effects: Effect[] = [];
    for (const j of [...jobs].sort((a, b) => a.submitSeq - b.submitSeq)) {
      this.submitSeq = Math.max(this.submitSeq, j.submitSeq);
      if (!TERMINAL_STATES.has(j.state)) {
        j.state = 'failed';
        j.message = 'the master restarted while the job was running';
        j.finishedAtMs = now;
        effects.push(this.persist(j));
      }
      this.jobs.set(j.jobId, j);
    }
    this.log.info({ jobs: jobs.length, roster: roster.length }, 'hard state loaded');
    return effects;
  }

  // ---------------------------------------------------------------- clients

  submitJob(submitted: JobSpec, now: number): { result: SubmitResult; effects: Effect[] } {
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

  registerAgent(info: NodeInfo, epochSeen: string, now: number): { effects: Effect[]; heartbeatIntervalMs: number } {
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
      known.info = info;
      known.lastHeartbeatMs = now;
      if (!known.healthy) this.log.info({ nodeId: info.nodeId }, 'agent is back');
      known.healthy = true;
      if (moved) effects.push({ kind: 'store', ops: [{ type: 'put', key: KEYS.agent(info.nodeId), value: JSON.stringify({ nodeId: info.nodeId, address: info.address }) }] });
      this.log.info({ nodeId: info.nodeId, address: info.address }, 'agent re-registered');
    } else {
      this.nodes.set(info.nodeId, { info, healthy: true, lastHeartbeatMs: now, allocated: ZERO, grantSeq: 0, grants: new Map(), runningWorkers: 0 });
      effects.push({ kind: 'store', ops: [{ type: 'put', key: KEYS.agent(info.nodeId), value: JSON.stringify({ nodeId: info.nodeId, address: info.address }) }] });
      this.log.info({ nodeId: info.nodeId, address: info.address, rack: info.rack, capacity: info.capacity }, 'agent registered');
    }
    effects.push(...this.runScheduler(now));
    return { effects, heartbeatIntervalMs: this.cfg.heartbeatIntervalMs };
  }

  heartbeat(hb: HeartbeatInput, now: number): { reregister: boolean; full?: { seq: number; grants: GrantEntry[] }; effects: Effect[] } {
    const node = this.nodes.get(hb.nodeId);
    if (!node) return { reregister: true, effects: [] };
    if (hb.epoch && hb.epoch !== '0' && BigInt(hb.epoch) > BigInt(this.epoch)) throw new StaleEpochError('epoch', this.epoch, hb.epoch);
    const effects: Effect[] = [];
    node.lastHeartbeatMs = now;
    node.runningWorkers = hb.running;
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
    const effects: Effect[] = [];
    // Mark every silent agent lost before releasing any: work freed by one lost agent (a failed
    // AM's slots) must not be placed on another agent that is being lost in this same tick.
    const lost = [...this.nodes.values()].filter((n) => n.healthy && now - n.lastHeartbeatMs > this.cfg.agentTimeoutMs);
    for (const node of lost) {
      node.healthy = false;
      this.log.warn({ nodeId: node.info.nodeId, silentMs: now - node.lastHeartbeatMs }, 'agent lost: no heartbeat');
    }
    for (const node of lost) effects.push(...this.releaseNode(node, now));
    if (lost.length > 0) effects.push(...this.runScheduler(now));
    return effects;
  }

  // ---------------------------------------------------------------- application masters

  registerApp(appId: string, attempt: number, address: string, now: number): { effects: Effect[]; spec: JobSpec; assignments: AssignmentEntry[]; seq: number; heartbeatIntervalMs: number } {
    const app = this.requireApp(appId, attempt);
    app.job.amAddress = address;
    const effects: Effect[] = [];
    if (app.amState !== 'running') {
      app.amState = 'running';
      if (app.job.state === 'submitted') app.job.state = 'running';
      effects.push(this.persist(app.job), { kind: 'jobChanged', jobId: appId });
      this.log.info({ appId, attempt, address }, 'application master registered');
    }
    void now;
    return { effects, spec: app.job.spec, assignments: this.assignmentsOf(app), seq: app.asgnSeq, heartbeatIntervalMs: this.cfg.amHeartbeatIntervalMs };
  }

  updateRequests(
    req: { appId: string; attempt: number; seq: number; units: UnitConfig[]; deltas: RequestDelta[]; assignmentSeq: number; progress: TaskProgress[] },
    now: number,
  ): { effects: Effect[]; full?: { seq: number; assignments: AssignmentEntry[] } } {
    const app = this.requireApp(req.appId, req.attempt);
    const effects: Effect[] = [];
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
      if (req.deltas.length > 0) effects.push(...this.runScheduler(now));
    }
    // The reply carries the full table when the AM does not hold the current one, unless this very
    // call pushes it (pushes are full tables too).
    const pushed = effects.some((e) => e.kind === 'assignments' && e.appId === app.appId && e.seq === app.asgnSeq);
    if (req.assignmentSeq !== app.asgnSeq && !pushed) return { effects, full: { seq: app.asgnSeq, assignments: this.assignmentsOf(app) } };
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
    const app = this.requireApp(req.appId, req.attempt);
    if (req.seq <= app.lastReturnSeq) return [];
    app.lastReturnSeq = req.seq;
    const changed = new Set<string>();
    for (const r of req.returns) {
      const su = app.sus.get(r.suId);
      // The AM's own slot is released by FinishApp / the end of the job, never by the AM returning it.
      if (!su || r.suId === AM_SU) continue;
      const held = su.asgn.get(r.nodeId) ?? 0;
      const n = Math.min(held, Math.max(0, r.slots));
      if (n === 0) continue;
      this.setAsgn(app, su, r.nodeId, held - n);
      changed.add(r.nodeId);
    }
    const effects = this.pushGrants(changed);
    // The AM learns the reduced absolute counts in their own message.
    effects.push(...this.pushAssignments(app, [...changed].map((nodeId) => ({ nodeId }))));
    effects.push(...this.runScheduler(now));
    return effects;
  }

  finishApp(req: { appId: string; attempt: number; succeeded: boolean; message: string; progress: TaskProgress[] }, now: number): Effect[] {
    const app = this.requireApp(req.appId, req.attempt);
    if (req.progress.length > 0) app.job.progress = req.progress;
    this.log.info({ appId: req.appId, succeeded: req.succeeded, message: req.message }, 'application finished');
    return this.endJob(app.job, req.succeeded ? 'succeeded' : 'failed', req.message, now);
  }

  /** The shell could not hand the AM plan to its agent. */
  amLaunchFailed(appId: string, attempt: number, message: string, now: number): Effect[] {
    const app = this.apps.get(appId);
    if (!app || app.job.amAttempt !== attempt) return [];
    return this.endJob(app.job, 'failed', `could not start the application master: ${message}`, now);
  }

  // ---------------------------------------------------------------- internals

  private startAttempt(job: JobRecord, now: number): Effect[] {
    job.amAttempt += 1;
    const app: AppState = { appId: job.jobId, job, sus: new Map(), asgnSeq: 0, lastRequestSeq: 0, lastReturnSeq: 0, amState: 'waiting' };
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
    return this.endJob(app.job, 'failed', `application master exited (${how})${detail}`, now);
  }

  private endJob(job: JobRecord, state: JobState, message: string, now: number): Effect[] {
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
    effects.push(this.persist(job), { kind: 'jobChanged', jobId: job.jobId });
    effects.push(...this.runScheduler(now));
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
        effects.push(...this.endJob(app.job, 'failed', `application master's node ${nodeId} was lost`, now));
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
    const node = this.nodes.get(nodeId);
    if (!node) return;
    node.allocated = add(node.allocated, scale(su.resource, slots - before));
    const key = grantKey(app.appId, su.suId);
    if (slots === 0) node.grants.delete(key);
    else node.grants.set(key, { appId: app.appId, suId: su.suId, slots, resource: su.resource });
  }

  private pushGrants(nodeIds: Iterable<string>): Effect[] {
    const effects: Effect[] = [];
    for (const nodeId of nodeIds) {
      const node = this.nodes.get(nodeId);
      if (!node || !node.healthy) continue;
      node.grantSeq += 1;
      // The full table is small (one entry per app/SU on the node) and idempotent to apply.
      effects.push({ kind: 'grants', nodeId, address: node.info.address, epoch: this.epoch, seq: node.grantSeq, full: true, grants: [...node.grants.values()] });
    }
    return effects;
  }

  private pushAssignments(app: AppState, changed: Array<{ nodeId: string }>): Effect[] {
    if (changed.length === 0) return [];
    app.asgnSeq += 1;
    if (app.amState !== 'running') return [];
    return [{ kind: 'assignments', appId: app.appId, address: app.job.amAddress, epoch: this.epoch, seq: app.asgnSeq, full: true, assignments: this.assignmentsOf(app) }];
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

  /** Runs the scheduler over the current state and applies its plan. */
  private runScheduler(now: number): Effect[] {
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
    const nodes = new Map<string, SchedNode>();
    for (const n of this.nodes.values()) {
      nodes.set(n.info.nodeId, { id: n.info.nodeId, rack: n.info.rack, capacity: n.info.capacity, allocated: n.allocated, schedulable: n.healthy });
    }
    const plan = schedule({ nodes, units, groups: this.groups, groupUsage: this.groupUsage() });
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
        launches.push({ kind: 'launchAm', appId: app.appId, attempt: app.job.amAttempt, nodeId: p.nodeId, address: node?.info.address ?? '', resource: su.resource, epoch: this.epoch });
        launches.push({ kind: 'jobChanged', jobId: app.appId });
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
    void now;
    return effects;
  }

  private persist(job: JobRecord): Effect {
    return { kind: 'store', ops: [{ type: 'put', key: KEYS.job(job.jobId), value: JSON.stringify(job) }] };
  }

  // ---------------------------------------------------------------- invariants (tests, debugging)

  /** Throws when any node is over-committed or a grant table disagrees with the assignments. */
  checkInvariants(): void {
    for (const n of this.nodes.values()) {
      if (!fits(n.allocated, n.info.capacity)) throw new Error(`node ${n.info.nodeId} over-committed`);
      let sum = ZERO;
      for (const g of n.grants.values()) sum = add(sum, scale(g.resource, g.slots));
      if (sum.cpuMilli !== n.allocated.cpuMilli || sum.memoryMb !== n.allocated.memoryMb) throw new Error(`node ${n.info.nodeId} grants disagree with allocation`);
    }
  }
}
