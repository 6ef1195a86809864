#!/usr/bin/env node
/**
 * Benchmark (not a test): what connectivity awareness costs when there is no partition
 * (`make bench-partitions`).
 *
 * 1. **Job set, probing on and off**, on a rack of its own (prefix fxb, 10.216.0: etcd, three
 *    masters and four agent hosts, each in its own network namespace). The same set of word counts
 *    (12 maps and 4 reducers each, the reducers fetching every map's output from the host that
 *    wrote it) is submitted at once, `--rounds` times per mode, in the order on, off, off, on, on,
 *    off, ... (so drift of the machine falls on both). "on" is the default cluster (agents probe
 *    their peers every 200 ms, the master keeps the graph and places by it); "off" runs the masters
 *    with `--connectivity-aware=false` and the agents with `--probe false`. Per run: the set's
 *    makespan, each job's completion time, and the CPU time of the masters and of the agent
 *    daemons (their workers excluded) over the run.
 * 2. **Probe traffic at 1,000 nodes.** The master's own probe-target choice
 *    (master/src/core/probe-targets.ts) over 1,000 simulated nodes and a job mix on them gives each
 *    agent's targets (peers it pings) and probers (peers that ping it); the median and the largest
 *    agent are then measured for real: one agent's prober in a process of its own against that
 *    many peers (test/dist/bench/probe-traffic.js), packets, bytes and CPU per second. The time the
 *    master takes to choose the targets at 1,000 and 5,000 nodes is measured too.
 *
 * Writes bench-results/partitions.json. Options: --rounds N (per mode, default 5), --jobs N (per
 * run, default 8), --nodes N (simulated, default 1000), --seconds S (probe-traffic measurement,
 * default 10), --skip-rack, --skip-traffic, --out FILE.
 */
import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { FuxiClient } from '@fuxi/client';
import { seededRandom } from '@fuxi/common';
import { REPO_ROOT, smallWordcountSpec } from '@fuxi/deploy';
import { computeProbeTargets, DEFAULT_PROBE_TARGETS, type ProbeApp, type ProbeMember } from '@fuxi/master/core/probe-targets';
import { RackCluster, startRack, startRackEtcd, type Rack } from '../rack/index.js';
import { cpuNs, percentile, round } from './sched/proc.js';

const PREFIX = 'fxb';
const SUBNET = '10.216.0';
const AGENT_HOSTS = 4;
const here = dirname(fileURLToPath(import.meta.url));
const log = (msg: string): void => void process.stderr.write(`[bench-partitions] ${msg}\n`);

// ------------------------------------------------------------------ 1. the job set on the rack

/**
 * on: probing and connectivity-aware masters (the default); off: neither. The halves, to tell
 * which one costs: probe-only (agents probe, masters ignore the graph), aware-only (masters aware,
 * agents do not probe, so the graph stays empty).
 */
const MODES = ['on', 'off', 'probe-only', 'aware-only'] as const;
type Mode = (typeof MODES)[number];
const MODE_ARGS: Record<Mode, { masterArgs?: string[]; agentArgs?: string[] }> = {
  on: {},
  off: { masterArgs: ['--connectivity-aware=false'], agentArgs: ['--probe', 'false'] },
  'probe-only': { masterArgs: ['--connectivity-aware=false'] },
  'aware-only': { agentArgs: ['--probe', 'false'] },
};

interface RunResult {
  mode: Mode;
  round: number;
  jobs: number;
  succeeded: number;
  makespanMs: number;
  jobMsP50: number;
  jobMsMean: number;
  masterCpuMs: number;
  agentCpuMs: number;
  /** Agent daemons' CPU as a share of one core, per agent, over the run. */
  agentCpuPercentPerAgent: number;
  masterCpuPercent: number;
}

async function runJobSet(client: FuxiClient, rc: RackCluster, mode: Mode, roundNo: number, jobs: number): Promise<RunResult> {
  const pids = { masters: rc.ha.masters.map((m) => m.pid), agents: rc.ha.agents.map((a) => a.pid) };
  const sum = (ps: number[]): number => ps.reduce((s, p) => s + cpuNs(p), 0);
  const m0 = sum(pids.masters);
  const a0 = sum(pids.agents);
  const t0 = Date.now();
  const specs = Array.from({ length: jobs }, (_, i) => smallWordcountSpec(`pb-${mode}-${roundNo}-${i}`));
  const times = await Promise.all(
    specs.map(async (spec) => {
      const s = Date.now();
      const { jobId } = await client.submit(spec);
      const info = await client.waitFor(jobId);
      return { ms: Date.now() - s, ok: info.state === 'JOB_STATE_SUCCEEDED' };
    }),
  );
  const wall = Date.now() - t0;
  const masterNs = sum(pids.masters) - m0;
  const agentNs = sum(pids.agents) - a0;
  const ms = times.map((t) => t.ms).sort((a, b) => a - b);
  return {
    mode,
    round: roundNo,
    jobs,
    succeeded: times.filter((t) => t.ok).length,
    makespanMs: wall,
    jobMsP50: percentile(ms, 50),
    jobMsMean: Math.round(ms.reduce((s, x) => s + x, 0) / ms.length),
    masterCpuMs: Math.round(masterNs / 1e6),
    agentCpuMs: Math.round(agentNs / 1e6),
    agentCpuPercentPerAgent: round((agentNs / 1e6 / wall / pids.agents.length) * 100),
    masterCpuPercent: round((masterNs / 1e6 / wall) * 100),
  };
}

async function rackPart(rounds: number, jobs: number, modes: Mode[]): Promise<{ runs: RunResult[]; summary: Record<string, unknown> }> {
  const dir = mkdtempSync(join(tmpdir(), 'fuxi-bench-partitions-'));
  // Workers run as another user (nobody): they must be able to pass through.
  chmodSync(dir, 0o711);
  let rack: Rack | undefined;
  const runs: RunResult[] = [];
  try {
    rack = await startRack(AGENT_HOSTS, { prefix: PREFIX, subnet: SUBNET });
    const etcd = await startRackEtcd(rack);
    try {
      // on, off, off, on, on, off, ...: each mode as often first as second.
      const order: Mode[] = [];
      for (let r = 0; r < rounds; r++) order.push(...(r % 2 === 0 ? modes : [...modes].reverse()));
      for (const [i, mode] of order.entries()) {
        const round = Math.floor(i / modes.length) + 1;
        log(`round ${round}, probing ${mode}: starting the cluster`);
        const rc = await RackCluster.start({
          dir: join(dir, `${mode}-${round}`),
          rack,
          etcd,
          etcdPrefix: `/fuxi-pb-${mode}-${round}/`,
          agents: AGENT_HOSTS,
          agentHosts: AGENT_HOSTS,
          agentCpu: '1.2',
          agentMemory: '2Gi',
          heartbeatIntervalMs: 1000,
          logLevel: 'info',
          ...MODE_ARGS[mode],
        });
        const client = rc.ha.client({ retryForMs: 60_000 });
        try {
          await rc.ha.waitForNodes(AGENT_HOSTS, 60_000);
          // One job first (code paths and page cache warm), not measured.
          await runJobSet(client, rc, mode, 0, 1);
          const r = await runJobSet(client, rc, mode, round, jobs);
          log(
            `round ${round}, probing ${mode}: ${r.succeeded}/${r.jobs} jobs in ${r.makespanMs} ms (job p50 ${r.jobMsP50} ms), masters ${r.masterCpuMs} ms CPU, agents ${r.agentCpuMs} ms CPU`,
          );
          runs.push(r);
        } finally {
          client.close();
          await rc.stop();
        }
      }
    } finally {
      await etcd.stop().catch(() => undefined);
    }
  } finally {
    await rack?.destroy().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  }
  const of = (mode: Mode): RunResult[] => runs.filter((r) => r.mode === mode);
  const median = (xs: number[]): number =>
    percentile(
      [...xs].sort((a, b) => a - b),
      50,
    );
  const mean = (xs: number[]): number => xs.reduce((s, x) => s + x, 0) / xs.length;
  const on = of('on');
  const off = of('off');
  const ratio = (f: (r: RunResult) => number): number => round(mean(on.map(f)) / mean(off.map(f)), 4);
  // Per round, on against the off run next to it: the spread of the ratio is the noise.
  const paired = on.map((r, i) => round(r.makespanMs / (off[i]?.makespanMs ?? NaN), 4));
  return {
    runs,
    summary: {
      jobsPerRun: jobs,
      rounds,
      makespanMsOn: median(on.map((r) => r.makespanMs)),
      makespanMsOff: median(off.map((r) => r.makespanMs)),
      jobCompletionRatio: ratio((r) => r.jobMsMean),
      makespanRatio: ratio((r) => r.makespanMs),
      makespanRatioPerRound: paired,
      makespanRatioMedianOfRounds: median(paired),
      masterCpuMsOn: round(mean(on.map((r) => r.masterCpuMs)), 0),
      masterCpuMsOff: round(mean(off.map((r) => r.masterCpuMs)), 0),
      agentCpuPercentPerAgentOn: round(mean(on.map((r) => r.agentCpuPercentPerAgent))),
      agentCpuPercentPerAgentOff: round(mean(off.map((r) => r.agentCpuPercentPerAgent))),
      masterCpuPercentOn: round(mean(on.map((r) => r.masterCpuPercent))),
      masterCpuPercentOff: round(mean(off.map((r) => r.masterCpuPercent))),
      allSucceeded: runs.every((r) => r.succeeded === r.jobs),
      // Other modes (the halves), against off.
      ...Object.fromEntries(
        [...new Set(runs.map((r) => r.mode))]
          .filter((m) => m !== 'on' && m !== 'off')
          .map((m) => [
            m,
            {
              jobCompletionRatio: round(mean(of(m).map((r) => r.jobMsMean)) / mean(off.map((r) => r.jobMsMean)), 4),
              makespanRatio: round(mean(of(m).map((r) => r.makespanMs)) / mean(off.map((r) => r.makespanMs)), 4),
            },
          ]),
      ),
    },
  };
}

// ------------------------------------------------------------------ 2. probe traffic at 1,000 nodes

/**
 * `n` nodes and a job mix on them: per 1,000 nodes 400 jobs, 60 % on 2-4 hosts, 30 % on 5-20, 10 %
 * on 50-200 (the paper's mix of small, medium and large jobs), each with its AM on a random host.
 */
function cluster(n: number, seed = 1): { members: ProbeMember[]; apps: ProbeApp[] } {
  const rnd = seededRandom(seed);
  const members = Array.from({ length: n }, (_, i) => ({
    nodeId: `node-${String(i + 1).padStart(5, '0')}`,
    address: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}:7071`,
  }));
  const pick = (): string => members[Math.floor(rnd() * n)]!.nodeId;
  const apps: ProbeApp[] = [];
  const jobs = Math.round((n / 1000) * 400);
  for (let j = 0; j < jobs; j++) {
    const u = rnd();
    const [lo, hi] = u < 0.6 ? [2, 4] : u < 0.9 ? [5, 20] : [50, 200];
    const size = Math.min(n, lo + Math.floor(rnd() * (hi - lo + 1)));
    const hosts = new Set<string>();
    while (hosts.size < size) hosts.add(pick());
    apps.push({ hosts: [...hosts], amHost: pick() });
  }
  return { members, apps };
}

function targetStats(n: number): { targets: number[]; probers: number[]; computeMs: number } {
  const { members, apps } = cluster(n);
  const t0 = process.hrtime.bigint();
  const t = computeProbeTargets(members, apps, DEFAULT_PROBE_TARGETS);
  const computeMs = Number(process.hrtime.bigint() - t0) / 1e6;
  const probers = new Map<string, number>();
  for (const list of t.values()) for (const p of list) probers.set(p, (probers.get(p) ?? 0) + 1);
  return {
    targets: [...t.values()].map((l) => l.length).sort((a, b) => a - b),
    probers: members.map((m) => probers.get(m.nodeId) ?? 0).sort((a, b) => a - b),
    computeMs,
  };
}

const dist = (xs: number[]): { p50: number; p99: number; max: number; mean: number } => ({
  p50: percentile(xs, 50),
  p99: percentile(xs, 99),
  max: xs[xs.length - 1] ?? 0,
  mean: round(xs.reduce((s, x) => s + x, 0) / Math.max(1, xs.length), 1),
});

async function probeTraffic(cases: string, seconds: number): Promise<unknown[]> {
  const out = join(mkdtempSync(join(tmpdir(), 'fuxi-probe-traffic-')), 'out.json');
  const proc = spawn(process.execPath, [join(here, 'probe-traffic.js'), '--cases', cases, '--seconds', String(seconds), '--out', out], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const code = await new Promise<number | null>((resolve) => proc.on('exit', resolve));
  if (code !== 0) throw new Error(`probe-traffic exited ${code}`);
  const r = JSON.parse(readFileSync(out, 'utf8')) as { results: unknown[] };
  rmSync(dirname(out), { recursive: true, force: true });
  return r.results;
}

async function trafficPart(nodes: number, seconds: number): Promise<Record<string, unknown>> {
  const s = targetStats(nodes);
  const big = targetStats(5000);
  const targets = dist(s.targets);
  const probers = dist(s.probers);
  log(
    `${nodes} simulated nodes: targets per agent p50 ${targets.p50} max ${targets.max}, probers per agent p50 ${probers.p50} max ${probers.max}; measuring both`,
  );
  const cases = [`${targets.p50}x${probers.p50}`, `${targets.max}x${probers.max}`];
  const measured = await probeTraffic([...new Set(cases)].join(','), seconds);
  return {
    nodes,
    config: DEFAULT_PROBE_TARGETS,
    jobs: Math.round((nodes / 1000) * 400),
    targetsPerAgent: targets,
    probersPerAgent: probers,
    chooseTargetsMs: round(s.computeMs, 1),
    chooseTargetsMsAt5000: round(big.computeMs, 1),
    measured: Object.fromEntries(measured.map((m, i) => [i === 0 ? 'median' : 'largest', m])),
  };
}

// ------------------------------------------------------------------ main

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      rounds: { type: 'string', default: '5' },
      jobs: { type: 'string', default: '8' },
      nodes: { type: 'string', default: '1000' },
      seconds: { type: 'string', default: '10' },
      'skip-rack': { type: 'boolean', default: false },
      'skip-traffic': { type: 'boolean', default: false },
      modes: { type: 'string', default: 'on,off' },
      out: { type: 'string', default: join(REPO_ROOT, 'bench-results', 'partitions.json') },
    },
    strict: true,
  });
  const num = (name: string, v: string): number => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < 1) throw new Error(`--${name}: "${v}" is not a positive integer`);
    return n;
  };
  const rounds = num('rounds', values.rounds);
  const jobs = num('jobs', values.jobs);
  const nodes = num('nodes', values.nodes);
  const seconds = num('seconds', values.seconds);
  const result: Record<string, unknown> = { at: new Date().toISOString() };
  if (!values['skip-traffic']) result.probeTraffic = await trafficPart(nodes, seconds);
  if (!values['skip-rack']) {
    const modes = values.modes.split(',') as Mode[];
    for (const m of modes) if (!MODES.includes(m)) throw new Error(`--modes: "${m}" is not one of ${MODES.join(', ')}`);
    if (!modes.includes('on') || !modes.includes('off')) throw new Error('--modes: must include on and off');
    const { runs, summary } = await rackPart(rounds, jobs, modes);
    result.jobSet = summary;
    result.runs = runs;
  }
  mkdirSync(dirname(values.out), { recursive: true });
  writeFileSync(values.out, `${JSON.stringify(result, null, 2)}\n`);
  process.stdout.write(`${JSON.stringify({ ...result, runs: undefined }, null, 2)}\n`);
  log(`wrote ${values.out}`);
}

main().catch((e: unknown) => {
  process.stderr.write(`bench-partitions: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(1);
});
