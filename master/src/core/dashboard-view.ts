/**
 * What the master's web dashboard shows (docs/architecture.md, "Dashboard"): pure functions from
 * the core's views (cluster status, nodes, jobs, the fault board) and what agents and the job's AM
 * report of its workers to the JSON the page renders, the dashboard's routes, and the fingerprint
 * the live-update stream compares. The HTTP shell is master/src/shell/dashboard.ts.
 */
import type { SnapshotEntry } from '@fuxi/common';
import type { FaultEvent, FsmTransition } from './fault-fsm.js';
import type { ClusterStatusView, JobRecord, JobState, NodeView } from './types.js';

/** Jobs a list answer holds at most (the newest first); a filter narrows them. */
export const MAX_JOB_ROWS = 200;
/** Entries of the recovery timeline shown at most (the newest). */
export const MAX_TIMELINE = 50;

export interface SummaryJson {
  role: 'leader';
  address: string;
  epoch: string;
  fsmState: string;
  recovery: ClusterStatusView['recovery'];
  openFaults: Array<{ id: string; kind: string; subject: string; sinceMs: number; state: string; detail: string }>;
  /** FSM transitions and fault events, oldest first (at most MAX_TIMELINE). */
  timeline: Array<{ atMs: number; what: string; detail: string }>;
  nodes: { healthy: number; timingOut: number; lost: number; total: number };
  jobs: Record<JobState, number>;
  appsRunning: number;
  nowMs: number;
}

export interface SummaryInput {
  address: string;
  epoch: string;
  status: ClusterStatusView;
  /** The fault board's history (open and recently resolved events). */
  faults: readonly FaultEvent[];
  transitions: readonly FsmTransition[];
  jobs: readonly Pick<JobRecord, 'state'>[];
  nodeCount: number;
  nowMs: number;
}

export function summaryView(i: SummaryInput): SummaryJson {
  const jobs: Record<JobState, number> = { submitted: 0, running: 0, succeeded: 0, failed: 0, killed: 0 };
  for (const j of i.jobs) jobs[j.state]++;
  const timeline: SummaryJson['timeline'] = [
    ...i.transitions.map((t) => ({ atMs: t.atMs, what: `FSM ${t.from} -> ${t.to}`, detail: t.event })),
    ...i.faults.map((f) => ({ atMs: f.sinceMs, what: f.subject ? `${f.kind} ${f.subject}` : f.kind, detail: `${f.state}${f.detail ? `: ${f.detail}` : ''}` })),
  ];
  if (i.status.recovery.startedAtMs > 0) timeline.push({ atMs: i.status.recovery.startedAtMs, what: 'recovery started', detail: `epoch ${i.epoch}` });
  if (i.status.recovery.finishedAtMs > 0) {
    const r = i.status.recovery;
    timeline.push({
      atMs: r.finishedAtMs,
      what: 'recovery finished',
      detail: `agents ${r.agentsReported}/${r.agentsExpected}, apps ${r.appsReported}/${r.appsExpected}`,
    });
  }
  timeline.sort((a, b) => a.atMs - b.atMs);
  return {
    role: 'leader',
    address: i.address,
    epoch: i.epoch,
    fsmState: i.status.fsmState,
    recovery: { ...i.status.recovery },
    openFaults: i.status.openEvents.map((e) => ({ id: e.id, kind: e.kind, subject: e.subject, sinceMs: e.sinceMs, state: e.state, detail: e.detail })),
    timeline: timeline.slice(-MAX_TIMELINE),
    nodes: { healthy: i.status.nodesHealthy, timingOut: i.status.nodesTimingOut, lost: i.status.nodesLost, total: i.nodeCount },
    jobs,
    appsRunning: i.status.appsRunning,
    nowMs: i.nowMs,
  };
}

export interface NodeRow {
  nodeId: string;
  address: string;
  rack: string;
  state: string;
  healthy: boolean;
  /** `cordoned` or `draining`, '' when neither. */
  admin: string;
  capacity: { cpuMilli: number; memoryMb: number };
  used: { cpuMilli: number; memoryMb: number };
  /** The larger of CPU and memory use, 0-1. */
  use: number;
  runningWorkers: number;
  /** Since its last heartbeat (ms); -1 when it never beat. */
  heartbeatAgeMs: number;
  unreachablePeers: string[];
}

export function nodeRows(nodes: readonly NodeView[], nowMs: number): NodeRow[] {
  const ratio = (used: number, cap: number) => (cap > 0 ? Math.min(1, used / cap) : 0);
  return nodes
    .map((n) => ({
      nodeId: n.info.nodeId,
      address: n.info.address,
      rack: n.info.rack,
      state: n.state,
      healthy: n.healthy,
      admin: n.admin?.state ?? '',
      capacity: { cpuMilli: n.info.capacity.cpuMilli, memoryMb: n.info.capacity.memoryMb },
      used: { cpuMilli: n.allocated.cpuMilli, memoryMb: n.allocated.memoryMb },
      use: Math.max(ratio(n.allocated.cpuMilli, n.info.capacity.cpuMilli), ratio(n.allocated.memoryMb, n.info.capacity.memoryMb)),
      runningWorkers: n.runningWorkers,
      heartbeatAgeMs: n.lastHeartbeatMs > 0 ? Math.max(0, nowMs - n.lastHeartbeatMs) : -1,
      unreachablePeers: [...n.unreachablePeers],
    }))
    .sort((a, b) => a.nodeId.localeCompare(b.nodeId));
}

export interface TaskRow {
  name: string;
  total: number;
  pending: number;
  running: number;
  succeeded: number;
  failed: number;
  retries: number;
  backups: number;
  /** 0-1: the AM's reported fraction, else succeeded / total. */
  progress: number;
}

export interface JobRow {
  jobId: string;
  name: string;
  state: JobState;
  message: string;
  submittedAtMs: number;
  finishedAtMs: number;
  amAttempt: number;
  amNodeId: string;
  /** The job's fraction done, 0-1 (its tasks' progress weighted by their instances). */
  progress: number;
  instances: { total: number; succeeded: number; running: number; failed: number };
  tasks: TaskRow[];
}

function taskRow(t: JobRecord['progress'][number]): TaskRow {
  const total = Math.max(0, t.total);
  const done = total > 0 ? t.succeeded / total : 0;
  const reported = typeof t.progress === 'number' && Number.isFinite(t.progress) ? Math.min(1, Math.max(0, t.progress)) : undefined;
  return {
    name: t.name,
    total,
    pending: t.pending,
    running: t.running,
    succeeded: t.succeeded,
    failed: t.failed,
    retries: t.retries,
    backups: t.backups ?? 0,
    progress: Math.max(done, reported ?? 0),
  };
}

export function jobRow(j: JobRecord): JobRow {
  const tasks = j.progress.map(taskRow);
  const total = tasks.reduce((n, t) => n + t.total, 0);
  const weighted = tasks.reduce((n, t) => n + t.progress * t.total, 0);
  return {
    jobId: j.jobId,
    name: j.spec.name,
    state: j.state,
    message: j.message,
    submittedAtMs: j.submittedAtMs,
    finishedAtMs: j.finishedAtMs,
    amAttempt: j.amAttempt,
    amNodeId: j.amNodeId,
    progress: j.state === 'succeeded' ? 1 : total > 0 ? weighted / total : 0,
    instances: {
      total,
      succeeded: tasks.reduce((n, t) => n + t.succeeded, 0),
      running: tasks.reduce((n, t) => n + t.running, 0),
      failed: tasks.reduce((n, t) => n + t.failed, 0),
    },
    tasks,
  };
}

export interface JobFilter {
  states: JobState[];
  /** A case-insensitive substring of the job's id or name ('' = any). */
  text: string;
  limit: number;
}

const JOB_STATES: readonly JobState[] = ['submitted', 'running', 'succeeded', 'failed', 'killed'];

/** The filter of `GET /api/jobs?state=running,failed&q=text&limit=50`; unknown states are ignored. */
export function parseJobFilter(params: { get(name: string): string | null }): JobFilter {
  const states = (params.get('state') ?? '')
    .split(',')
    .map((s) => s.trim().toLowerCase())
    .filter((s): s is JobState => (JOB_STATES as readonly string[]).includes(s));
  const limit = Number(params.get('limit') ?? '');
  return {
    states,
    text: (params.get('q') ?? '').trim().toLowerCase(),
    limit: Number.isInteger(limit) && limit > 0 ? Math.min(limit, MAX_JOB_ROWS) : MAX_JOB_ROWS,
  };
}

/** Jobs matching `f`, newest first, at most `f.limit`; `total` counts every match. */
export function jobRows(jobs: readonly JobRecord[], f: JobFilter): { jobs: JobRow[]; total: number } {
  const matching = jobs.filter(
    (j) =>
      (f.states.length === 0 || f.states.includes(j.state)) &&
      (!f.text || j.jobId.toLowerCase().includes(f.text) || j.spec.name.toLowerCase().includes(f.text)),
  );
  matching.sort((a, b) => b.submitSeq - a.submitSeq || b.submittedAtMs - a.submittedAtMs);
  return { jobs: matching.slice(0, f.limit).map(jobRow), total: matching.length };
}

/** A worker as an agent (ListWorkers) or the job's AM (GetAppState) reports it, mapped at the edge. */
export interface WorkerReport {
  workerId: string;
  task: string;
  instance: number;
  attempt: number;
  nodeId: string;
  /** pending, running, succeeded, failed, killed, rejected. */
  state: string;
  /** Known once the worker ended (agents' reports only). */
  exitCode?: number;
  signal?: string;
  message?: string;
  startedAtMs?: number;
  finishedAtMs?: number;
}

export interface AttemptRow {
  attempt: number;
  workerId: string;
  nodeId: string;
  address: string;
  state: string;
  exitCode: number | null;
  signal: string;
  message: string;
  startedAtMs: number;
  finishedAtMs: number;
  /** The dashboard URL of its stdout (`?stream=stderr` for stderr). */
  logUrl: string;
}

export interface InstanceRow {
  task: string;
  instance: number;
  /** The node of its latest attempt. */
  nodeId: string;
  state: string;
  attempts: AttemptRow[];
}

/** `/api/jobs/<job>/logs/<worker>`: a worker's log through the master. */
export function logUrl(jobId: string, workerId: string): string {
  return `/api/jobs/${encodeURIComponent(jobId)}/logs/${encodeURIComponent(workerId)}`;
}

/**
 * A worker id (`map.3.2`: task, instance, attempt; `am.2`: the AM's attempt 2) as its parts;
 * undefined when it is not one. A task name may hold dots: the last two parts are the numbers.
 */
export function parseWorkerId(workerId: string, amTask: string): { task: string; instance: number; attempt: number } | undefined {
  const am = /^am\.(\d+)$/.exec(workerId);
  if (am) return { task: amTask, instance: 0, attempt: Number(am[1]) };
  const m = /^(.+)\.(\d+)\.(\d+)$/.exec(workerId);
  if (!m) return undefined;
  return { task: m[1]!, instance: Number(m[2]), attempt: Number(m[3]) };
}

/**
 * The job's instances with every attempt known: agents' records (with exit codes) first, then
 * the AM's view of running workers, then the snapshot log (finished instances whose agents have
 * forgotten them). `addresses` maps node ids to agent addresses. Sorted by task, instance.
 */
export function instanceRows(
  jobId: string,
  sources: { agents: readonly WorkerReport[]; am: readonly WorkerReport[]; snapshot: readonly SnapshotEntry[] },
  addresses: ReadonlyMap<string, string>,
): InstanceRow[] {
  const byWorker = new Map<string, AttemptRow>();
  const add = (w: WorkerReport) => {
    if (byWorker.has(w.workerId) || !w.workerId) return;
    byWorker.set(w.workerId, {
      attempt: w.attempt,
      workerId: w.workerId,
      nodeId: w.nodeId,
      address: addresses.get(w.nodeId) ?? '',
      state: w.state,
      exitCode: w.exitCode ?? null,
      signal: w.signal ?? '',
      message: w.message ?? '',
      startedAtMs: w.startedAtMs ?? 0,
      finishedAtMs: w.finishedAtMs ?? 0,
      logUrl: logUrl(jobId, w.workerId),
    });
  };
  const task = (w: WorkerReport) => ({ task: w.task, instance: w.instance });
  const keys = new Map<string, { task: string; instance: number }>();
  const ownerOf = new Map<string, string>();
  for (const w of [...sources.agents, ...sources.am]) {
    add(w);
    const k = `${w.task}\u0000${w.instance}`;
    keys.set(k, task(w));
    ownerOf.set(w.workerId, k);
  }
  for (const e of sources.snapshot) {
    const workerId = e.workerId || `${e.task}.${e.instance}.${e.attempt}`;
    add({ workerId, task: e.task, instance: e.instance, attempt: e.attempt, nodeId: e.nodeId, state: e.state, ...(e.message ? { message: e.message } : {}) });
    const k = `${e.task}\u0000${e.instance}`;
    keys.set(k, { task: e.task, instance: e.instance });
    ownerOf.set(workerId, k);
  }
  const grouped = new Map<string, AttemptRow[]>();
  for (const [workerId, row] of byWorker) {
    const k = ownerOf.get(workerId)!;
    let list = grouped.get(k);
    if (!list) grouped.set(k, (list = []));
    list.push(row);
  }
  const rows: InstanceRow[] = [];
  for (const [k, attempts] of grouped) {
    attempts.sort((a, b) => a.attempt - b.attempt);
    const last = attempts[attempts.length - 1]!;
    const { task: t, instance } = keys.get(k)!;
    rows.push({ task: t, instance, nodeId: last.nodeId, state: last.state, attempts });
  }
  rows.sort((a, b) => a.task.localeCompare(b.task) || a.instance - b.instance);
  return rows;
}

/** The dashboard's routes; `logs` carries the decoded job and worker ids. */
export type DashboardRoute =
  | { kind: 'page' }
  | { kind: 'summary' }
  | { kind: 'nodes' }
  | { kind: 'jobs' }
  | { kind: 'job'; jobId: string }
  | { kind: 'logs'; jobId: string; workerId: string }
  | { kind: 'events' }
  | { kind: 'none' };

/** Routes a GET path (without its query); `none` for anything else (metrics are routed before). */
export function dashboardRoute(method: string, path: string): DashboardRoute {
  if (method !== 'GET' && method !== 'HEAD') return { kind: 'none' };
  if (path === '/' || path === '/index.html') return { kind: 'page' };
  if (path === '/api/summary') return { kind: 'summary' };
  if (path === '/api/nodes') return { kind: 'nodes' };
  if (path === '/api/jobs') return { kind: 'jobs' };
  if (path === '/events') return method === 'GET' ? { kind: 'events' } : { kind: 'none' };
  const decode = (s: string) => {
    try {
      return decodeURIComponent(s);
    } catch {
      return undefined;
    }
  };
  const logs = /^\/api\/jobs\/([^/]+)\/logs\/([^/]+)$/.exec(path);
  if (logs) {
    const jobId = decode(logs[1]!);
    const workerId = decode(logs[2]!);
    return jobId && workerId ? { kind: 'logs', jobId, workerId } : { kind: 'none' };
  }
  const job = /^\/api\/jobs\/([^/]+)$/.exec(path);
  if (job) {
    const jobId = decode(job[1]!);
    return jobId ? { kind: 'job', jobId } : { kind: 'none' };
  }
  return { kind: 'none' };
}

/**
 * A short fingerprint of what the page shows (FNV-1a of the views' JSON, hex): the live-update
 * stream sends `changed` when it differs from the last one sent.
 */
export function fingerprint(parts: readonly unknown[]): string {
  const text = JSON.stringify(parts);
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h.toString(16).padStart(8, '0');
}
