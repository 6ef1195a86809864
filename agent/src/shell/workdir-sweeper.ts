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
 * An app whose directories were all finished, with known finish times, while the app was not
 * active here is settled: later sweeps take its directories and their finish times from memory and
 * read nothing of it until a worker of the app starts here (`invalidate`, called by the agent before
 * every start) or the app is active again. A sweep then reads the apps directory once, not each
 * app's directory and each forgotten worker's `exit` file: that cost 50-90 µs of CPU per
 * directory per sweep (0.4-0.5 s a minute for 5,000 kept directories), and a busy node keeps a day
 * of them. The first sweep of an agent reads everything. At most `maxSettledApps` apps are settled at a
 * time (the memory they take is bounded); the rest are read at every sweep.
 *
 * ```ts
 * const sweeper = new WorkDirSweeper({ workDir, policy: { retentionMs, maxDiskPercent: 90 }, table: () => ({ workers: core.listWorkers(), activeApps }) });
 * sweeper.invalidate(appId); // before a worker of appId starts here
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
  /** At most this many apps are settled at once (DEFAULT_MAX_SETTLED_APPS); the others are read at every sweep. */
  maxSettledApps?: number;
  log?: Logger;
}

/**
 * Settled apps held in memory at most: about 200 bytes each for a one-worker app (197-210 in
 * `make bench-workdir-sweep`), so about 20 MB at this bound; a node past it reads the apps beyond
 * it at every sweep, as before.
 */
export const DEFAULT_MAX_SETTLED_APPS = 100_000;

export interface SweepResult {
  deleted: Array<WorkDirDeletion & { bytes: number }>;
  disk: DiskUsage;
  /** App directories read by this sweep (the settled ones are not). */
  appsRead: number;
}

/** A directory of a settled app, as it was when last read. */
interface SettledDir {
  workerName: string;
  finishedAtMs: number;
}

export class WorkDirSweeper {
  private readonly log: Logger;
  private running: Promise<SweepResult> | undefined;
  /** Settled apps (by directory name): their directories as last read. */
  private readonly settled = new Map<string, SettledDir[]>();
  /** Apps invalidated since the running sweep began: it must not settle them on what it read before. */
  private readonly invalidated = new Set<string>();

  constructor(private readonly opts: WorkDirSweeperOptions) {
    this.log = opts.log ?? nullLogger;
  }

  /** One sweep; a call while one runs joins it. */
  sweep(now: number): Promise<SweepResult> {
    this.running ??= this.sweepOnce(now).finally(() => (this.running = undefined));
    return this.running;
  }

  /** A worker of `appId` is about to start here: its app directory is read again at the next sweep. */
  invalidate(appId: string): void {
    const name = safeName(appId);
    this.settled.delete(name);
    if (this.running) this.invalidated.add(name);
  }

  private async sweepOnce(now: number): Promise<SweepResult> {
    this.invalidated.clear();
    const appsDir = path.join(this.opts.workDir, 'apps');
    const appNames = await names(appsDir);
    const present = new Set(appNames);
    for (const name of this.settled.keys()) if (!present.has(name)) this.settled.delete(name); // removed by someone else
    const listed: Array<{ appName: string; workerName: string; dir: string }> = [];
    const fromMemory: Array<{ appName: string; d: SettledDir }> = [];
    let appsRead = 0;
    for (const appName of appNames) {
      const known = this.settled.get(appName);
      if (known) {
        for (const d of known) fromMemory.push({ appName, d });
        continue;
      }
      appsRead++;
      for (const workerName of await names(path.join(appsDir, appName))) listed.push({ appName, workerName, dir: path.join(appsDir, appName, workerName) });
    }
    // Read after listing, so a worker accepted meanwhile is in it. A settled app that is active
    // again keeps its finished directories (the core keeps them while it is active); a worker that
    // starts invalidates it, and its directory is read at the next sweep.
    const table = this.opts.table();
    const active = new Set([...table.activeApps].map(safeName));
    const byDir = new Map<string, WorkerInfo>();
    for (const w of table.workers) byDir.set(`${safeName(w.appId)}/${safeName(w.workerId)}`, w);
    const disk = await (this.opts.disk ?? statDisk)(this.opts.workDir);
    const measure = diskOverThreshold(disk, this.opts.policy);

    const entries: WorkDirEntry[] = [];
    for (const { appName, d } of fromMemory) {
      const bytes = measure ? await duBytes(path.join(appsDir, appName, d.workerName)) : 0;
      entries.push({ appId: appName, workerId: d.workerName, running: false, finishedAtMs: d.finishedAtMs, bytes });
    }
    const readNow = new Map<string, SettledDir[] | null>(); // null: not settled (running, unknown end, or active)
    for (const l of listed) {
      const w = byDir.get(`${l.appName}/${l.workerName}`);
      const running = w !== undefined && !isWorkerTerminal(w.state);
      let finishedAtMs: number | undefined;
      if (w && !running) finishedAtMs = w.finishedAtMs > 0 ? w.finishedAtMs : await finishedOnDisk(l.dir);
      else if (!w) finishedAtMs = await finishedOnDisk(l.dir);
      const bytes = measure && !running ? await duBytes(l.dir) : 0;
      entries.push({ appId: l.appName, workerId: l.workerName, running, finishedAtMs, bytes });
      const settling = readNow.get(l.appName);
      if (settling === null) continue;
      if (running || finishedAtMs === undefined || active.has(l.appName)) readNow.set(l.appName, null);
      else if (settling) settling.push({ workerName: l.workerName, finishedAtMs });
      else readNow.set(l.appName, [{ workerName: l.workerName, finishedAtMs }]);
    }
    const maxSettled = this.opts.maxSettledApps ?? DEFAULT_MAX_SETTLED_APPS;
    for (const [appName, dirs] of readNow) {
      if (this.settled.size >= maxSettled) break;
      if (dirs && !this.invalidated.has(appName)) this.settled.set(appName, dirs);
    }
    const doomed = selectWorkDirsToDelete({ dirs: entries, activeApps: active, disk, now }, this.opts.policy);
    const sizes = new Map(entries.map((e) => [`${e.appId}/${e.workerId}`, e.bytes]));
    const deleted: SweepResult['deleted'] = [];
    for (const d of doomed) {
      const dir = path.join(appsDir, d.appId, d.workerId);
      try {
        await fs.promises.rm(dir, { recursive: true, force: true });
        this.forget(d.appId, d.workerId);
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
    return { deleted, disk, appsRead };
  }

  /** A deleted directory leaves its settled app (and an app with none left, the settled ones). */
  private forget(appName: string, workerName: string): void {
    const dirs = this.settled.get(appName);
    if (!dirs) return;
    const left = dirs.filter((d) => d.workerName !== workerName);
    if (left.length > 0) this.settled.set(appName, left);
    else this.settled.delete(appName);
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
