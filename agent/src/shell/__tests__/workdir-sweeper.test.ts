/**
 * The work dir sweeper over a real temp dir: finished directories past retention go, with their
 * app directory once empty; running workers' directories and those of apps still active here stay;
 * above the disk threshold (an injected measure of the disk, the directories' real sizes) finished
 * ones go oldest first until the measure is under it; directories the worker table forgot are timed
 * by their `exit` file; an app whose directories are all finished is read once, until a worker of
 * it starts here again.
 */
import { expect } from 'chai';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { WorkerInfo } from '../../core/agent-core.js';
import { workerDir } from '../process-driver.js';
import { duBytes, statDisk, WorkDirSweeper, type WorkerTableView } from '../workdir-sweeper.js';

const H = 3_600_000;

describe('work dir sweeper (real files)', () => {
  let dir: string;
  let table: WorkerTableView;
  const NOW = Date.now();

  const worker = (appId: string, workerId: string, state: WorkerInfo['state'], finishedAtMs = 0): WorkerInfo =>
    ({ appId, workerId, task: 'map', instance: 0, attempt: 1, state, finishedAtMs }) as unknown as WorkerInfo;
  const make = (appId: string, workerId: string, bytes = 100): string => {
    const d = workerDir(dir, appId, workerId);
    fs.mkdirSync(path.join(d, 'out'), { recursive: true });
    fs.writeFileSync(path.join(d, 'stdout'), 'x'.repeat(bytes));
    fs.writeFileSync(path.join(d, 'out', 'part-0.json'), '{}');
    return d;
  };
  const exists = (appId: string, workerId: string) => fs.existsSync(workerDir(dir, appId, workerId));

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fuxi-sweep-'));
    table = { workers: [], activeApps: new Set() };
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('deletes finished directories past retention, never a running one, nor those of an app still active', async () => {
    make('done', 'map.0.1');
    make('done', 'map.1.1');
    make('live', 'map.0.1');
    make('live', 'map.1.1');
    make('fresh', 'map.0.1');
    table = {
      workers: [
        worker('done', 'map.0.1', 'SUCCEEDED', NOW - 25 * H),
        worker('done', 'map.1.1', 'FAILED', NOW - 30 * H),
        worker('live', 'map.0.1', 'SUCCEEDED', NOW - 48 * H),
        worker('live', 'map.1.1', 'RUNNING'),
        worker('fresh', 'map.0.1', 'SUCCEEDED', NOW - H),
      ],
      activeApps: new Set(['live']),
    };
    const sweeper = new WorkDirSweeper({ workDir: dir, policy: { retentionMs: 24 * H, maxDiskPercent: 100 }, table: () => table });
    const r = await sweeper.sweep(NOW);
    expect(r.deleted.map((d) => `${d.appId}/${d.workerId}:${d.reason}`)).to.deep.equal(['done/map.1.1:retention', 'done/map.0.1:retention']);
    expect(fs.existsSync(path.join(dir, 'apps', 'done'))).to.equal(false);
    expect([exists('live', 'map.0.1'), exists('live', 'map.1.1'), exists('fresh', 'map.0.1')]).to.deep.equal([true, true, true]);
    expect(r.disk.totalBytes).to.be.greaterThan(0);

    // The app is done here: its finished directory goes on the next sweep; the running one never.
    table = { workers: [worker('live', 'map.0.1', 'SUCCEEDED', NOW - 48 * H), worker('live', 'map.1.1', 'RUNNING')], activeApps: new Set() };
    await sweeper.sweep(NOW);
    expect([exists('live', 'map.0.1'), exists('live', 'map.1.1')]).to.deep.equal([false, true]);
  });

  it('times a directory the worker table forgot by its exit file, and keys ids as the driver names them', async () => {
    const old = make('app/with slash', 'w.0.1');
    fs.writeFileSync(path.join(old, 'exit'), '0');
    const t = (NOW - 50 * H) / 1000;
    fs.utimesSync(path.join(old, 'exit'), t, t);
    const recent = make('app/with slash', 'w.1.1');
    fs.writeFileSync(path.join(recent, 'exit'), '0');
    const sweeper = new WorkDirSweeper({ workDir: dir, policy: { retentionMs: 24 * H, maxDiskPercent: 100 }, table: () => table });
    expect((await sweeper.sweep(NOW)).deleted.map((d) => d.reason)).to.deep.equal(['retention']);
    expect([exists('app/with slash', 'w.0.1'), exists('app/with slash', 'w.1.1')]).to.deep.equal([false, true]);

    // Still active (a grant here): kept past retention.
    table = { workers: [], activeApps: new Set(['app/with slash']) };
    expect((await sweeper.sweep(NOW + 100 * H)).deleted).to.deep.equal([]);
  });

  it('above the disk threshold deletes finished directories oldest first, running apps too, until under it', async () => {
    for (const i of [0, 1, 2]) make('a', `map.${i}.1`, 64 * 1024);
    make('a', 'reduce.0.1', 64 * 1024);
    const size = await duBytes(workerDir(dir, 'a', 'map.0.1'));
    expect(size).to.be.greaterThan(64 * 1024 - 1);
    table = {
      workers: [
        worker('a', 'map.0.1', 'SUCCEEDED', NOW - 3 * H),
        worker('a', 'map.1.1', 'SUCCEEDED', NOW - 1 * H),
        worker('a', 'map.2.1', 'SUCCEEDED', NOW - 2 * H),
        worker('a', 'reduce.0.1', 'RUNNING'),
      ],
      activeApps: new Set(['a']),
    };
    // A disk of 100 directory sizes with 91.5 of them used: two directories bring it to 89.5% (<= 90%).
    const disk = async () => ({ totalBytes: 100 * size, usedBytes: 91.5 * size });
    const sweeper = new WorkDirSweeper({ workDir: dir, policy: { retentionMs: 24 * H, maxDiskPercent: 90 }, table: () => table, disk });
    const r = await sweeper.sweep(NOW);
    expect(r.deleted.map((d) => `${d.workerId}:${d.reason}`)).to.deep.equal(['map.0.1:disk', 'map.2.1:disk']);
    expect([exists('a', 'map.1.1'), exists('a', 'reduce.0.1')]).to.deep.equal([true, true]);
  });

  it('reads a settled app no more: its finished directories come from memory, and still go past retention', async () => {
    make('done', 'map.0.1');
    make('done', 'map.1.1');
    table = { workers: [worker('done', 'map.0.1', 'SUCCEEDED', NOW - H), worker('done', 'map.1.1', 'FAILED', NOW - 2 * H)], activeApps: new Set() };
    const sweeper = new WorkDirSweeper({ workDir: dir, policy: { retentionMs: 24 * H, maxDiskPercent: 100 }, table: () => table });
    expect((await sweeper.sweep(NOW)).appsRead).to.equal(1);
    // The table forgot both, and nothing would tell their finish on disk (no exit files): memory does.
    table = { workers: [], activeApps: new Set() };
    const r = await sweeper.sweep(NOW + 22.5 * H);
    expect([r.appsRead, r.deleted.map((d) => d.workerId)]).to.deep.equal([0, ['map.1.1']]);
    const r2 = await sweeper.sweep(NOW + 25.5 * H);
    expect([r2.appsRead, r2.deleted.map((d) => d.workerId)]).to.deep.equal([0, ['map.0.1']]);
    expect(fs.existsSync(path.join(dir, 'apps', 'done'))).to.equal(false);
  });

  it('reads an app again once a worker of it starts here (invalidate), and sees the new directory', async () => {
    make('a', 'map.0.1');
    table = { workers: [worker('a', 'map.0.1', 'SUCCEEDED', NOW - 30 * H)], activeApps: new Set(['a']) };
    const sweeper = new WorkDirSweeper({ workDir: dir, policy: { retentionMs: 24 * H, maxDiskPercent: 100 }, table: () => table });
    // Active: read, kept, not settled.
    expect([(await sweeper.sweep(NOW)).appsRead, exists('a', 'map.0.1')]).to.deep.equal([1, true]);
    expect((await sweeper.sweep(NOW)).appsRead).to.equal(1);
    // A running worker keeps it unsettled too, with its app no longer active.
    make('a', 'map.1.1');
    table = { workers: [worker('a', 'map.0.1', 'SUCCEEDED', NOW - 30 * H), worker('a', 'map.1.1', 'RUNNING')], activeApps: new Set() };
    expect((await sweeper.sweep(NOW)).appsRead).to.equal(1);
    table = { workers: [worker('a', 'map.1.1', 'SUCCEEDED', NOW - H)], activeApps: new Set() };
    expect((await sweeper.sweep(NOW)).appsRead).to.equal(1); // settled now: map.0.1 went at the sweep before
    expect((await sweeper.sweep(NOW)).appsRead).to.equal(0);

    // A new attempt runs a worker here and ends before the next sweep; the table has forgotten it.
    sweeper.invalidate('a');
    const d = make('a', 'map.0.2');
    fs.writeFileSync(path.join(d, 'exit'), '0');
    const t = (NOW - 40 * H) / 1000;
    fs.utimesSync(path.join(d, 'exit'), t, t);
    table = { workers: [], activeApps: new Set() };
    const r = await sweeper.sweep(NOW);
    expect([r.appsRead, r.deleted.map((x) => x.workerId)]).to.deep.equal([1, ['map.0.2']]);
  });

  it('does not settle an app invalidated while a sweep read it, and forgets one removed by someone else', async () => {
    make('a', 'map.0.1');
    make('b', 'map.0.1');
    table = { workers: [worker('a', 'map.0.1', 'SUCCEEDED', NOW - H), worker('b', 'map.0.1', 'SUCCEEDED', NOW - H)], activeApps: new Set() };
    const sweeper = new WorkDirSweeper({ workDir: dir, policy: { retentionMs: 24 * H, maxDiskPercent: 100 }, table: () => table });
    const first = sweeper.sweep(NOW);
    sweeper.invalidate('a'); // while the sweep reads the disk
    expect((await first).appsRead).to.equal(2);
    expect((await sweeper.sweep(NOW)).appsRead).to.equal(1); // a again; b settled
    fs.rmSync(path.join(dir, 'apps', 'b'), { recursive: true });
    const r = await sweeper.sweep(NOW + 30 * H);
    expect([r.appsRead, r.deleted.map((x) => `${x.appId}/${x.workerId}`)]).to.deep.equal([0, ['a/map.0.1']]);
  });

  it('settles at most maxSettledApps apps; the others are read at every sweep', async () => {
    make('a', 'map.0.1');
    make('b', 'map.0.1');
    table = { workers: [worker('a', 'map.0.1', 'SUCCEEDED', NOW - H), worker('b', 'map.0.1', 'SUCCEEDED', NOW - H)], activeApps: new Set() };
    const sweeper = new WorkDirSweeper({ workDir: dir, policy: { retentionMs: 24 * H, maxDiskPercent: 100 }, table: () => table, maxSettledApps: 1 });
    expect((await sweeper.sweep(NOW)).appsRead).to.equal(2);
    expect((await sweeper.sweep(NOW)).appsRead).to.equal(1);
    const r = await sweeper.sweep(NOW + 30 * H);
    expect(r.deleted.map((x) => x.appId).sort()).to.deep.equal(['a', 'b']);
  });

  it('measures the real file system as df does', async () => {
    const d = await statDisk(dir);
    expect(d.usedBytes).to.be.within(1, d.totalBytes);
  });
});
