/**
 * The master core: the cluster state (nodes, applications and their schedule units) and every
 * decision the master makes, as a deterministic state machine. Each input method takes the current
 * time and returns the effects the shell must carry out (store writes, grant and assignment
 * pushes, AM launches, worker stops), emptied from the outbox once per input in the order written
 * on `Effect`. No IO, no clock, no randomness (docs/architecture.md, "Core and shell").
 *
 * `MasterCore` is a facade over one state object (master-state.ts) and the modules that own each
 * concern: ledger (assignments, usage, invariants), sync (grant and assignment tables), scheduling
 * (passes), placement-scope (connectivity-aware placement: scopes, constraints, waiting), jobs, nodes (agents and their status),
 * node-admin (operators' cordons and drains), testbed-admin (operators' testbeds), apps (AMs' calls), request-limits (what an AM
 * may ask for), am-restart (AM failover), recovery (master failover, Algorithms 1 and 2), table3
 * and fault-handlers (the fault FSM's handlers and the soft-state sources each may use), and
 * external-schedulers (SchedulerService: registrations, views, placements checked by
 * external-placement).
 */
import { AM_SU, type JobSpec, type Logger } from '@fuxi/common';
import {
  amLaunchFailed,
  finishApp,
  registerApp,
  returnSlots,
  saveAppSnapshot,
  tickAms,
  updateRequests,
  requireApp,
  type RequestsInput,
  type RequestsResult,
} from './apps.js';
import type { ConnectivityState } from './connectivity.js';
import { subscribeFaultHandlers } from './fault-handlers.js';
import type { FaultBoard } from './fault-fsm.js';
import {
  existingSubmit,
  getJob,
  killChangesNothing,
  killJob,
  listJobs,
  listJobsPage,
  submitJob,
  submitJobs,
  type BatchSubmitResult,
  type SubmitResult,
} from './jobs.js';
import { checkInvariants, repairRequesting } from './ledger.js';
import { isRegistered, isUnreported, MasterState, type AppState, type MasterCoreConfig, type NodeStatus, type SourceUse } from './master-state.js';
import { cordonNode, drainNode, loadAdmin, tickDrains, uncordonNode } from './node-admin.js';
import { heartbeat, listNodes, tickNodes, type HeartbeatResult } from './nodes.js';
import { confirmBrokenLinks, connectivityView, membersChanged, probeHeartbeat, refreshProbeTargets, type ProbeAnswer } from './probing.js';
import { jobView, waitersMayPlace } from './placement-scope.js';
import { tickPrediction, tickVerdicts } from './prediction-hooks.js';
import { tickRetention } from './retention.js';
import { finishRecovery, loadHardState, registerWithState, reportAgentState, reportAppState, tickFailover, type AppReport } from './recovery.js';
import { unitViews } from './request-limits.js';
import { runScheduler } from './scheduling.js';
import {
  addTestbed,
  listTestbeds,
  loadTestbeds,
  planDeleteTestbed,
  planTestbed,
  removeTestbed,
  testbedJobView,
  tickTestbeds,
  type TestbedPlan,
  type TestbedView,
} from './testbed-admin.js';
import type { CreateTestbed, Testbed } from './testbeds.js';
import type { StoreOp } from './store-ops.js';
import { tickExternal, type HistoryEntry, type Registration } from './external-registry.js';
import { currentRegistration, detachScheduler, placeExternal, registerScheduler, type RegisterSchedulerInput } from './external-schedulers.js';
import type { ExternalPlacement, Rejection } from './external-placement.js';
import { buildView, type SchedulerViewState } from './external-view.js';
import type {
  AssignmentEntry,
  ClusterStatusView,
  Effect,
  GrantEntry,
  HeartbeatInput,
  JobRecord,
  JobState,
  NodeAdmin,
  NodeInfo,
  NodeView,
  SlotReturn,
  TaskProgress,
  UnitView,
} from './types.js';

export { DEFAULT_CONFIG, type MasterCoreConfig, type NodeStatus, type SourceUse } from './master-state.js';
export type { BatchSubmitResult, SubmitResult } from './jobs.js';
export type { TestbedPlan, TestbedView } from './testbed-admin.js';

/** What `MasterCore.gauges()` counts. */
export interface MasterGauges {
  nodes: Record<NodeStatus, number>;
  jobs: Record<JobState, number>;
  ams: Record<AppState['amState'], number>;
  /** Outstanding slot requests: of AM slots and of the AMs' own tasks. */
  pendingSlots: { am: number; task: number };
  /** A failover's aggregation window is open. */
  recovering: boolean;
}

export class MasterCore {
  private readonly st: MasterState;

  constructor(
    readonly epoch: string,
    cfg: MasterCoreConfig,
    log: Logger,
  ) {
    this.st = new MasterState(epoch, cfg, log);
    subscribeFaultHandlers(this.st);
  }

  /** Event sensor output: the bulletin board, dispatcher and system FSM (paper section 4.2.4). */
  get faults(): FaultBoard {
    return this.st.faults;
  }

  /**
   * What failure prediction holds: training samples, jobs whose task windows are kept, and jobs
   * whose attempts' durations are kept (ATLAS+'s expected durations).
   */
  predictionSizes(): { samples: number; jobsTracked: number; jobsTimed: number } {
    const h = this.st.prediction.history;
    return { samples: h.size, jobsTracked: h.jobsTracked, jobsTimed: this.st.attempts.jobsTimed };
  }

  /** Handles one input at `now` and empties the outbox. An input that throws has changed nothing. */
  private step<T>(now: number, input: () => T): T & { effects: Effect[] } {
    this.st.now = now;
    const r = input();
    return { ...r, effects: this.st.out.take() };
  }

  private effects(now: number, input: () => void): Effect[] {
    return this.step(now, () => {
      input();
      return {};
    }).effects;
  }

  // ---------------------------------------------------------------- hard state

  /**
   * Loads hard state read from the store (a new leader, or the embedded master restarting in
   * place) and opens the aggregation window of soft-state inference (recovery.ts).
   */
  loadHardState(
    jobs: JobRecord[],
    roster: Array<Pick<NodeInfo, 'nodeId' | 'address'>>,
    now: number,
    admin: readonly NodeAdmin[] = [],
    testbeds: readonly Testbed[] = [],
  ): Effect[] {
    return this.effects(now, () => {
      // Operators' cordons, drains and testbeds first: nothing the recovery schedules may land on
      // such a node.
      loadAdmin(this.st, admin);
      loadTestbeds(this.st, testbeds);
      loadHardState(this.st, jobs, roster);
    });
  }

  /** True while the aggregation window of a failover is open. */
  get isRecovering(): boolean {
    return this.st.recovering;
  }

  // ---------------------------------------------------------------- clients

  submitJob(spec: JobSpec, now: number, owner = ''): { result: SubmitResult; effects: Effect[] } {
    return this.step(now, () => ({ result: submitJob(this.st, spec, owner) }));
  }

  /**
   * Many submissions in one input: each taken or refused on its own (jobs.ts `submitJobs`). With
   * `dryRun` each is only checked, as a real submit of the batch would check it: nothing changes
   * and there are no effects.
   */
  submitJobs(specs: readonly JobSpec[], now: number, owner = '', opts: { dryRun?: boolean } = {}): { results: BatchSubmitResult[]; effects: Effect[] } {
    return this.step(now, () => ({ results: submitJobs(this.st, specs, owner, opts) }));
  }

  /**
   * The answer the job table already holds for a submission, changing nothing (jobs.ts
   * `existingSubmit`): `created: false` for a retry, ALREADY_EXISTS for another spec; undefined
   * when taking it would create the job.
   */
  existingSubmit(spec: JobSpec): SubmitResult | undefined {
    return existingSubmit(this.st, spec);
  }

  /** The job as clients see it (a running job's message says what its placement waits for, placement-scope.ts). */
  getJob(jobId: string): JobRecord {
    return this.view(getJob(this.st, jobId));
  }

  /** The job's record as the core keeps it (not the clients' view; do not change it), or undefined: what authorization reads. */
  jobRecord(jobId: string): Readonly<JobRecord> | undefined {
    return this.st.jobs.get(jobId);
  }

  /** A page of jobs (jobs.ts `listJobsPage`), as clients see them. */
  listJobsPage(q: { states?: readonly JobState[]; arrayId?: string; limit?: number; after?: string }): { jobs: JobRecord[]; nextAfter: string } {
    const page = listJobsPage(this.st, q);
    return { ...page, jobs: page.jobs.map((j) => this.view(j)) };
  }

  /** Jobs in `states` (all when empty), only the members of job array `arrayId` when given, as clients see them. */
  listJobs(states: readonly JobState[] = [], arrayId = ''): JobRecord[] {
    return listJobs(this.st, states, arrayId).map((j) => this.view(j));
  }

  /** A job as clients see it: what its placement waits for (connectivity, its testbed) in its message. */
  private view(job: JobRecord): JobRecord {
    return testbedJobView(this.st, jobView(this.st, job));
  }

  killJob(jobId: string, reason: string, now: number): Effect[] {
    return this.effects(now, () => killJob(this.st, jobId, reason));
  }

  /** A kill of the job would change nothing (it has ended); NOT_FOUND when there is no such job. */
  killChangesNothing(jobId: string): boolean {
    return killChangesNothing(this.st, jobId);
  }

  listNodes(): NodeView[] {
    return listNodes(this.st);
  }

  /** The node as `listNodes` shows it. */
  nodeView(nodeId: string): NodeView | undefined {
    return listNodes(this.st).find((n) => n.info.nodeId === nodeId);
  }

  // ---------------------------------------------------------------- operators (node-admin.ts)

  /** Cordons a node: nothing new is placed there; what runs there stays. */
  cordonNode(req: { nodeId: string; reason: string; by: string }, now: number): Effect[] {
    return this.effects(now, () => void cordonNode(this.st, req));
  }

  /** Makes a node schedulable again; ends a drain. */
  uncordonNode(req: { nodeId: string; by: string }, now: number): Effect[] {
    return this.effects(now, () => uncordonNode(this.st, req));
  }

  /** Drains a node: nothing new, its work finishes or at `deadlineMs` from now is revoked; its AMs move last. */
  drainNode(req: { nodeId: string; reason: string; by: string; deadlineMs: number }, now: number): Effect[] {
    return this.effects(now, () => void drainNode(this.st, req));
  }

  // ---------------------------------------------------------------- operators (testbed-admin.ts)

  /**
   * Checks and resolves a testbed (throws on bad input). Changes nothing: the caller writes `ops`
   * and, once they are durable, applies the testbed with `addTestbed`.
   */
  planTestbed(req: CreateTestbed, now: number): TestbedPlan {
    this.st.now = now;
    return planTestbed(this.st, req);
  }

  /** Applies a planned testbed whose write is durable. */
  addTestbed(tb: Testbed, now: number): Effect[] {
    return this.effects(now, () => addTestbed(this.st, tb));
  }

  /** The write that deletes a testbed (NOT_FOUND for an unknown one). Changes nothing. */
  planDeleteTestbed(name: string): StoreOp[] {
    return planDeleteTestbed(this.st, name);
  }

  /** Applies a deletion whose write is durable. */
  removeTestbed(name: string, now: number): Effect[] {
    return this.effects(now, () => removeTestbed(this.st, name));
  }

  listTestbeds(now: number): TestbedView[] {
    this.st.now = now;
    return listTestbeds(this.st);
  }

  // ---------------------------------------------------------------- agents

  /** Whether this master knows the node (registered, or from the roster after a failover). */
  knowsNode(nodeId: string): boolean {
    return this.st.nodes.has(nodeId);
  }

  /**
   * An agent registers; `grants` (its whole table, when it sends it) is taken as its state report
   * if this master wants one, and `adopted` is then the master's table for the answer.
   */
  registerAgent(
    info: NodeInfo,
    epochSeen: string,
    now: number,
    grants?: GrantEntry[],
  ): { effects: Effect[]; heartbeatIntervalMs: number; reportState: boolean; adopted?: { seq: number; grants: GrantEntry[] } } {
    return this.step(now, () => {
      const r = registerWithState(this.st, info, epochSeen, grants);
      membersChanged(this.st); // a new node, or one with a new address or probe port
      return r;
    });
  }

  /** An agent's full soft state (FAgentFullCapFromFM), asked for after a failover (recovery.ts). */
  reportAgentState(req: { nodeId: string; epoch: string; grants: GrantEntry[] }, now: number): Effect[] {
    return this.effects(now, () => reportAgentState(this.st, req));
  }

  /**
   * An agent's heartbeat; a reported agent's also carries its probe report and gets its
   * connectivity ack and probe targets back (probing.ts).
   */
  heartbeat(hb: HeartbeatInput, now: number): HeartbeatResult & Partial<ProbeAnswer> & { effects: Effect[] } {
    return this.step(now, (): HeartbeatResult & Partial<ProbeAnswer> => {
      const r = heartbeat(this.st, hb);
      const probe = r.reregister || r.reportState ? undefined : probeHeartbeat(this.st, hb);
      return probe ? { ...r, ...probe } : r;
    });
  }

  /**
   * Periodic: the aggregation window's deadline; after a failover, Algorithms 1 and 2's timeouts;
   * agents timing out or lost; stalled AMs.
   */
  tick(now: number): Effect[] {
    return this.effects(now, () => {
      const st = this.st;
      refreshProbeTargets(st);
      if (st.recovering) {
        if (now - st.recoveryStartMs >= st.cfg.recoveryDeadlineMs) finishRecovery(st);
        return;
      }
      // Silent agents are marked lost first: work that the failover's releases free (an AM restart
      // that waited for unreported agents) must not land on an agent being lost in this same tick.
      let changed = tickNodes(st);
      changed = repairRequesting(st) || changed;
      changed = confirmBrokenLinks(st) || changed;
      changed = tickFailover(st) || changed;
      changed = tickAms(st) || changed;
      changed = tickDrains(st) || changed;
      // A testbed's window opened or closed: its hosts take other work, or stop taking it.
      changed = tickTestbeds(st) || changed;
      // External schedulers stalled, or absent past the fallback time: their jobs may move.
      changed = tickExternal(st) || changed;
      // Failure prediction retrains off the scheduling path; a new blacklist gets a pass.
      changed = tickPrediction(st) || changed;
      // ATLAS+ weighs running attempts (never inside a scheduling pass); verdicts wait for their
      // AMs, and the jobs' lists changed.
      changed = tickVerdicts(st).length > 0 || changed;
      // A job waiting for connectivity gets a pass once the graph has changed.
      if (changed || waitersMayPlace(st)) runScheduler(st);
      tickRetention(st);
    });
  }

  // ---------------------------------------------------------------- application masters

  registerApp(
    appId: string,
    attempt: number,
    address: string,
    now: number,
  ): { effects: Effect[]; spec: JobSpec; assignments: AssignmentEntry[]; seq: number; heartbeatIntervalMs: number } {
    return this.step(now, () => registerApp(this.st, appId, attempt, address));
  }

  /** An AM's requests and constraints (its heartbeat); the answer carries the graph when the AM's version is stale. */
  updateRequests(req: RequestsInput, now: number): RequestsResult & { effects: Effect[] } {
    return this.step(now, () => updateRequests(this.st, req));
  }

  returnSlots(req: { appId: string; attempt: number; seq: number; returns: SlotReturn[] }, now: number): Effect[] {
    return this.effects(now, () => returnSlots(this.st, req));
  }

  /** An AM's full soft state (AMFullReqResFromFM), asked for after a failover (recovery.ts). */
  reportAppState(req: AppReport, now: number): Effect[] {
    return this.effects(now, () => reportAppState(this.st, requireApp(this.st, req.appId, req.attempt), req));
  }

  finishApp(req: { appId: string; attempt: number; succeeded: boolean; message: string; progress: TaskProgress[] }, now: number): Effect[] {
    return this.effects(now, () => finishApp(this.st, req));
  }

  /** The shell could not hand the AM plan to its agent (`unreachable`: could not reach it at all; apps.ts). */
  amLaunchFailed(appId: string, attempt: number, message: string, now: number, unreachable = false): Effect[] {
    return this.effects(now, () => amLaunchFailed(this.st, appId, attempt, message, unreachable));
  }

  /** The AM's hard state: topology once, then its log of finished instances (idempotent by seq). */
  saveAppSnapshot(req: { appId: string; attempt: number; topology: string; seq: number; entries: string[] }, now: number): Effect[] {
    return this.effects(now, () => saveAppSnapshot(this.st, req));
  }

  // ---------------------------------------------------------------- scheduling

  /** A scheduling pass is owed: the shell should call runDueSchedule (batch scheduling only). */
  get scheduleDue(): boolean {
    return this.st.due;
  }

  /** Runs the owed scheduling pass, if any (batch scheduling). */
  runDueSchedule(now: number): Effect[] {
    return this.effects(now, () => {
      if (this.st.due) runScheduler(this.st);
    });
  }

  // ---------------------------------------------------------------- external schedulers

  /** An external scheduler registers (external-schedulers.ts); a newer registration of its name fences the older. */
  registerScheduler(req: RegisterSchedulerInput, now: number): { registration: Registration; effects: Effect[] } {
    return this.step(now, () => {
      this.st.external.changed = true;
      return { registration: registerScheduler(this.st, req) };
    });
  }

  /** Its placements, each applied through the grant path or rejected; any call is a keepalive. */
  placeExternal(
    call: { name: string; epoch: string; placements: readonly ExternalPlacement[] },
    now: number,
  ): { applied: number; rejected: Rejection[]; effects: Effect[] } {
    return this.step(now, () => placeExternal(this.st, call));
  }

  /** Its stream ended: its jobs wait, or fall back after `externalSchedulerFallbackMs`. */
  detachScheduler(name: string, epoch: string, now: number): Effect[] {
    return this.effects(now, () => {
      if (detachScheduler(this.st, name, epoch) && this.st.cfg.externalSchedulerFallbackMs === 0) runScheduler(this.st);
    });
  }

  /**
   * What registration `name`/`epoch` sees now (hosts in scope, pending requests of its jobs), and
   * the history after `historySeq`; undefined when that registration is no longer current.
   */
  schedulerView(
    name: string,
    epoch: string,
    historySeq: number,
    now: number,
  ): { view: SchedulerViewState; history: HistoryEntry[]; historySeq: number } | undefined {
    this.st.now = now;
    const reg = currentRegistration(this.st, name, epoch);
    if (reg === undefined) return undefined;
    const h = this.st.external.historySince(historySeq);
    return { view: buildView(this.st, reg), history: h.entries, historySeq: h.last };
  }

  /** Whether the schedulers' views may have changed since the last call (which clears it). */
  takeSchedulerViewsChanged(): boolean {
    const c = this.st.external.changed;
    this.st.external.changed = false;
    return c;
  }

  // ---------------------------------------------------------------- views

  /** What `fuxi cluster status` shows. */
  clusterStatus(now: number): ClusterStatusView {
    void now;
    const st = this.st;
    const nodes = [...st.nodes.values()];
    return {
      fsmState: st.faults.state,
      openEvents: st.faults.open(),
      recovery: {
        phase: st.recovering ? 'aggregating' : st.recoveryEndMs > 0 ? 'recovered' : 'normal',
        agentsReported: nodes.filter((n) => n.reported).length,
        agentsExpected: nodes.length,
        appsReported: [...st.apps.values()].filter((a) => a.reported).length,
        appsExpected: st.apps.size,
        startedAtMs: st.recoveryStartMs,
        finishedAtMs: st.recoveryEndMs,
      },
      nodesHealthy: nodes.filter((n) => n.reported && n.status === 'healthy').length,
      nodesTimingOut: nodes.filter((n) => n.status === 'timing-out' || isUnreported(n)).length,
      nodesLost: nodes.filter((n) => n.status === 'lost').length,
      appsRunning: [...st.apps.values()].filter((a) => a.amState === 'running').length,
      connectivity: connectivityView(st),
    };
  }

  /**
   * Counts the master's gauges read at each metrics scrape: nodes by status, jobs by state, apps by
   * AM state, and the slots the apps still ask for (by SU: `am` for AM slots, `task` for the rest).
   * One pass over nodes, jobs and apps; no state changes.
   */
  gauges(): MasterGauges {
    const st = this.st;
    const nodes: Record<NodeStatus, number> = { unreported: 0, missing: 0, healthy: 0, 'timing-out': 0, partitioned: 0, lost: 0 };
    for (const n of st.nodes.values()) nodes[n.status]++;
    const jobs: Record<JobState, number> = { submitted: 0, running: 0, succeeded: 0, failed: 0, killed: 0 };
    for (const j of st.jobs.values()) jobs[j.state]++;
    const ams: Record<AppState['amState'], number> = { waiting: 0, launching: 0, running: 0 };
    const pendingSlots = { am: 0, task: 0 };
    for (const app of st.apps.values()) {
      ams[app.amState]++;
      for (const su of app.sus.values()) for (const v of su.requests.values()) pendingSlots[su.suId === AM_SU ? 'am' : 'task'] += v;
    }
    return { nodes, jobs, ams, pendingSlots, recovering: st.recovering };
  }

  /**
   * Slots granted by this core so far, and how long each granted request had waited (ms, slots)
   * since the last call, which empties them: the shell's `fuxi_master_grants_total` and
   * `fuxi_master_request_to_grant_seconds` (grant-waits.ts).
   */
  drainGrantStats(): { granted: number; waits: Array<[ms: number, slots: number]> } {
    return this.st.grantWaits.drain();
  }

  /** Soft-state sources used by recovery handlers, oldest first (the last few hundred). */
  sourceUses(): SourceUse[] {
    return this.st.uses().map((u) => ({ ...u }));
  }

  /** The schedule units of a running app, with the numbers of their request limits (request-limits.ts). */
  units(appId: string): UnitView[] {
    const app = this.st.apps.get(appId);
    return app ? unitViews(this.st, app) : [];
  }

  /** The hosts' connectivity graph (connectivity.ts): read by the views; tests fill it with `applyDelta` / `setPartitioned`. */
  get connectivity(): ConnectivityState {
    return this.st.connectivity;
  }

  /** Each node's status (see NodeStatus), by node id. */
  nodeStatus(nodeId: string): { status: string; reported: boolean; registered: boolean } | undefined {
    const n = this.st.nodes.get(nodeId);
    return n && { status: n.status, reported: n.reported, registered: isRegistered(n) };
  }

  // ---------------------------------------------------------------- invariants (tests, debugging)

  /** Throws when any node is over-committed or a grant table disagrees with the assignments. */
  checkInvariants(): void {
    checkInvariants(this.st);
  }
}
