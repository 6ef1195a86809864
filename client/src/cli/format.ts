/**
 * Human-readable output of the `fuxi` CLI: tables for jobs, nodes and the cluster status. Pure
 * (strings in, strings out; the current time comes in); `-o json` output is `toJson` of the proto
 * objects.
 */
import { format as formatResource } from '@fuxi/common';
import type {
  ClusterStatus__Output,
  Connectivity__Output,
  FaultEvent__Output,
  JobInfo__Output,
  NodeStatus__Output,
  RecoveryProgress__Output,
  Resource__Output,
  TaskProgress__Output,
  Testbed__Output,
} from '@fuxi/proto';
import { fsmStateLabel } from '../sdk/cluster-state.js';
import { shortState } from '../sdk/job-state.js';

/** Left-aligned columns separated by two spaces; no trailing spaces. */
export function renderTable(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const all = [headers, ...rows];
  const widths = headers.map((_, c) => Math.max(...all.map((r) => (r[c] ?? '').length)));
  return all
    .map((r) =>
      headers
        .map((_, c) => (r[c] ?? '').padEnd(c === headers.length - 1 ? 0 : (widths[c] ?? 0)))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

export function fmtResource(r: Resource__Output | null | undefined): string {
  return r ? formatResource({ cpuMilli: r.cpuMilli ?? 0, memoryMb: r.memoryMb ?? 0 }) : '-';
}

/** An int64 milliseconds timestamp (decimal string) as ISO time to the second; '-' when unset. */
export function fmtTime(ms: string | number | undefined): string {
  const n = Number(ms ?? 0);
  if (!Number.isFinite(n) || n <= 0) return '-';
  return new Date(n).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** The last line of `submit --wait`. */
export function finalLine(job: JobInfo__Output): string {
  const state = shortState(job.state);
  return `job ${job.jobId} ${state}${job.message ? `: ${job.message}` : ''}`;
}

/** The sum over tasks. */
export function totals(tasks: readonly TaskProgress__Output[]): Omit<TaskProgress__Output, 'name'> {
  const t = { total: 0, pending: 0, running: 0, succeeded: 0, failed: 0, retries: 0, reexecutions: 0, progress: 0, backups: 0 };
  for (const p of tasks) {
    t.total += p.total;
    t.pending += p.pending;
    t.running += p.running;
    t.succeeded += p.succeeded;
    t.failed += p.failed;
    t.retries += p.retries;
    t.reexecutions += p.reexecutions ?? 0;
    t.progress += (p.progress ?? 0) * p.total;
    t.backups += p.backups ?? 0;
  }
  t.progress = t.total > 0 ? t.progress / t.total : 0;
  return t;
}

export function formatTaskTable(tasks: readonly TaskProgress__Output[]): string {
  return renderTable(
    ['TASK', 'PROGRESS', 'TOTAL', 'PENDING', 'RUNNING', 'SUCCEEDED', 'FAILED', 'RETRIES', 'REEXECUTIONS', 'BACKUPS'],
    tasks.map((t) => [
      t.name,
      fmtProgress(t),
      String(t.total),
      String(t.pending),
      String(t.running),
      String(t.succeeded),
      String(t.failed),
      String(t.retries),
      String(t.reexecutions ?? 0),
      String(t.backups ?? 0),
    ]),
  );
}

/** A task's progress as a percentage: what the AM reported, at least the share of succeeded instances. */
function fmtProgress(t: TaskProgress__Output): string {
  const done = t.total > 0 ? t.succeeded / t.total : 0;
  const f = Math.min(1, Math.max(done, Number.isFinite(t.progress) ? (t.progress ?? 0) : 0));
  return `${Math.floor(f * 100)}%`;
}

/** `fuxi status`. */
export function formatJobStatus(job: JobInfo__Output): string {
  const am = job.amNodeId ? `${job.amNodeId}${job.amAddress ? ` (${job.amAddress})` : ''}, attempt ${job.amAttempt}` : '-';
  const lines = [
    `job:        ${job.jobId}`,
    `name:       ${job.name}`,
    `state:      ${shortState(job.state)}`,
    `owner:      ${job.owner || '-'}`,
    ...(job.message ? [`message:    ${job.message}`] : []),
    `quota:      ${job.quotaGroup || '-'} (priority ${job.priority})`,
    `submitted:  ${fmtTime(job.submittedAtMs)}`,
    `finished:   ${fmtTime(job.finishedAtMs)}`,
    `AM node:    ${am}`,
  ];
  const tasks = job.tasks.length ? formatTaskTable(job.tasks) : '(no task progress reported yet)';
  return `${lines.join('\n')}\n\n${tasks}`;
}

/** `fuxi list`. */
export function formatJobList(jobs: readonly JobInfo__Output[]): string {
  if (jobs.length === 0) return '(no jobs)';
  return renderTable(
    ['JOB', 'NAME', 'STATE', 'OWNER', 'QUOTA', 'PRIORITY', 'SUCCEEDED', 'SUBMITTED'],
    jobs.map((j) => {
      const t = totals(j.tasks);
      return [j.jobId, j.name, shortState(j.state), j.owner || '-', j.quotaGroup, String(j.priority), `${t.succeeded}/${t.total}`, fmtTime(j.submittedAtMs)];
    }),
  );
}

/** `fuxi status ARRAY`: members by state, then the members that did not succeed. */
export function formatArrayStatus(arrayId: string, members: readonly JobInfo__Output[]): string {
  const by = new Map<string, number>();
  for (const m of members) by.set(shortState(m.state), (by.get(shortState(m.state)) ?? 0) + 1);
  const held = members.filter((m) => m.message.startsWith('held')).length;
  const lines = [
    `array:   ${arrayId} (${members.length} jobs)`,
    `states:  ${[...by.entries()].map(([s, n]) => `${n} ${s}`).join(', ')}${held ? ` (${held} held by the array's limit)` : ''}`,
  ];
  const bad = members.filter((m) => m.state === 'JOB_STATE_FAILED' || m.state === 'JOB_STATE_KILLED');
  for (const m of bad.slice(0, 20)) lines.push(`  ${m.jobId}: ${shortState(m.state)}${m.message ? ` (${m.message})` : ''}`);
  if (bad.length > 20) lines.push(`  ... and ${bad.length - 20} more`);
  return lines.join('\n');
}

/** Peers named in the UNREACHABLE column of `fuxi nodes`; more are counted (`-o json` lists all). */
const UNREACHABLE_SHOWN = 3;

/** A node's unreachable peers for `fuxi nodes`: '-', `a2,a3`, or `a2,a3,a4 +5`. */
export function fmtUnreachable(peers: readonly string[] | undefined): string {
  if (!peers || peers.length === 0) return '-';
  const shown = peers.slice(0, UNREACHABLE_SHOWN).join(',');
  return peers.length > UNREACHABLE_SHOWN ? `${shown} +${peers.length - UNREACHABLE_SHOWN}` : shown;
}

/** A node's PREDICTION column: '-', 'gray', 'blocked', or 'job:<n>' (blocked for n jobs). */
export function fmtPrediction(n: Pick<NodeStatus__Output, 'prediction' | 'predictionJobs'>): string {
  if (!n.prediction) return '-';
  return n.prediction === 'job' ? `job:${n.predictionJobs?.length ?? 0}` : n.prediction;
}

/**
 * `fuxi nodes`: LIMITS is how the agent holds workers to their grants (`cgroup-v2`, `cgroup-v1`,
 * `rss`: memory only, `off`); PREDICTION is failure prediction's word on the host (why, below the table); the
 * last column names the peers a node cannot reach or be reached by.
 */
export function formatNodes(nodes: readonly NodeStatus__Output[]): string {
  if (nodes.length === 0) return '(no nodes)';
  // Who cordoned or drains a node, when and why: only when some node has such a state.
  const admin = nodes.some((n) => n.admin?.state);
  // The testbed holding a node: only when some node is held.
  const testbeds = nodes.some((n) => n.testbed);
  const listed = nodes.filter((n) => n.prediction);
  const why = listed.map((n) => {
    const jobs = n.predictionJobs?.length ? ` (blocked for ${n.predictionJobs.join(', ')})` : '';
    return `  ${n.node?.nodeId ?? '?'}: ${n.prediction}${n.predictionReason ? `, ${n.predictionReason}` : ''}${jobs}`;
  });
  const table = renderTable(
    [
      'NODE',
      'ADDRESS',
      'RACK',
      'STATE',
      'CAPACITY',
      'ALLOCATED',
      'FREE',
      'WORKERS',
      'LIMITS',
      'RUNS-AS',
      'PREDICTION',
      'UNREACHABLE',
      ...(testbeds ? ['TESTBED'] : []),
      ...(admin ? ['BY', 'SINCE', 'REASON'] : []),
    ],
    nodes.map((n) => [
      n.node?.nodeId ?? '?',
      n.node?.address ?? '',
      n.node?.rack || '-',
      nodeState(n),
      fmtResource(n.node?.capacity),
      fmtResource(n.allocated),
      fmtResource(n.free),
      String(n.runningWorkers),
      n.node?.resourceEnforcement || '-',
      n.node?.workerUser || '-',
      fmtPrediction(n),
      fmtUnreachable(n.unreachablePeers),
      ...(testbeds ? [n.testbed || '-'] : []),
      ...(admin ? (n.admin?.state ? [n.admin.by || '-', fmtTime(n.admin.sinceMs), n.admin.reason || '-'] : ['-', '-', '-']) : []),
    ]),
  );
  return why.length === 0 ? table : `${table}\nfailure prediction:\n${why.join('\n')}`;
}

/** A testbed's window: `always`, `from T`, `until T` or `T .. T`. */
export function fmtWindow(t: Pick<Testbed__Output, 'startMs' | 'endMs'>): string {
  const start = Number(t.startMs ?? 0);
  const end = Number(t.endMs ?? 0);
  if (start <= 0 && end <= 0) return 'always';
  if (end <= 0) return `from ${fmtTime(start)}`;
  if (start <= 0) return `until ${fmtTime(end)}`;
  return `${fmtTime(start)} .. ${fmtTime(end)}`;
}

/** `fuxi testbed list`: each testbed's group, hosts, window and whether it holds its hosts now. */
export function formatTestbeds(testbeds: readonly Testbed__Output[]): string {
  if (testbeds.length === 0) return '(no testbeds)';
  return renderTable(
    ['NAME', 'GROUP', 'HOSTS', 'WINDOW', 'ACTIVE', 'SELECTOR'],
    testbeds.map((t) => [
      t.name,
      t.quotaGroup,
      t.hosts.join(',') || '-',
      fmtWindow(t),
      t.active ? 'yes' : 'no',
      t.selectorLabel ? `label ${t.selectorLabel}` : t.selectorCount ? `count ${t.selectorCount}` : 'hosts',
    ]),
  );
}

/**
 * A node's state: its health, or for a ready node its operator's state (cordoned, drained,
 * draining until its deadline); a node that is not ready names both (`timing out, cordoned`).
 */
function nodeState(n: NodeStatus__Output): string {
  const health = n.state || (n.healthy ? 'ready' : 'not ready');
  const a = n.admin;
  if (!a?.state) return health;
  const admin = a.state === 'draining' ? `draining until ${fmtTime(a.deadlineMs)}` : a.drained ? 'cordoned (drained)' : a.state;
  return health === a.state ? admin : `${health}, ${admin}`;
}

/**
 * The partitions of `fuxi cluster status`: each broken link (`a <-/-> b`, for how long) and the
 * nodes partitioned from the master; '' when there are none.
 */
export function formatPartitions(c: Connectivity__Output | null | undefined, nowMs: number): string {
  const links = c?.brokenLinks ?? [];
  const cut = c?.partitionedFromMaster ?? [];
  if (links.length === 0 && cut.length === 0) return '';
  const names = links.map((l) => `${l.a} <-/-> ${l.b}`);
  const width = Math.max(0, ...names.map((n) => n.length));
  const lines = links.map((l, i) => {
    const since = Number(l.sinceMs);
    return `  ${names[i]!.padEnd(width)}  ${since > 0 ? `for ${fmtDuration(nowMs - since)} (since ${fmtTime(since)})` : ''}`.trimEnd();
  });
  if (cut.length > 0) lines.push(`  partitioned from the master (their peers still reach them): ${cut.join(', ')}`);
  return lines.join('\n');
}

/**
 * A duration for humans: `350ms`, `3.2s`, `59.9s`, `5m3s`, `2h5m`, `3d4h` (truncated, not rounded
 * up); negative durations (clock skew between hosts) as `0ms`.
 */
export function fmtDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return '0ms';
  if (ms < 1000) return `${Math.floor(ms)}ms`;
  if (ms < 60_000) return `${(Math.floor(ms / 100) / 10).toFixed(1)}s`;
  const s = Math.floor(ms / 1000);
  if (s < 3600) return `${Math.floor(s / 60)}m${s % 60}s`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h${Math.floor((s % 3600) / 60)}m`;
  return `${Math.floor(s / 86_400)}d${Math.floor((s % 86_400) / 3600)}h`;
}

/** The recovery line of `fuxi cluster status`. */
export function formatRecovery(r: RecoveryProgress__Output | null | undefined, nowMs: number): string {
  if (!r || !r.phase) return '-';
  const started = Number(r.startedAtMs || 0);
  const finished = Number(r.finishedAtMs || 0);
  const counts = `agents ${r.agentsReported}/${r.agentsExpected} reported, apps ${r.appsReported}/${r.appsExpected} reported`;
  switch (r.phase) {
    case 'normal':
      return started > 0 ? `normal (last failover started ${fmtTime(started)})` : 'normal (no failover since this master took over)';
    case 'aggregating':
      return started > 0 ? `aggregating for ${fmtDuration(nowMs - started)}: ${counts} (started ${fmtTime(started)})` : `aggregating: ${counts}`;
    case 'recovered': {
      const took = started > 0 && finished >= started ? ` in ${fmtDuration(finished - started)}` : '';
      const when = finished > 0 ? ` (finished ${fmtTime(finished)}, ${fmtDuration(nowMs - finished)} ago)` : '';
      return `recovered${took}: ${counts}${when}`;
    }
    default:
      return `${r.phase}: ${counts}`;
  }
}

/** The open fault events: id, kind, subject, state, age, detail. */
export function formatFaultEvents(events: readonly FaultEvent__Output[], nowMs: number): string {
  if (events.length === 0) return '(no open fault events)';
  return renderTable(
    ['ID', 'KIND', 'SUBJECT', 'STATE', 'AGE', 'DETAIL'],
    events.map((e) => [e.id, e.kind, e.subject || '-', e.state, Number(e.sinceMs) > 0 ? fmtDuration(nowMs - Number(e.sinceMs)) : '-', e.detail]),
  );
}

/**
 * `fuxi cluster status`: leader (and its web dashboard, when it serves one), epoch, FSM state,
 * recovery progress, counts, conditions and partitions (when any), open fault events.
 */
export function formatClusterStatus(st: ClusterStatus__Output, nowMs: number): string {
  const lines = [
    `leader:    ${st.leader || '-'}`,
    ...(st.dashboardUrl ? [`dashboard: ${st.dashboardUrl}`] : []),
    `epoch:     ${st.epoch || '-'}`,
    `state:     ${fsmStateLabel(st.fsmState)}`,
    `recovery:  ${formatRecovery(st.recovery, nowMs)}`,
    `nodes:     ${st.nodesHealthy} healthy, ${st.nodesTimingOut} timing out, ${st.nodesLost} lost`,
    `apps:      ${st.appsRunning} running`,
  ];
  // Conditions an operator must act on (e.g. etcd out of space) come before the fault events.
  const conditions = (st.conditions ?? []).map(
    (c) => `  ${c.type}${Number(c.sinceMs) > 0 ? ` for ${fmtDuration(nowMs - Number(c.sinceMs))}` : ''}: ${c.message}`,
  );
  const conditionBlock = conditions.length > 0 ? `\n\nconditions:\n${conditions.join('\n')}` : '';
  // Partial network partitions: links between hosts that do not carry traffic, nodes cut from the master.
  const partitions = formatPartitions(st.connectivity, nowMs);
  const partitionBlock = partitions ? `\n\npartitions:\n${partitions}` : '';
  return `${lines.join('\n')}${conditionBlock}${partitionBlock}\n\nopen fault events:\n${formatFaultEvents(st.openEvents, nowMs)}`;
}

/** JSON for `-o json`: 2-space indented; Buffers as base64 strings. */
export function toJson(v: unknown): string {
  return JSON.stringify(
    v,
    (_k, x: unknown) => {
      if (x && typeof x === 'object' && (x as { type?: unknown }).type === 'Buffer' && Array.isArray((x as { data?: unknown }).data)) {
        return Buffer.from((x as { data: number[] }).data).toString('base64');
      }
      return x;
    },
    2,
  );
}
