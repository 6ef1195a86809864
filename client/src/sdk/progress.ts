/**
 * A worker's progress, for speculative execution: `reportProgress(fraction)` says how far the
 * worker is, and every `fetchUpstream` records its data path (source host, bytes, time, done).
 * Both are written to `$FUXI_PROGRESS_FILE` (replaced atomically, at most every WRITE_EVERY_MS and
 * once more when a fetch ends); the agent forwards them to the job's AM. Outside a worker (no
 * `$FUXI_PROGRESS_FILE`) nothing is written.
 *
 * ```ts
 * import { reportProgress } from '@fuxi/client/worker';
 * for (let i = 0; i < parts; i++) { await work(i); reportProgress((i + 1) / parts); }
 * ```
 */
import * as fs from 'node:fs';
import { PROGRESS_FILE_ENV, MAX_REPORTED_PATHS, type ProgressReport, type ReportedPath } from '@fuxi/common';

/** The progress file is written at most this often (ms). */
export const WRITE_EVERY_MS = 250;

interface PathState {
  srcNode: string;
  srcWorker: string;
  bytes: number;
  startedAt: number;
  endedAt: number;
}

/** One worker's progress (a process has one: `workerProgress()`). */
export class ProgressTracker {
  private fraction = 0;
  private readonly paths = new Map<string, PathState>();
  private timer: NodeJS.Timeout | undefined;
  private lastWrite = 0;
  private exitHook = false;

  constructor(
    private readonly file: string | undefined,
    private readonly now: () => number = Date.now,
  ) {}

  /** How far the worker is (0-1; clamped). */
  report(fraction: number): void {
    if (!Number.isFinite(fraction)) return;
    this.fraction = Math.min(1, Math.max(0, fraction));
    this.schedule();
  }

  /** A read of `srcWorker`'s output from `srcNode` starts (or resumes): returns the function that counts its bytes. */
  beginPath(srcNode: string, srcWorker: string): { add(bytes: number): void; end(complete: boolean): void } {
    const key = `${srcWorker}|${srcNode}`;
    let p = this.paths.get(key);
    if (!p) {
      p = { srcNode, srcWorker, bytes: 0, startedAt: this.now(), endedAt: 0 };
      this.paths.set(key, p);
      while (this.paths.size > MAX_REPORTED_PATHS) this.paths.delete(this.paths.keys().next().value!);
    }
    p.endedAt = 0;
    const path = p;
    this.schedule();
    return {
      add: (bytes) => {
        path.bytes += bytes;
        this.schedule();
      },
      end: (complete) => {
        if (complete) path.endedAt = this.now();
        this.write();
      },
    };
  }

  /** What the file holds now. */
  snapshot(): ProgressReport {
    const now = this.now();
    const paths: ReportedPath[] = [...this.paths.values()].map((p) => ({
      srcNode: p.srcNode,
      srcWorker: p.srcWorker,
      bytes: p.bytes,
      elapsedMs: Math.max(0, (p.endedAt || now) - p.startedAt),
      done: p.endedAt > 0,
    }));
    return { fraction: this.fraction, paths };
  }

  /** Writes the file now (atomically: a temporary file renamed over it). */
  write(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (!this.file) return;
    this.lastWrite = this.now();
    const tmp = `${this.file}.${process.pid}.tmp`;
    try {
      fs.writeFileSync(tmp, JSON.stringify(this.snapshot()));
      fs.renameSync(tmp, this.file);
    } catch {
      // Progress is advisory: a worker never fails for it.
    }
  }

  private schedule(): void {
    if (!this.file || this.timer) return;
    if (!this.exitHook) {
      // The last report is written even when the worker exits before the timer fires.
      this.exitHook = true;
      process.once('exit', () => this.timer && this.write());
    }
    const wait = Math.max(0, this.lastWrite + WRITE_EVERY_MS - this.now());
    this.timer = setTimeout(() => this.write(), wait);
    this.timer.unref();
  }
}

let tracker: ProgressTracker | undefined;

/** This worker's tracker (writing to `$FUXI_PROGRESS_FILE`, or nowhere outside a worker). */
export function workerProgress(env: NodeJS.ProcessEnv = process.env): ProgressTracker {
  tracker ??= new ProgressTracker(env[PROGRESS_FILE_ENV] || undefined);
  return tracker;
}

/** Inside a worker: how far it is (0-1), for its AM's speculation. */
export function reportProgress(fraction: number): void {
  workerProgress().report(fraction);
}
