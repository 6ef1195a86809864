/**
 * Progress of `fuxi submit --wait`: a bar on a terminal (cli-progress, on stderr), otherwise one
 * line per job state change. The line formatting is pure and unit-tested.
 */
import cliProgress from 'cli-progress';
import type { JobInfo__Output } from '@fuxi/proto';
import { shortState } from '../sdk/job-state.js';
import { totals } from './format.js';

export { finalLine } from './format.js';

/** `RUNNING 12/20 succeeded, 5 running, 1 failed, 2 retries, 1 re-executions` (zero counts left out). */
export function progressSummary(job: JobInfo__Output): string {
  const t = totals(job.tasks);
  const parts = [`${t.succeeded}/${t.total} succeeded`];
  if (t.running) parts.push(`${t.running} running`);
  if (t.failed) parts.push(`${t.failed} failed`);
  if (t.retries) parts.push(`${t.retries} retries`);
  if (t.reexecutions) parts.push(`${t.reexecutions} re-executions`);
  return `${shortState(job.state)} ${parts.join(', ')}`;
}

/** Per task: `map 10/10, reduce 2/10`. */
export function taskSummary(job: JobInfo__Output): string {
  return job.tasks.map((t) => `${t.name} ${t.succeeded}/${t.total}`).join(', ');
}

/** The line printed (without a TTY) when the job's state changes. */
export function stateChangeLine(job: JobInfo__Output): string {
  const tasks = taskSummary(job);
  return `job ${job.jobId}: ${progressSummary(job)}${tasks ? ` [${tasks}]` : ''}`;
}

export interface ProgressStream {
  isTTY?: boolean;
  write(s: string): unknown;
}

export interface Progress {
  update(job: JobInfo__Output): void;
  stop(): void;
}

/** A bar when `stream` is a TTY, state-change lines otherwise. */
export function createProgress(stream: ProgressStream): Progress {
  return stream.isTTY ? new BarProgress(stream) : new LineProgress(stream);
}

export class LineProgress implements Progress {
  private lastState = '';
  constructor(private readonly stream: ProgressStream) {}
  update(job: JobInfo__Output): void {
    if (job.state === this.lastState) return;
    this.lastState = job.state;
    this.stream.write(`${stateChangeLine(job)}\n`);
  }
  stop(): void {}
}

class BarProgress implements Progress {
  private readonly bar: cliProgress.SingleBar;
  private started = false;
  constructor(stream: ProgressStream) {
    this.bar = new cliProgress.SingleBar(
      {
        stream: stream as NodeJS.WritableStream,
        format: '{state} |{bar}| {done}/{all} instances {detail}',
        hideCursor: true,
        barsize: 30,
        clearOnComplete: false,
        stopOnComplete: false,
      },
      cliProgress.Presets.shades_classic,
    );
  }
  update(job: JobInfo__Output): void {
    const t = totals(job.tasks);
    const payload = { state: shortState(job.state).padEnd(9), done: t.succeeded, all: t.total, detail: detail(t) };
    const total = Math.max(t.total, 1);
    if (!this.started) {
      this.bar.start(total, t.succeeded, payload);
      this.started = true;
    } else {
      this.bar.setTotal(total);
      this.bar.update(t.succeeded, payload);
    }
  }
  stop(): void {
    if (this.started) this.bar.stop();
  }
}

function detail(t: ReturnType<typeof totals>): string {
  const parts: string[] = [];
  if (t.running) parts.push(`${t.running} running`);
  if (t.failed) parts.push(`${t.failed} failed`);
  if (t.retries) parts.push(`${t.retries} retries`);
  if (t.reexecutions) parts.push(`${t.reexecutions} re-executions`);
  return parts.length ? `(${parts.join(', ')})` : '';
}
