/**
 * Master failover (paper section 4.1.1 and Algorithms 1 and 2): a new leader loads the small hard
 * state, opens an aggregation window in which agents report their grants (FAgentFullCapFromFM)
 * and AMs their requests and assignments (AMFullReqResFromFM / AMFullAsgnedResFromFM), believes
 * them in the degree-of-confidence order (agents over AMs: what an agent holds replaces what AMs
 * claim on it), and closes the window when everyone reported or at the deadline. What is missing
 * then is handled by Algorithm 1 (an agent that did not report: the slots AMs claim on it stay
 * reserved and its AMs are told, until it reports or is lost) and Algorithm 2 (an AM that did not
 * report: its app keeps the granted resources as a MockSU until it reports or times out).
 *
 * Each step asks `consult` (table3.ts) whether the Table 3 row of its failure combination allows
 * the source it uses; the FSM's handlers (fault-handlers.ts) run the steps.
 */
import { add, AM_SU, FailedPreconditionError, fits, predictionOn, scale, StaleEpochError } from '@fuxi/common';
import { runPendingAmRestarts } from './am-restart.js';
import { mintAttemptToken } from './am-tokens.js';
import { indexMember, isHeld } from './arrays.js';
import { admitArrayMembers, endJob, newApp } from './jobs.js';
import { declareUnit, markRequesting, setAsgn } from './ledger.js';
import {
  AM_PRIORITY,
  endFailoverIfSettled,
  isRegistered,
  isUnreported,
  placeholderNode,
  type AppState,
  type MasterState,
  type NodeState,
} from './master-state.js';
import { heard, noticeAgents, registerAgent, releaseNode, setNodeStatus } from './nodes.js';
import { setConstraints } from './placement-scope.js';
import { sanitizeReport } from './request-limits.js';
import { runScheduler } from './scheduling.js';
import { KEYS, putJob } from './store-ops.js';
import { nextGrantTable, pushAssignments, pushGrants } from './sync.js';
import { consult } from './table3.js';
import { TERMINAL_STATES, type GrantEntry, type JobRecord, type NodeInfo, type PlacementConstraints, type UnitConfig } from './types.js';

/**
 * Loads hard state read from the store (a new leader, or the embedded master restarting in
 * place). With failover on, posts FM_CRASH, whose handler opens the aggregation window
 * (`openAggregation`); off, fails every unfinished job.
 */
export function loadHardState(st: MasterState, jobs: JobRecord[], roster: Array<Pick<NodeInfo, 'nodeId' | 'address'>>): void {
  if (st.cfg.masterFailover === false) {
    loadWithoutFailover(st, jobs);
    return;
  }
  st.loading = { jobs, roster };
  st.faults.post('FM_CRASH', '', st.now, `epoch ${st.epoch} rebuilding soft state`);
  st.faults.recovering('FM_CRASH', '', st.now);
  maybeFinishRecovery(st);
}

/**
 * FM_CRASH (Table 3 row 1): roster agents become placeholders until they report their grants,
 * apps of unfinished jobs wait for their AMs. Submissions are accepted from now on; scheduling
 * resumes when the window closes.
 */
export function openAggregation(st: MasterState): void {
  const loading = st.loading;
  if (!loading) return;
  st.loading = undefined;
  st.recovering = true;
  st.failoverOpen = true;
  st.recoveryStartMs = st.now;
  consult(st, 'FAFullCap', {}, 'every roster agent is asked for its grants');
  consult(st, 'AMFullResReq', {}, 'every placed AM is asked for its requests');
  for (const r of loading.roster) st.nodes.set(r.nodeId, placeholderNode(r, st.now));
  for (const j of [...loading.jobs].sort((a, b) => a.submitSeq - b.submitSeq)) {
    st.submitSeq = Math.max(st.submitSeq, j.submitSeq);
    st.jobs.set(j.jobId, j);
    indexMember(st, j);
    if (TERMINAL_STATES.has(j.state)) continue;
    // A job array member held for its array's limit has no app until it is admitted (below).
    if (isHeld(j)) continue;
    // The record a submission writes says attempt 0 (its first attempt is counted in memory only
    // when it starts): loaded before its AM was placed, the job is about to start attempt 1. Left
    // at 0, its AM would run as attempt 0, which agents refuse once they saw attempt 1 from the old
    // leader's grant ("stale am attempt"), failing the job.
    if (j.amAttempt === 0) {
      j.amAttempt = 1;
      // Its token was never written (nor its AM launched): this leader makes the attempt's token.
      mintAttemptToken(st, j);
    }
    const placed = j.amNodeId !== '';
    // An app whose AM was never placed has nothing to report.
    const app = newApp(j, !placed ? 'waiting' : j.amAddress ? 'running' : 'launching', !placed, st.now);
    const amSu = {
      suId: AM_SU,
      resource: j.spec.amResource,
      priority: AM_PRIORITY,
      requests: placed ? new Map<string, number>() : new Map([['', 1]]),
      asgn: new Map<string, number>(),
      granted: 0,
    };
    app.sus.set(AM_SU, amSu);
    st.apps.set(app.appId, app);
    if (!placed) {
      markRequesting(st, app);
      st.grantWaits.noteRequests(amSu, st.now);
    }
  }
  admitArrayMembers(st);
  st.log.info({ jobs: loading.jobs.length, unfinished: st.apps.size, roster: loading.roster.length }, 'hard state loaded; aggregating soft state');
}

/** Baseline without master failover: unfinished jobs fail; agents (re)registering get empty tables. */
function loadWithoutFailover(st: MasterState, jobs: JobRecord[]): void {
  for (const j of [...jobs].sort((a, b) => a.submitSeq - b.submitSeq)) {
    st.submitSeq = Math.max(st.submitSeq, j.submitSeq);
    st.jobs.set(j.jobId, j);
    if (!TERMINAL_STATES.has(j.state)) {
      j.state = 'failed';
      j.message = 'the master failed over while the job was running (master failover disabled)';
      j.finishedAtMs = st.now;
      st.out.push(putJob(j), { kind: 'deletePrefix', prefix: KEYS.appPrefix(j.jobId) });
    }
    indexMember(st, j); // as it is now: ended
  }
  st.log.info({ jobs: jobs.length }, 'hard state loaded without failover: unfinished jobs failed');
}

/**
 * An agent's full soft state (FAgentFullCapFromFM), asked for after a failover. Its grants are
 * believed (agent > AM) when they belong to an unfinished app this master knows and fit the
 * node; anything else is rejected, logged, and revoked by the full table pushed back. With
 * `answer` (the state came with the agent's registration) that table is returned for the answer
 * instead of pushed.
 */
export function reportAgentState(
  st: MasterState,
  req: { nodeId: string; epoch: string; grants: GrantEntry[] },
  answer = false,
): { seq: number; grants: GrantEntry[] } | undefined {
  const node = st.nodes.get(req.nodeId);
  if (!node || !isRegistered(node)) throw new FailedPreconditionError(`agent "${req.nodeId}" must register before reporting its state`);
  if (req.epoch !== st.epoch) throw new StaleEpochError('epoch', req.epoch, st.epoch);
  heard(st, node);
  const first = !node.reported;
  if (first) adoptAgentState(st, node, req.grants);
  const table = answer ? nextGrantTable(node) : undefined;
  if (!answer) pushGrants(st, [node.info.nodeId]);
  if (!first) return table;
  maybeFinishRecovery(st);
  endFailoverIfSettled(st);
  runPendingAmRestarts(st);
  if (!st.recovering) runScheduler(st);
  return table;
}

/**
 * A registration that carries the agent's grant table: when this master wants the agent's state
 * (it is rebuilding its soft state and has not heard this node), the table is taken as the
 * agent's report at once and the answer carries the master's table back (one round trip instead
 * of three: register, ReportAgentState, the grant push). Otherwise the table is ignored.
 */
export function registerWithState(
  st: MasterState,
  info: NodeInfo,
  epochSeen: string,
  grants: GrantEntry[] | undefined,
): { heartbeatIntervalMs: number; reportState: boolean; adopted?: { seq: number; grants: GrantEntry[] } } {
  const r = registerAgent(st, info, epochSeen);
  if (!r.reportState || grants === undefined) return r;
  const adopted = reportAgentState(st, { nodeId: info.nodeId, epoch: st.epoch, grants }, true);
  return adopted ? { ...r, reportState: false, adopted } : r;
}

/** The agent's first report to this master: it is healthy, and what it holds is believed. */
function adoptAgentState(st: MasterState, node: NodeState, grants: GrantEntry[]): void {
  const nodeId = node.info.nodeId;
  const reconnected = node.status === 'missing' || node.status === 'lost';
  node.reported = true;
  setNodeStatus(st, node, 'healthy', 'reported its state');
  const touched = new Set<AppState>();
  if (consult(st, 'FAFullCap', { nodeId }, 'grants adopted; AM claims on the node replaced', { reconnected })) adoptGrants(st, node, grants, touched);
  st.log.info({ nodeId, grants: grants.length, allocated: node.allocated }, 'agent state adopted');
  for (const app of touched) pushAssignments(st, app, [{ nodeId }]);
  // Its AMs were told it was missing (Algorithm 1): they are told it is back, before their
  // policies re-run its work elsewhere.
  if (reconnected) noticeAgents(st, nodeId, false);
}

/** What AMs claimed on the node is replaced by what the agent holds (degree of confidence). */
function adoptGrants(st: MasterState, node: NodeState, grants: GrantEntry[], touched: Set<AppState>): void {
  const nodeId = node.info.nodeId;
  // The node's grant table holds every claim on it (setAsgn keeps the two in step).
  const before = new Map([...node.grants].map(([k, g]) => [k, { appId: g.appId, suId: g.suId, slots: g.slots }]));
  for (const claim of [...node.grants.values()]) {
    const app = st.apps.get(claim.appId);
    const su = app?.sus.get(claim.suId);
    if (app && su) setAsgn(st, app, su, nodeId, 0);
  }
  const sorted = [...grants].sort((a, b) => (a.appId === b.appId ? (a.suId < b.suId ? -1 : 1) : a.appId < b.appId ? -1 : 1));
  for (const g of sorted) {
    const why = adoptGrant(st, node, g);
    if (why)
      st.log.warn({ nodeId, appId: g.appId, suId: g.suId, slots: g.slots, reason: why }, 'agent reported a grant this master does not believe; revoking it');
  }
  // Only the apps whose count on the node changed need their table again (most AMs claimed
  // exactly what the agent holds).
  // (The AM's own slot is not in its assignment table.)
  for (const [k, g] of node.grants) if (g.suId !== AM_SU && before.get(k)?.slots !== g.slots) markTouched(st, g.appId, touched);
  for (const [k, b] of before) if (b.suId !== AM_SU && !node.grants.has(k)) markTouched(st, b.appId, touched);
}

function markTouched(st: MasterState, appId: string, touched: Set<AppState>): void {
  const app = st.apps.get(appId);
  if (app) touched.add(app);
}

/** Adopts one reported grant onto a node; returns why it was not believed, or ''. */
function adoptGrant(st: MasterState, node: NodeState, reported: GrantEntry): string {
  let g = reported;
  const app = st.apps.get(g.appId);
  if (!app) return st.jobs.has(g.appId) ? 'the app has finished' : 'unknown app';
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
    su = { suId: g.suId, resource: g.resource, priority: app.job.spec.priority, requests: new Map(), asgn: new Map(), granted: 0 };
    app.sus.set(g.suId, su);
  }
  setAsgn(st, app, su, node.info.nodeId, (su.asgn.get(node.info.nodeId) ?? 0) + g.slots);
  if (g.suId === AM_SU) {
    // The AM's slot exists: never launch a second AM of this attempt.
    su.requests.clear();
    app.job.amNodeId = node.info.nodeId;
    if (app.amState === 'waiting') app.amState = 'launching';
  }
  return '';
}

export interface AppReport {
  appId: string;
  attempt: number;
  address: string;
  units: UnitConfig[];
  requests: Array<{ suId: string; location: string; count: number }>;
  assignments: Array<{ suId: string; nodeId: string; slots: number }>;
  /** Where the AM asks its new slots to go (soft state a new leader rebuilds from the report). */
  constraints?: PlacementConstraints;
  /**
   * Hosts failure prediction moved or killed the app's attempts off (the AM's record of the
   * verdicts it applied): blocked for the app again, as when the verdicts were issued.
   */
  predictedBadHosts?: string[];
}

/**
 * An AM's full soft state (AMFullReqResFromFM), asked for after a failover: its units and
 * outstanding requests replace the master's, without what breaks the request limits (dropped or
 * clamped, never refused: the report is how the app recovers; request-limits.ts); its assignments
 * (AMFullAsgnedResFromFM) are believed only as reservations on agents that have not reported
 * (never as grants; agents that reported win), and only where the Table 3 row of that agent's
 * failure allows it.
 */
export function reportAppState(st: MasterState, app: AppState, reported: AppReport): void {
  const req = { ...reported, ...sanitizeReport(st, app, reported) };
  app.lastContactMs = st.now;
  if (req.address) app.job.amAddress = req.address;
  const reconnected = !app.reported && app.mockSinceMs > 0;
  st.faults.resolve('AM_TIMING', app.appId, st.now, 'reported its state');
  if (consult(st, 'AMFullResReq', { appId: app.appId }, 'units and outstanding requests adopted', { reconnected })) adoptRequests(st, app, req);
  if (req.constraints !== undefined) setConstraints(st, app, req.constraints);
  restoreVerdictBlocks(st, app, reported.predictedBadHosts ?? []);
  for (const a of req.assignments) {
    const node = st.nodes.get(a.nodeId);
    const su = app.sus.get(a.suId);
    if (!node || !isUnreported(node) || !su || su.suId === AM_SU || a.slots <= 0) continue;
    // To the AM's claims, an agent not heard yet is one the master cannot hear (row 10 / 13).
    const extra = node.status === 'unreported' ? (['AGENT_TIMING'] as const) : [];
    if (!consult(st, 'AMFullAsgnedRes', { nodeId: a.nodeId, appId: app.appId }, `claim of ${a.slots} ${a.suId} slot(s) reserved`, { extra: [...extra] }))
      continue;
    setAsgn(st, app, su, a.nodeId, Math.max(su.asgn.get(a.nodeId) ?? 0, a.slots));
  }
  const wasReported = app.reported;
  app.reported = true;
  app.mockSinceMs = 0;
  app.amState = 'running';
  if (!wasReported)
    st.log.info({ appId: app.appId, units: req.units.length, requests: req.requests.length, claims: req.assignments.length }, 'application state adopted');
  pushAssignments(st, app, [{ nodeId: '' }]);
  maybeFinishRecovery(st);
  endFailoverIfSettled(st);
  runPendingAmRestarts(st);
  if (!st.recovering) runScheduler(st);
}

/**
 * The failure prediction blacklist is soft state: a new leader starts without the per-job blocks
 * its predecessor's verdicts set (prediction-hooks.ts `tickVerdicts`). The AM reports the hosts
 * those verdicts moved its attempts off; each known one is blocked for the app again (for a
 * half-life from now), unless the job set `failurePrediction: off` or prediction is disabled.
 */
function restoreVerdictBlocks(st: MasterState, app: AppState, hosts: readonly string[]): void {
  if (hosts.length === 0 || !st.prediction.config.enabled || !predictionOn(app.job.spec)) return;
  const known = [...new Set(hosts)].filter((id) => st.nodes.has(id)).sort();
  for (const id of known) st.prediction.blacklist.blockForJob(app.appId, id, st.now);
  if (known.length > 0) st.log.info({ appId: app.appId, hosts: known }, 'failure prediction blocks of the job restored from its AM');
}

function adoptRequests(st: MasterState, app: AppState, req: AppReport): void {
  for (const u of req.units) {
    const su = app.sus.get(u.suId);
    if (su && (su.resource.cpuMilli !== u.resource.cpuMilli || su.resource.memoryMb !== u.resource.memoryMb)) {
      st.log.warn({ appId: app.appId, suId: u.suId }, "AM reports a slot size that differs from its granted one; keeping the agents' (higher confidence)");
    }
    declareUnit(app, u);
  }
  for (const su of app.sus.values()) if (su.suId !== AM_SU) su.requests.clear();
  for (const r of req.requests) {
    const su = app.sus.get(r.suId);
    if (!su || r.count <= 0) continue;
    su.requests.set(r.location, (su.requests.get(r.location) ?? 0) + r.count);
    markRequesting(st, app);
  }
}

/** Closes the aggregation window early once every roster agent and metaAM app has reported. */
export function maybeFinishRecovery(st: MasterState): void {
  if (!st.recovering) return;
  for (const n of st.nodes.values()) if (!n.reported) return;
  for (const a of st.apps.values()) if (!a.reported) return;
  finishRecovery(st);
}

/**
 * The window closes: agents that did not report become `missing` (AGENT_TIMING: Algorithm 1),
 * apps whose AM did not report get AM_TIMING (Algorithm 2); the handlers of those events reserve
 * and tell (fault-handlers.ts). Then AM restarts that waited, and scheduling, resume.
 */
export function finishRecovery(st: MasterState): void {
  st.recovering = false;
  st.recoveryEndMs = st.now;
  const missingAgents = [...st.nodes.values()].filter((n) => !n.reported);
  const missingApps = [...st.apps.values()].filter((a) => !a.reported);
  for (const app of missingApps) st.faults.post('AM_TIMING', app.appId, st.now, 'did not report after the master failover');
  for (const node of missingAgents) setNodeStatus(st, node, 'missing', 'did not report after the master failover');
  tellAmsOfMissingAgents(st, missingAgents);
  // FM_CRASH stays open (S5 / S4 / S6) while Algorithms 1 and 2 still wait for what is missing.
  endFailoverIfSettled(st);
  const stats = {
    aggregationMs: st.now - st.recoveryStartMs,
    agentsReported: st.nodes.size - missingAgents.length,
    agentsMissing: missingAgents.length,
    appsReported: st.apps.size - missingApps.length,
    appsMissing: missingApps.length,
  };
  st.log.info(
    { ...stats, missingAgents: missingAgents.map((n) => n.info.nodeId), missingApps: missingApps.map((a) => a.appId) },
    'soft state recovered; scheduling resumes',
  );
  st.out.push({ kind: 'recovered', ...stats });
  runPendingAmRestarts(st);
  runScheduler(st);
}

/** Algorithm 1: each reported AM holding slots on missing agents is told which (one notice per AM). */
function tellAmsOfMissingAgents(st: MasterState, missing: NodeState[]): void {
  if (missing.length === 0) return;
  const ids = new Set(missing.map((n) => n.info.nodeId));
  for (const app of st.apps.values()) {
    if (!app.reported || !app.job.amAddress) continue;
    const hit = new Set<string>();
    for (const su of app.sus.values()) for (const nodeId of su.asgn.keys()) if (ids.has(nodeId)) hit.add(nodeId);
    if (hit.size > 0) st.out.push({ kind: 'agentsTimedOut', appId: app.appId, address: app.job.amAddress, epoch: st.epoch, nodeIds: [...hit].sort() });
  }
}

/** Algorithm 2, first half (AM_TIMING of an app missing from the window): it runs on a MockSU. */
export function keepMockSu(st: MasterState, app: AppState): void {
  if (!consult(st, 'FAFullCap', { appId: app.appId }, "MockSU kept from the agents' grants until the AM reports")) return;
  app.mockSinceMs = st.now;
}

/**
 * Periodic, after a failover: Algorithm 1's second half (an agent that never reported is lost once
 * silent for the agent timeout; the slots AMs claimed on it are released) and Algorithm 2's (a
 * MockSU is released when its AM does not come back in time). Returns whether anything changed.
 */
export function tickFailover(st: MasterState): boolean {
  let changed = false;
  for (const node of st.nodes.values()) {
    if (!isUnreported(node) || st.now - Math.max(node.lastHeartbeatMs, st.recoveryEndMs) <= st.cfg.agentTimeoutMs) continue;
    setNodeStatus(st, node, 'lost', 'lost: never reported after the failover');
    st.log.warn({ nodeId: node.info.nodeId }, 'agent did not report after the failover: lost');
    releaseNode(st, node);
    runPendingAmRestarts(st);
    changed = true;
  }
  for (const app of [...st.apps.values()]) {
    if (app.mockSinceMs > 0 && st.now - app.mockSinceMs > st.cfg.amTimeoutMs) {
      endJob(st, app.job, 'failed', `the application master did not report within ${st.cfg.amTimeoutMs} ms after a master failover`);
      changed = true;
    }
  }
  endFailoverIfSettled(st);
  return changed;
}
