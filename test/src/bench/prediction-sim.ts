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
 * Measured per run: failedAttempts (simulated workers that exited non-zero, plus attempts
 * prediction killed early: their AM counts those as failed), failedJobs, jobs, meanJctMs (submit to
 * end, the master's times), wastedSlotSeconds (time of workers that did not succeed: failed, or
 * stopped). Printed apart: failed attempts by node kind, those before the first model (cold start),
 * and the verdicts by action.
 *
 * Every seed (default 1, 2 and 3: about 6 minutes each) runs off and on back to back, in turn
 * off-first and on-first, so both see the same load from whatever else runs on the machine. Writes
 * bench-results/prediction.json `{"off": P, "on": P, "seeds": [{seed, off: P, on: P}]}`, P summed
 * over the seeds (meanJctMs: the mean over all jobs).
 *
 *   node test/dist/bench/prediction-sim.js [--seeds 1,2,3 | --seed N] [--jobs N] [--nodes N] [--submit-every-ms N] [--config '{"reschedulePenalty": 10}']
 */
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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
    seed: { type: 'string' },
    seeds: { type: 'string', default: '1,2,3' },
    jobs: { type: 'string', default: '150' },
    nodes: { type: 'string', default: '24' },
    'submit-every-ms': { type: 'string', default: '1000' },
    config: { type: 'string', default: '{}' },
    keep: { type: 'boolean', default: false },
  },
  strict: true,
});
const SEEDS = (args.seed ?? args.seeds).split(',').map(Number);
const JOBS = Number(args.jobs);
const NODES = Number(args.nodes);
const EVERY_MS = Number(args['submit-every-ms']);
// Scaled to the run's minutes: a model from 40 ends, retrained every 20 ends at most every 2 s.
const ON_CONFIG = { minSamples: 40, retrainAfter: 20, trainIntervalMs: 2000, decideIntervalMs: 2000, ...(JSON.parse(args.config) as Record<string, number>) };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

type Kind = 'sound' | 'failing' | 'flapping' | 'memory';

/** Node kinds from the seed: an eighth failing, an eighth flapping, a sixth failing under memory pressure. */
function kinds(seed: number): Map<string, Kind> {
  const rand = seededRandom(seed);
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
function jobs(seed: number): Array<ReturnType<typeof job>> {
  const rand = seededRandom(seed * 7919 + 1);
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

interface Run {
  result: Result;
  /** Verdicts on running attempts by action, and trainings of the model. */
  verdicts: Record<string, number>;
  trainings: number;
  /** Failed attempts (exited non-zero) by node kind, and of them those before the first model. */
  failedByKind: Record<string, number>;
  coldStartFailures: number;
  listed: string[];
}

async function run(mode: 'off' | 'on', seed: number): Promise<Run> {
  const dir = mkdtempSync(join(tmpdir(), `fuxi-bench-predict-${mode}-`));
  // Workers run as another user (nobody): they must be able to pass through.
  chmodSync(dir, 0o711);
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
  const k = kinds(seed);
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
        const rand = seededRandom(seed * 31 + i);
        for (;;) {
          await sleep(15_000 + rand() * 25_000);
          if (!flapping) return;
          await h.command('pause-agent', id, String(3000 + Math.floor(rand() * 3000))).catch(() => undefined);
        }
      }),
    );
    const specs = jobs(seed);
    const t0 = Date.now();
    for (const [i, spec] of specs.entries()) {
      const wait = t0 + i * EVERY_MS - Date.now();
      if (wait > 0) await sleep(wait);
      await client.submit(spec);
    }
    const ends = await client.waitAll({ jobIds: specs.map((s) => s.jobId) }, { endsOnly: true });
    flapping = false;
    const reply = await host.command('stats');
    const stats = reply.apps as Record<string, { failed: number; wastedMs: number }>;
    const byNode = reply.nodes as Record<string, { failed: number; failedAtMs: number[] }>;
    let failedAttempts = 0;
    let wastedMs = 0;
    for (const [appId, a] of Object.entries(stats)) {
      if (!appId.startsWith('j')) continue;
      failedAttempts += a.failed;
      wastedMs += a.wastedMs;
    }
    const log = readFileSync(cluster.master.logFile, 'utf8');
    const verdicts: Record<string, number> = {};
    let firstModelMs = Infinity;
    let trainings = 0;
    for (const line of log.split('\n')) {
      if (line.includes('ATLAS+ verdict on a running attempt')) {
        const action = (JSON.parse(line) as { action: string }).action;
        verdicts[action] = (verdicts[action] ?? 0) + 1;
      } else if (line.includes('"msg":"failure model trained"')) {
        trainings++;
        // pino's isoTime
        firstModelMs = Math.min(firstModelMs, Date.parse((JSON.parse(line) as { time: string }).time));
      }
    }
    // An attempt killed early on a prediction is a failed attempt to its AM (it uses up a retry).
    failedAttempts += verdicts['kill'] ?? 0;
    const failedByKind: Record<string, number> = {};
    let coldStartFailures = 0;
    for (const [nodeId, n] of Object.entries(byNode)) {
      const kind = k.get(nodeId) ?? 'sound';
      failedByKind[kind] = (failedByKind[kind] ?? 0) + n.failed;
      coldStartFailures += n.failedAtMs.filter((t) => t < firstModelMs).length;
    }
    if (mode === 'off') coldStartFailures = 0;
    const infos = [...ends.values()];
    const jct = infos.map((j) => Number(j.finishedAtMs) - Number(j.submittedAtMs));
    const result: Result = {
      failedAttempts,
      failedJobs: infos.filter((j) => j.state === 'JOB_STATE_FAILED').length,
      jobs: infos.length,
      meanJctMs: Math.round(jct.reduce((s, x) => s + x, 0) / Math.max(1, jct.length)),
      wastedSlotSeconds: Math.round(wastedMs / 1000),
    };
    const listed = (await client.nodes())
      .filter((n) => n.prediction === 'blocked' || n.prediction === 'gray')
      .map((n) => `${n.node?.nodeId}:${n.prediction}:${k.get(n.node?.nodeId ?? '')}`);
    void flapper;
    return { result, verdicts, trainings, failedByKind, coldStartFailures, listed };
  } finally {
    flapping = false;
    await host?.stop();
    await cluster.stop({ killWorkers: true });
    if (!args.keep) rmSync(dir, { recursive: true, force: true });
    else process.stderr.write(`(kept ${dir})\n`);
  }
}

const pct = (a: number, b: number) => (a === 0 ? 0 : Math.round(((b - a) / a) * 1000) / 10);

function change(off: Result, on: Result): string {
  return (
    `failed attempts ${pct(off.failedAttempts, on.failedAttempts)} %, failed jobs ${pct(off.failedJobs, on.failedJobs)} %, ` +
    `mean JCT ${pct(off.meanJctMs, on.meanJctMs)} %, wasted slot-seconds ${pct(off.wastedSlotSeconds, on.wastedSlotSeconds)} %`
  );
}

/** Summed over seeds; the mean JCT over all their jobs. */
function total(rs: readonly Result[]): Result {
  const jobs = rs.reduce((s, r) => s + r.jobs, 0);
  return {
    failedAttempts: rs.reduce((s, r) => s + r.failedAttempts, 0),
    failedJobs: rs.reduce((s, r) => s + r.failedJobs, 0),
    jobs,
    meanJctMs: Math.round(rs.reduce((s, r) => s + r.meanJctMs * r.jobs, 0) / Math.max(1, jobs)),
    wastedSlotSeconds: rs.reduce((s, r) => s + r.wastedSlotSeconds, 0),
  };
}

async function main(): Promise<void> {
  const perSeed: Array<{ seed: number; off: Result; on: Result }> = [];
  for (const [i, seed] of SEEDS.entries()) {
    // Alternate which goes first, so a change in the machine's load falls on both alike.
    const order: Array<'off' | 'on'> = i % 2 === 0 ? ['off', 'on'] : ['on', 'off'];
    const runs: Partial<Record<'off' | 'on', Run>> = {};
    for (const mode of order) {
      runs[mode] = await run(mode, seed);
      process.stdout.write(`seed ${seed} ${mode}: ${JSON.stringify(runs[mode])}\n`);
    }
    const off = runs.off!.result;
    const on = runs.on!.result;
    process.stdout.write(`seed ${seed}: ${change(off, on)}\n`);
    perSeed.push({ seed, off, on });
  }
  const off = total(perSeed.map((r) => r.off));
  const on = total(perSeed.map((r) => r.on));
  process.stdout.write(`all seeds (${SEEDS.join(', ')}): off ${JSON.stringify(off)}\non ${JSON.stringify(on)}\n${change(off, on)}\n`);
  const out = join(REPO_ROOT, 'bench-results');
  mkdirSync(out, { recursive: true });
  writeFileSync(join(out, 'prediction.json'), JSON.stringify({ off, on, seeds: perSeed }, null, 2) + '\n');
}

main().catch((e: unknown) => {
  process.stderr.write(`prediction-sim: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(1);
});
