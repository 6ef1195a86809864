/**
 * Human-readable output of the `fuxi` CLI: tables for jobs and nodes. Pure (strings in, strings
 * out); `-o json` output is `toJson` of the proto objects.
 */
import { format as formatResource } from '@fuxi/common';
import type { JobInfo__Output, NodeStatus__Output, Resource__Output, TaskProgress__Output } from '@fuxi/proto';
import { shortState } from '../sdk/job-state.js';

/** Left-aligned columns separated by two spaces; no trailing spaces. */
export function renderTable(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const all = [headers, ...rows];
  const widths = headers.map((_, c) => Math.max(...all.map((r) => (r[c] ?? '').length)));
  return all.map((r) => headers.map((_, c) => (r[c] ?? '').padEnd(c === headers.length - 1 ? 0 : (widths[c] ?? 0))).join('  ').trimEnd()).join('\n');
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

/** The sum over tasks. */
export function totals(tasks: readonly TaskProgress__Output[]): Omit<TaskProgress__Output, 'name'> {
  const t = { total: 0, pending: 0, running: 0, succeeded: 0, failed: 0, retries: 0 };
  for (const p of tasks) {
    t.total += p.total;
    t.pending += p.pending;
    t.running += p.running;
    t.succeeded += p.succeeded;
    t.failed += p.failed;
    t.retries += p.retries;
  }
  return t;
}

export function formatTaskTable(tasks: readonly TaskProgress__Output[]): string {
  return renderTable(
    ['TASK', 'TOTAL', 'PENDING', 'RUNNING', 'SUCCEEDED', 'FAILED', 'RETRIES'],
    tasks.map((t) => [t.name, String(t.total), String(t.pending), String(t.running), String(t.succeeded), String(t.failed), String(t.retries)]),
  );
}

/** `fuxi status`. */
export function formatJobStatus(job: JobInfo__Output): string {
  const am = job.amNodeId ? `${job.amNodeId}${job.amAddress ? ` (${job.amAddress})` : ''}, attempt ${job.amAttempt}` : '-';
  const lines = [
    `job:        ${job.jobId}`,
    `name:       ${job.name}`,
    `state:      ${shortState(job.state)}`,
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
    ['JOB', 'NAME', 'STATE', 'QUOTA', 'PRIORITY', 'SUCCEEDED', 'SUBMITTED'],
    jobs.map((j) => {
      const t = totals(j.tasks);
      return [j.jobId, j.name, shortState(j.state), j.quotaGroup, String(j.priority), `${t.succeeded}/${t.total}`, fmtTime(j.submittedAtMs)];
    }),
  );
}

/** `fuxi nodes`. */
export function formatNodes(nodes: readonly NodeStatus__Output[]): string {
  if (nodes.length === 0) return '(no nodes)';
  return renderTable(
    ['NODE', 'ADDRESS', 'RACK', 'HEALTHY', 'CAPACITY', 'ALLOCATED', 'FREE', 'WORKERS'],
    nodes.map((n) => [
      n.node?.nodeId ?? '?',
      n.node?.address ?? '',
      n.node?.rack || '-',
      n.healthy ? 'yes' : 'no',
      fmtResource(n.node?.capacity),
      fmtResource(n.allocated),
      fmtResource(n.free),
      String(n.runningWorkers),
    ]),
  );
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
