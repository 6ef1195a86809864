/**
 * Benchmark (not a test): failure prediction off and on, on the node simulator (test/src/sim):
 * a real master process (embedded store), one simulated-node host (agent-host.ts: real `Agent`s
 * with simulated workers, real in-process AMs) and the same job mix twice, once with the master's
 * `failurePrediction: false`, once on. Real time, scaled down (tasks of seconds).
 *
 * Hosts have a hidden failure proneness the master never sees (agent-host.ts `--proneness`):
 * some fail 45 % of their workers, some fail 60 % of those started with 70 % of their memory in
 * use, some flap (their agent pauses for 3-6 s every 15-40 s: the master sees them time out and
 * come back). Some jobs have a task that fails 40 % of its attempts anywhere (SIM_FAIL_PROBABILITY).
 * An attempt's luck is a hash of (job, worker id), so both runs draw the same for the same attempt
 * number. Every instance has 3 attempts; a job fails when one of its instances used them all.
 *
 * Measured per run: failedAttempts (simulated workers that exited non-zero), failedJobs, jobs,
 * meanJctMs (submit to end, the master's times), wastedSlotSeconds (time of workers that did not
 * succeed: failed, or stopped). Writes bench-results/prediction.json `{"off": P, "on": P}`.
 *
 *   node test/dist/bench/prediction-sim.js [--seed N] [--jobs N] [--nodes N] [--submit-every-ms N] [--config '{"reschedulePenalty": 10}']
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { seededRandom } from '@fuxi/common';
import { LocalCluster, REPO_ROOT } from '@fuxi/deploy';
import { job } from '../harness.js';
import { SimHost } from './paper/sim-hosts.js';

interface Result {
  failedAttempts: number;
  failedJobs: number;
  jobs: number;
  meanJctMs: number;
  wastedSlotSeconds: number;
}

const { values: args } = parseArgs({
  options: {
    seed: { type: 'string', default: '3' },
    jobs: { type: 'string', default: '150' },
    nodes: { type: 'string', default: '24' },
    'submit-every-ms': { type: 'string', default: '1000' },
    config: { type: 'string', default: '{}' },
    keep: { type: 'boolean', default: false },
  },
  strict: true,
});
const SEED = Number(args.seed);
const JOBS = Number(args.jobs);
const NODES = Number(args.nodes);
const EVERY_MS = Number(args['submit-every-ms']);
// Scaled to the run's minutes: a model from 40 ends, retrained every 20 ends at most every 2 s.
const ON_CONFIG = { minSamples: 40, retrainAfter: 20, trainIntervalMs: 2000, decideIntervalMs: 2000, ...(JSON.parse(args.config) as Record<string, number>) };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

type Kind = 'sound' | 'failing' | 'flapping' | 'memory';

/** Node kinds from the seed: an eighth failing, an eighth flapping, a sixth failing under memory pressure. */
function kinds(): Map<string, Kind> {
  const rand = seededRandom(SEED);
  const width = String(NODES).length;
  const ids = Array.from({ length: NODES }, (_, i) => `p-n${String(i + 1).padStart(width, '0')}`);
  for (let i = ids.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [ids[i], ids[j]] = [ids[j]!, ids[i]!];
  }
  const out = new Map<string, Kind>();
  const nFail = Math.round(NODES / 8);
  const nFlap = Math.round(NODES / 8);
  const nMem = Math.round(NODES / 6);
  ids.forEach((id, i) => out.set(id, i < nFail ? 'failing' : i < nFail + nFlap ? 'flapping' : i < nFail + nFlap + nMem ? 'memory' : 'sound'));
  return out;
}

/** The job mix from the seed: 1-2 stages of 3-10 instances, 2-6 s each, 1-3 GiB; 6 % with a buggy task. */
function jobs(): Array<ReturnType<typeof job>> {
  const rand = seededRandom(SEED * 7919 + 1);
  return Array.from({ length: JOBS }, (_, j) => {
    const stages = rand() < 0.5 ? 1 : 2;
    const buggy = rand() < 0.06 ? Math.floor(rand() * stages) : -1;
    const tasks = Array.from({ length: stages }, (_, s) => ({
      name: `t${s}`,
      instances: 3 + Math.floor(rand() * 8),
      maxAttempts: 3,
      resources: { cpu: 1, memory: 1024 * (1 + Math.floor(rand() * 3)) },
      command: ['sim'],
      env: { SIM_DURATION_MS: String(2000 + Math.floor(rand() * 4000)), ...(s === buggy ? { SIM_FAIL_PROBABILITY: '0.4' } : {}) },
      ...(s > 0 ? { dependsOn: [`t${s - 1}`] } : {}),
    }));
    return job({ id: `j${String(j).padStart(3, '0')}`, name: `j${j}`, am: { cpu: '100m', memory: 64 }, tasks });
  });
}

async function run(mode: 'off' | 'on'): Promise<{ result: Result; verdicts: number; trainings: number; listed: string[] }> {
  const dir = mkdtempSync(join(tmpdir(), `fuxi-bench-predict-${mode}-`));
  const cfg = join(dir, 'master.yaml');
  writeFileSync(cfg, `failurePrediction: ${mode === 'off' ? 'false' : JSON.stringify(ON_CONFIG)}\n`);
  const cluster = await LocalCluster.start({
    dir,
    agents: 0,
    // Simulated hosts dial in plaintext.
    insecure: true,
    heartbeatIntervalMs: 500,
    agentTimeoutMs: 20_000,
    logLevel: 'info',
    masterArgs: ['--config', cfg],
  });
  const k = kinds();
  const proneness: Record<string, Record<string, number>> = {};
  for (const [id, kind] of k) {
    if (kind === 'failing') proneness[id] = { fail: 0.45 };
    if (kind === 'memory') proneness[id] = { memoryFail: 0.6, memoryAt: 0.7 };
  }
  let host: SimHost | undefined;
  let flapping = true;
  try {
    host = await SimHost.start({
      index: 0,
      prefix: 'p',
      nodes: NODES,
      masters: [cluster.masterAddress],
      dir,
      cpu: '4',
      memory: '8Gi',
      proneness: JSON.stringify(proneness),
    });
    await cluster.waitForNodes(NODES, 60_000);
    const client = cluster.client();
    // Flapping hosts: the agent pauses 3-6 s every 15-40 s (the same schedule in both runs).
    const flaps = [...k].filter(([, kind]) => kind === 'flapping').map(([id]) => id);
    const h = host;
    const flapper = Promise.all(
      flaps.map(async (id, i) => {
        const rand = seededRandom(SEED * 31 + i);
        for (;;) {
          await sleep(15_000 + rand() * 25_000);
          if (!flapping) return;
          await h.command('pause-agent', id, String(3000 + Math.floor(rand() * 3000))).catch(() => undefined);
        }
      }),
    );
    const specs = jobs();
    const t0 = Date.now();
    for (const [i, spec] of specs.entries()) {
      const wait = t0 + i * EVERY_MS - Date.now();
      if (wait > 0) await sleep(wait);
      await client.submit(spec);
    }
    const ends = await client.waitAll({ jobIds: specs.map((s) => s.jobId) }, { endsOnly: true });
    flapping = false;
    const stats = (await host.command('stats')).apps as Record<string, { failed: number; wastedMs: number }>;
    let failedAttempts = 0;
    let wastedMs = 0;
    for (const [appId, a] of Object.entries(stats)) {
      if (!appId.startsWith('j')) continue;
      failedAttempts += a.failed;
      wastedMs += a.wastedMs;
    }
    const infos = [...ends.values()];
    const jct = infos.map((j) => Number(j.finishedAtMs) - Number(j.submittedAtMs));
    const result: Result = {
      failedAttempts,
      failedJobs: infos.filter((j) => j.state === 'JOB_STATE_FAILED').length,
      jobs: infos.length,
      meanJctMs: Math.round(jct.reduce((s, x) => s + x, 0) / Math.max(1, jct.length)),
      wastedSlotSeconds: Math.round(wastedMs / 1000),
    };
    const log = readFileSync(cluster.master.logFile, 'utf8');
    const verdicts = (log.match(/ATLAS\+ verdict on a running attempt/g) ?? []).length;
    const trainings = (log.match(/"msg":"failure model trained"/g) ?? []).length;
    const listed = (await client.nodes())
      .filter((n) => n.prediction === 'blocked' || n.prediction === 'gray')
      .map((n) => `${n.node?.nodeId}:${n.prediction}:${k.get(n.node?.nodeId ?? '')}`);
    void flapper;
    return { result, verdicts, trainings, listed };
  } finally {
    flapping = false;
    await host?.stop();
    await cluster.stop({ killWorkers: true });
    if (!args.keep) rmSync(dir, { recursive: true, force: true });
    else process.stderr.write(`(kept ${dir})\n`);
  }
}

async function main(): Promise<void> {
  const off = await run('off');
  process.stdout.write(`off: ${JSON.stringify(off)}\n`);
  const on = await run('on');
  process.stdout.write(`on: ${JSON.stringify(on)}\n`);
  const pct = (a: number, b: number) => (a === 0 ? 0 : Math.round(((b - a) / a) * 1000) / 10);
  process.stdout.write(
    `failed attempts ${pct(off.result.failedAttempts, on.result.failedAttempts)} %, failed jobs ${pct(off.result.failedJobs, on.result.failedJobs)} %, ` +
      `mean JCT ${pct(off.result.meanJctMs, on.result.meanJctMs)} %, wasted slot-seconds ${pct(off.result.wastedSlotSeconds, on.result.wastedSlotSeconds)} %\n`,
  );
  const out = join(REPO_ROOT, 'bench-results');
  mkdirSync(out, { recursive: true });
  writeFileSync(join(out, 'prediction.json'), JSON.stringify({ off: off.result, on: on.result }, null, 2) + '\n');
}

main().catch((e: unknown) => {
  process.stderr.write(`prediction-sim: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(1);
});
