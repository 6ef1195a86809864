#!/usr/bin/env node
/**
 * Benchmark (not a test): the AM host, against dedicated AM processes. Writes
 * bench-results/am-host.json (`--out` to change); progress on stderr, a summary on stdout.
 *
 * 1. **Cost per job.** A local cluster (a master, two agents, real processes): `--jobs` one-task
 *    jobs (the task is `true`), `--concurrency` at a time, first with `am: dedicated`, then with
 *    shared AMs (the default). CPU per job: of its AM (a dedicated AM logs its process's CPU time
 *    when it ends; hosted AMs: the AM hosts' CPU over the batch / jobs) and of the master and the
 *    agents. Memory: a dedicated AM's resident set, and the AM hosts' with no AM and with `--held`
 *    AMs held (per AM = the difference / held).
 * 2. **One core step of a big job**, in this process: `DagAppMaster.start` of a `--giant`-instance
 *    job, then 2,000 worker events one by one (mean and longest step).
 * 3. **Neighbours of a big job.** A real master (memory store) and simulated nodes (`agent-host
 *    --am-host`: workers are timers, and every AM runs in one real `fuxi-amhost`): `--neighbours`
 *    jobs at a time, each a chain of 5 one-instance tasks whose workers end at once, run for
 *    `--window-ms`, alone, then beside a `--giant`-instance job submitted as the window opens
 *    (workers of 10 s on 1,200 slots: its quota group is capped, the rest of the nodes is free)
 *    whose AM runs in a thread of the host (the default for jobs of 10,000 instances and more),
 *    then beside it with that AM on the host's main loop. Reported: the host main loop's delay
 *    (p50 / p99 / max: the most any neighbour's grant could wait behind other AMs' work), the
 *    neighbours' job times and the big job's progress.
 *
 *   make bench-am-host
 *   node test/dist/bench/am-host.js [--jobs 40] [--concurrency 8] [--held 20] [--giant 100000] [--neighbours 8] [--window-ms 30000] [--skip-cost] [--skip-giant] [--keep]
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { AmHostConnection, readHostRecord } from '@fuxi/agent';
import { DagAppMaster } from '@fuxi/appmaster';
import { FuxiClient } from '@fuxi/client';
import { normalizeJobSpec, validateJobSpec, type AmHostStats, type JobSpec } from '@fuxi/common';
import { BIN, freePort, LocalCluster, startNodeProcess, waitExit, waitForLogLine } from '@fuxi/deploy';

const here = dirname(fileURLToPath(import.meta.url));
const REPO = join(here, '..', '..', '..');
const HOST_BIN = join(here, '..', 'sim', 'agent-host.js');
const say = (s: string) => process.stderr.write(`[bench-am-host ${new Date().toISOString().slice(11, 23)}] ${s}\n`);
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

function options() {
  const { values } = parseArgs({
    options: {
      jobs: { type: 'string', default: '40' },
      concurrency: { type: 'string', default: '8' },
      held: { type: 'string', default: '20' },
      giant: { type: 'string', default: '100000' },
      neighbours: { type: 'string', default: '8' },
      'window-ms': { type: 'string', default: '30000' },
      'skip-cost': { type: 'boolean', default: false },
      'skip-giant': { type: 'boolean', default: false },
      out: { type: 'string', default: join(REPO, 'bench-results', 'am-host.json') },
      keep: { type: 'boolean', default: false },
    },
  });
  const int = (k: keyof typeof values) => {
    const n = Number(values[k]);
    if (!Number.isInteger(n) || n < 1) throw new Error(`--${k} must be a positive integer`);
    return n;
  };
  return {
    jobs: int('jobs'),
    concurrency: int('concurrency'),
    held: int('held'),
    giant: int('giant'),
    neighbours: int('neighbours'),
    windowMs: int('window-ms'),
    skipCost: values['skip-cost'] ?? false,
    skipGiant: values['skip-giant'] ?? false,
    out: resolve(values.out ?? ''),
    keep: values.keep ?? false,
  };
}
type Options = ReturnType<typeof options>;

// ------------------------------------------------------------------------------------ /proc

const CLK_TCK = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;
  } catch {
    return 100;
  }
})();

/** CPU of `pid` in ms: its own (utime + stime) and its reaped children's (cutime + cstime). */
function cpuOf(pid: number): { self: number; children: number } {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ms = (i: number) => (Number(f[i]) * 1000) / CLK_TCK;
    // Fields 14-17 (utime, stime, cutime, cstime) are rest[11..14].
    return { self: ms(11) + ms(12), children: ms(13) + ms(14) };
  } catch {
    return { self: 0, children: 0 };
  }
}

function rssMb(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Math.round(Number(m[1]) / 1024) : 0;
  } catch {
    return 0;
  }
}

function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

function quantiles(xs: number[]): { n: number; p50: number; p99: number; max: number; mean: number } {
  const s = [...xs].sort((a, b) => a - b);
  const q = (p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))] ?? 0;
  return { n: s.length, p50: q(0.5), p99: q(0.99), max: s[s.length - 1] ?? 0, mean: Math.round(s.reduce((a, b) => a + b, 0) / Math.max(1, s.length)) };
}

async function waitEnd(client: FuxiClient, id: string, timeoutMs = 120_000): Promise<string> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const j = await client.get(id);
    if (['JOB_STATE_SUCCEEDED', 'JOB_STATE_FAILED', 'JOB_STATE_KILLED'].includes(j.state)) return j.state;
    if (Date.now() > until) throw new Error(`job ${id} did not end within ${timeoutMs} ms (${j.state})`);
    await sleep(100);
  }
}

// ------------------------------------------------------------------------------------ 1. cost

async function cost(o: Options, dir: string) {
  const cluster = await LocalCluster.start({
    dir: join(dir, 'cost'),
    agents: 2,
    agentCpu: '8',
    agentMemory: '16Gi',
    heartbeatIntervalMs: 500,
    logLevel: 'info',
  });
  const client = cluster.client();
  try {
    const hosts = () => cluster.agents.map((a) => readHostRecord(a.workDir)?.pid ?? 0).filter((p) => p > 0);
    const sample = () => {
      const m = cpuOf(cluster.master.pid);
      const agents = cluster.agents.map((a) => cpuOf(a.pid));
      const hostPids = hosts();
      return {
        master: m.self,
        agents: agents.reduce((n, a) => n + a.self, 0),
        hosts: new Map(hostPids.map((p) => [p, cpuOf(p).self] as const)),
      };
    };
    /** The CPU time a dedicated AM logged when it ended (its whole process: start, module loading, its job). */
    const loggedAmCpuMs = (jobId: string): number | undefined => {
      for (const a of cluster.agents) {
        let text = '';
        try {
          text = readFileSync(join(a.workDir, 'apps', jobId, 'am.1', 'stdout'), 'utf8');
        } catch {
          continue;
        }
        for (const line of text.split('\n').reverse()) {
          const m = /"cpuMs":(\d+)/.exec(line);
          if (m) return Number(m[1]);
        }
      }
      return undefined;
    };
    const oneTask = (name: string, am: string) =>
      normalizeJobSpec({ name, am, tasks: [{ name: 't', instances: 1, resources: { cpu: 0.1, memory: 32 }, command: ['true'] }] });
    const batch = async (mode: 'dedicated' | 'shared') => {
      // One job first: the hosts of the shared mode are up before the measurement.
      await waitEnd(client, (await client.submit(oneTask(`warm-${mode}`, mode))).jobId);
      await sleep(1000);
      const before = sample();
      const t0 = Date.now();
      let next = 0;
      const times: number[] = [];
      const ids: string[] = [];
      await Promise.all(
        Array.from({ length: o.concurrency }, async () => {
          while (next < o.jobs) {
            const i = next++;
            const s = Date.now();
            const id = (await client.submit(oneTask(`${mode}-${i}`, mode))).jobId;
            ids.push(id);
            const state = await waitEnd(client, id);
            if (state !== 'JOB_STATE_SUCCEEDED') throw new Error(`${mode} job ${i}: ${state}`);
            times.push(Date.now() - s);
          }
        }),
      );
      const wallMs = Date.now() - t0;
      await sleep(1500); // the last AMs end and are reaped
      const after = sample();
      let hostMs = 0;
      for (const [pid, ms] of after.hosts) hostMs += ms - (before.hosts.get(pid) ?? 0);
      const per = (x: number) => Math.round(x / o.jobs);
      const logged = ids.map(loggedAmCpuMs).filter((x): x is number => x !== undefined);
      const am = mode === 'dedicated' ? quantiles(logged).mean : per(hostMs);
      const master = per(after.master - before.master);
      const agents = per(after.agents - before.agents);
      const r = {
        jobs: o.jobs,
        concurrency: o.concurrency,
        wallMs,
        jobMs: quantiles(times),
        cpuMsPerJob: { am, master, agents, total: am + master + agents },
        ...(mode === 'dedicated' ? { amCpuMs: quantiles(logged) } : { amHostsCpuMs: Math.round(hostMs) }),
      };
      say(`${mode}: ${o.jobs} jobs in ${wallMs} ms; CPU per job: AM ${am} ms, master ${master} ms, agents ${agents} ms`);
      return r;
    };
    const dedicated = await batch('dedicated');
    const shared = await batch('shared');

    // Memory: a dedicated AM process, and the hosts with none and with `held` AMs.
    const release = join(dir, 'release-mem');
    const held = (name: string, am: string) =>
      normalizeJobSpec({
        name,
        am,
        env: { R: release },
        tasks: [{ name: 't', instances: 1, resources: { cpu: 0.05, memory: 16 }, command: 'while [ ! -e "$R" ]; do sleep 0.2; done' }],
      });
    const amPid = async (id: string) => {
      for (;;) {
        const { loadFuxiProto } = await import('@fuxi/proto');
        const { connect } = await import('@fuxi/rpc');
        for (const a of cluster.agents) {
          const c = connect(loadFuxiProto().AgentService, a.address, cluster.transport());
          try {
            const w = (await c.GetAgentState({})).workers.find((x) => x.appId === id && x.suId === '__am__' && x.state === 'WORKER_STATE_RUNNING' && x.pid > 0);
            if (w) return w.pid;
          } finally {
            c.close();
          }
        }
        await sleep(200);
      }
    };
    const ded = (await client.submit(held('mem-dedicated', 'dedicated'))).jobId;
    const wrapper = await amPid(ded);
    await sleep(2000);
    const dedicatedRssMb = childrenOf(wrapper).reduce((n, p) => n + rssMb(p), 0);
    const hostRss = () => hosts().reduce((n, p) => n + rssMb(p), 0);
    const hostsBefore = hostRss();
    const ids: string[] = [];
    for (let i = 0; i < o.held; i++) ids.push((await client.submit(held(`mem-shared-${i}`, 'shared'))).jobId);
    for (const id of ids) await amPid(id);
    await sleep(3000);
    const hostsAfter = hostRss();
    writeFileSync(release, '');
    for (const id of [ded, ...ids]) await waitEnd(client, id);
    const memory = {
      dedicatedAmRssMb: dedicatedRssMb,
      amHosts: hosts().length,
      amHostsRssMb: { idle: hostsBefore, [`with${o.held}Ams`]: hostsAfter },
      perHostedAmMb: Math.round(((hostsAfter - hostsBefore) / o.held) * 10) / 10,
    };
    say(
      `memory: a dedicated AM ${dedicatedRssMb} MB; the AM hosts ${hostsBefore} MB idle, ${hostsAfter} MB with ${o.held} AMs (${memory.perHostedAmMb} MB each)`,
    );
    return { dedicated, shared, memory };
  } finally {
    client.close();
    await cluster.stop({ killWorkers: true });
  }
}

// ------------------------------------------------------------------------------------ 2. core step

function coreStep(o: Options) {
  const spec: JobSpec = validateJobSpec(
    normalizeJobSpec({
      name: 'giant',
      tasks: [
        { name: 'map', instances: o.giant, resources: { cpu: 0.1, memory: 64 }, command: ['x'] },
        { name: 'reduce', instances: 10, resources: { cpu: 0.1, memory: 64 }, command: ['x'], dependsOn: ['map'] },
      ],
    }),
  );
  const am = new DagAppMaster({});
  let t = performance.now();
  am.start(spec, { epoch: '1', seq: 0, assignments: [] }, Date.now());
  const startMs = performance.now() - t;
  const asg = Array.from({ length: 100 }, (_, i) => ({ suId: 'map', nodeId: `n${i}`, nodeAddress: `127.0.0.1:${1000 + i}`, slots: 20 }));
  t = performance.now();
  const effects = am.assignments({ epoch: '1', seq: 1, full: true, assignments: asg }, Date.now());
  const assignMs = performance.now() - t;
  const events = effects.flatMap((e) =>
    e.kind === 'plan'
      ? e.plans.map(
          (p) =>
            [
              e.nodeId,
              {
                workerId: p.workerId,
                task: p.task,
                instance: p.instance,
                attempt: p.attempt,
                state: 'succeeded' as const,
                exitCode: 0,
                signal: '',
                message: '',
              },
            ] as const,
        )
      : [],
  );
  let max = 0;
  t = performance.now();
  for (const [n, ev] of events) {
    const s = performance.now();
    am.workerEvents(n, [ev], Date.now());
    max = Math.max(max, performance.now() - s);
  }
  const total = performance.now() - t;
  const r = {
    instances: o.giant,
    startMs: Math.round(startMs),
    assign2000SlotsMs: Math.round(assignMs * 10) / 10,
    workerEvents: events.length,
    eventMeanUs: Math.round((total / Math.max(1, events.length)) * 1000),
    eventMaxMs: Math.round(max * 10) / 10,
  };
  say(`core: start of a ${o.giant}-instance job ${r.startMs} ms; a worker event ${r.eventMeanUs} us on average, ${r.eventMaxMs} ms at most`);
  return r;
}

// ------------------------------------------------------------------------------------ 3. neighbours

const GIANT_NODES = 10;
const GIANT_SIM_MS = 10_000;
/** Cores of the big job's quota group: 1,200 of its 0.1-core workers at once (the nodes have 160 cores). */
const GIANT_CPU = 120;

async function neighbours(o: Options, dir: string, mode: 'alone' | 'thread' | 'main-loop') {
  const d = join(dir, `giant-${mode}`);
  mkdirSync(d, { recursive: true });
  const port = await freePort();
  const masterLog = join(d, 'master.log');
  // The big job keeps every slot it gets (its AM reuses them): its quota group is capped, so the
  // neighbours always find room and their grants wait on nothing but the AMs.
  const masterConfig = join(d, 'master.yaml');
  writeFileSync(masterConfig, `quotaGroups:\n  - { name: default, weight: 1 }\n  - { name: big, weight: 1, limit: { cpu: ${GIANT_CPU}, memory: 1000Gi } }\n`);
  const master = startNodeProcess(
    [
      BIN.master,
      '--config',
      masterConfig,
      '--listen',
      `127.0.0.1:${port}`,
      '--store',
      'memory',
      // Simulated hosts dial in plaintext.
      '--insecure',
      '--heartbeat-interval-ms',
      '1000',
      '--agent-timing-out-ms',
      '20000',
      '--agent-timeout-ms',
      '120000',
      '--log-level',
      'info',
    ],
    masterLog,
  );
  const hostLog = join(d, 'sim.log');
  let sim: ReturnType<typeof startNodeProcess> | undefined;
  const client = new FuxiClient({ masters: [`127.0.0.1:${port}`], insecure: true });
  try {
    await waitForLogLine(masterLog, 'master ready', master);
    sim = startNodeProcess(
      [
        HOST_BIN,
        '--master',
        `127.0.0.1:${port}`,
        '--nodes',
        String(GIANT_NODES),
        '--prefix',
        'bench',
        '--cpu',
        '16',
        '--memory',
        '64Gi',
        '--work-dir',
        join(d, 'sim'),
        '--am-host',
        '--am-host-thread-instances',
        mode === 'main-loop' ? String(o.giant + 1) : '10000',
        '--log-level',
        'info',
      ],
      hostLog,
    );
    await waitForLogLine(hostLog, 'host ready', sim, 60_000);
    for (;;) {
      if ((await client.nodes()).filter((n) => n.healthy).length >= GIANT_NODES) break;
      await sleep(200);
    }
    let n = 0;
    const chain = () =>
      normalizeJobSpec({
        name: `nb-${n++}`,
        env: { SIM_DURATION_MS: '0' },
        tasks: Array.from({ length: 5 }, (_, i) => ({
          name: `s${i}`,
          instances: 1,
          resources: { cpu: 0.1, memory: 64 },
          command: ['x'],
          ...(i > 0 ? { dependsOn: [`s${i - 1}`] } : {}),
        })),
      });
    // One neighbour first: the AM host is up before anything is measured.
    await waitEnd(client, (await client.submit(chain())).jobId);
    // The host's control socket (the shared AM host of the simulated nodes).
    const rec = readHostRecord(join(d, 'sim'));
    if (!rec) throw new Error('no AM host record under the simulated nodes');
    const ctl = await AmHostConnection.open(rec.socket, { timeoutMs: 5000 });
    await ctl.request({ op: 'hello', role: 'control' });
    await ctl.request({ op: 'stats', reset: true });
    const cpu0 = cpuOf(rec.pid).self;
    const until = Date.now() + o.windowMs;
    const times: number[] = [];
    // The big job comes in with the window open: its AM's start (the whole task graph) and its
    // ramp up to every slot of its group are measured too.
    let giantId = '';
    if (mode !== 'alone') {
      const giant = normalizeJobSpec({
        name: 'giant',
        quotaGroup: 'big',
        env: { SIM_DURATION_MS: String(GIANT_SIM_MS) },
        tasks: [{ name: 'map', instances: o.giant, resources: { cpu: 0.1, memory: 64 }, command: ['x'] }],
      });
      giantId = (await client.submit(giant)).jobId;
    }
    await Promise.all(
      Array.from({ length: o.neighbours }, async () => {
        while (Date.now() < until) {
          const s = Date.now();
          const state = await waitEnd(client, (await client.submit(chain())).jobId);
          if (state === 'JOB_STATE_SUCCEEDED') times.push(Date.now() - s);
        }
      }),
    );
    const stats = (await ctl.request({ op: 'stats' })).stats as AmHostStats;
    const hostCpuMs = cpuOf(rec.pid).self - cpu0;
    ctl.close();
    const giantAfter = giantId ? (await client.get(giantId)).tasks[0] : undefined;
    if (giantId) await client.kill(giantId, 'benchmark window over').catch(() => undefined);
    const r = {
      mode,
      neighbourJobs: quantiles(times),
      neighbourStepMs: Math.round(quantiles(times).p50 / 5),
      hostLoopDelayMs: stats.loopDelayMs,
      hostCpuMsPerS: Math.round((hostCpuMs / o.windowMs) * 1000),
      hostRssMb: stats.rssMb,
      ...(giantAfter
        ? { giant: { instances: o.giant, succeededInWindow: giantAfter.succeeded, runningAtEnd: giantAfter.running, slots: GIANT_CPU * 10 } }
        : {}),
    };
    say(
      `neighbours ${mode}: ${times.length} chains, p50 ${r.neighbourJobs.p50} ms, p99 ${r.neighbourJobs.p99} ms; host main loop delay p50 ${stats.loopDelayMs.p50} ms, p99 ${stats.loopDelayMs.p99} ms, max ${stats.loopDelayMs.max} ms` +
        (r.giant ? `; the big job finished ${r.giant.succeededInWindow} instances meanwhile` : ''),
    );
    return r;
  } finally {
    client.close();
    if (sim) {
      sim.kill('SIGTERM');
      if (!(await waitExit(sim, 10_000))) sim.kill('SIGKILL');
    }
    master.kill('SIGTERM');
    if (!(await waitExit(master, 5000))) master.kill('SIGKILL');
    // The shared AM host is killed by the simulated-node host on its way out; make sure.
    const rec = readHostRecord(join(d, 'sim'));
    if (rec) {
      try {
        process.kill(-rec.pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
  }
}

async function main(): Promise<void> {
  const o = options();
  const dir = mkdtempSync(join(tmpdir(), 'fuxi-bench-amhost-'));
  // Workers run as another user (nobody): they must be able to pass through.
  chmodSync(dir, 0o711);
  const out: Record<string, unknown> = {
    generatedAt: new Date().toISOString(),
    host: { cpus: readdirSync('/sys/devices/system/cpu').filter((x) => /^cpu\d+$/.test(x)).length },
    options: o,
  };
  let ok = false;
  try {
    if (!o.skipCost) out.cost = await cost(o, dir);
    out.coreStep = coreStep(o);
    if (!o.skipGiant) {
      out.neighbours = {
        alone: await neighbours(o, dir, 'alone'),
        bigJobInThread: await neighbours(o, dir, 'thread'),
        bigJobOnMainLoop: await neighbours(o, dir, 'main-loop'),
      };
    }
    ok = true;
  } finally {
    mkdirSync(dirname(o.out), { recursive: true });
    writeFileSync(o.out, JSON.stringify(out, null, 2) + '\n');
    say(`written to ${o.out}`);
    if (!o.keep && ok) rmSync(dir, { recursive: true, force: true });
    else say(`logs kept in ${dir}`);
  }
  process.stdout.write(JSON.stringify(out, null, 2) + '\n');
}

main().catch((e: unknown) => {
  process.stderr.write(`bench-am-host: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(1);
});
