/**
 * Application masters' calls: registration of an attempt, resource requests (the AM's heartbeat),
 * slot returns, the end of the app, snapshots of its hard state, and the AM stall check.
 */
import { AM_SU, FailedPreconditionError, NotFoundError, StaleEpochError, type JobSpec } from '@fuxi/common';
import { repostAmFault } from './am-restart.js';
import type { Verdict } from './attempt-verdicts.js';
import { endJob } from './jobs.js';
import { applyDelta, declareUnit, markRequesting, setAsgn } from './ledger.js';
import { endFailoverIfSettled, isUnreported, type AppState, type MasterState } from './master-state.js';
import { connectivityFor, setConstraints } from './placement-scope.js';
import { maybeFinishRecovery } from './recovery.js';
import { checkUpdate } from './request-limits.js';
import { scheduleOrDefer } from './scheduling.js';
import { KEYS, putJob, STORED_KEYS_KEPT, storeWrites, type StoreOp } from './store-ops.js';
import { assignmentsOf, pushAssignments, pushesInFlight, pushGrants } from './sync.js';
import type { AssignmentEntry, ConnectivityView, PlacementConstraints, RequestDelta, SlotReturn, TaskProgress, UnitConfig } from './types.js';

export function requireApp(st: MasterState, appId: string, attempt: number): AppState {
  const app = st.apps.get(appId);
  if (!app) {
    const job = st.jobs.get(appId);
    if (job) throw new FailedPreconditionError(`application "${appId}" is ${job.state}`);
    throw new NotFoundError('application', appId);
  }
  if (attempt !== app.job.amAttempt) throw new StaleEpochError('am attempt', attempt, app.job.amAttempt);
  return app;
}

export function registerApp(
  st: MasterState,
  appId: string,
  attempt: number,
  address: string,
): { spec: JobSpec; assignments: AssignmentEntry[]; seq: number; heartbeatIntervalMs: number } {
  const app = requireApp(st, appId, attempt);
  app.job.amAddress = address;
  app.lastContactMs = st.now;
  if (!app.reported) {
    // A (re)starting AM holds no requests or assignments of its own to report.
    app.reported = true;
    app.mockSinceMs = 0;
    maybeFinishRecovery(st);
    endFailoverIfSettled(st);
  }
  if (app.amState !== 'running') {
    st.faults.resolve('AM_CRASH', appId, st.now, `attempt ${attempt} registered`);
    st.faults.resolve('AM_TIMING', appId, st.now, `attempt ${attempt} registered`);
    app.amState = 'running';
    if (app.job.state === 'submitted') app.job.state = 'running';
    st.out.push(putJob(app.job), { kind: 'jobChanged', jobId: appId });
    st.log.info({ appId, attempt, address }, 'application master registered');
  }
  return { spec: app.job.spec, assignments: assignmentsOf(st, app), seq: app.asgnSeq, heartbeatIntervalMs: st.cfg.amHeartbeatIntervalMs };
}

export interface RequestsInput {
  appId: string;
  attempt: number;
  seq: number;
  units: UnitConfig[];
  deltas: RequestDelta[];
  assignmentSeq: number;
  progress: TaskProgress[];
  /** The connectivity version the AM holds (0: none); the answer carries the graph when it is stale. */
  connectivityVersion?: number;
  /** When present, replaces the app's placement constraints (placement-scope.ts). */
  constraints?: PlacementConstraints;
}

export interface RequestsResult {
  reportState?: boolean;
  /** ATLAS+'s verdicts on the app's running attempts (attempt-verdicts.ts). */
  verdicts?: Verdict[];
  full?: { seq: number; assignments: AssignmentEntry[] };
  /** The graph, when the AM's version of it is stale. */
  connectivity?: ConnectivityView;
}

export function updateRequests(st: MasterState, req: RequestsInput): RequestsResult {
  const r = applyRequests(st, req);
  const connectivity = connectivityFor(st, req.connectivityVersion ?? 0);
  // ATLAS+'s verdicts on the app's running attempts (attempt-verdicts.ts), each handed out once.
  const verdicts = r.reportState === true ? [] : st.attempts.take(req.appId);
  return { ...r, ...(connectivity === undefined ? {} : { connectivity }), ...(verdicts.length > 0 ? { verdicts } : {}) };
}

function applyRequests(st: MasterState, req: RequestsInput): RequestsResult {
  const app = requireApp(st, req.appId, req.attempt);
  app.lastContactMs = st.now;
  const seqBefore = app.asgnSeq;
  // After a failover: nothing is applied until the AM has reported its full state, which
  // includes whatever this call asks for.
  if (!app.reported) return { reportState: true };
  // Refused whole, before anything changes, when it asks for more than the job's spec allows.
  if (req.seq > app.lastRequestSeq) checkUpdate(st, app, req.units, req.deltas);
  if (req.progress.length > 0 && JSON.stringify(req.progress) !== JSON.stringify(app.job.progress)) {
    app.job.progress = req.progress;
    st.out.push({ kind: 'jobChanged', jobId: app.appId });
  }
  const pushesBefore = app.asgnSeq;
  if (req.seq > app.lastRequestSeq) {
    app.lastRequestSeq = req.seq;
    for (const u of req.units) declareUnit(app, u);
    if (req.deltas.length > 0) markRequesting(st, app);
    for (const d of req.deltas) {
      const su = app.sus.get(d.suId);
      if (su) {
        applyDelta(su.requests, d.location, d.delta); // checkUpdate made sure it exists
        st.grantWaits.noteRequests(su, st.now);
      }
    }
    const constrained = req.constraints !== undefined && setConstraints(st, app, req.constraints);
    if (req.deltas.length > 0 || constrained) scheduleOrDefer(st);
  }
  // The reply carries the full table when the AM does not hold the current one, unless this very
  // call pushed deltas that follow on what the AM holds, or the pushes it lacks went out less than
  // the grace period ago and are still on their way (under load the AM often asks again before the
  // last push has arrived; a full table then would cost the size of the app for nothing). A push
  // that was lost is made up for by the next call after the grace.
  const last = app.lastPush;
  const pushed = app.asgnSeq > pushesBefore && last !== undefined && last.seq === app.asgnSeq && (last.full || req.assignmentSeq === seqBefore);
  if (req.assignmentSeq !== app.asgnSeq && !pushed && !pushesInFlight(app, req.assignmentSeq, st.now))
    return { full: { seq: app.asgnSeq, assignments: assignmentsOf(st, app) } };
  return {};
}

export function returnSlots(st: MasterState, req: { appId: string; attempt: number; seq: number; returns: SlotReturn[] }): void {
  const app = requireApp(st, req.appId, req.attempt);
  app.lastContactMs = st.now;
  if (req.seq <= app.lastReturnSeq) return;
  app.lastReturnSeq = req.seq;
  const changed = new Set<string>();
  for (const r of req.returns) {
    // The AM's own slot is released by FinishApp / the end of the job, never by the AM returning it.
    if (r.suId === AM_SU || r.slots <= 0) continue;
    const node = st.nodes.get(r.nodeId);
    if (node && isUnreported(node)) {
      // After a failover, before the agent reported: remember the return for when its grants come in.
      const k = `${r.suId}@${r.nodeId}`;
      app.pendingReturns.set(k, (app.pendingReturns.get(k) ?? 0) + r.slots);
    }
    const su = app.sus.get(r.suId);
    if (!su) continue;
    const held = su.asgn.get(r.nodeId) ?? 0;
    const n = Math.min(held, Math.max(0, r.slots));
    if (n === 0) continue;
    setAsgn(st, app, su, r.nodeId, held - n);
    changed.add(r.nodeId);
  }
  pushGrants(st, changed);
  // The AM learns the reduced absolute counts in their own message.
  pushAssignments(
    st,
    app,
    [...changed].map((nodeId) => ({ nodeId })),
  );
  scheduleOrDefer(st);
}

export function finishApp(st: MasterState, req: { appId: string; attempt: number; succeeded: boolean; message: string; progress: TaskProgress[] }): void {
  const app = requireApp(st, req.appId, req.attempt);
  if (req.progress.length > 0) app.job.progress = req.progress;
  st.log.info({ appId: req.appId, succeeded: req.succeeded, message: req.message }, 'application finished');
  endJob(st, app.job, req.succeeded ? 'succeeded' : 'failed', req.message);
}

/**
 * The shell could not hand the AM plan to its agent. An agent that refused it fails the job. One
 * that could not be reached (`unreachable`: the master's link to it may be cut) does not: the
 * attempt is replaced on another node once its node is no longer healthy (now, or when it is found
 * partitioned from the master or lost: nodes.ts), or, if the node is heard from meanwhile, when its
 * heartbeats show no such AM (am-restart.ts `checkAmLaunches`).
 */
export function amLaunchFailed(st: MasterState, appId: string, attempt: number, message: string, unreachable = false): void {
  const app = st.apps.get(appId);
  if (!app || app.job.amAttempt !== attempt) return;
  if (!unreachable) {
    endJob(st, app.job, 'failed', `could not start the application master: ${message}`);
    return;
  }
  const nodeId = app.job.amNodeId;
  const node = st.nodes.get(nodeId);
  st.log.warn({ appId, attempt, nodeId, err: message }, 'could not reach the agent to start the application master');
  if (app.amState !== 'launching' || app.pendingAmRestart || (node && node.status === 'healthy')) return;
  repostAmFault(st, 'AM_CRASH', app, `its agent ${nodeId} could not be reached to start attempt ${attempt} (${message})`);
}

/** The AM's hard state: topology once, then its log of finished instances (idempotent by seq). */
export function saveAppSnapshot(st: MasterState, req: { appId: string; attempt: number; topology: string; seq: number; entries: string[] }): void {
  const app = requireApp(st, req.appId, req.attempt);
  app.lastContactMs = st.now;
  const ops: StoreOp[] = [];
  if (req.topology && !app.topologySaved) {
    app.topologySaved = true;
    ops.push({ type: 'put', key: KEYS.appTopology(app.appId), value: req.topology });
  }
  if (req.entries.length > 0 && req.seq > (app.snapshotSeq ?? 0)) {
    app.snapshotSeq = req.seq;
    req.entries.forEach((e, i) => ops.push({ type: 'put', key: KEYS.appLogEntry(app.appId, req.attempt, req.seq, i), value: e }));
  }
  if (ops.length === 0) return;
  if (app.storedKeys !== undefined) {
    for (const op of ops) app.storedKeys.push(op.key);
    if (app.storedKeys.length > STORED_KEYS_KEPT) app.storedKeys = undefined;
  }
  // An AM sends everything pending in one call (after a restart, an entry per finished instance):
  // the entries are keyed by (attempt, seq, index), so a write cut short and made again after a
  // failover lands on the same keys; the call is answered once every write is durable.
  st.out.push(...storeWrites(ops));
}

/**
 * AM timing failure: a stalled AM (AM_TIMING) is replaced by a new attempt; the old one is fenced.
 * An AM on a node partitioned from the master (M-D: its peers still reach it, the master does not)
 * cannot ask for slots or end its job, however well it runs: it is replaced once it has been silent
 * for three AM heartbeat intervals (at least 1 s), not after the stall timeout. Its workers run on;
 * the new attempt adopts them from their agents.
 */
export function tickAms(st: MasterState): boolean {
  if (st.cfg.amStallTimeoutMs <= 0) return false;
  const cutOffMs = Math.max(1000, 3 * st.cfg.amHeartbeatIntervalMs);
  let changed = false;
  for (const app of [...st.apps.values()]) {
    // A launched AM that never registers counts as stalled too (lastContactMs is its launch).
    if ((app.amState !== 'running' && app.amState !== 'launching') || !app.reported || app.pendingAmRestart) continue;
    const silentMs = st.now - app.lastContactMs;
    const node = app.amState === 'running' && app.job.amNodeId ? st.nodes.get(app.job.amNodeId) : undefined;
    if (node?.status === 'partitioned' && silentMs > Math.min(cutOffMs, st.cfg.amStallTimeoutMs)) {
      repostAmFault(st, 'AM_TIMING', app, `application master silent for ${silentMs} ms on node ${node.info.nodeId}, which is partitioned from the master`);
      changed = true;
      continue;
    }
    // Starting a process can be slow on a loaded host: a launching AM gets three times longer.
    const limit = app.amState === 'launching' ? 3 * st.cfg.amStallTimeoutMs : st.cfg.amStallTimeoutMs;
    if (silentMs <= limit) continue;
    repostAmFault(st, 'AM_TIMING', app, `application master silent for ${silentMs} ms`);
    changed = true;
  }
  return changed;
}
