#!/usr/bin/env node
/**
 * Benchmark (not a test): how fast the `fuxi` CLI and a job's application master start.
 *
 * Starts a local cluster on loopback (a master and one agent), then
 * - `helpMs`: the wall time of a cold `fuxi --help` (a new process each run);
 * - `cliColdStartMs`: the wall time of a cold `fuxi submit` of a one-instance `/bin/true` job, spawn
 *   to exit. Each run waits until its job has finished and the cluster is quiet before the next,
 *   so the AM and worker of one job never compete with the next run for the CPU;
 * - `amStartToRegisteredMs`: for each of those jobs, from the agent starting the AM process
 *   (`worker started` in the agent's log) to the AM's `registered with the master` line;
 * - `bareNodeMs`: `node -e 0`, the floor for any Node program here.
 * Medians and p90 of `--runs` runs (20). Writes bench-results/cli.json (`--out`).
 *
 *   make bench-cli
 *   node test/dist/bench/cli.js [--runs 20] [--cli client/dist/cli/start.cjs] [--am-command 'node appmaster/…/main.js'] [--out FILE] [--keep]
 *
 * `--cli` and `--am-command` measure other builds (an older checkout, say) against the same cluster.
 */
import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { BIN, LocalCluster } from '@fuxi/deploy';
import { codeCacheOf } from './code-cache.js';

const here = dirname(fileURLToPath(import.meta.url));
/** The repository root (this file is test/dist/bench/cli.js). */
const REPO = join(here, '..', '..', '..');
const say = (s: string) => process.stderr.write(`[bench-cli ${new Date().toISOString().slice(11, 23)}] ${s}\n`);
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

interface Options {
  runs: number;
  cli: string;
  amCommand: string;
  out: string;
  keep: boolean;
}

function options(): Options {
  const { values } = parseArgs({
    options: {
      runs: { type: 'string', default: '20' },
      cli: { type: 'string', default: BIN.cli },
      'am-command': { type: 'string', default: '' },
      out: { type: 'string', default: join(REPO, 'bench-results', 'cli.json') },
      keep: { type: 'boolean', default: false },
    },
    strict: true,
  });
  const runs = Number(values.runs);
  if (!Number.isInteger(runs) || runs < 1) throw new Error(`--runs must be an integer >= 1, got ${JSON.stringify(values.runs)}`);
  return { runs, cli: resolve(values.cli), amCommand: values['am-command'], out: resolve(values.out), keep: values.keep };
}

/**
 * Runs `node args` to its exit (or, when `args[0]` is a built bin, `*.cjs`, that bin itself, as a
 * user runs it: its `#!` line picks how Node starts); its wall time in ms, and its output.
 */
function timed(args: string[], env: Record<string, string> = {}): Promise<{ ms: number; code: number | null; stdout: string; stderr: string }> {
  const [cmd, argv] = args[0]?.endsWith('.cjs') ? [args[0], args.slice(1)] : [process.execPath, args];
  return new Promise((res, rej) => {
    const t0 = performance.now();
    const child = spawn(cmd, argv, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', rej);
    child.on('close', (code) => res({ ms: performance.now() - t0, code, stdout, stderr }));
  });
}

function stats(xs: number[]): { median: number; p90: number; min: number; max: number } {
  const s = [...xs].sort((a, b) => a - b);
  const at = (q: number) => s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))]!;
  const r = (x: number) => Math.round(x * 10) / 10;
  return { median: r(at(0.5)), p90: r(at(0.9)), min: r(s[0]!), max: r(s[s.length - 1]!) };
}

function jsonLines(file: string): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    try {
      if (line.startsWith('{')) out.push(JSON.parse(line) as Record<string, unknown>);
    } catch {
      /* a partial line */
    }
  }
  return out;
}

/** Spawn of the AM by the agent to its registration, for the AM of `appId` (attempt 1). */
function amStartToRegistered(cluster: LocalCluster, appId: string): number | undefined {
  const agent = cluster.agents[0]!;
  const started = jsonLines(agent.logFile).find((r) => r.msg === 'worker started' && r.appId === appId && String(r.workerId).startsWith('am.'));
  if (!started) return undefined;
  const amLog = join(agent.workDir, 'apps', appId, String(started.workerId), 'stdout');
  const registered = jsonLines(amLog).find((r) => r.msg === 'registered with the master');
  if (!registered) return undefined;
  return Date.parse(String(registered.time)) - Date.parse(String(started.time));
}

async function main(): Promise<void> {
  const o = options();
  const dir = mkdtempSync(join(tmpdir(), 'fuxi-bench-cli-'));
  // Workers run as another user (nobody): they must be able to pass through.
  chmodSync(dir, 0o711);
  const spec = join(dir, 'true.yaml');
  writeFileSync(spec, 'name: bench-true\ntasks:\n  - name: t\n    instances: 1\n    resources: { cpu: 0.1, memory: 16Mi }\n    command: ["/bin/true"]\n');
  say(`cluster in ${dir}; CLI ${o.cli}${o.amCommand ? `; AM ${o.amCommand}` : ''}`);
  const cluster = await LocalCluster.start({
    dir,
    agents: 1,
    agentCpu: '2',
    agentMemory: '2Gi',
    logLevel: 'info',
    ...(o.amCommand ? { agentArgs: ['--am-command', o.amCommand] } : {}),
  });
  const client = cluster.client();
  const cacheBefore = codeCacheOf(o.cli);
  try {
    const bare: number[] = [];
    const help: number[] = [];
    for (let i = 0; i < o.runs; i++) {
      bare.push((await timed(['-e', '0'])).ms);
      const h = await timed([o.cli, '--help']);
      if (h.code !== 0) throw new Error(`fuxi --help exited ${h.code}: ${h.stderr}`);
      help.push(h.ms);
    }
    say(`--help: median ${stats(help).median} ms (bare node ${stats(bare).median} ms)`);

    const submit: number[] = [];
    const am: number[] = [];
    for (let i = 0; i < o.runs; i++) {
      const r = await timed([o.cli, '--master', cluster.masterAddress, 'submit', spec, '--id', `bench-cli-${i}`], cluster.clientEnv());
      if (r.code !== 0) throw new Error(`fuxi submit exited ${r.code}: ${r.stderr}`);
      submit.push(r.ms);
      const jobId = r.stdout.trim();
      const end = await client.waitFor(jobId);
      if (end.state !== 'JOB_STATE_SUCCEEDED') throw new Error(`job ${jobId} ended ${end.state}: ${end.message}`);
      // Let the AM and the worker exit and the agent report before the next cold start.
      await sleep(500);
      const ms = amStartToRegistered(cluster, jobId);
      if (ms !== undefined) am.push(ms);
      say(`submit ${i + 1}/${o.runs}: ${Math.round(r.ms)} ms (AM registered ${ms ?? '?'} ms after its start)`);
    }

    const s = stats(submit);
    const h = stats(help);
    const a = am.length ? stats(am) : undefined;
    const result = {
      cliColdStartMs: s.median,
      cliColdStartP90Ms: s.p90,
      helpMs: h.median,
      helpP90Ms: h.p90,
      amStartToRegisteredMs: a?.median ?? null,
      amStartToRegisteredP90Ms: a?.p90 ?? null,
      bareNodeMs: stats(bare).median,
      // The code cache the CLI ran with, before the first run and after the last.
      codeCacheBefore: cacheBefore,
      codeCacheAfter: codeCacheOf(o.cli),
      runs: o.runs,
      cli: o.cli,
      amCommand: o.amCommand || 'the agent default (fuxi-appmaster of this installation)',
      node: process.version,
      samples: { submitMs: submit.map(Math.round), helpMs: help.map(Math.round), amStartToRegisteredMs: am },
      at: new Date().toISOString(),
    };
    mkdirSync(dirname(o.out), { recursive: true });
    writeFileSync(o.out, `${JSON.stringify(result, null, 2)}\n`);
    process.stdout.write(
      `cliColdStartMs ${s.median} (p90 ${s.p90}), helpMs ${h.median} (p90 ${h.p90}), ` +
        `amStartToRegisteredMs ${a?.median ?? '?'} (p90 ${a?.p90 ?? '?'}), bare node ${stats(bare).median} ms, ` +
        `code cache level ${cacheBefore?.level ?? 'none'}; wrote ${o.out}\n`,
    );
  } finally {
    client.close();
    await cluster.stop({ killWorkers: true });
    if (!o.keep) rmSync(dir, { recursive: true, force: true });
    else say(`kept ${dir}`);
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`bench-cli: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(1);
});
