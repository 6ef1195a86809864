#!/usr/bin/env node
/**
 * Benchmark (not a test): master failover at scale. A real etcd, three masters (5 s lease), two
 * simulated-node hosts x 100 nodes (each node a real Agent with a simulated process driver; every
 * app's AM a real in-process AppMaster), 50 apps whose workers run for a day. Once every worker
 * runs, five times, each `--settle-ms` after the cluster last changed (the last worker started, the
 * previous kill's restart): record every worker, kill -9 the leader, measure
 *
 * - takeoverMs: kill -> "became leader" of another master,
 * - recoveredMs: kill -> its "recovery complete" (scheduling resumed with full state); the master's
 *   own figure (becoming leader -> recovery complete) is kept as leaderRecoveredMs,
 * - aggregationMs: from the "recovery complete" line,
 *
 * restart the killed master as a standby, and compare the workers: restarted = a worker of a
 * running app that is gone or has another pid or node. jobsFailed = apps that failed during the run.
 * Writes bench-results/master-failover.json (at the repository root; `--out` to change); progress
 * goes to stderr, a summary to stdout.
 *
 *   make bench-failover
 *   node test/dist/bench/master-failover.js [--kills 5] [--apps 50] [--instances 20] [--hosts 2] [--nodes-per-host 100] [--lease-ttl-sec 5] [--keep]
 *
 * `--cpu-prof DIR` writes CPU profiles of the masters and simulated hosts (on their normal exit);
 * `--node-args "FLAGS"` passes node flags to both (e.g. `--max-semi-space-size=64`).
 * `--sim-nice N` runs the simulated-node hosts at niceness N (make bench-failover-rack: 10): on a
 * rack each of those hundreds of nodes has its own CPU, and here three processes standing for them
 * must not starve etcd and the masters of the one machine's two cores (unniced, the new leader's
 * lease keep-alives came back late, it stepped down every few seconds, and the leadership churn
 * made AMs re-run instances of agents that could not report in time).
 *
 * `--rack` (make bench-failover-rack): the same on the rack of network namespaces (test/src/rack):
 * etcd and each master on a host of its own, started from deploy/config/cluster/master.yaml, and
 * each simulated-node host on its own agent host (a1, a2, ...), so every heartbeat, report and
 * push of the failover crosses hosts. Writes bench-results/master-failover-rack.json by default.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { AM_SU, normalizeJobSpec, type JobSpec } from '@fuxi/common';
import { HaCluster, LogTail, startNodeProcess, terminate, waitExit, type LogRecord } from '@fuxi/deploy';
import { loadFuxiProto, type AgentServiceDefinition, type JobInfo__Output } from '@fuxi/proto';
import { connect, type TypedClient } from '@fuxi/rpc';
import { EtcdStore } from '@fuxi/store';
import { startEtcd, type EtcdProcess } from '../etcd-harness.js';
import type { Rack } from '../rack/rack.js';
import { rackPlacement, startRack, startRackEtcd } from '../rack/rack-cluster.js';

const here = dirname(fileURLToPath(import.meta.url));
const HOST_BIN = join(here, '..', 'sim', 'agent-host.js');
/** The repository root (this file is test/dist/bench/master-failover.js). */
const REPO = join(here, '..', '..', '..');
const PREFIX = '/bench-failover/';

const DAY_MS = 24 * 3600 * 1000;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const say = (s: string) => process.stderr.write(`[bench-failover ${new Date().toISOString().slice(11, 23)}] ${s}\n`);

interface Options {
  kills: number;
  masters: number;
  hosts: number;
  nodesPerHost: number;
  apps: number;
  instances: number;
  leaseTtlSec: number;
  recoveryDeadlineMs: number;
  amTimeoutMs: number;
  heartbeatIntervalMs: number;
  agentTimeoutMs: number;
  settleMs: number;
  out: string;
  keep: boolean;
  rack: boolean;
  amHeartbeatIntervalMs: number;
  /** An agent silent this long is timing out (0: the master's own setting). */
  agentTimingOutMs: number;
  /** Apps submitted per second (0: as fast as the master answers). */
  submitRate: number;
  /** Write CPU profiles of masters and simulated hosts here (written when each exits normally). */
  cpuProfDir: string;
  /** Extra `node` flags for masters and simulated hosts (e.g. GC settings), split on spaces. */
  nodeArgs: string[];
  /** Niceness of the simulated-node hosts (they stand in for hundreds of machines with their own CPUs). */
  simNice: number;
  /** Measure hard-state writes under a load of short jobs after the kills. */
  load: boolean;
}

function options(): Options {
  const { values } = parseArgs({
    options: {
      kills: { type: 'string', default: '5' },
      masters: { type: 'string', default: '3' },
      hosts: { type: 'string', default: '2' },
      'nodes-per-host': { type: 'string', default: '100' },
      apps: { type: 'string', default: '50' },
      instances: { type: 'string', default: '20' },
      'lease-ttl-sec': { type: 'string', default: '5' },
      'recovery-deadline-ms': { type: 'string', default: '3000' },
      'am-timeout-ms': { type: 'string', default: '30000' },
      'heartbeat-interval-ms': { type: 'string', default: '1000' },
      'agent-timeout-ms': { type: 'string', default: '10000' },
      'settle-ms': { type: 'string', default: '2000' },
      out: { type: 'string' },
      keep: { type: 'boolean', default: false },
      rack: { type: 'boolean', default: false },
      'am-heartbeat-interval-ms': { type: 'string' },
      'no-load': { type: 'boolean', default: false },
      'agent-timing-out-ms': { type: 'string', default: '0' },
      'submit-rate': { type: 'string', default: '0' },
      'cpu-prof': { type: 'string' },
      'node-args': { type: 'string' },
      'sim-nice': { type: 'string', default: '0' },
    },
    strict: true,
  });
  const int = (k: keyof typeof values, min: number): number => {
    const n = Number(values[k]);
    if (!Number.isInteger(n) || n < min) throw new Error(`--${k} must be an integer >= ${min}, got ${JSON.stringify(values[k])}`);
    return n;
  };
  return {
    kills: int('kills', 1),
    masters: int('masters', 2),
    hosts: int('hosts', 1),
    nodesPerHost: int('nodes-per-host', 1),
    apps: int('apps', 1),
    instances: int('instances', 1),
    leaseTtlSec: int('lease-ttl-sec', 1),
    recoveryDeadlineMs: int('recovery-deadline-ms', 1),
    amTimeoutMs: int('am-timeout-ms', 1),
    heartbeatIntervalMs: int('heartbeat-interval-ms', 1),
    agentTimeoutMs: int('agent-timeout-ms', 1),
    settleMs: int('settle-ms', 0),
    out: String(values.out ?? join(REPO, 'bench-results', values.rack ? 'master-failover-rack.json' : 'master-failover.json')),
    keep: Boolean(values.keep),
    rack: Boolean(values.rack),
    amHeartbeatIntervalMs: values['am-heartbeat-interval-ms'] === undefined ? int('heartbeat-interval-ms', 1) : int('am-heartbeat-interval-ms', 1),
    load: !values['no-load'],
    agentTimingOutMs: int('agent-timing-out-ms', 0),
    submitRate: int('submit-rate', 0),
    cpuProfDir: typeof values['cpu-prof'] === 'string' ? resolve(values['cpu-prof']) : '',
    nodeArgs: typeof values['node-args'] === 'string' ? values['node-args'].split(/\s+/).filter(Boolean) : [],
    simNice: int('sim-nice', 0),
  };
}

interface Host {
  prefix: string;
  child: ReturnType<typeof startNodeProcess>;
  logFile: string;
  agents: Array<{ nodeId: string; address: string }>;
}

/** Where each worker runs: (appId, workerId) -> node and pid. */
type WorkerMap = Map<string, { nodeId: string; pid: number; task: string }>;

interface Run {
  takeoverMs: number;
  recoveredMs: number;
  aggregationMs: number;
  workersRestarted: number;
  jobsFailed: number;
  leaderRecoveredMs: number;
  killedMaster: number;
  newLeader: number;
  epoch: string;
  agentsReported: number;
  agentsMissing: number;
  appsReported: number;
  appsMissing: number;
  workersBefore: number;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : Math.round((s[m - 1]! + s[m]!) / 2);
}

const TERMINAL_BAD = new Set(['JOB_STATE_FAILED', 'JOB_STATE_KILLED']);

class Bench {
  etcd: EtcdProcess | undefined;
  ha: HaCluster | undefined;
  hosts: Host[] = [];
  dir = '';
  rack: Rack | undefined;
  private agentClients = new Map<string, TypedClient<AgentServiceDefinition>>();

  constructor(readonly o: Options) {}

  async setUp(): Promise<void> {
    const o = this.o;
    this.dir = mkdtempSync(join(tmpdir(), 'fuxi-bench-failover-'));
    say(`work dir ${this.dir}`);
    if (o.rack) {
      this.rack = await startRack(o.hosts, { prefix: 'fxb' });
      say(`rack up: ${this.rack.hosts.map((h) => `${h.name} ${h.ip}`).join(', ')}`);
      this.etcd = await startRackEtcd(this.rack);
    } else {
      this.etcd = await startEtcd();
    }
    say(`etcd at ${this.etcd.endpoint}`);
    this.ha = await HaCluster.start({
      ...(this.rack ? { placement: rackPlacement(this.rack, o.hosts) } : {}),
      dir: this.dir,
      masters: o.masters,
      agents: 0,
      // Simulated hosts dial in plaintext.
      insecure: true,
      etcd: { endpoints: [this.etcd.endpoint], prefix: PREFIX },
      leaseTtlSec: o.leaseTtlSec,
      recoveryDeadlineMs: o.recoveryDeadlineMs,
      amTimeoutMs: o.amTimeoutMs,
      heartbeatIntervalMs: o.heartbeatIntervalMs,
      amHeartbeatIntervalMs: o.amHeartbeatIntervalMs,
      agentTimeoutMs: o.agentTimeoutMs,
      logLevel: 'info',
      startTimeoutMs: 60_000,
      ...(o.agentTimingOutMs > 0 ? { masterArgs: ['--agent-timing-out-ms', String(o.agentTimingOutMs)] } : {}),
      masterNodeArgs: [...o.nodeArgs, ...(o.cpuProfDir ? ['--cpu-prof', '--cpu-prof-dir', o.cpuProfDir] : [])],
    });
    const l = this.ha.leader();
    say(`${o.masters} masters up (${this.ha.masterAddresses.join(', ')}); leader ${l?.master.name} epoch ${l?.epoch}`);
    this.hosts = await Promise.all(Array.from({ length: o.hosts }, (_, i) => this.startHost(i)));
    const nodes = o.hosts * o.nodesPerHost;
    say(`${o.hosts} simulated hosts serving ${nodes} nodes; waiting for them to register`);
    await this.ha.waitForNodes(nodes, 120_000);
    say(`${nodes} nodes registered`);
  }

  private async startHost(i: number): Promise<Host> {
    const prefix = `sim${i + 1}`;
    const logFile = join(this.dir, `${prefix}.log`);
    const child = startNodeProcess(
      [
        ...this.o.nodeArgs,
        ...(this.o.cpuProfDir ? ['--cpu-prof', '--cpu-prof-dir', this.o.cpuProfDir] : []),
        HOST_BIN,
        '--master',
        this.ha!.masterAddresses.join(','),
        '--nodes',
        String(this.o.nodesPerHost),
        '--prefix',
        prefix,
        '--cpu',
        '23',
        '--memory',
        '82Gi',
        '--work-dir',
        join(this.dir, prefix),
        '--pid-base',
        String(5_000_000 + i * 10_000_000),
        ...(this.rack ? ['--listen-host', '0.0.0.0'] : []),
      ],
      logFile,
      {},
      [...(this.rack ? this.rack.wrap(`a${i + 1}`) : []), ...(this.o.simNice > 0 ? ['nice', '-n', String(this.o.simNice)] : [])],
    );
    const host: Host = { prefix, child, logFile, agents: [] };
    this.hosts[i] = host;
    const rec = await new LogTail(logFile, ['host ready']).waitFor((r) => r.msg === 'host ready' && r.pid === child.pid, {
      what: '"host ready"',
      child,
      timeoutMs: 60_000,
    });
    host.agents = rec.agents as Host['agents'];
    return host;
  }

  private agent(address: string): TypedClient<AgentServiceDefinition> {
    let c = this.agentClients.get(address);
    if (!c) {
      c = connect(loadFuxiProto().AgentService, address);
      this.agentClients.set(address, c);
    }
    return c;
  }

  /** Every running worker on every simulated node, keyed by (appId, workerId). */
  async workers(): Promise<WorkerMap> {
    const out: WorkerMap = new Map();
    const all = this.hosts.flatMap((h) => h.agents);
    const queue = [...all];
    let unreachable = 0;
    await Promise.all(
      Array.from({ length: 32 }, async () => {
        for (let a = queue.shift(); a; a = queue.shift()) {
          try {
            const st = await this.agent(a.address).GetAgentState({}, { deadlineMs: 10_000 });
            for (const w of st.workers)
              if (w.state === 'WORKER_STATE_RUNNING') out.set(`${w.appId}/${w.workerId}`, { nodeId: a.nodeId, pid: w.pid, task: w.task });
          } catch {
            unreachable++;
          }
        }
      }),
    );
    if (unreachable > 0) say(`warning: ${unreachable} agents did not answer GetAgentState`);
    return out;
  }

  async submitApps(): Promise<string[]> {
    const o = this.o;
    const client = this.ha!.client({ retryForMs: 60_000 });
    try {
      const specs: JobSpec[] = Array.from({ length: o.apps }, (_, i) =>
        normalizeJobSpec({
          id: `bench-app-${String(i + 1).padStart(3, '0')}`,
          name: `bench-app-${i + 1}`,
          env: { SIM_DURATION_MS: String(DAY_MS) },
          tasks: [{ name: 'work', instances: o.instances, resources: { cpu: 1, memory: '1Gi' }, command: ['sim-worker', '${instance}'], maxAttempts: 3 }],
        }),
      );
      const ids: string[] = [];
      const t0 = Date.now();
      for (const s of specs) {
        if (o.submitRate > 0) {
          const due = t0 + (ids.length * 1000) / o.submitRate;
          if (due > Date.now()) await sleep(due - Date.now());
        }
        ids.push((await client.submit(s)).jobId);
        if (ids.length % 500 === 0) say(`${ids.length} of ${specs.length} apps submitted`);
      }
      return ids;
    } finally {
      client.close();
    }
  }

  /**
   * Hard-state write rate under load: submits short jobs at `rate` per second for `seconds`, waits
   * for them, and reads the leader's "hard state stats" lines (bytes written per 5 s window).
   */
  async hardStateUnderLoad(rate: number, seconds: number): Promise<{ jobs: number; peakBytesPerSec: number; avgBytesPerSec: number; bytesPerJob: number }> {
    const client = this.ha!.client({ retryForMs: 60_000 });
    const leader = this.ha!.leader()!;
    const before = readStats(leader.master.logFile, leader.master.pid);
    const t0 = Date.now();
    const ids: string[] = [];
    try {
      for (let i = 0; i < rate * seconds; i++) {
        const due = t0 + (i * 1000) / rate;
        if (due > Date.now()) await new Promise((r) => setTimeout(r, due - Date.now()));
        const spec = normalizeJobSpec({
          id: `load-${String(i).padStart(5, '0')}`,
          name: 'load',
          env: { SIM_DURATION_MS: '300' },
          tasks: [{ name: 't', instances: 4, resources: { cpu: 0.5, memory: '512Mi' }, command: ['sim-worker', '${instance}'] }],
        });
        ids.push((await client.submit(spec)).jobId);
      }
      const until = Date.now() + 120_000;
      for (;;) {
        const done = (await client.list()).filter(
          (j) => ids.includes(j.jobId) && ['JOB_STATE_SUCCEEDED', 'JOB_STATE_FAILED', 'JOB_STATE_KILLED'].includes(j.state),
        ).length;
        if (done === ids.length || Date.now() > until) break;
        await new Promise((r) => setTimeout(r, 500));
      }
      // One more stats window so the last writes are counted.
      await new Promise((r) => setTimeout(r, 5500));
    } finally {
      client.close();
    }
    const after = readStats(leader.master.logFile, leader.master.pid);
    const windows = after.windows.slice(before.windows.length);
    const elapsed = (Date.now() - t0) / 1000;
    const bytes = after.total - before.total;
    return {
      jobs: ids.length,
      peakBytesPerSec: Math.max(0, ...windows),
      avgBytesPerSec: Math.round(bytes / elapsed),
      bytesPerJob: ids.length ? Math.round(bytes / ids.length) : 0,
    };
  }

  async jobs(ids: readonly string[]): Promise<Map<string, JobInfo__Output>> {
    const client = this.ha!.client({ retryForMs: 60_000 });
    try {
      const wanted = new Set(ids);
      return new Map((await client.list()).filter((j) => wanted.has(j.jobId)).map((j) => [j.jobId, j]));
    } finally {
      client.close();
    }
  }

  /** Waits until every app's AM and all its instances run. */
  async waitAllRunning(ids: readonly string[], timeoutMs = 600_000): Promise<WorkerMap> {
    const want = ids.length * (this.o.instances + 1);
    const until = Date.now() + timeoutMs;
    let last = -1;
    for (;;) {
      const w = await this.workers();
      const ours = [...w.keys()].filter((k) => ids.some((id) => k.startsWith(`${id}/`))).length;
      if (ours !== last) say(`${ours} of ${want} workers (incl. ${ids.length} AMs) running`);
      last = ours;
      if (ours >= want) return w;
      if (Date.now() > until) throw new Error(`only ${ours} of ${want} workers running after ${timeoutMs} ms`);
      await sleep(1000);
    }
  }

  /** Workers in `before` whose app still runs but that are gone or run elsewhere / with another pid. */
  restarted(before: WorkerMap, after: WorkerMap, jobs: Map<string, JobInfo__Output>): string[] {
    const out: string[] = [];
    for (const [k, w] of before) {
      const appId = k.slice(0, k.indexOf('/'));
      if (jobs.get(appId)?.state !== 'JOB_STATE_RUNNING') continue;
      const now = after.get(k);
      if (!now || now.pid !== w.pid || now.nodeId !== w.nodeId) out.push(k);
    }
    return out;
  }

  async killRun(i: number, ids: readonly string[], failedSoFar: Set<string>): Promise<Run> {
    const ha = this.ha!;
    const before = await this.workers();
    const old = await ha.waitForLeader({ timeoutMs: 60_000 });
    say(`run ${i}: ${before.size} workers running; kill -9 ${old.master.name} (pid ${old.master.pid}, epoch ${old.epoch})`);
    const t0 = Date.now();
    ha.kill(old.master, 'SIGKILL');
    await waitExit(old.master.child, 5000);
    const next = await ha.waitForLeader({ notPids: [old.master.pid], afterEpoch: old.epoch, timeoutMs: 60_000 });
    const rec: LogRecord = await ha.waitForRecovery(next.master, next.epoch, 120_000);
    const takeoverMs = next.record.timeMs - t0;
    const recoveredMs = rec.timeMs - t0;
    say(
      `run ${i}: ${next.master.name} leads (epoch ${next.epoch}) after ${takeoverMs} ms; recovery complete after ${recoveredMs} ms ` +
        `(aggregation ${String(rec.aggregationMs)} ms, agents ${String(rec.agentsReported)}/${String(rec.agentsMissing)} missing, apps ${String(rec.appsReported)}/${String(rec.appsMissing)} missing)`,
    );
    await ha.restartMaster(old.master.index);
    say(`run ${i}: ${old.master.name} restarted as a standby (pid ${ha.masters[old.master.index]!.pid})`);
    if (this.o.settleMs > 0) await sleep(this.o.settleMs);
    const after = await this.workers();
    const jobs = await this.jobs(ids);
    const restarted = this.restarted(before, after, jobs);
    const failedNow = [...jobs.values()].filter((j) => TERMINAL_BAD.has(j.state) && !failedSoFar.has(j.jobId));
    for (const j of failedNow) failedSoFar.add(j.jobId);
    if (restarted.length) say(`run ${i}: ${restarted.length} workers restarted, e.g. ${restarted.slice(0, 5).join(', ')}`);
    if (failedNow.length)
      say(
        `run ${i}: ${failedNow.length} jobs failed, e.g. ${failedNow
          .slice(0, 3)
          .map((j) => `${j.jobId}: ${j.message}`)
          .join('; ')}`,
      );
    return {
      takeoverMs,
      recoveredMs,
      aggregationMs: Number(rec.aggregationMs ?? NaN),
      workersRestarted: restarted.length,
      jobsFailed: failedNow.length,
      leaderRecoveredMs: Number(rec.recoveredMs ?? NaN),
      killedMaster: old.master.index + 1,
      newLeader: next.master.index + 1,
      epoch: next.epoch,
      agentsReported: Number(rec.agentsReported ?? NaN),
      agentsMissing: Number(rec.agentsMissing ?? NaN),
      appsReported: Number(rec.appsReported ?? NaN),
      appsMissing: Number(rec.appsMissing ?? NaN),
      workersBefore: before.size,
    };
  }

  /** Hard-state bytes in etcd (keys + values under the prefix, election keys aside), per job. */
  async checkpointBytes(jobCount: number): Promise<{ perJob: number; byPrefix: Record<string, { keys: number; bytes: number }> }> {
    const store = await EtcdStore.open({ endpoints: [this.etcd!.endpoint], prefix: PREFIX });
    try {
      const byPrefix: Record<string, { keys: number; bytes: number }> = {};
      for (const kv of await store.list('')) {
        const top = kv.key.includes('/') ? `${kv.key.slice(0, kv.key.indexOf('/'))}/` : kv.key;
        const e = (byPrefix[top] ??= { keys: 0, bytes: 0 });
        e.keys++;
        e.bytes += Buffer.byteLength(kv.key) + Buffer.byteLength(kv.value);
      }
      // Per job: everything but the agent roster, the election and the master's own keys.
      const perJobBytes = Object.entries(byPrefix)
        .filter(([p]) => !['agents/', 'election/', 'master/'].includes(p))
        .reduce((n, [, e]) => n + e.bytes, 0);
      return { perJob: Math.round(perJobBytes / Math.max(1, jobCount)), byPrefix };
    } finally {
      await store.close();
    }
  }

  async tearDown(keepDir: boolean): Promise<void> {
    for (const c of this.agentClients.values()) c.close();
    this.agentClients.clear();
    await Promise.all(this.hosts.filter(Boolean).map((h) => terminate(h.child)));
    await this.ha?.stop();
    await this.etcd?.stop();
    await this.rack?.destroy();
    if (this.dir && !keepDir) rmSync(this.dir, { recursive: true, force: true });
    else if (this.dir) say(`logs kept in ${this.dir}`);
  }
}

async function main(): Promise<number> {
  const o = options();
  const bench = new Bench(o);
  let ok = false;
  const onSignal = (sig: string) => {
    say(`${sig}: cleaning up`);
    void bench.tearDown(true).finally(() => process.exit(130));
  };
  process.once('SIGINT', () => onSignal('SIGINT'));
  process.once('SIGTERM', () => onSignal('SIGTERM'));
  try {
    await bench.setUp();
    const ids = await bench.submitApps();
    say(`${ids.length} apps submitted (${o.instances} workers each)`);
    const initial = await bench.waitAllRunning(ids);
    // Every kill comes settleMs after the cluster last changed: the first after the last worker
    // started (the last AMs are still finishing their start until then), the others after the
    // killed master's restart.
    if (o.settleMs > 0) {
      say(`settling ${o.settleMs} ms before the first kill`);
      await sleep(o.settleMs);
    }
    const failed = new Set<string>();
    const runs: Run[] = [];
    for (let i = 1; i <= o.kills; i++) runs.push(await bench.killRun(i, ids, failed));
    const final = await bench.workers();
    const jobs = await bench.jobs(ids);
    const totalRestarted = bench.restarted(initial, final, jobs).length;
    const checkpoint = await bench.checkpointBytes(jobs.size);
    let load = { jobs: 0, peakBytesPerSec: 0, avgBytesPerSec: 0, bytesPerJob: 0 };
    if (o.load) {
      say('measuring hard-state writes under load (20 jobs/s for 10 s)');
      load = await bench.hardStateUnderLoad(20, 10);
      say(
        `under load: ${load.jobs} jobs, ${load.avgBytesPerSec} B/s on average, ${load.peakBytesPerSec} B/s peak (5 s windows), ${load.bytesPerJob} B written per job`,
      );
    }
    const workers = [...initial.values()].filter((w) => w.task !== AM_SU).length;
    const result = {
      nodes: o.hosts * o.nodesPerHost,
      apps: ids.length,
      workers,
      runs,
      p50RecoveredMs: median(runs.map((r) => r.recoveredMs)),
      checkpointBytesPerJob: checkpoint.perJob,
      ...(o.load ? { hardStateUnderLoad: load } : {}),
      // Context for the numbers above.
      p50TakeoverMs: median(runs.map((r) => r.takeoverMs)),
      p50LeaderRecoveredMs: median(runs.map((r) => r.leaderRecoveredMs)),
      totalWorkersRestarted: totalRestarted,
      jobsFailedTotal: failed.size,
      checkpointBytes: checkpoint.byPrefix,
      config: {
        masters: o.masters,
        hosts: o.hosts,
        nodesPerHost: o.nodesPerHost,
        instancesPerApp: o.instances,
        leaseTtlSec: o.leaseTtlSec,
        recoveryDeadlineMs: o.recoveryDeadlineMs,
        amTimeoutMs: o.amTimeoutMs,
        heartbeatIntervalMs: o.heartbeatIntervalMs,
        amHeartbeatIntervalMs: o.amHeartbeatIntervalMs,
        agentTimeoutMs: o.agentTimeoutMs,
        agentTimingOutMs: o.agentTimingOutMs || 'master default',
        submitRate: o.submitRate,
        settleMs: o.settleMs,
        simNice: o.simNice,
        placement: o.rack ? 'rack: etcd, each master and each simulated-node host on its own network-namespace host' : 'loopback',
      },
      notes:
        'recoveredMs = kill -> "recovery complete" of the new leader; leaderRecoveredMs = the master\'s own recoveredMs ' +
        '(became leader -> scheduling resumed); takeoverMs = kill -> "became leader". Times from the masters\' log timestamps. ' +
        "Each kill comes settleMs after the cluster last changed (the last worker running, or the previous kill's restart).",
      finishedAt: new Date().toISOString(),
    };
    const out = resolve(o.out);
    mkdirSync(dirname(out), { recursive: true });
    writeFileSync(out, JSON.stringify(result, null, 2) + '\n');
    const line = (r: Run, i: number) =>
      `  run ${i + 1}: takeover ${r.takeoverMs} ms, recovered ${r.recoveredMs} ms (aggregation ${r.aggregationMs} ms), restarted ${r.workersRestarted}, failed ${r.jobsFailed}`;
    process.stdout.write(
      [
        `master failover: ${result.nodes} nodes, ${result.apps} apps, ${result.workers} workers, lease ${o.leaseTtlSec} s`,
        ...runs.map(line),
        `  p50 recovered ${result.p50RecoveredMs} ms (target < ${o.rack ? 2000 : 3000}), p50 takeover ${result.p50TakeoverMs} ms, p50 leader-side recovery ${result.p50LeaderRecoveredMs} ms`,
        `  workers restarted overall ${totalRestarted}, jobs failed ${failed.size}; hard state ${result.checkpointBytesPerJob} bytes per job`,
        ...(o.load
          ? [
              `  hard-state writes under load (${load.jobs} jobs at 20/s): ${load.avgBytesPerSec} B/s average, ${load.peakBytesPerSec} B/s peak, ${load.bytesPerJob} B per job`,
            ]
          : []),
        `  written to ${out}`,
        '',
      ].join('\n'),
    );
    ok = true;
    return 0;
  } catch (e) {
    say(`failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
    return 1;
  } finally {
    await bench.tearDown(!ok || o.keep);
  }
}

main().then(
  (code) => process.exit(code),
  (e: unknown) => {
    process.stderr.write(`bench-failover: ${String(e)}\n`);
    process.exit(1);
  },
);

/** The master's "hard state stats" lines: cumulative bytes and each window's bytes per second. */
function readStats(logFile: string, pid: number): { total: number; windows: number[] } {
  let total = 0;
  const windows: number[] = [];
  for (const line of readFileSync(logFile, 'utf8').split('\n')) {
    if (!line.includes('hard state stats')) continue;
    try {
      const rec = JSON.parse(line) as { pid: number; bytesTotal: number; bytesPerSec: number };
      if (rec.pid !== pid) continue;
      total = rec.bytesTotal;
      windows.push(rec.bytesPerSec);
    } catch {
      /* partial line */
    }
  }
  return { total, windows };
}
