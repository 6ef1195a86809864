/**
 * Deletes finished worker directories (`<workDir>/apps/<app>/<worker>/`): the shell of
 * core/workdir-retention.ts. A sweep lists the directories, asks the worker table (after listing,
 * so a worker accepted meanwhile is in it) which are running and when the others finished, measures
 * the work dir's file system (statfs) and, only above the threshold, the directories' sizes; the core
 * picks what goes; the sweep deletes it, then app directories left empty.
 *
 * A directory the worker table no longer holds (forgotten after `finishedRetentionMs`, or from an
 * earlier run whose checkpoint did not keep it) finished when its `exit` file was written, or,
 * without one, when anything in it last changed: such a worker is not this agent's any more (a
 * restart re-adopts every worker the checkpoint names).
 *
 * ```ts
 * const sweeper = new WorkDirSweeper({ workDir, policy: { retentionMs, maxDiskPercent: 90 }, table: () => ({ workers: core.listWorkers(), activeApps }) });
 * const { deleted } = await sweeper.sweep(Date.now());
 * ```
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { isWorkerTerminal, nullLogger, type Logger } from '@fuxi/common';
import type { WorkerInfo } from '../core/agent-core.js';
import {
  diskOverThreshold,
  selectWorkDirsToDelete,
  type DiskUsage,
  type WorkDirDeletion,
  type WorkDirEntry,
  type WorkDirPolicy,
} from '../core/workdir-retention.js';
import { safeName } from './process-driver.js';

export interface WorkerTableView {
  workers: readonly WorkerInfo[];
  /** Apps with a running worker or a grant on this node. */
  activeApps: ReadonlySet<string>;
}

export interface WorkDirSweeperOptions {
  workDir: string;
  policy: WorkDirPolicy;
  table: () => WorkerTableView;
  /** The file system's usage (default: statfs of the work dir, as df counts it). */
  disk?: (workDir: string) => Promise<DiskUsage>;
  log?: Logger;
}

export interface SweepResult {
  deleted: Array<WorkDirDeletion & { bytes: number }>;
  disk: DiskUsage;
}

export class WorkDirSweeper {
  private readonly log: Logger;
  private running: Promise<SweepResult> | undefined;

  constructor(private readonly opts: WorkDirSweeperOptions) {
    this.log = opts.log ?? nullLogger;
  }

  /** One sweep; a call while one runs joins it. */
  sweep(now: number): Promise<SweepResult> {
    this.running ??= this.sweepOnce(now).finally(() => (this.running = undefined));
    return this.running;
  }

  private async sweepOnce(now: number): Promise<SweepResult> {
    const appsDir = path.join(this.opts.workDir, 'apps');
    const listed: Array<{ appName: string; workerName: string; dir: string }> = [];
    for (const appName of await names(appsDir)) {
      for (const workerName of await names(path.join(appsDir, appName))) listed.push({ appName, workerName, dir: path.join(appsDir, appName, workerName) });
    }
    const table = this.opts.table();
    const byDir = new Map<string, WorkerInfo>();
    for (const w of table.workers) byDir.set(`${safeName(w.appId)}/${safeName(w.workerId)}`, w);
    const active = new Set([...table.activeApps].map(safeName));
    const disk = await (this.opts.disk ?? statDisk)(this.opts.workDir);
    const measure = diskOverThreshold(disk, this.opts.policy);

    const entries: WorkDirEntry[] = [];
    for (const l of listed) {
      const w = byDir.get(`${l.appName}/${l.workerName}`);
      const running = w !== undefined && !isWorkerTerminal(w.state);
      let finishedAtMs: number | undefined;
      if (w && !running) finishedAtMs = w.finishedAtMs > 0 ? w.finishedAtMs : await finishedOnDisk(l.dir);
      else if (!w) finishedAtMs = await finishedOnDisk(l.dir);
      const bytes = measure && !running ? await duBytes(l.dir) : 0;
      entries.push({ appId: l.appName, workerId: l.workerName, running, finishedAtMs, bytes });
    }
    const doomed = selectWorkDirsToDelete({ dirs: entries, activeApps: active, disk, now }, this.opts.policy);
    const sizes = new Map(entries.map((e) => [`${e.appId}/${e.workerId}`, e.bytes]));
    const deleted: SweepResult['deleted'] = [];
    for (const d of doomed) {
      const dir = path.join(appsDir, d.appId, d.workerId);
      try {
        await fs.promises.rm(dir, { recursive: true, force: true });
        deleted.push({ ...d, bytes: sizes.get(`${d.appId}/${d.workerId}`) ?? 0 });
        this.log.info({ app: decode(d.appId), worker: decode(d.workerId), reason: d.reason }, 'deleted finished worker directory');
      } catch (e) {
        this.log.warn({ dir, err: (e as Error).message }, 'cannot delete finished worker directory');
      }
    }
    for (const appName of new Set(doomed.map((d) => d.appId))) {
      // Only when empty: rmdir fails (and is ignored) while the app has directories left.
      await fs.promises.rmdir(path.join(appsDir, appName)).catch(() => undefined);
    }
    return { deleted, disk };
  }
}

/** The work dir's file system as df counts it: used = total - free, out of used + available to us. */
export async function statDisk(dir: string): Promise<DiskUsage> {
  const s = await fs.promises.statfs(dir);
  const used = (s.blocks - s.bfree) * s.bsize;
  return { usedBytes: used, totalBytes: used + s.bavail * s.bsize };
}

async function names(dir: string): Promise<string[]> {
  try {
    return (await fs.promises.readdir(dir, { withFileTypes: true })).filter((d) => d.isDirectory()).map((d) => d.name);
  } catch {
    return [];
  }
}

/** When a directory's worker finished by the disk: its `exit` file's time, else the newest change in it. */
async function finishedOnDisk(dir: string): Promise<number | undefined> {
  try {
    return (await fs.promises.stat(path.join(dir, 'exit'))).mtimeMs;
  } catch {
    // no exit file
  }
  let newest: number | undefined;
  try {
    newest = (await fs.promises.stat(dir)).mtimeMs;
    for (const n of await fs.promises.readdir(dir)) {
      const m = (await fs.promises.lstat(path.join(dir, n)).catch(() => undefined))?.mtimeMs;
      if (m !== undefined && m > newest) newest = m;
    }
  } catch {
    return undefined;
  }
  return newest;
}

/** Bytes a directory tree occupies on disk (allocated blocks, as du counts them). */
export async function duBytes(dir: string): Promise<number> {
  let total = 0;
  let items: fs.Dirent[];
  try {
    items = await fs.promises.readdir(dir, { withFileTypes: true });
  } catch {
    return 0;
  }
  for (const it of items) {
    const p = path.join(dir, it.name);
    if (it.isDirectory()) total += await duBytes(p);
    else total += ((await fs.promises.lstat(p).catch(() => undefined))?.blocks ?? 0) * 512;
  }
  return total;
}

function decode(name: string): string {
  try {
    return decodeURIComponent(name);
  } catch {
    return name;
  }
}
