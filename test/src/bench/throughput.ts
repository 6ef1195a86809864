/**
 * Benchmark (not a test): many small jobs on a local cluster with 16 slots in total (2 agents x 8
 * cores, tasks of 1 core running `/bin/true`), the way workflow engines use a cluster. Writes
 * bench-results/throughput.json:
 *
 * - separateCli: N jobs, one `fuxi submit` process each, 8 in flight, then wait for all; also the
 *   CPU of those N processes (`cliCpuS`: on 2 cores they, not the daemons, take most of it). They
 *   run with FUXI_CLI_SERVER=1, as the README has scripts that call `fuxi` per task run it: each
 *   hands its command to the user's `fuxi cli-server` (started by the first; its CPU is in
 *   `cliCpuS`, and `cliServerCpuS`). separateCliInProcess: the same with each command run in its
 *   own process (the default);
 * - sdkMany: N jobs through the SDK's submitMany; array: the same N as one job array;
 * - oneJob: 1 job x N instances;
 * - latency: 200 single jobs one after another on an idle cluster (submit -> running, -> done);
 * - cliColdStartMs: the median wall time of 20 cold `fuxi submit` processes (the `fuxi` bin run as
 *   a user runs it), one after another on an idle cluster, with FUXI_CLI_SERVER=1 (the server's
 *   CPU per command is `serverCpuMeanMs`); cliColdStartInProcessMs: the same, each run in its own
 *   process (separateCli's `cliMedianMs` is the same under the load of 8 in flight); with their
 *   mean CPU, and both for a script that does nothing started the same way (`bareNode...`);
 * - watchMany: the master's CPU while N jobs are watched on one WatchJobs stream, and on N WatchJob
 *   streams, and the kill of all of them;
 * - amHostCrash: kill -9 of an AM host holding the AMs of about 100 running jobs (`--crash-jobs`):
 *   failedJobs, restartedWorkers, recoveryMsMax (kill -> each AM's next attempt registered);
 * - tenThousand (with --ten-thousand): 10,000 jobs through submitMany, the master's RSS before and
 *   after, and once its retention (`--job-retention-count 1000` here) has deleted all but the newest
 *   1,000 finished jobs; then its live heap (`masterLiveHeapMbAfterRetention`: the objects of a heap
 *   snapshot, which collects the garbage first; its heap in use counts the garbage not yet collected).
 *
 * The daemons of a scenario that measures CPU or throughput are warmed up first (`--warm-up`, default
 * 5000): one job of that many instances and that many one-instance jobs through submitMany, each
 * waited for, before the measurement starts. A cluster serves jobs for days; the first minutes of a fresh
 * daemon are V8 compiling its hot paths, and a function called once per job is optimized only
 * after a few thousand calls. In `perf` of the whole machine during a 1,000-job sdkMany, V8's
 * optimizing compiler (TurboFan) took 19 % of all samples after a 1,000-job warm-up, 15.5 % after
 * 2,000 and 8.8 % after 5,000; `--trace-opt` counted 211 functions optimized in the master during
 * the measurement after 1,000 (104 of them never before), 102 after 5,000. The warm-up's part shaped
 * like the scenario goes last (the small jobs, or for oneJob the large job), and the daemons' metrics
 * are scraped during it as a Prometheus server would, every 15 s: V8 specializes code on the
 * shapes it saw last, and with the large job last (and the metrics' HTTP/1 responses first seen at
 * the measurement's own scrape) the master recompiled hot paths of its streams, of gRPC and of its
 * own inside the measured window (`--trace-deopt`: 51 deoptimizations there, 49 in the 10 s of the
 * large job before it). In `perf` during sdkMany, TurboFan's share of the daemons' samples was
 * 12.8-14.7 % with the large job last (three runs) and 9.0-9.6 % in this order (three runs).
 * `--warm-up 0` measures the cold daemons.
 *
 * `--store etcd` runs every scenario with the master on a real etcd (started here) instead of the
 * embedded store, and writes bench-results/throughput-etcd.json.
 *
 * `controlCpuS` is the user+sys CPU of the master, the agents (with their spawn helpers and the
 * helpers' forkers, which lay out and fork the workers; their part is `spawnHelpersCpuS`) and the AM
 * hosts over the scenario, from /proc, not the workers'. The reaped children of the agents, their
 * helpers and the forkers (each
 * worker's `/bin/true`, started with no wrapper, and what its process did between the fork and the
 * exec: far from nothing per task) are `workersCpuS`, reported beside it. Every AM in these
 * scenarios is hosted, so no AM process is among those children (an AM host that ends mid-run is:
 * only in amHostCrash, which reports no CPU). Beside them: the bench's own CPU (`clientCpuS`, the
 * SDK's side) and the whole machine's busy and idle time (`machineBusyS`, `machineIdleS`), which
 * tell whether a scenario was bound by the machine's CPU or by some wait.
 *
 * The clusters' directories (the agents' work dirs with every worker's) go under /dev/shm when there
 * is one (`defaultBase`), or under `--dir`.
 *
 * The file starts with what was measured: when (`at`), on which commit (`commit`, and `dirty` when
 * tracked files differed from it), with which Node and how many CPUs, and which `scenarios` ran.
 * `--out FILE` writes it elsewhere (a partial run with `--only` that should not replace the full
 * run's file).
 *
 *   node test/dist/bench/throughput.js [--jobs 1000] [--latency 200] [--ten-thousand] [--only sdkMany,array] [--max-am-share 0.1] [--warm-up 5000] [--dir /tmp] [--keep] [--out FILE]
 */
import { spawn, spawnSync } from 'node:child_process';
import {
  accessSync,
  chmodSync,
  constants as fsConstants,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import type { FuxiClient } from '@fuxi/client';
import { cliServerPaths } from '@fuxi/client/cli/cli-server-dir';
import { normalizeJobSpec, type JobSpec } from '@fuxi/common';
import { amHostPid, BIN, LocalCluster, REPO_ROOT } from '@fuxi/deploy';
import { loadFuxiProto } from '@fuxi/proto';
import { connect } from '@fuxi/rpc';
import parsePrometheusTextFormat, { type ParsedFamily } from 'parse-prometheus-text-format';
import { startEtcd } from '../etcd-harness.js';
import { codeCacheOf } from './code-cache.js';

const TICK_S = 0.01; // USER_HZ = 100 on Linux

/** user+sys of `pid` itself and of its waited-for children, in seconds. */
function cpuOf(pid: number): { own: number; children: number } {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // fields 14-17 (utime, stime, cutime, cstime) are 11-14 after the command
    return { own: (Number(f[11]) + Number(f[12])) * TICK_S, children: (Number(f[13]) + Number(f[14])) * TICK_S };
  } catch {
    return { own: 0, children: 0 };
  }
}

/** The machine's CPU time since boot from /proc/stat, in seconds: busy (all but idle and iowait) and idle. */
function machineCpu(): { busy: number; idle: number } {
  const f = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal (guest and guest_nice are in user and nice already)
  const idle = (f[3] ?? 0) + (f[4] ?? 0);
  const busy = f.slice(0, 8).reduce((a, x) => a + x, 0) - idle;
  return { busy: busy * TICK_S, idle: idle * TICK_S };
}

/** The live children of `pid` whose command line includes `name`. */
function childrenNamed(pid: number, name: string): number[] {
  const out: number[] = [];
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      for (const child of readFileSync(`/proc/${pid}/task/${tid}/children`, 'utf8').split(' ').filter(Boolean)) {
        if (readFileSync(`/proc/${child}/cmdline`, 'utf8').includes(name)) out.push(Number(child));
      }
    }
  } catch {
    /* gone */
  }
  return out;
}

/**
 * The live spawn helpers of agent `pid` (its children running spawn-helper.js) and their forkers
 * (fuxi-forker, each helper's child): the processes that fork the workers.
 */
function spawnHelpers(pid: number): number[] {
  const helpers = childrenNamed(pid, 'spawn-helper');
  return [...helpers, ...helpers.flatMap((h) => childrenNamed(h, 'fuxi-forker'))];
}

/** The master's heap snapshots (`--heapsnapshot-signal`) go here, under the scenario's dir. */
const HEAP_SNAPSHOT_DIR = 'master-heap';

/**
 * The live heap of a daemon started with `--heapsnapshot-signal=SIGUSR2 --diagnostic-dir=dir`, in MB:
 * the self sizes of every object in a snapshot it writes now (V8 collects the garbage first). The
 * snapshot is deleted after.
 */
async function liveHeapMb(pid: number, snapshotDir: string): Promise<number> {
  const before = new Set(existsSync(snapshotDir) ? readdirSync(snapshotDir) : []);
  process.kill(pid, 'SIGUSR2');
  const t0 = Date.now();
  let file: string | undefined;
  let size = -1;
  // The snapshot is written on the daemon's thread: done once it exists and stops growing.
  while (Date.now() - t0 < 120_000) {
    await sleep(500);
    file ??= (existsSync(snapshotDir) ? readdirSync(snapshotDir) : []).find((f) => f.endsWith('.heapsnapshot') && !before.has(f));
    if (file === undefined) continue;
    const now = statSync(join(snapshotDir, file)).size;
    if (now > 0 && now === size) break;
    size = now;
  }
  if (file === undefined) return NaN;
  const path = join(snapshotDir, file);
  try {
    const snap = JSON.parse(readFileSync(path, 'utf8')) as { snapshot: { meta: { node_fields: string[] } }; nodes: number[] };
    const fields = snap.snapshot.meta.node_fields;
    const at = fields.indexOf('self_size');
    let bytes = 0;
    for (let i = at; i < snap.nodes.length; i += fields.length) bytes += snap.nodes[i]!;
    return Math.round((bytes / 1024 / 1024) * 10) / 10;
  } catch {
    return NaN; // not whole yet after two minutes: no figure rather than a wrong one
  } finally {
    rmSync(path, { force: true });
  }
}

function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Math.round(Number(m[1]) / 1024) : 0;
}

const percentile = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]! : NaN;
};

const round = (x: number, d = 1) => Math.round(x * 10 ** d) / 10 ** d;

function tinyJob(name: string, instances = 1): JobSpec {
  return normalizeJobSpec({ name, tasks: [{ name: 't', instances, resources: { cpu: 1, memory: 64 }, command: ['/bin/true'] }] });
}

/** A scenario of `n` jobs as reported: its rate, its measured CPU, and per job its CPU and the master's calls by method. */
function throughputFigures(m: Awaited<ReturnType<Bench['measure']>>, n: number, failed: number): Record<string, unknown> {
  const { masterCalls, agentCalls, ...rest } = m;
  return {
    jobs: n,
    failed,
    jobsPerS: round(n / m.wallS),
    ...rest,
    controlCpuMsPerJob: round((m.controlCpuS * 1000) / n),
    masterCallsPerJob: Object.fromEntries(Object.entries(masterCalls).map(([k, v]) => [k, round(v / n, 2)])),
    agentCallsPerJob: Object.fromEntries(Object.entries(agentCalls).map(([k, v]) => [k, round(v / n, 2)])),
  };
}

class Bench {
  constructor(
    readonly cluster: LocalCluster,
    readonly client: FuxiClient,
  ) {}

  /** The live AM host processes of this cluster (their CPU is in no agent's children until they exit). */
  amHosts(): number[] {
    const dir = this.cluster.opts.dir;
    const out: number[] = [];
    for (const name of readdirSync('/proc')) {
      if (!/^\d+$/.test(name)) continue;
      try {
        if (!readlinkSync(`/proc/${name}/cwd`).startsWith(dir)) continue;
        if (/am-?host/.test(readFileSync(`/proc/${name}/cmdline`, 'utf8'))) out.push(Number(name));
      } catch {
        /* gone, or not ours */
      }
    }
    return out;
  }

  /**
   * The CPU by part: the master, the agents (with their spawn helpers), the AM hosts (the control
   * plane), and the reaped children of the agents and their helpers (the workers).
   */
  cpuByPart(): { master: number; agents: number; spawnHelpers: number; amHosts: number; workers: number } {
    const helpers = this.cluster.agents.flatMap((a) => spawnHelpers(a.pid)).map((pid) => cpuOf(pid));
    const agents = [...this.cluster.agents.map((a) => cpuOf(a.pid)), ...helpers];
    return {
      master: cpuOf(this.cluster.master.pid).own,
      agents: agents.reduce((s, c) => s + c.own, 0),
      spawnHelpers: helpers.reduce((s, c) => s + c.own, 0),
      amHosts: this.amHosts().reduce((s, pid) => s + cpuOf(pid).own, 0),
      workers: agents.reduce((s, c) => s + c.children, 0),
    };
  }

  /** A daemon's Prometheus metrics, parsed ([] when it serves none or cannot be read). */
  async metricsOf(url: string | undefined): Promise<ParsedFamily[]> {
    if (!url) return [];
    try {
      return parsePrometheusTextFormat(await (await fetch(url)).text());
    } catch {
      return [];
    }
  }

  /** The master's Prometheus metrics, parsed. */
  masterMetrics(): Promise<ParsedFamily[]> {
    return this.metricsOf(this.cluster.master.metricsUrl);
  }

  /** The gRPC calls of `service` answered so far by the daemons at `urls`, by method (a batch's entries each count as a call of their method). */
  async callsOf(urls: Array<string | undefined>, service: string): Promise<Record<string, number>> {
    const out: Record<string, number> = {};
    for (const url of urls) {
      const handled = (await this.metricsOf(url)).find((f) => f.name === 'fuxi_grpc_server_handled_total');
      for (const m of handled?.metrics ?? []) {
        const method = m.labels?.method;
        if (method && m.labels?.service === service) out[method] = (out[method] ?? 0) + Number(m.value);
      }
    }
    return out;
  }

  /** The master's answered gRPC calls so far, by method. */
  masterCalls(): Promise<Record<string, number>> {
    return this.callsOf([this.cluster.master.metricsUrl], 'fuxi.v1.MasterService');
  }

  /** The agents' answered gRPC calls so far, by method. */
  agentCalls(): Promise<Record<string, number>> {
    return this.callsOf(
      this.cluster.agents.map((a) => a.metricsUrl),
      'fuxi.v1.AgentService',
    );
  }

  /** Scrapes every daemon's metrics, as a Prometheus server does (the answers are not used). */
  async scrape(): Promise<void> {
    for (const url of [this.cluster.master.metricsUrl, ...this.cluster.agents.map((a) => a.metricsUrl)]) await this.metricsOf(url);
  }

  /** The master's V8 heap in use, in MB (`nodejs_heap_size_used_bytes`; NaN when it serves no metrics). */
  async masterHeapMb(): Promise<number> {
    const value = (await this.masterMetrics()).find((f) => f.name === 'nodejs_heap_size_used_bytes')?.metrics[0]?.value;
    return value === undefined ? NaN : Math.round(Number(value) / 2 ** 20);
  }

  /**
   * Runs `fn`, returning its wall time and the control plane's CPU in that time (in all, and by
   * part), the workers', and the master's and the agents' calls answered meanwhile by method (`masterCalls`, `agentCalls`; the
   * calls of an `AmCalls` batch each count under their own method too). Also what the rest of the
   * machine did: this process's own CPU (`clientCpuS`: the SDK submitting and waiting), and the
   * machine's busy and idle CPU time from /proc/stat (`machineBusyS`, `machineIdleS`: on 2 cores,
   * idle near 0 means the run was bound by CPU, not by a wait).
   */
  async measure(fn: () => Promise<void>): Promise<{
    wallS: number;
    controlCpuS: number;
    masterCpuS: number;
    agentsCpuS: number;
    amHostsCpuS: number;
    spawnHelpersCpuS: number;
    workersCpuS: number;
    clientCpuS: number;
    machineBusyS: number;
    machineIdleS: number;
    masterCalls: Record<string, number>;
    agentCalls: Record<string, number>;
  }> {
    const c0 = await this.masterCalls();
    const a0 = await this.agentCalls();
    const p0 = this.cpuByPart();
    const t0 = Date.now();
    const u0 = process.cpuUsage();
    const k0 = machineCpu();
    await fn();
    const k1 = machineCpu();
    const u1 = process.cpuUsage(u0);
    const p1 = this.cpuByPart();
    const c1 = await this.masterCalls();
    const a1 = await this.agentCalls();
    const delta = (before: Record<string, number>, after: Record<string, number>) =>
      Object.fromEntries(Object.entries(after).flatMap(([k, v]) => (v - (before[k] ?? 0) > 0 ? [[k, v - (before[k] ?? 0)]] : [])));
    const masterCalls = delta(c0, c1);
    const agentCalls = delta(a0, a1);
    const masterCpuS = round(p1.master - p0.master, 2);
    const agentsCpuS = round(p1.agents - p0.agents, 2);
    const amHostsCpuS = round(p1.amHosts - p0.amHosts, 2);
    const workersCpuS = round(p1.workers - p0.workers, 2);
    const spawnHelpersCpuS = round(p1.spawnHelpers - p0.spawnHelpers, 2);
    return {
      wallS: round((Date.now() - t0) / 1000, 2),
      controlCpuS: round(masterCpuS + agentsCpuS + amHostsCpuS, 2),
      masterCpuS,
      agentsCpuS,
      amHostsCpuS,
      spawnHelpersCpuS,
      workersCpuS,
      clientCpuS: round((u1.user + u1.system) / 1e6, 2),
      machineBusyS: round(k1.busy - k0.busy, 2),
      machineIdleS: round(k1.idle - k0.idle, 2),
      masterCalls,
      agentCalls,
    };
  }

  async waitIds(ids: string[]): Promise<number> {
    const done = await this.client.waitAll({ jobIds: ids }, { endsOnly: true });
    return [...done.values()].filter((j) => j.state !== 'JOB_STATE_SUCCEEDED').length;
  }
}

/** Writes a one-instance `/bin/true` job file named `name` in `dir`. */
function oneJobFile(dir: string, name: string): string {
  const file = join(dir, `${name}.yaml`);
  writeFileSync(file, `name: ${name}\ntasks:\n  - name: t\n    instances: 1\n    resources: {cpu: 1, memory: 64Mi}\n    command: [/bin/true]\n`);
  return file;
}

/**
 * `fuxi` as a user runs it: the built bin itself (its `#!` line picks how Node starts), or, without
 * a bundle (`tsc -b` alone), Node on the module tree.
 */
function cliCommand(args: string[]): [string, string[]] {
  return BIN.cli.endsWith('.cjs') ? [BIN.cli, args] : [process.execPath, [BIN.cli, ...args]];
}

/**
 * How `fuxi` runs: each command in its own process (`inProcess`, the default), or with
 * FUXI_CLI_SERVER=1 (`server`), which hands it to the user's `fuxi cli-server` (started by the
 * first command, in a runtime folder of the bench's own).
 */
interface CliMode {
  env: Record<string, string>;
  /** The server's pid file (server mode). */
  pidFile?: string;
}

function cliModes(dir: string): { inProcess: CliMode; server: CliMode } {
  const runtime = join(dir, 'cli-run');
  mkdirSync(runtime, { recursive: true, mode: 0o700 });
  return {
    inProcess: { env: { FUXI_CLI_SERVER: '0' } },
    server: { env: { FUXI_CLI_SERVER: '1', XDG_RUNTIME_DIR: runtime }, pidFile: cliServerPaths({ XDG_RUNTIME_DIR: runtime }).pidFile },
  };
}

/** Stops the mode's CLI server (by its pid); the CPU it used, in seconds (0: none ran). */
async function stopCliServer(mode: CliMode): Promise<number> {
  if (!mode.pidFile) return 0;
  let pid: number;
  try {
    pid = Number(readFileSync(mode.pidFile, 'utf8'));
  } catch {
    return 0;
  }
  const cpu = cpuOf(pid).own;
  try {
    process.kill(pid, 'SIGTERM');
  } catch {
    return cpu;
  }
  for (let i = 0; i < 100 && existsSync(`/proc/${pid}`); i++) await sleep(50);
  return cpu;
}

/** Runs `fuxi submit file --id id` as a process of its own; resolves with its wall time and whether it exited 0. */
function cliSubmit(b: Bench, file: string, id: string, mode: CliMode): Promise<{ ms: number; ok: boolean }> {
  const t0 = Date.now();
  return new Promise((resolve) => {
    const p = spawn(...cliCommand(['submit', file, '--id', id, '--master', b.cluster.masterAddress]), {
      stdio: 'ignore',
      env: { ...process.env, ...b.cluster.clientEnv(), ...mode.env },
    });
    p.on('exit', (code) => resolve({ ms: Date.now() - t0, ok: code === 0 }));
  });
}

/**
 * CPU (user+sys, seconds) of this process's children that have ended and been waited for: the
 * `fuxi` processes a scenario ran (the cluster's daemons are children too, but run until the end).
 */
function endedChildrenCpuS(): number {
  return cpuOf(process.pid).children;
}

async function separateCli(b: Bench, n: number, dir: string, mode: CliMode, prefix: string): Promise<Record<string, unknown>> {
  const file = oneJobFile(dir, 'one');
  const walls: number[] = [];
  const ids = Array.from({ length: n }, (_, i) => `${prefix}-${i}`);
  let failed = 0;
  const cli0 = endedChildrenCpuS();
  let serverCpuS = 0;
  const m = await b.measure(async () => {
    let next = 0;
    const worker = async () => {
      while (next < ids.length) {
        const r = await cliSubmit(b, file, ids[next++]!, mode);
        if (!r.ok) failed++;
        walls.push(r.ms);
      }
    };
    await Promise.all(Array.from({ length: 8 }, worker));
    failed += await b.waitIds(ids);
    serverCpuS = await stopCliServer(mode);
  });
  // The machine's other big spender here: the 1,000 CLI processes themselves (and the CLI server
  // that ran their commands, in server mode).
  const cliCpuS = round(endedChildrenCpuS() - cli0 + serverCpuS, 2);
  return {
    ...throughputFigures(m, n, failed),
    cliMedianMs: percentile(walls, 50),
    cliCpuS,
    ...(mode.pidFile ? { cliServerCpuS: round(serverCpuS, 2) } : {}),
    cliCpuMsPerJob: round((cliCpuS * 1000) / n),
  };
}

/**
 * A script that does nothing, started as the CLI is: the `fuxi` bin's own `#!` line (which sets
 * how Node starts and which certificate variables it drops), or plain `node` when the CLI runs as
 * the module tree. Its wall time is the machine's floor for a cold `fuxi` process.
 */
function bareScript(dir: string): [string, string[]] {
  if (!BIN.cli.endsWith('.cjs')) return [process.execPath, ['-e', '0']];
  const file = join(dir, 'bare.cjs');
  writeFileSync(file, `${readFileSync(BIN.cli, 'utf8').split('\n', 1)[0]}\n0;\n`);
  chmodSync(file, 0o755);
  return [file, []];
}

function bareNode(script: [string, string[]]): Promise<number> {
  const t0 = Date.now();
  return new Promise((resolve) => spawn(...script, { stdio: 'ignore' }).on('exit', () => resolve(Date.now() - t0)));
}

/**
 * The median wall time of `runs` cold `fuxi submit` processes, one after another on an idle
 * cluster; and, each right after a submit (the same phase of the machine), that of a script
 * that does nothing started the same way (`bareScript`), which no CLI can beat.
 */
async function cliColdStart(b: Bench, runs: number, dir: string, mode: CliMode, prefix: string): Promise<Record<string, unknown>> {
  const file = oneJobFile(dir, 'cold');
  const bareCmd = bareScript(dir);
  const walls: number[] = [];
  const bare: number[] = [];
  let failed = 0;
  let cliCpuS = 0;
  let bareCpuS = 0;
  for (let i = 0; i < runs; i++) {
    const c0 = endedChildrenCpuS();
    const r = await cliSubmit(b, file, `${prefix}-${i}`, mode);
    const c1 = endedChildrenCpuS();
    walls.push(r.ms);
    if (!r.ok) failed++;
    bare.push(await bareNode(bareCmd));
    bareCpuS += endedChildrenCpuS() - c1;
    cliCpuS += c1 - c0;
    await b.waitIds([`${prefix}-${i}`]);
  }
  const serverCpuS = await stopCliServer(mode);
  return {
    runs,
    failed,
    medianMs: percentile(walls, 50),
    p90Ms: percentile(walls, 90),
    bareNodeMedianMs: percentile(bare, 50),
    // Means: /proc counts CPU in 10 ms ticks, too coarse for one run.
    cpuMeanMs: round((cliCpuS * 1000) / runs),
    ...(mode.pidFile ? { serverCpuMeanMs: round((serverCpuS * 1000) / runs) } : {}),
    bareNodeCpuMeanMs: round((bareCpuS * 1000) / runs),
    // What the bin ran with, at the end (the runs may have written it; a CLI server's write its own).
    codeCache: codeCacheOf(BIN.cli),
  };
}

/** Jobs of the warm-up when `--warm-up` is not given (the header says why this many). */
const DEFAULT_WARM_UP = 5000;
/** How often the warm-up scrapes the daemons' metrics (Prometheus' usual interval). */
const WARM_UP_SCRAPE_MS = 15_000;

/**
 * `n` one-instance jobs through submitMany and one job of `n` instances, waited for: the daemons' hot
 * paths compiled. The part shaped like what the scenario measures goes last (`bigLast`: the job of
 * `n` instances, for oneJob; else the small jobs): V8 specializes code on the shapes it saw last,
 * and a phase of the other kind right before the measurement sends the scenario's hot paths back
 * through the optimizing compiler inside the measured window (below).
 */
async function warmUp(b: Bench, n: number, bigLast: boolean): Promise<void> {
  if (n <= 0) return;
  const big = async () => {
    const { jobId } = await b.client.submit({ ...tinyJob('warm-one', n), jobId: 'warm-one' });
    return b.waitIds([jobId]);
  };
  const small = async () => {
    const res = await b.client.submitMany(Array.from({ length: n }, (_, i) => ({ ...tinyJob('warm'), jobId: `warm-${i}` })));
    return (await b.waitIds(res.filter((r) => !r.error).map((r) => r.jobId))) + res.filter((r) => r.error).length;
  };
  // Scraped as a Prometheus server scrapes a cluster (every WARM_UP_SCRAPE_MS): the measurement's
  // own scrapes, right before and after it, are then nothing new to the daemons' compiled code.
  await b.scrape();
  const scraper = setInterval(() => void b.scrape().catch(() => {}), WARM_UP_SCRAPE_MS);
  let failed: number;
  try {
    failed = bigLast ? (await small()) + (await big()) : (await big()) + (await small());
  } finally {
    clearInterval(scraper);
  }
  if (failed > 0) throw new Error(`${failed} warm-up job(s) did not succeed`);
}

async function sdkMany(b: Bench, n: number): Promise<Record<string, unknown>> {
  let failed = 0;
  const m = await b.measure(async () => {
    const res = await b.client.submitMany(Array.from({ length: n }, (_, i) => ({ ...tinyJob('many'), jobId: `many-${i}` })));
    failed = res.filter((r) => r.error).length + (await b.waitIds(res.filter((r) => !r.error).map((r) => r.jobId)));
  });
  return throughputFigures(m, n, failed);
}

async function array(b: Bench, n: number): Promise<Record<string, unknown>> {
  let failed = 0;
  const m = await b.measure(async () => {
    const { arrayId } = await b.client.submitArray({ ...tinyJob('arr'), jobId: 'arr' }, { indices: Array.from({ length: n }, (_, i) => i) });
    const done = await b.client.waitAll({ arrayId }, { endsOnly: true });
    failed = [...done.values()].filter((j) => j.state !== 'JOB_STATE_SUCCEEDED').length;
  });
  return throughputFigures(m, n, failed);
}

async function oneJob(b: Bench, n: number): Promise<Record<string, unknown>> {
  const m = await b.measure(async () => {
    const { jobId } = await b.client.submit({ ...tinyJob('one', n), jobId: 'one-job' });
    await b.waitIds([jobId]);
  });
  return { instances: n, ...m };
}

async function latency(b: Bench, n: number): Promise<Record<string, unknown>> {
  const toRunning: number[] = [];
  const toDone: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = Date.now();
    const { jobId } = await b.client.submit({ ...tinyJob('lat'), jobId: `lat-${i}` });
    let running = 0;
    for await (const j of b.client.watch(jobId)) {
      if (!running && j.state !== 'JOB_STATE_SUBMITTED') running = Date.now() - t0;
    }
    toRunning.push(running || Date.now() - t0);
    toDone.push(Date.now() - t0);
  }
  return {
    jobs: n,
    submitToRunningP50Ms: percentile(toRunning, 50),
    submitToRunningP99Ms: percentile(toRunning, 99),
    submitToDoneP50Ms: percentile(toDone, 50),
  };
}

/**
 * The master's CPU while 1,000 jobs are watched (an array held at one running member, so nothing
 * else moves): 10 s with one WatchJobs stream over all of them, 10 s with 1,000 WatchJob streams,
 * then the kill of all 1,000 with both kinds of watchers notified.
 */
async function watchMany(b: Bench, n: number): Promise<Record<string, unknown>> {
  const master = () => cpuOf(b.cluster.master.pid).own;
  const idle = async (ms: number) => {
    const c0 = master();
    await new Promise((r) => setTimeout(r, ms));
    return round((master() - c0) / (ms / 1000), 3);
  };
  const sleeper = normalizeJobSpec({ name: 'w', tasks: [{ name: 't', instances: 1, resources: { cpu: 1, memory: 64 }, command: ['sleep', '600'] }] });
  const { arrayId, results } = await b.client.submitArray({ ...sleeper, jobId: 'w' }, { indices: Array.from({ length: n }, (_, i) => i), maxRunning: 1 });
  const baseline = await idle(5000);
  const one = b.client.waitAll({ arrayId });
  const oneStreamCpuPerS = await idle(10_000);
  const many = results.map((r) => b.client.waitFor(r.jobId));
  await new Promise((r) => setTimeout(r, 2000));
  const perJobStreamsCpuPerS = await idle(10_000);
  const c0 = master();
  const t0 = Date.now();
  for (let i = 0; i < results.length; i += 50) await Promise.all(results.slice(i, i + 50).map((r) => b.client.kill(r.jobId, 'bench')));
  await Promise.all([one, ...many]);
  return {
    jobs: n,
    idleMasterCpuPerS: baseline,
    oneStreamCpuPerS,
    perJobStreamsCpuPerS,
    killAllMs: Date.now() - t0,
    killAllMasterCpuS: round(master() - c0, 2),
  };
}

/**
 * kill -9 of an AM host holding the AMs of `n` running jobs (one `sleep` worker each): how many
 * jobs failed, how many workers were restarted (a running worker with another pid, or gone), and
 * the longest kill-to-back time of an AM (its next attempt registered with the master).
 */
async function amHostCrash(b: Bench, n: number): Promise<Record<string, unknown>> {
  const sleeper = normalizeJobSpec({
    name: 'crash',
    tasks: [{ name: 't', instances: 1, resources: { cpu: 0.05, memory: 16 }, command: ['sleep', '300'] }],
  });
  // Twice n jobs over two nodes: node-1's host ends up with about n of their AMs.
  const res = await b.client.submitMany(Array.from({ length: 2 * n }, (_, i) => ({ ...sleeper, jobId: `crash-${i}` })));
  const ids = res.filter((r) => !r.error).map((r) => r.jobId);
  /**
   * Task workers (not AMs) of every agent: key -> node:pid, the running ones (spawned: a worker
   * being spawned is listed as running with pid 0) or all of them.
   */
  const workersOf = async (runningOnly = true) => {
    const out = new Map<string, string>();
    for (const a of b.cluster.agents) {
      const agent = connect(loadFuxiProto().AgentService, a.address, b.cluster.transport());
      try {
        for (const w of (await agent.ListWorkers({})).workers)
          if (!w.workerId.startsWith('am.') && (!runningOnly || (w.state === 'WORKER_STATE_RUNNING' && w.pid > 0)))
            out.set(`${w.appId}/${w.workerId}`, `${a.nodeId}:${w.pid}`);
      } finally {
        agent.close();
      }
    }
    return out;
  };
  const until = Date.now() + 120_000;
  let before = await workersOf();
  while (before.size < ids.length) {
    if (Date.now() > until) throw new Error(`only ${before.size} of ${ids.length} workers running`);
    await new Promise((r) => setTimeout(r, 500));
    before = await workersOf();
  }
  const jobs = new Map((await Promise.all(ids.map((id) => b.client.get(id)))).map((j) => [j.jobId, j]));
  const node = b.cluster.agents[0]!;
  const onHost = [...jobs.values()].filter((j) => j.amNodeId === node.nodeId);
  const hostPid = amHostPid(node.workDir);
  if (!hostPid) throw new Error(`no AM host recorded for ${node.nodeId}`);
  // Watched on one stream, as a client watches many jobs: polling each job every 50 ms was itself
  // 2,000 calls a second on the master it timed.
  const back = new Map<string, number>();
  const firstAttempt = new Map(onHost.map((j) => [j.jobId, j.amAttempt]));
  let t0 = 0;
  let allBack: () => void = () => {};
  const everyoneBack = new Promise<void>((resolve) => (allBack = resolve));
  const watching = b.client
    .waitAll(
      { jobIds: onHost.map((j) => j.jobId) },
      {
        onChange: (j) => {
          const first = firstAttempt.get(j.jobId);
          if (!t0 || first === undefined || back.has(j.jobId) || !(j.amAttempt > first && j.amAddress)) return;
          back.set(j.jobId, Date.now() - t0);
          if (back.size === onHost.length) allBack();
        },
      },
    )
    .catch(() => undefined);
  // Half a second for the stream to open before the kill.
  await new Promise((r) => setTimeout(r, 500));
  t0 = Date.now();
  process.kill(hostPid, 'SIGKILL');
  await Promise.race([everyoneBack, new Promise((r) => setTimeout(r, 60_000))]);
  await new Promise((r) => setTimeout(r, 2000));
  // Restarted: a worker of before now with another pid or node, or a worker started since (a new attempt).
  const after = await workersOf(false);
  const restarted = [...before].filter(([k, v]) => after.has(k) && after.get(k) !== v).length + [...after.keys()].filter((k) => !before.has(k)).length;
  const gone = [...before.keys()].filter((k) => !after.has(k)).length;
  const failed = (await Promise.all(ids.map((id) => b.client.get(id)))).filter((j) => j.state !== 'JOB_STATE_RUNNING').length;
  for (let i = 0; i < ids.length; i += 100) await Promise.all(ids.slice(i, i + 100).map((id) => b.client.kill(id, 'bench done')));
  await watching;
  return {
    jobs: ids.length,
    amsOnHost: onHost.length,
    amsBack: back.size,
    failedJobs: failed,
    restartedWorkers: restarted,
    workersNotListed: gone,
    recoveryMsMax: back.size ? Math.max(...back.values()) : NaN,
    recoveryMsP50: back.size ? percentile([...back.values()], 50) : NaN,
  };
}

/** Finished jobs the master keeps in this scenario (`--job-retention-count`): the rest go at its next retention pass. */
const TEN_THOUSAND_KEPT = 1000;

async function tenThousand(b: Bench): Promise<Record<string, unknown>> {
  const before = rssMb(b.cluster.master.pid);
  const heapBefore = await b.masterHeapMb();
  const r = await sdkMany(b, 10_000);
  const after = rssMb(b.cluster.master.pid);
  const heapAfter = await b.masterHeapMb();
  // Retention runs every 10 s: wait for the master to keep only the newest finished jobs.
  const t0 = Date.now();
  let kept = (await b.client.list()).length;
  while (kept > TEN_THOUSAND_KEPT && Date.now() - t0 < 60_000) {
    await new Promise((res) => setTimeout(res, 2000));
    kept = (await b.client.list()).length;
  }
  await new Promise((res) => setTimeout(res, 5000)); // the heap settles (V8 collects the deleted records)
  return {
    ...r,
    masterRssMbBefore: before,
    masterRssMbAfter: after,
    retentionCount: TEN_THOUSAND_KEPT,
    jobsKeptAfterRetention: kept,
    masterRssMbAfterRetention: rssMb(b.cluster.master.pid),
    // The heap the master's objects use (RSS also holds the heap V8 grew and keeps).
    masterHeapMbBefore: heapBefore,
    masterHeapMbAfter: heapAfter,
    masterHeapMbAfterRetention: await b.masterHeapMb(),
    masterLiveHeapMbAfterRetention: await liveHeapMb(b.cluster.master.pid, join(b.cluster.opts.dir, HEAP_SNAPSHOT_DIR)),
  };
}

/**
 * Where the clusters' directories go by default: /dev/shm (tmpfs) when there is one. The root file
 * system of the machines these figures come from is ext4 without a journal, whose inode allocator
 * skips every inode freed in the last 60-360 s, reading its block each time (`recently_deleted`):
 * each run's thousands of worker directories, made and removed, slowed the next runs' file creates
 * (a third of the spawn helpers' CPU in `perf` after a few runs, and growing), so the figures
 * depended on what had run before. `--dir` picks another place.
 */
function defaultBase(): string {
  try {
    const shm = '/dev/shm';
    if (statSync(shm).isDirectory()) {
      accessSync(shm, fsConstants.W_OK);
      return shm;
    }
  } catch {
    /* none */
  }
  return tmpdir();
}

/**
 * What the figures were measured on: the repository's commit (null outside a git checkout) and
 * whether tracked files differed from it, Node's version and the machine's CPU count.
 */
function provenance(): { commit: string | null; dirty: boolean | null; node: string; cpus: number } {
  const git = (args: string[]) => spawnSync('git', ['-C', REPO_ROOT, ...args], { encoding: 'utf8' });
  const head = git(['rev-parse', 'HEAD']);
  const commit = head.status === 0 ? head.stdout.trim() : null;
  const status = commit ? git(['status', '--porcelain', '--untracked-files=no']) : undefined;
  const dirty = status && status.status === 0 ? status.stdout.trim() !== '' : null;
  return { commit, dirty, node: process.version, cpus: cpus().length };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      jobs: { type: 'string' },
      latency: { type: 'string' },
      'ten-thousand': { type: 'boolean' },
      only: { type: 'string' },
      'max-am-share': { type: 'string' },
      store: { type: 'string' },
      'crash-jobs': { type: 'string' },
      keep: { type: 'boolean', default: false },
      'warm-up': { type: 'string' },
      'agent-args': { type: 'string' },
      dir: { type: 'string' },
      out: { type: 'string' },
    },
  });
  const only = values.only ? new Set(values.only.split(',')) : undefined;
  const store = values.store ?? 'embedded';
  if (store !== 'embedded' && store !== 'etcd') throw new Error(`--store must be embedded or etcd, got ${JSON.stringify(store)}`);
  const etcd = store === 'etcd' ? await startEtcd({}) : undefined;
  const n = Number(values.jobs ?? 1000);
  const base = values.dir ?? defaultBase();
  const dir = mkdtempSync(join(base, 'fuxi-throughput-'));
  // Workers run as another user (nobody): they must be able to pass through.
  chmodSync(dir, 0o711);
  const warm = Number(values['warm-up'] ?? DEFAULT_WARM_UP);
  if (!Number.isInteger(warm) || warm < 0) throw new Error(`--warm-up must be a non-negative integer, got ${JSON.stringify(values['warm-up'])}`);
  const out: Record<string, unknown> = {
    at: new Date().toISOString(),
    ...provenance(),
    scenarios: only ? [...only] : 'all',
    slots: 16,
    jobs: n,
    store,
    warmUpJobs: warm,
    dir: base,
    maxAmShare: values['max-am-share'] ? Number(values['max-am-share']) : 'default',
  };
  // --agent-args '["--am-host-command", "node --cpu-prof ... fuxi-amhost"]': extra agent flags, as a JSON array (profiling).
  const agentExtra = values['agent-args'] ? (JSON.parse(values['agent-args']) as string[]) : [];
  const phase = async (name: string, fn: (b: Bench) => Promise<Record<string, unknown>>, extraMasterArgs: string[] = [], warmFirst = true) => {
    if (only && !only.has(name)) return;
    const masterArgs = [
      ...(values['max-am-share'] ? ['--max-am-share', values['max-am-share']] : []),
      ...(etcd ? ['--store', 'etcd', '--etcd-endpoints', etcd.endpoint, '--etcd-prefix', `/throughput-${name}/`] : []),
      // The warm-up submits from the same host as the scenario, and the master's submit limit is per
      // caller host (50 jobs/s after a burst of 2,000): without this, a scenario after a warm-up of
      // 2,000 would start on an empty bucket and wait out the limit, where a client of a cluster
      // that has run for days starts on a full one. The scenarios measure the control plane.
      ...(warmFirst && warm > 0 ? ['--submit-rate-per-sec', '0'] : []),
      ...extraMasterArgs,
    ];
    // tenThousand's master writes a heap snapshot on SIGUSR2 (its live heap after retention).
    const daemonArgs = process.env.FUXI_DAEMON_NODE_ARGS;
    if (name === 'tenThousand') {
      mkdirSync(join(dir, name, HEAP_SNAPSHOT_DIR), { recursive: true }); // node writes none into a missing dir
      process.env.FUXI_DAEMON_NODE_ARGS = `${daemonArgs ?? ''} --heapsnapshot-signal=SIGUSR2 --diagnostic-dir=${join(dir, name, HEAP_SNAPSHOT_DIR)}`;
    }
    // A fresh cluster per scenario: one scenario's finished jobs do not weigh on the next.
    const cluster = await LocalCluster.start({
      dir: join(dir, name),
      agents: 2,
      agentCpu: '8',
      agentMemory: '16Gi',
      // The master's calls by method (masterCallsPerJob).
      metrics: true,
      ...(masterArgs.length ? { masterArgs } : {}),
      ...(agentExtra.length ? { agentArgs: agentExtra } : {}),
    }).finally(() => {
      if (daemonArgs === undefined) delete process.env.FUXI_DAEMON_NODE_ARGS;
      else process.env.FUXI_DAEMON_NODE_ARGS = daemonArgs;
    });
    const client = cluster.client();
    try {
      const bench = new Bench(cluster, client);
      if (warmFirst && warm > 0) {
        process.stderr.write(`${name}: warming up (${warm} jobs and one of ${warm} instances)...\n`);
        await warmUp(bench, warm, name === 'oneJob');
      }
      process.stderr.write(`${name}...\n`);
      out[name] = await fn(bench);
      process.stderr.write(`${name}: ${JSON.stringify(out[name])}\n`);
    } finally {
      client.close();
      await cluster.stop({ killWorkers: true });
    }
  };
  await phase('latency', (b) => latency(b, Number(values.latency ?? 200)));
  await phase('oneJob', (b) => oneJob(b, n));
  await phase('sdkMany', (b) => sdkMany(b, n));
  await phase('array', (b) => array(b, n));
  await phase('watchMany', (b) => watchMany(b, n), [], false);
  const cli = cliModes(dir);
  await phase('separateCli', (b) => separateCli(b, n, dir, cli.server, 'cli'));
  await phase('separateCliInProcess', (b) => separateCli(b, n, dir, cli.inProcess, 'clip'));
  await phase('cliColdStart', (b) => cliColdStart(b, 20, dir, cli.server, 'cold'), [], false);
  await phase('cliColdStartInProcess', (b) => cliColdStart(b, 20, dir, cli.inProcess, 'coldp'), [], false);
  if (out.cliColdStart) out.cliColdStartMs = (out.cliColdStart as Record<string, number>).medianMs;
  if (out.cliColdStartInProcess) out.cliColdStartInProcessMs = (out.cliColdStartInProcess as Record<string, number>).medianMs;
  // 2 x 100 AMs at once: above the default AM share of 16 cores (80 hosted AMs), so this one scenario allows half.
  const crashJobs = Number(values['crash-jobs'] ?? 100);
  await phase('amHostCrash', (b) => amHostCrash(b, crashJobs), values['max-am-share'] ? [] : ['--max-am-share', '0.5'], false);
  // The master's capacity and memory, not the submit rate limit (50 jobs/s per caller after a burst of 2,000; submitMany waits it out).
  if (values['ten-thousand'])
    await phase('tenThousand', tenThousand, ['--submit-rate-per-sec', '0', '--job-retention-count', String(TEN_THOUSAND_KEPT)], false);
  await etcd?.stop();
  const file = values.out ?? join(REPO_ROOT, 'bench-results', store === 'etcd' ? 'throughput-etcd.json' : 'throughput.json');
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, JSON.stringify(out, null, 2) + '\n');
  process.stdout.write(JSON.stringify(out, null, 2) + '\n');
  // The clusters' work dirs (logs, stores, the workers' dirs): kept only with --keep.
  if (values.keep) process.stderr.write(`work dir kept: ${dir}\n`);
  else rmSync(dir, { recursive: true, force: true });
}

await main();
