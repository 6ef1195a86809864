/**
 * Mapping between wire types (@fuxi/proto) and the master core's domain types, done once at the
 * edge: requests in, answers out. Fields a client left out arrive as zero values here and are
 * checked by the core (with the field named in the error).
 */
import type { Resource } from '@fuxi/common';
import type {
  ClusterStatus,
  Condition,
  CreateTestbedRequest__Output,
  Connectivity,
  Grant__Output,
  HeartbeatRequest__Output,
  HeartbeatResponse,
  JobInfo,
  JobState as WireJobState,
  NodeInfo__Output,
  NodeStatus,
  PlacementConstraints__Output,
  ReportAppStateRequest__Output,
  ScheduleUnitConfig__Output,
  Testbed as TestbedWire,
  UpdateRequestsRequest__Output,
  WorkerStatus__Output,
} from '@fuxi/proto';
import { jobSpecToProto } from '@fuxi/rpc';
import type { RequestsInput } from '../core/apps.js';
import type { TestbedView } from '../core/testbed-admin.js';
import type { CreateTestbed } from '../core/testbeds.js';
import type { ProbeAnswer } from '../core/probing.js';
import type { AppReport } from '../core/recovery.js';
import type {
  AmWorkerReport,
  ClusterStatusView,
  ConnectivityView,
  GrantEntry,
  HeartbeatInput,
  JobRecord,
  JobState,
  NodeInfo,
  NodeView,
  PlacementConstraints,
  UnitConfig,
} from '../core/types.js';

const STATE_TO_WIRE: Record<JobState, WireJobState> = {
  submitted: 'JOB_STATE_SUBMITTED',
  running: 'JOB_STATE_RUNNING',
  succeeded: 'JOB_STATE_SUCCEEDED',
  failed: 'JOB_STATE_FAILED',
  killed: 'JOB_STATE_KILLED',
};
const WIRE_TO_STATE = new Map(Object.entries(STATE_TO_WIRE).map(([k, v]) => [v, k as JobState]));

/** Job states named on the wire; unknown names are left out. */
export function jobStatesFromWire(states: readonly string[]): JobState[] {
  return states.map((s) => WIRE_TO_STATE.get(s as WireJobState)).filter((s): s is JobState => s !== undefined);
}

export function resourceFromWire(r: { cpuMilli?: number; memoryMb?: number } | null | undefined): Resource {
  return { cpuMilli: r?.cpuMilli ?? 0, memoryMb: r?.memoryMb ?? 0 };
}

export function grantFromWire(g: Grant__Output): GrantEntry {
  return { appId: g.appId, suId: g.suId, slots: g.slots, resource: resourceFromWire(g.resource) };
}

export function nodeInfoFromWire(n: NodeInfo__Output | null | undefined): NodeInfo {
  return {
    nodeId: n?.nodeId ?? '',
    address: n?.address ?? '',
    rack: n?.rack || 'default',
    capacity: resourceFromWire(n?.capacity),
    labels: n?.labels ?? {},
    bootId: n?.bootId ?? '',
    probePort: n?.probePort ?? 0,
    ...(n?.resourceEnforcement ? { resourceEnforcement: n.resourceEnforcement } : {}),
    ...(n?.workerUser ? { workerUser: n.workerUser } : {}),
  };
}

function workerStateOf(s: WorkerStatus__Output['state']): AmWorkerReport['state'] {
  return (String(s).replace('WORKER_STATE_', '').toLowerCase() || 'pending') as AmWorkerReport['state'];
}

export function heartbeatFromWire(req: HeartbeatRequest__Output): HeartbeatInput {
  return {
    nodeId: req.nodeId,
    epoch: req.epoch,
    grantSeq: Number(req.grantSeq),
    used: resourceFromWire(req.used),
    running: req.workers?.running ?? 0,
    pending: req.workers?.pending ?? 0,
    amWorkers: req.amWorkers.map((w) => ({
      appId: w.appId,
      amAttempt: w.amAttempt,
      state: workerStateOf(w.state),
      exitCode: w.exitCode,
      signal: w.signal,
      message: w.message,
    })),
    ...(req.connectivity
      ? {
          connectivity: {
            seq: Number(req.connectivity.seq),
            baseSeq: Number(req.connectivity.baseSeq),
            unreachable: req.connectivity.unreachable,
            reachable: req.connectivity.reachable,
          },
        }
      : {}),
    probeTargetsVersion: Number(req.probeTargetsVersion || 0),
    workerEnds: (req.workerEnds ?? []).map((w) => ({
      appId: w.appId,
      workerId: w.workerId,
      task: w.task,
      state: workerStateOf(w.state),
      exitCode: w.exitCode,
      signal: w.signal,
      resource: resourceFromWire(w.resource),
      startedAtMs: Number(w.startedAtMs || 0),
      finishedAtMs: Number(w.finishedAtMs || 0),
      ...(w.message ? { message: w.message } : {}),
    })),
    // proto3 cannot tell an empty list from none: no running workers listed is none running.
    runningWorkers: (req.runningWorkers ?? []).map((w) => ({ appId: w.appId, workerId: w.workerId, task: w.task, startedAtMs: Number(w.startedAtMs || 0) })),
  };
}

/** The heartbeat answer's peer-probing part (probing.ts `ProbeAnswer`). */
export function probeAnswerToWire(a: Partial<ProbeAnswer>): Pick<HeartbeatResponse, 'connectivitySeq' | 'connectivityResync' | 'probeTargets'> {
  return {
    connectivitySeq: String(a.connectivitySeq ?? 0),
    connectivityResync: a.connectivityResync ?? false,
    probeTargets: a.probeTargets ? { version: String(a.probeTargets.version), peers: a.probeTargets.peers } : null,
  };
}

function unitsFromWire(units: readonly ScheduleUnitConfig__Output[]): UnitConfig[] {
  return units.map((u) => ({ suId: u.suId, resource: resourceFromWire(u.resource), priority: u.priority }));
}

export function updateRequestsFromWire(req: UpdateRequestsRequest__Output): RequestsInput {
  return {
    appId: req.appId,
    attempt: req.amAttempt,
    seq: Number(req.seq),
    units: unitsFromWire(req.units),
    deltas: req.deltas.map((d) => ({ suId: d.suId, location: d.location, delta: d.delta })),
    assignmentSeq: Number(req.assignmentSeq),
    progress: req.progress,
    connectivityVersion: Number(req.connectivityVersion ?? 0),
    ...(req.constraints ? { constraints: constraintsFromWire(req.constraints) } : {}),
  };
}

/** Present (even empty) replaces the app's constraints; absent (null) leaves them. */
function constraintsFromWire(c: PlacementConstraints__Output): PlacementConstraints {
  return { reach: [...(c.reach ?? [])], avoid: [...(c.avoid ?? [])] };
}

/** The graph for an AM (UpdateRequests answers; null when the AM's version is current) and for GetClusterStatus. */
export function connectivityToWire(c: ConnectivityView | undefined): Connectivity | null {
  if (c === undefined) return null;
  return {
    version: String(c.version),
    brokenLinks: c.brokenLinks.map((l) => ({ a: l.a, b: l.b, sinceMs: String(l.sinceMs) })),
    partitionedFromMaster: c.partitioned,
    draining: c.draining ?? [],
  };
}

export function appReportFromWire(req: ReportAppStateRequest__Output): AppReport {
  return {
    appId: req.appId,
    attempt: req.amAttempt,
    address: req.address,
    units: unitsFromWire(req.units),
    requests: req.requests.map((r) => ({ suId: r.suId, location: r.location, count: r.count })),
    assignments: req.assignments.map((a) => ({ suId: a.suId, nodeId: a.nodeId, slots: a.slots })),
    ...(req.constraints ? { constraints: constraintsFromWire(req.constraints) } : {}),
    ...(req.predictedBadHosts.length > 0 ? { predictedBadHosts: [...req.predictedBadHosts] } : {}),
  };
}

export function jobInfo(j: JobRecord, withSpec = false): JobInfo {
  return {
    jobId: j.jobId,
    name: j.spec.name,
    state: STATE_TO_WIRE[j.state],
    message: j.message,
    quotaGroup: j.spec.quotaGroup,
    priority: j.spec.priority,
    submittedAtMs: String(j.submittedAtMs),
    finishedAtMs: String(j.finishedAtMs),
    amAttempt: j.amAttempt,
    amNodeId: j.amNodeId,
    amAddress: j.amAddress,
    tasks: j.progress,
    owner: j.owner ?? '',
    ...(withSpec ? { spec: jobSpecToProto(j.spec) } : {}),
  };
}

export function nodeStatusToWire(n: NodeView): NodeStatus {
  return {
    node: n.info,
    healthy: n.healthy,
    state: n.state,
    allocated: n.allocated,
    free: n.free,
    runningWorkers: n.runningWorkers,
    lastHeartbeatMs: String(n.lastHeartbeatMs),
    unreachablePeers: n.unreachablePeers,
    ...(n.admin
      ? {
          admin: {
            state: n.admin.state,
            reason: n.admin.reason,
            by: n.admin.by,
            sinceMs: String(n.admin.sinceMs),
            deadlineMs: String(n.admin.deadlineMs),
            drained: n.admin.drained === true,
          },
        }
      : {}),
    prediction: n.prediction?.level ?? '',
    predictionReason: n.prediction?.reason ?? '',
    predictionJobs: n.prediction?.jobs ?? [],
    testbed: n.testbed ?? '',
  };
}

export function testbedToWire(t: TestbedView): TestbedWire {
  return {
    name: t.name,
    quotaGroup: t.group,
    selectorHosts: t.selector.hosts ?? [],
    selectorLabel: t.selector.label ?? '',
    selectorCount: t.selector.count ?? 0,
    hosts: t.hosts,
    startMs: String(t.startMs ?? 0),
    endMs: String(t.endMs ?? 0),
    createdMs: String(t.createdMs),
    active: t.active,
  };
}

/** A CreateTestbed request as the core takes it (int64 as decimal strings; 0: unset). */
export function createTestbedFromWire(req: CreateTestbedRequest__Output): CreateTestbed {
  const startMs = Number(req.startMs);
  const endMs = Number(req.endMs);
  return {
    name: req.name,
    group: req.quotaGroup,
    selector: {
      ...(req.hosts.length > 0 ? { hosts: [...req.hosts] } : {}),
      ...(req.label !== '' ? { label: req.label } : {}),
      ...(req.count !== 0 ? { count: req.count } : {}),
    },
    ...(startMs !== 0 ? { startMs } : {}),
    ...(endMs !== 0 ? { endMs } : {}),
  };
}

export function clusterStatusToWire(st: ClusterStatusView, leader: string, epoch: string, conditions: Condition[] = [], dashboardUrl = ''): ClusterStatus {
  return {
    leader,
    epoch,
    fsmState: st.fsmState,
    openEvents: st.openEvents.map((e) => ({ ...e, sinceMs: String(e.sinceMs) })),
    recovery: { ...st.recovery, startedAtMs: String(st.recovery.startedAtMs), finishedAtMs: String(st.recovery.finishedAtMs) },
    nodesHealthy: st.nodesHealthy,
    nodesTimingOut: st.nodesTimingOut,
    nodesLost: st.nodesLost,
    appsRunning: st.appsRunning,
    conditions,
    connectivity: connectivityToWire(st.connectivity),
    dashboardUrl,
  };
}
