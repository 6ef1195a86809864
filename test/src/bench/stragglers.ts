#!/usr/bin/env node
/**
 * Benchmark (not a test): speculative execution against a slow host (`make bench-stragglers`).
 *
 * On a rack of its own (prefix fxs, 10.217.0: etcd, three masters and four agent hosts, each in its
 * own network namespace), shuffle jobs (deploy/examples/shuffle: maps write one partition per
 * reducer, reducers fetch theirs from every map's host through the agents' data service and check
 * every byte) run `--jobs` per speculation mode (`off`, `base`, `path`), the modes interleaved job
 * by job and `--concurrency` jobs at a time, first with no fault ("none"), then with one agent
 * host's link at 1 Mbit/s both ways (tc tbf; "slowHost"). Per job: completion time (submit to
 * done, as the client sees it), whether every reducer read every byte right, backups (the AM's
 * count of speculative attempts) and work (slot-seconds of every attempt, from the agents' worker
 * records; extra work = slot-seconds of attempts stopped by the AM, i.e. backups or originals that
 * lost, and attempts moved off a slow host).
 *
 * Writes bench-results/stragglers.json `{"none": {MODE: R}, "slowHost": {MODE: R}}` with R =
 * `{jobs, p50Ms, p90Ms, p95Ms, p99Ms, backups, extraWorkRatio}` (and `runs`: every job), and
 * bench-results/stragglers.svg (completion-time CDFs). Options: --jobs N (per mode and scenario,
 * default 8), --concurrency C (default 3), --maps M and --reduces R (default 6 and 6),
 * --partition-kib K (default 512), --rate RATE (default 1mbit), --out DIR.
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { FuxiClient } from '@fuxi/client';
import type { SpeculationMode } from '@fuxi/common';
import { REPO_ROOT, shuffleResultOk, shuffleSpec } from '@fuxi/deploy';
import { loadFuxiProto } from '@fuxi/proto';
import { connect } from '@fuxi/rpc';
import { RackCluster, startRack, startRackEtcd, type Rack } from '../rack/index.js';
import { percentile, round } from './sched/proc.js';

const PREFIX = 'fxs';
const SUBNET = '10.217.0';
const AGENT_HOSTS = 4;
const SLOW_HOST = 'a4';
const MODES = ['off', 'base', 'path'] as const;
type Mode = (typeof MODES)[number];
type Scenario = 'none' | 'slowHost';
const log = (msg: string): void => void process.stderr.write(`[bench-stragglers] ${msg}\n`);

interface JobRun {
  scenario: Scenario;
  mode: Mode;
  jobId: string;
  ms: number;
  ok: boolean;
  backups: number;
  slotSeconds: number;
  extraSlotSeconds: number;
}

export interface ModeResult {
  jobs: number;
  p50Ms: number;
  p90Ms: number;
  p95Ms: number;
  p99Ms: number;
  backups: number;
  extraWorkRatio: number;
  /** Jobs whose result was wrong or that did not succeed (0 expected). */
  wrong: number;
}

/** Slot-seconds of the job's task attempts on every agent, and of those the AM stopped (KILLED). */
async function work(client: FuxiClient, jobId: string): Promise<{ all: number; stopped: number }> {
  let all = 0;
  let stopped = 0;
  for (const n of await client.nodes()) {
    const agent = connect(loadFuxiProto().AgentService, n.node!.address, client.transport);
    try {
      for (const w of (await agent.ListWorkers({ appId: jobId })).workers) {
        if (!w.task || w.workerId.startsWith('am.')) continue;
        const started = Number(w.startedAtMs);
        const finished = Number(w.finishedAtMs);
        if (!(started > 0 && finished >= started)) continue;
        const s = (finished - started) / 1000;
        all += s;
        if (w.state === 'WORKER_STATE_KILLED') stopped += s;
      }
    } finally {
      agent.close();
    }
  }
  return { all, stopped };
}

async function runOne(client: FuxiClient, scenario: Scenario, mode: Mode, o: { maps: number; reduces: number; partitionBytes: number }): Promise<JobRun> {
  const spec = shuffleSpec(`st-${mode}`, { ...o, speculation: mode as SpeculationMode });
  const t0 = Date.now();
  const { jobId } = await client.submit(spec);
  const info = await client.waitFor(jobId);
  const ms = Date.now() - t0;
  const succeeded = info.state === 'JOB_STATE_SUCCEEDED';
  const ok = succeeded && (await shuffleResultOk(client, jobId, spec).catch(() => false));
  const backups = (info.tasks ?? []).reduce((s, t) => s + (t.backups ?? 0), 0);
  // The agents record a stopped worker's end a moment after the job is done.
  await new Promise((r) => setTimeout(r, 1500));
  const w = await work(client, jobId);
  return { scenario, mode, jobId, ms, ok, backups, slotSeconds: w.all, extraSlotSeconds: w.stopped };
}

async function runScenario(
  client: FuxiClient,
  scenario: Scenario,
  jobs: number,
  concurrency: number,
  o: { maps: number; reduces: number; partitionBytes: number },
): Promise<JobRun[]> {
  const queue: Mode[] = [];
  for (let i = 0; i < jobs; i++) for (const m of MODES) queue.push(m);
  const runs: JobRun[] = [];
  let done = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let m = queue.shift(); m; m = queue.shift()) {
        const r = await runOne(client, scenario, m, o);
        runs.push(r);
        done++;
        log(
          `${scenario} ${done}/${jobs * MODES.length}: ${r.mode} ${r.jobId} ${r.ms} ms ${r.ok ? 'ok' : 'WRONG'} backups ${r.backups} extra ${r.extraSlotSeconds.toFixed(1)}/${r.slotSeconds.toFixed(1)} slot-s`,
        );
      }
    }),
  );
  return runs;
}

export function summarize(runs: readonly JobRun[]): ModeResult {
  const ms = runs.map((r) => r.ms).sort((a, b) => a - b);
  const all = runs.reduce((s, r) => s + r.slotSeconds, 0);
  const extra = runs.reduce((s, r) => s + r.extraSlotSeconds, 0);
  return {
    jobs: runs.length,
    p50Ms: percentile(ms, 50),
    p90Ms: percentile(ms, 90),
    p95Ms: percentile(ms, 95),
    p99Ms: percentile(ms, 99),
    backups: runs.reduce((s, r) => s + r.backups, 0),
    extraWorkRatio: all > 0 ? round(extra / all, 4) : 0,
    wrong: runs.filter((r) => !r.ok).length,
  };
}

/** Completion-time CDFs, one line per (scenario, mode). */
function svg(runs: readonly JobRun[]): string {
  const W = 720;
  const H = 420;
  const pad = 55;
  const maxX = Math.max(...runs.map((r) => r.ms), 1);
  const x = (v: number) => pad + ((W - 2 * pad) * v) / maxX;
  const y = (v: number) => H - pad - (H - 2 * pad) * v;
  const colors: Record<Mode, string> = { off: '#444', base: '#1f77b4', path: '#d62728' };
  const lines: string[] = [];
  const legend: string[] = [];
  let i = 0;
  for (const scenario of ['none', 'slowHost'] as const) {
    for (const mode of MODES) {
      const ms = runs
        .filter((r) => r.scenario === scenario && r.mode === mode)
        .map((r) => r.ms)
        .sort((a, b) => a - b);
      if (ms.length === 0) continue;
      const pts = ms.map((v, k) => `${x(v).toFixed(1)},${y((k + 1) / ms.length).toFixed(1)}`);
      const dash = scenario === 'none' ? ' stroke-dasharray="5,4"' : '';
      lines.push(
        `<polyline fill="none" stroke="${colors[mode]}" stroke-width="2"${dash} points="${x(ms[0]!).toFixed(1)},${y(0).toFixed(1)} ${pts.join(' ')}"/>`,
      );
      legend.push(
        `<line x1="${W - 170}" y1="${pad + i * 18}" x2="${W - 145}" y2="${pad + i * 18}" stroke="${colors[mode]}" stroke-width="2"${dash}/><text x="${W - 140}" y="${pad + 4 + i * 18}" font-size="12">${scenario} ${mode}</text>`,
      );
      i++;
    }
  }
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif">
<rect width="${W}" height="${H}" fill="#fff"/>
<line x1="${pad}" y1="${H - pad}" x2="${W - pad}" y2="${H - pad}" stroke="#000"/><line x1="${pad}" y1="${pad}" x2="${pad}" y2="${H - pad}" stroke="#000"/>
<text x="${W / 2}" y="${H - 14}" font-size="13" text-anchor="middle">job completion time, ms (max ${maxX})</text>
<text x="16" y="${H / 2}" font-size="13" text-anchor="middle" transform="rotate(-90 16 ${H / 2})">fraction of jobs</text>
${lines.join('\n')}
${legend.join('\n')}
</svg>
`;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      jobs: { type: 'string' },
      concurrency: { type: 'string' },
      maps: { type: 'string' },
      reduces: { type: 'string' },
      'partition-kib': { type: 'string' },
      rate: { type: 'string' },
      out: { type: 'string' },
    },
  });
  const jobs = Number(values.jobs ?? 8);
  const concurrency = Number(values.concurrency ?? 3);
  const o = { maps: Number(values.maps ?? 6), reduces: Number(values.reduces ?? 6), partitionBytes: Number(values['partition-kib'] ?? 512) * 1024 };
  const rate = values.rate ?? '1mbit';
  const out = values.out ?? join(REPO_ROOT, 'bench-results');
  mkdirSync(out, { recursive: true });
  const dir = mkdtempSync(join(tmpdir(), 'fuxi-bench-stragglers-'));
  // Workers run as another user (nobody): they must be able to pass through.
  chmodSync(dir, 0o711);
  let rack: Rack | undefined;
  const runs: JobRun[] = [];
  try {
    rack = await startRack(AGENT_HOSTS, { prefix: PREFIX, subnet: SUBNET });
    const etcd = await startRackEtcd(rack);
    try {
      const rc = await RackCluster.start({
        dir: join(dir, 'cluster'),
        rack,
        etcd,
        agents: AGENT_HOSTS,
        agentHosts: AGENT_HOSTS,
        agentCpu: '2',
        agentMemory: '4Gi',
        heartbeatIntervalMs: 1000,
        logLevel: 'info',
      });
      const client = rc.ha.client({ retryForMs: 60_000 });
      try {
        await rc.ha.waitForNodes(AGENT_HOSTS, 60_000);
        log('warm-up job (not measured)');
        await runOne(client, 'none', 'off', o);
        runs.push(...(await runScenario(client, 'none', jobs, concurrency, o)));
        log(`slowing ${SLOW_HOST}'s link to ${rate} both ways`);
        await rack.slow(SLOW_HOST, rate);
        runs.push(...(await runScenario(client, 'slowHost', jobs, concurrency, o)));
        await rack.unslow(SLOW_HOST);
      } finally {
        client.close();
        await rc.stop();
      }
    } finally {
      await etcd.stop().catch(() => undefined);
    }
  } finally {
    await rack?.destroy().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  }
  const result: Record<string, unknown> = {};
  for (const scenario of ['none', 'slowHost'] as const) {
    const per: Record<string, ModeResult> = {};
    for (const m of MODES) per[m] = summarize(runs.filter((r) => r.scenario === scenario && r.mode === m));
    result[scenario] = per;
  }
  result.setup = { agentHosts: AGENT_HOSTS, slowHost: SLOW_HOST, rate, jobsPerMode: jobs, concurrency, ...o };
  result.runs = runs;
  writeFileSync(join(out, 'stragglers.json'), JSON.stringify(result, null, 2) + '\n');
  writeFileSync(join(out, 'stragglers.svg'), svg(runs));
  for (const scenario of ['none', 'slowHost'] as const) {
    for (const m of MODES) {
      const r = (result[scenario] as Record<string, ModeResult>)[m]!;
      log(
        `${scenario} ${m}: p50 ${r.p50Ms} p90 ${r.p90Ms} p99 ${r.p99Ms} ms, backups ${r.backups}, extra work ${(r.extraWorkRatio * 100).toFixed(2)} %, wrong ${r.wrong}`,
      );
    }
  }
  log(`wrote ${join(out, 'stragglers.json')} and stragglers.svg`);
}

main().catch((e: unknown) => {
  process.stderr.write(`${(e as Error).stack ?? String(e)}\n`);
  process.exit(1);
});
