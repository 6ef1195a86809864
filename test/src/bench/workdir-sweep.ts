#!/usr/bin/env node
/**
 * Benchmark (not a test): the agent's sweep of finished worker directories
 * (agent/src/shell/workdir-sweeper.ts) over many kept directories, as a busy node keeps a day of
 * them. Writes bench-results/workdir-sweep.json (`--out` to change).
 *
 * For each count of `--dirs`: that many apps, each with one finished worker directory (`stdout`,
 * `stderr`, `pid`, `exit`) under a temp work dir (on /dev/shm when there is one), none past
 * retention and none in the worker table (forgotten, as under load). Then, the CPU (user + system
 * of this process, libuv's pool included) and wall time of:
 * - `firstSweep`: an agent's first sweep, which reads every app's directory and `exit` file;
 * - `settledSweep`: the median of `--sweeps` later sweeps, with every app settled;
 * - `everyAppReadSweep`: the median of as many sweeps with every app invalidated first (each one
 *   read again, as every sweep did before apps were settled);
 * - `settledHeapBytesPerApp`: the heap the sweeper holds per settled app (the heap in use after a
 *   full collection, after the first sweep less before it; `node --expose-gc`, as make runs it).
 *
 *   make bench-workdir-sweep
 *   node --expose-gc test/dist/bench/workdir-sweep.js [--dirs 5000,20000] [--sweeps 3] [--out bench-results/workdir-sweep.json]
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { workerDir } from '@fuxi/agent';
import { WorkDirSweeper } from '@fuxi/agent/shell/workdir-sweeper';

const DAY_MS = 24 * 3_600_000;

interface Timed {
  cpuMs: number;
  wallMs: number;
  appsRead: number;
}

async function timed(sweeper: WorkDirSweeper): Promise<Timed> {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const r = await sweeper.sweep(Date.now());
  const c = process.cpuUsage(c0);
  return { cpuMs: Math.round((c.user + c.system) / 100) / 10, wallMs: Math.round((performance.now() - t0) * 10) / 10, appsRead: r.appsRead };
}

/** The heap in use after a full collection (run with --expose-gc; without it, garbage included). */
function liveHeapBytes(): number {
  (globalThis as { gc?: () => void }).gc?.();
  return process.memoryUsage().heapUsed;
}

function median(xs: Timed[]): Timed {
  const byCpu = [...xs].sort((a, b) => a.cpuMs - b.cpuMs);
  return byCpu[Math.floor(byCpu.length / 2)] as Timed;
}

async function measure(count: number, sweeps: number): Promise<Record<string, unknown>> {
  const base = existsSync('/dev/shm') ? '/dev/shm' : tmpdir();
  const workDir = mkdtempSync(join(base, 'fuxi-sweep-bench-'));
  try {
    const apps = Array.from({ length: count }, (_, i) => `job-${i}`);
    for (const app of apps) {
      const d = workerDir(workDir, app, 't.0.1');
      mkdirSync(d, { recursive: true });
      for (const f of ['stdout', 'stderr', 'pid', 'exit']) writeFileSync(join(d, f), '0\n');
    }
    const sweeper = new WorkDirSweeper({
      workDir,
      policy: { retentionMs: DAY_MS, maxDiskPercent: 100 },
      table: () => ({ workers: [], activeApps: new Set() }),
    });
    const heap0 = liveHeapBytes();
    const firstSweep = await timed(sweeper);
    // What the settled apps hold (the sweeper's memory of them), per app.
    const settledHeapBytesPerApp = Math.round((liveHeapBytes() - heap0) / count);
    const settled: Timed[] = [];
    for (let i = 0; i < sweeps; i++) settled.push(await timed(sweeper));
    const everyApp: Timed[] = [];
    for (let i = 0; i < sweeps; i++) {
      for (const app of apps) sweeper.invalidate(app);
      everyApp.push(await timed(sweeper));
    }
    const result = { dirs: count, firstSweep, settledSweep: median(settled), everyAppReadSweep: median(everyApp), settledHeapBytesPerApp };
    process.stderr.write(`${JSON.stringify(result)}\n`);
    return result;
  } finally {
    rmSync(workDir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      dirs: { type: 'string', default: '5000,20000' },
      sweeps: { type: 'string', default: '3' },
      out: { type: 'string', default: 'bench-results/workdir-sweep.json' },
    },
  });
  const counts = values.dirs.split(',').map((s) => Number(s.trim()));
  if (counts.some((n) => !Number.isInteger(n) || n <= 0))
    throw new Error(`--dirs must be positive integers separated by commas, got ${JSON.stringify(values.dirs)}`);
  const sweeps = Number(values.sweeps);
  if (!Number.isInteger(sweeps) || sweeps <= 0) throw new Error(`--sweeps must be a positive integer, got ${JSON.stringify(values.sweeps)}`);
  const runs = [];
  for (const n of counts) runs.push(await measure(n, sweeps));
  mkdirSync(dirname(values.out), { recursive: true });
  writeFileSync(values.out, `${JSON.stringify({ runs }, null, 2)}\n`);
  process.stdout.write(`${JSON.stringify({ runs })}\n`);
}

main().catch((e: unknown) => {
  process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(1);
});
