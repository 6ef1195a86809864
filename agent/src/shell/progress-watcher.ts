/**
 * Progress of running workers, for their AMs (speculative execution): every `intervalMs` the
 * agent reads the progress file of each running worker (`$FUXI_PROGRESS_FILE`, written by the
 * worker SDK; see @fuxi/common worker-progress.ts) whose modification time changed, and sends what
 * it says as a RUNNING event carrying the fraction and the worker's data paths; and it sends the
 * records of the transfers its data service served (`TransferMeter`) to each reader's AM. A
 * worker that writes no file costs one failed stat per round.
 *
 * ```ts
 * const w = new ProgressWatcher({ workDir, nodeId, running: () => core.listWorkers().filter(...), events, meter, isRunning, amAddressOf });
 * w.start(); ... w.stop();
 * ```
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { errorMessage, nullLogger, parseProgressReport, PROGRESS_FILE, type Logger } from '@fuxi/common';
import type { PathRecord } from '@fuxi/proto';
import type { WorkerInfo } from '../core/agent-core.js';
import type { EventSender } from './event-sender.js';
import { workerDir } from './process-driver.js';
import type { TransferMeter } from './transfer-meter.js';
import { toWireStatus } from './wire.js';
import { readRegularAsync } from './worker-files.js';

export const PROGRESS_POLL_MS = 500;

export interface ProgressWatcherOptions {
  workDir: string;
  nodeId: string;
  /** The workers running now. */
  running(): WorkerInfo[];
  /** The worker as the core holds it now (a read of its file may finish after it ended). */
  current(appId: string, workerId: string): WorkerInfo | undefined;
  /** The address of the app's newest AM ('' unknown). */
  amAddressOf(appId: string): string;
  events: Pick<EventSender, 'push' | 'pushPaths'>;
  meter?: TransferMeter;
  intervalMs?: number;
  log?: Logger;
}

export class ProgressWatcher {
  /** Worker key -> modification time of the progress file last sent. */
  private readonly seen = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private busy = false;
  private readonly log: Logger;

  constructor(private readonly opts: ProgressWatcherOptions) {
    this.log = opts.log ?? nullLogger;
  }

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.round(), this.opts.intervalMs ?? PROGRESS_POLL_MS);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** One round (exposed for tests): progress files that changed, then the data service's transfers. */
  async round(): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    try {
      const live = new Set<string>();
      for (const w of this.opts.running()) {
        if (w.task === '' || w.workerId.startsWith('am.')) continue;
        const k = `${w.appId}\u0000${w.workerId}`;
        live.add(k);
        await this.readOne(w, k);
      }
      for (const k of [...this.seen.keys()]) if (!live.has(k)) this.seen.delete(k);
      this.sendTransfers();
    } catch (e) {
      this.log.warn({ err: errorMessage(e) }, 'progress round failed');
    } finally {
      this.busy = false;
    }
  }

  private async readOne(w: WorkerInfo, k: string): Promise<void> {
    const file = path.join(workerDir(this.opts.workDir, w.appId, w.workerId), PROGRESS_FILE);
    // Most workers write no progress file: a stat that does not throw (no error, no stack trace)
    // keeps that case cheap; a local stat takes microseconds.
    let mtime: number;
    try {
      const st = fs.statSync(file, { throwIfNoEntry: false });
      if (!st) return;
      mtime = st.mtimeMs;
    } catch {
      return;
    }
    if (this.seen.get(k) === mtime) return;
    const text = await readRegularAsync(file);
    if (text === undefined) return;
    const report = parseProgressReport(text);
    if (!report) return;
    const now = this.opts.current(w.appId, w.workerId);
    if (!now || now.state !== 'RUNNING') return; // ended meanwhile: its final event is what counts
    this.seen.set(k, mtime);
    const paths: PathRecord[] = report.paths.map((p) => ({
      srcNode: p.srcNode,
      dstNode: this.opts.nodeId,
      srcWorker: p.srcWorker,
      readerWorker: w.workerId,
      bytes: String(p.bytes),
      elapsedMs: String(p.elapsedMs),
      done: p.done,
    }));
    const address = this.opts.amAddressOf(w.appId) || now.amAddress;
    this.opts.events.push(w.appId, address, { ...toWireStatus(now), progress: report.fraction, paths });
  }

  private sendTransfers(): void {
    const meter = this.opts.meter;
    if (!meter || meter.size === 0) return;
    for (const { appId, records } of meter.drain(Date.now())) {
      const address = this.opts.amAddressOf(appId);
      if (address) this.opts.events.pushPaths(appId, address, records);
    }
  }
}
