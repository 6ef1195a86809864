#!/usr/bin/env node
/**
 * Benchmark (not a test): the scheduler of the real master, over real gRPC. For each scale (default
 * 1,000 and 5,000 virtual nodes) it starts a fresh master (memory store) and a load generator (see
 * sched/load.ts: every virtual node registers and heartbeats; each app's AM asks for slots and
 * returns them), and measures
 *
 * - heartbeat handling cost: master CPU (every thread, from /proc) per heartbeat while the N nodes
 *   heartbeat and nothing is scheduled, minus the idle master's CPU;
 * - master memory per node and per running worker: live memory (heap used + external, after a full
 *   GC run inside the master by a preloaded probe, sched/mem-probe.ts) with 0 nodes, N idle nodes,
 *   and W slots held by the apps (`--fill` of the cluster's worker slots), RSS alongside;
 * - slot grants per second and request-to-grant latency under a saturating request load: with the
 *   `--fill` share of the cluster held (running workers), every app keeps w slots asked for and
 *   returns each new slot the moment it arrives, so capacity recycles and the master always has
 *   requests to place; w steps through `--windows` (a closed loop: more outstanding requests, more
 *   throughput until the master saturates, then only more queueing). A grant is one slot assigned;
 *   its latency runs from the UpdateRequests that asked for it to the UpdateAssignments that brought
 *   it (FIFO per app). The headline numbers are those of the step with the most grants per second
 *   (the saturation point); `lightLoad` is the first step.
 *
 * Writes bench-results/sched.json (`--out` to change); progress on stderr, a summary on stdout.
 *
 *   make bench-sched
 *   node test/dist/bench/sched.js [--scales 1000,5000] [--apps 20] [--windows 4,16,32,64] [--fill 0.5]
 *     [--duration-ms 10000] [--warmup-ms 2000] [--hb-phase-ms 5000] [--heartbeat-interval-ms 1000]
 *     [--push-transport stream|call] [--master-cpu-prof DIR] [--master-node-flags '--max-semi-space-size=64'] [--keep]
 *     [--only scales|external] [--external-hosts 1000] [--external-window 4]
 *
 * The external-scheduler case (`externalScheduler` in the results; `--only external` runs it
 * alone and keeps the other results of the file): the same master and virtual nodes, the apps'
 * jobs with `scheduler: bench-ext`, placed by an SDK scheduler (sched/external.ts) attached over
 * SchedulerService while every app keeps `--external-window` slots asked for (churn). Round trip:
 * from the arrival of the state push that showed pending requests to the Place answer that
 * applied them (the grant), one sample per placement.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { normalizeJobSpec } from '@fuxi/common';
import { freePort, terminate } from '@fuxi/deploy';
import { loadFuxiProto } from '@fuxi/proto';
import { connect, jobSpecToProto } from '@fuxi/rpc';
import type { BenchSchedulerReport } from './sched/external.js';
import { LoadGen, type LoadCounters } from './sched/load.js';
import { CpuMeter, cpuNs, percentile, round, rssBytes } from './sched/proc.js';

const here = dirname(fileURLToPath(import.meta.url));
/** The repository root (this file is test/dist/bench/sched.js). */
const REPO = join(here, '..', '..', '..');
const MASTER_BIN = join(REPO, 'master', 'dist', 'shell', 'main.js');
const MEM_PROBE = join(here, 'sched', 'mem-probe.js');
const EXT_SCHEDULER = join(here, 'sched', 'external-main.js');

const LATENCY_TARGET_MS = 50;
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const say = (s: string) => process.stderr.write(`[bench-sched ${new Date().toISOString().slice(11, 23)}] ${s}\n`);

interface Options {
  scales: number[];
  apps: number;
  windows: number[];
  fill: number;
  durationMs: number;
  warmupMs: number;
  hbPhaseMs: number;
  idleMs: number;
  heartbeatIntervalMs: number;
  nodeCpuMilli: number;
  nodeMemoryMb: number;
  slotCpuMilli: number;
  slotMemoryMb: number;
  racks: number;
  out: string;
  masterCpuProf: string;
  masterNodeFlags: string[];
  pushTransport: 'stream' | 'call';
  keep: boolean;
  /** '' (both), 'scales' or 'external'. */
  only: '' | 'scales' | 'external';
  externalHosts: number;
  externalWindow: number;
}

function options(): Options {
  const { values } = parseArgs({
    options: {
      scales: { type: 'string', default: '1000,5000' },
      apps: { type: 'string', default: '20' },
      windows: { type: 'string', default: '4,16,32,64' },
      fill: { type: 'string', default: '0.5' },
      'duration-ms': { type: 'string', default: '10000' },
      'warmup-ms': { type: 'string', default: '2000' },
      'hb-phase-ms': { type: 'string', default: '5000' },
      'idle-ms': { type: 'string', default: '2000' },
      'heartbeat-interval-ms': { type: 'string', default: '1000' },
      'node-cpu-milli': { type: 'string', default: '16000' },
      'node-memory-mb': { type: 'string', default: '65536' },
      'slot-cpu-milli': { type: 'string', default: '1000' },
      'slot-memory-mb': { type: 'string', default: '2048' },
      racks: { type: 'string', default: '20' },
      out: { type: 'string', default: join(REPO, 'bench-results', 'sched.json') },
      'master-cpu-prof': { type: 'string', default: '' },
      'master-node-flags': { type: 'string', default: '' },
      'push-transport': { type: 'string', default: 'stream' },
      keep: { type: 'boolean', default: false },
      only: { type: 'string', default: '' },
      'external-hosts': { type: 'string', default: '1000' },
      'external-window': { type: 'string', default: '4' },
    },
    strict: true,
  });
  const num = (k: keyof typeof values, min: number, integer = true): number => {
    const n = Number(values[k]);
    if (!Number.isFinite(n) || n < min || (integer && !Number.isInteger(n)))
      throw new Error(`--${k} must be ${integer ? 'an integer' : 'a number'} >= ${min}, got ${JSON.stringify(values[k])}`);
    return n;
  };
  const ints = (k: 'scales' | 'windows'): number[] => {
    const xs = String(values[k])
      .split(',')
      .map((x) => Number(x.trim()));
    if (xs.length === 0 || xs.some((n) => !Number.isInteger(n) || n < 1)) throw new Error(`--${k} must be positive integers like 4,16,64, got ${values[k]}`);
    return xs;
  };
  const scales = ints('scales');
  const fill = num('fill', 0, false);
  if (fill >= 1) throw new Error('--fill must be below 1 (the churn needs free capacity)');
  return {
    scales,
    apps: num('apps', 1),
    windows: ints('windows'),
    fill,
    durationMs: num('duration-ms', 100),
    warmupMs: num('warmup-ms', 0),
    hbPhaseMs: num('hb-phase-ms', 100),
    idleMs: num('idle-ms', 100),
    heartbeatIntervalMs: num('heartbeat-interval-ms', 10),
    nodeCpuMilli: num('node-cpu-milli', 1),
    nodeMemoryMb: num('node-memory-mb', 1),
    slotCpuMilli: num('slot-cpu-milli', 1),
    slotMemoryMb: num('slot-memory-mb', 1),
    racks: num('racks', 1),
    out: resolve(String(values.out)),
    masterCpuProf: values['master-cpu-prof'] ? resolve(String(values['master-cpu-prof'])) : '',
    masterNodeFlags: String(values['master-node-flags'])
      .split(' ')
      .filter((f) => f !== ''),
    pushTransport: ((): 'stream' | 'call' => {
      const t = String(values['push-transport']);
      if (t !== 'stream' && t !== 'call') throw new Error(`--push-transport must be stream or call, got ${JSON.stringify(t)}`);
      return t;
    })(),
    keep: Boolean(values.keep),
    only: ((): Options['only'] => {
      const v = String(values.only);
      if (v !== '' && v !== 'scales' && v !== 'external') throw new Error(`--only must be scales or external, got ${JSON.stringify(v)}`);
      return v;
    })(),
    externalHosts: num('external-hosts', 1),
    externalWindow: num('external-window', 1),
  };
}

// ------------------------------------------------------------------------------------ the master

interface MemUsage {
  rss: number;
  heapTotal: number;
  heapUsed: number;
  external: number;
  arrayBuffers: number;
}

/** Live memory: what survives a full GC (JS heap) plus memory held outside it (buffers). */
const live = (m: MemUsage) => m.heapUsed + m.external;

class MasterProcess {
  readonly address: string;
  private nextId = 1;
  private readonly waiting = new Map<number, (m: MemUsage) => void>();

  private constructor(
    readonly child: ChildProcess,
    port: number,
    readonly logFile: string,
  ) {
    this.address = `127.0.0.1:${port}`;
    child.on('message', (m: unknown) => {
      const msg = m as { type?: string; id?: number; usage?: MemUsage };
      if (msg.type !== 'mem' || msg.id === undefined || !msg.usage) return;
      this.waiting.get(msg.id)?.(msg.usage);
      this.waiting.delete(msg.id);
    });
  }

  static async start(o: Options, dir: string, scale: number): Promise<MasterProcess> {
    const port = await freePort();
    const logFile = join(dir, `master-${scale}.log`);
    const fd = openSync(logFile, 'a');
    const nodeFlags = ['--expose-gc', '--import', pathToFileURL(MEM_PROBE).href, ...o.masterNodeFlags];
    if (o.masterCpuProf) {
      mkdirSync(o.masterCpuProf, { recursive: true });
      nodeFlags.push('--cpu-prof', '--cpu-prof-dir', o.masterCpuProf, '--cpu-prof-name', `master-${scale}-${Date.now()}.cpuprofile`);
    }
    const hb = o.heartbeatIntervalMs;
    const args = [
      ...nodeFlags,
      MASTER_BIN,
      '--listen',
      `127.0.0.1:${port}`,
      '--store',
      'memory',
      // A bench on loopback with simulated nodes: plaintext.
      '--insecure',
      '--heartbeat-interval-ms',
      String(hb),
      '--am-heartbeat-interval-ms',
      '1000',
      // Generous: a saturated load generator must not make nodes look timing out.
      '--agent-timing-out-ms',
      String(Math.max(10_000, 10 * hb)),
      '--agent-timeout-ms',
      String(Math.max(60_000, 60 * hb)),
      '--log-level',
      'info',
    ];
    const child = spawn(process.execPath, args, { stdio: ['ignore', fd, fd, 'ipc'] });
    closeSync(fd);
    child.on('error', () => undefined);
    const m = new MasterProcess(child, port, logFile);
    const client = connect(loadFuxiProto().MasterService, m.address);
    try {
      for (let i = 0; ; i++) {
        if (child.exitCode !== null) throw new Error(`the master exited (${child.exitCode}); see ${logFile}`);
        try {
          await client.GetClusterStatus({}, { deadlineMs: 1000 });
          break;
        } catch {
          if (i > 300) throw new Error(`the master did not answer within 30 s; see ${logFile}`);
          await sleep(100);
        }
      }
    } finally {
      client.close();
    }
    return m;
  }

  get pid(): number {
    return this.child.pid!;
  }

  /** Memory after a full GC in the master (via the preloaded probe). */
  mem(label = ''): Promise<MemUsage> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => {
        this.waiting.delete(id);
        reject(new Error('the master did not answer the memory probe within 60 s'));
      }, 60_000);
      this.waiting.set(id, (u) => {
        clearTimeout(t);
        resolve(u);
      });
      this.child.send({ type: 'mem', id, label });
    });
  }

  async stop(): Promise<void> {
    // SIGTERM lets the master exit normally, which writes its CPU profile when asked for one.
    await terminate(this.child, 15_000);
  }
}

// ------------------------------------------------------------------------------------ one scale

interface Latency {
  p50: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
  samples: number;
}

/** One step of the request-load sweep. */
interface ChurnPoint {
  windowPerApp: number;
  /** Slots asked for and not granted yet, at most (apps x window). */
  outstanding: number;
  grantsPerSec: number;
  latencyMs: Latency;
  masterCpuUtilization: number;
  loadGenCpuUtilization: number;
  loadGenEventLoopDelayP99Ms: number;
  heartbeatRttMs: { p50: number; p99: number };
  rates: { heartbeatsPerSec: number; grantMessagesPerSec: number; assignmentMessagesPerSec: number; requestCallsPerSec: number; returnCallsPerSec: number };
  unmatchedGrants: number;
}

interface ScaleResult {
  nodes: number;
  apps: number;
  grantsPerSec: number;
  latencyMs: Latency;
  windowPerAppAtSaturation: number;
  masterCpuUtilization: number;
  loadGenCpuUtilization: number;
  heartbeatRttMsAtSaturation: { p50: number; p99: number };
  lightLoad: { windowPerApp: number; grantsPerSec: number; latencyMs: Latency };
  /** The step with the most grants per second whose p99 latency is under LATENCY_TARGET_MS (null: none). */
  withinLatencyTarget: { windowPerApp: number; grantsPerSec: number; latencyMs: Latency } | null;
  heldWorkersDuringChurn: number;
  sweep: ChurnPoint[];
  heartbeatCpuUsPerNodePerBeat: number;
  heartbeatCpuUsPerBeatRaw: number;
  heartbeatMasterCpuUtilization: number;
  masterBytesPerNode: number;
  masterBytesPerNodeRegisteredOnly: number;
  masterBytesPerRunningWorker: number;
  runningWorkersMeasured: number;
  memory: Record<string, { liveBytes: number; rssBytes: number; heapUsed: number; external: number }>;
  liveBytesGrowthAfterChurn: number;
  /** The same 5 s later. */
  liveBytesGrowthSettled: number;
  registrationMs: number;
  checks: {
    overcommits: number;
    heartbeatErrors: number;
    heartbeatsSkipped: number;
    amErrors: number;
    revoked: number;
    reregistrations: number;
    assignmentMessagesIgnored: number;
    fullTablesInAnswers: number;
    grantStreamsEnded: number;
    assignmentStreamsEnded: number;
  };
}

function diff(a: LoadCounters, b: LoadCounters): LoadCounters {
  const out = {} as LoadCounters;
  for (const k of Object.keys(b) as Array<keyof LoadCounters>) out[k] = b[k] - a[k];
  return out;
}

async function waitFor(what: string, pred: () => boolean, timeoutMs: number, state?: () => string): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!pred()) {
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${state ? `\n${state()}` : ''}`);
    await sleep(20);
  }
}

async function runScale(o: Options, dir: string, n: number): Promise<ScaleResult> {
  say(`--- ${n} nodes: starting the master`);
  const master = await MasterProcess.start(o, dir, n);
  const slotsPerNode = Math.min(Math.floor(o.nodeCpuMilli / o.slotCpuMilli), Math.floor(o.nodeMemoryMb / o.slotMemoryMb));
  let load: LoadGen | undefined;
  try {
    const memory: ScaleResult['memory'] = {};
    const snap = async (name: string): Promise<MemUsage> => {
      const m = await master.mem(name);
      memory[name] = { liveBytes: live(m), rssBytes: rssBytes(master.pid), heapUsed: m.heapUsed, external: m.external };
      say(`memory ${name}: live ${(live(m) / 1e6).toFixed(1)} MB, rss ${(rssBytes(master.pid) / 1e6).toFixed(1)} MB`);
      return m;
    };
    await sleep(500);
    const mem0 = await snap('empty');
    const meter = new CpuMeter(master.pid);
    meter.start();
    await sleep(o.idleMs);
    const idle = meter.stop();
    const idleNsPerNs = idle.cpuNs / idle.wallNs;

    load = new LoadGen({
      master: master.address,
      nodes: n,
      racks: o.racks,
      capacity: { cpuMilli: o.nodeCpuMilli, memoryMb: o.nodeMemoryMb },
      slot: { cpuMilli: o.slotCpuMilli, memoryMb: o.slotMemoryMb },
      pushTransport: o.pushTransport,
      log: say,
    });
    const t0 = performance.now();
    await load.start();
    const registrationMs = Math.round(performance.now() - t0);
    const lg = load;
    // Let every node heartbeat a couple of times before measuring.
    await sleep(Math.max(1000, 2 * lg.heartbeatIntervalMs));

    // ---- heartbeat cost: N nodes heartbeating, nothing to schedule.
    let c0 = lg.counters();
    meter.start();
    await sleep(o.hbPhaseMs);
    const hb = meter.stop();
    let c1 = lg.counters();
    const beats = c1.heartbeatsOk - c0.heartbeatsOk;
    const hbCpuUs = (hb.cpuNs - idleNsPerNs * hb.wallNs) / beats / 1000;
    const hbRawUs = hb.cpuNs / beats / 1000;
    say(
      `heartbeats: ${beats} in ${(hb.wallNs / 1e9).toFixed(1)} s, master ${(hb.utilization * 100).toFixed(1)}% CPU, ${hbCpuUs.toFixed(1)} us/beat above idle`,
    );
    const memReg = await snap('nodes');

    // ---- apps: the master launches each AM through a node's StartWorkers.
    // The master holds each app to its spec: the fake AMs' unit (priority 1) is task `work`, whose
    // instances cover the slots an app holds (--fill) and asks for (up to the largest window) at once.
    const instances = Math.floor((o.fill * n * slotsPerNode) / o.apps) + 2 * Math.max(...o.windows);
    const masterClient = connect(loadFuxiProto().MasterService, master.address);
    try {
      for (let i = 0; i < o.apps; i++) {
        const spec = normalizeJobSpec({
          id: `bench-${i}`,
          name: `bench-${i}`,
          priority: 1,
          am: { cpu: '100m', memory: 128 },
          tasks: [{ name: 'work', instances, resources: { cpu: `${o.slotCpuMilli}m`, memory: o.slotMemoryMb }, command: ['true'] }],
        });
        await masterClient.SubmitJob({ spec: jobSpecToProto(spec) }, { deadlineMs: 30_000 });
      }
    } finally {
      masterClient.close();
    }
    await waitFor(`${o.apps} AMs to register`, () => lg.apps.size === o.apps && [...lg.apps.values()].every((a) => a.registered), 60_000);
    say(`${o.apps} apps running`);

    // ---- memory per running worker: hold W slots, then none.
    const perApp = Math.floor((o.fill * n * slotsPerNode) / o.apps);
    const held = perApp * o.apps;
    const amState = () => [...lg.apps.values()].map((a) => a.describe()).join('\n');
    const holdAll = async (): Promise<void> => {
      lg.setMode({ kind: 'hold', target: perApp });
      await waitFor(`${held} workers held`, () => [...lg.apps.values()].every((a) => a.heldTotal === perApp), 180_000, amState);
      await waitFor('the agents to hold every grant', () => lg.grantedSlotsOnNodes() === held, 30_000);
    };
    const drainAll = async (): Promise<void> => {
      lg.setMode({ kind: 'drain' });
      await waitFor('every slot returned', () => [...lg.apps.values()].every((a) => a.quiet), 180_000, amState);
      await waitFor('the agents to drop every grant', () => lg.grantedSlotsOnNodes() === 0, 30_000);
    };
    let memHeld = memReg;
    let memIdle = memReg;
    if (held > 0) {
      // First round: every node that gets a slot also gets a channel from the master, so the idle
      // and the loaded measurements below differ by the workers only.
      const th = performance.now();
      await holdAll();
      say(`${held} workers held (${Math.round(performance.now() - th)} ms)`);
      await drainAll();
      await sleep(500);
      memIdle = await snap('idle');
      // Second round: the workers measured, and the background of the churn.
      await holdAll();
      await sleep(500);
      memHeld = await snap('workers');
    }

    // ---- grants per second and latency: closed loop, more requests outstanding at each step.
    const sweep: ChurnPoint[] = [];
    for (const window of o.windows) {
      lg.setMode({ kind: 'churn', window });
      await sleep(o.warmupMs);
      const rec = lg.recorder;
      rec.reset();
      lg.heartbeatRttMs = [];
      const delay = monitorEventLoopDelay({ resolution: 10 });
      delay.enable();
      c0 = lg.counters();
      const self0 = cpuNs(process.pid);
      meter.start();
      rec.recording = true;
      await sleep(o.durationMs);
      rec.recording = false;
      const churn = meter.stop();
      const selfNs = cpuNs(process.pid) - self0;
      delay.disable();
      c1 = lg.counters();
      const d = diff(c0, c1);
      const secs = churn.wallNs / 1e9;
      const samples = Float64Array.from(rec.samples).sort();
      const hbRtt = Float64Array.from(lg.heartbeatRttMs).sort();
      const mean = samples.length > 0 ? samples.reduce((a, b) => a + b, 0) / samples.length : NaN;
      const point: ChurnPoint = {
        windowPerApp: window,
        outstanding: window * o.apps,
        grantsPerSec: round(rec.slots / secs, 0),
        latencyMs: {
          p50: round(percentile(samples, 50)),
          p90: round(percentile(samples, 90)),
          p99: round(percentile(samples, 99)),
          max: round(samples.length > 0 ? samples[samples.length - 1]! : NaN),
          mean: round(mean),
          samples: samples.length,
        },
        masterCpuUtilization: round(churn.utilization, 3),
        loadGenCpuUtilization: round(selfNs / churn.wallNs, 3),
        loadGenEventLoopDelayP99Ms: round(delay.percentile(99) / 1e6),
        heartbeatRttMs: { p50: round(percentile(hbRtt, 50)), p99: round(percentile(hbRtt, 99)) },
        rates: {
          heartbeatsPerSec: round(d.heartbeatsOk / secs, 0),
          grantMessagesPerSec: round(d.grantMessages / secs, 0),
          assignmentMessagesPerSec: round(d.assignmentMessages / secs, 0),
          requestCallsPerSec: round(d.requestCalls / secs, 0),
          returnCallsPerSec: round(d.returnCalls / secs, 0),
        },
        unmatchedGrants: rec.unmatched,
      };
      sweep.push(point);
      say(
        `churn, ${window} outstanding per app: ${point.grantsPerSec} grants/s, latency p50 ${point.latencyMs.p50} ms p99 ${point.latencyMs.p99} ms, ` +
          `master ${Math.round(point.masterCpuUtilization * 100)}% CPU, load generator ${Math.round(point.loadGenCpuUtilization * 100)}% CPU`,
      );
    }
    // The saturation point: the most grants per second of the sweep.
    const best = sweep.reduce((a, b) => (b.grantsPerSec > a.grantsPerSec ? b : a));
    const fast = sweep.filter((p) => p.latencyMs.p99 < LATENCY_TARGET_MS);
    const bestFast = fast.length > 0 ? fast.reduce((a, b) => (b.grantsPerSec > a.grantsPerSec ? b : a)) : undefined;
    await drainAll();
    await sleep(500);
    const memAfter = await snap('after-churn');
    // Whatever the churn left queued (pushes still on their way) is gone after a few seconds; what
    // remains then would be a leak.
    await sleep(5000);
    const memSettled = await snap('settled');
    const all = lg.counters();
    let revoked = 0;
    for (const a of lg.apps.values()) revoked += a.revoked;

    return {
      nodes: n,
      apps: o.apps,
      grantsPerSec: best.grantsPerSec,
      latencyMs: best.latencyMs,
      windowPerAppAtSaturation: best.windowPerApp,
      masterCpuUtilization: best.masterCpuUtilization,
      loadGenCpuUtilization: best.loadGenCpuUtilization,
      heartbeatRttMsAtSaturation: best.heartbeatRttMs,
      lightLoad: { windowPerApp: sweep[0]!.windowPerApp, grantsPerSec: sweep[0]!.grantsPerSec, latencyMs: sweep[0]!.latencyMs },
      withinLatencyTarget: bestFast ? { windowPerApp: bestFast.windowPerApp, grantsPerSec: bestFast.grantsPerSec, latencyMs: bestFast.latencyMs } : null,
      heldWorkersDuringChurn: held,
      sweep,
      heartbeatCpuUsPerNodePerBeat: round(hbCpuUs),
      heartbeatCpuUsPerBeatRaw: round(hbRawUs),
      heartbeatMasterCpuUtilization: round(hb.utilization, 3),
      masterBytesPerNode: round((live(memIdle) - live(mem0)) / n, 0),
      masterBytesPerNodeRegisteredOnly: round((live(memReg) - live(mem0)) / n, 0),
      masterBytesPerRunningWorker: held > 0 ? round((live(memHeld) - live(memIdle)) / held, 0) : NaN,
      runningWorkersMeasured: held,
      memory,
      liveBytesGrowthAfterChurn: live(memAfter) - live(memIdle),
      liveBytesGrowthSettled: live(memSettled) - live(memIdle),
      registrationMs,
      checks: {
        overcommits: all.overcommits,
        heartbeatErrors: all.heartbeatErrors,
        heartbeatsSkipped: all.heartbeatsSkipped,
        amErrors: all.amErrors,
        revoked,
        reregistrations: all.reregistrations,
        assignmentMessagesIgnored: all.assignmentMessagesIgnored,
        fullTablesInAnswers: all.fullTablesInAnswers,
        grantStreamsEnded: all.grantStreamsEnded,
        assignmentStreamsEnded: all.assignmentStreamsEnded,
      },
    };
  } finally {
    await load?.stop().catch(() => undefined);
    await master.stop();
  }
}

// ------------------------------------------------------------------------------------ main

async function main(): Promise<void> {
  const o = options();
  const dir = mkdtempSync(join(tmpdir(), 'fuxi-bench-sched-'));
  // Workers run as another user (nobody): they must be able to pass through.
  chmodSync(dir, 0o711);
  say(`logs in ${dir}`);
  const results: Record<string, ScaleResult> = {};
  let external: ExternalResult | undefined;
  let ok = false;
  try {
    if (o.only !== 'external') for (const n of o.scales) results[`nodes${n}`] = await runScale(o, dir, n);
    if (o.only !== 'scales') external = await runExternal(o, dir);
    ok = true;
  } finally {
    if (ok && !o.keep) rmSync(dir, { recursive: true, force: true });
    else say(`logs kept in ${dir}`);
  }
  if (o.only === 'external') {
    // Only this case: the file's other results stay as they were.
    const prev = existsSync(o.out) ? (JSON.parse(readFileSync(o.out, 'utf8')) as Record<string, unknown>) : {};
    mkdirSync(dirname(o.out), { recursive: true });
    writeFileSync(o.out, `${JSON.stringify({ ...prev, externalScheduler: external }, null, 2)}\n`);
    say(`wrote ${o.out}`);
    process.stdout.write(`${externalLine(external!)}\n`);
    return;
  }
  const largest = results[`nodes${Math.max(...o.scales)}`]!;
  const at1000 = results.nodes1000;
  const slotsPerNode = Math.min(Math.floor(o.nodeCpuMilli / o.slotCpuMilli), Math.floor(o.nodeMemoryMb / o.slotMemoryMb));
  const report = {
    ...results,
    ...(external ? { externalScheduler: external } : {}),
    heartbeatCpuUsPerNodePerBeat: largest.heartbeatCpuUsPerNodePerBeat,
    masterBytesPerNode: largest.masterBytesPerNode,
    masterBytesPerRunningWorker: largest.masterBytesPerRunningWorker,
    targets: {
      grantsPerSecAt1000Nodes: { target: 10_000, actual: at1000?.grantsPerSec ?? null, met: at1000 ? at1000.grantsPerSec >= 10_000 : null },
      // Both at once: the most grants per second of a step whose p99 stays under 50 ms.
      grantsPerSecAt1000NodesWithP99Under50Ms: {
        target: 10_000,
        actual: at1000?.withinLatencyTarget?.grantsPerSec ?? null,
        met: at1000 ? (at1000.withinLatencyTarget?.grantsPerSec ?? 0) >= 10_000 : null,
      },
      latencyP99Ms: Object.fromEntries(
        Object.entries(results).map(([k, r]) => [
          k,
          {
            target: LATENCY_TARGET_MS,
            atSaturation: r.latencyMs.p99,
            atLightLoad: r.lightLoad.latencyMs.p99,
            withinTargetAt: r.withinLatencyTarget ? `${r.withinLatencyTarget.grantsPerSec} grants/s` : null,
            met: r.withinLatencyTarget !== null,
          },
        ]),
      ),
      masterBytesPerRunningWorker: { target: 2048, actual: largest.masterBytesPerRunningWorker, met: largest.masterBytesPerRunningWorker < 2048 },
    },
    config: {
      scales: o.scales,
      apps: o.apps,
      windowsPerApp: o.windows,
      fill: o.fill,
      nodeCapacity: { cpuMilli: o.nodeCpuMilli, memoryMb: o.nodeMemoryMb },
      slot: { cpuMilli: o.slotCpuMilli, memoryMb: o.slotMemoryMb },
      slotsPerNode,
      racks: o.racks,
      heartbeatIntervalMs: o.heartbeatIntervalMs,
      pushTransport: o.pushTransport,
      durationMs: o.durationMs,
      warmupMs: o.warmupMs,
      hbPhaseMs: o.hbPhaseMs,
      masterStore: 'memory',
      cpus: (await import('node:os')).cpus().length,
      node: process.version,
      date: new Date().toISOString(),
    },
    notes: [
      'One master process and one load-generator process on the same machine; the load generator (every virtual node and every AM) speaks the real protocol over loopback gRPC. Each virtual node has its own loopback address (127.100.x.y) on one shared server, so the master keeps one channel per agent, as in a real cluster.',
      'grantsPerSec: slots assigned per second while every app keeps w slots requested and returns each new slot at once, on top of `fill` of the cluster held as running workers; the headline is the step of `sweep` (w = windowsPerApp) with the most grants per second. latencyMs: UpdateRequests sent -> UpdateAssignments with the slot received, one sample per slot, at that step. Each app calls the master one call at a time, as the real AM does. In a closed loop, latency ~ outstanding requests / throughput (Little), so p99 grows with apps x w once the master is saturated; lightLoad is the smallest w.',
      'Both processes share the machine (config.cpus cores): masterCpuUtilization and loadGenCpuUtilization (1.0 = one core, all threads) show which one was the limit. Where the time goes in the master (profile with --master-cpu-prof DIR): gRPC, then GC; the scheduler itself is a few percent. Pushes go over streams: grant tables to each node on its WatchGrants stream, assignments to each AM on its WatchAssignments stream (config.pushTransport; `--push-transport call` measures a call per push instead, about a tenth of the throughput: a unary call costs ~260 us of CPU on the two ends, a stream message ~30 us). At 5,000 nodes the heartbeats (5,000 unary calls per second at a 1 s interval) take most of the one core the master runs on.',
      'heartbeatCpuUsPerNodePerBeat: master CPU (all threads, /proc schedstat) per heartbeat with nothing to schedule, minus the idle master; includes gRPC decoding/encoding and the master tick.',
      'masterBytesPerNode: live memory (heap used + external after a full GC in the master) with N idle nodes that have received grants (so the master holds a gRPC channel to each) minus the empty master, over N. masterBytesPerNodeRegisteredOnly: the same right after registration (no channels yet). masterBytesPerRunningWorker: live memory with W slots held minus the same cluster with none, over W; slots spread over the nodes, so W is close to one (app, node) entry per worker (the worst case).',
    ],
  };
  mkdirSync(dirname(o.out), { recursive: true });
  writeFileSync(o.out, `${JSON.stringify(report, null, 2)}\n`);
  say(`wrote ${o.out}`);
  const line = (k: string, r: ScaleResult) =>
    `${k}: ${r.grantsPerSec} grants/s, p50 ${r.latencyMs.p50} ms, p99 ${r.latencyMs.p99} ms` +
    `${r.withinLatencyTarget ? ` (p99 < ${LATENCY_TARGET_MS} ms up to ${r.withinLatencyTarget.grantsPerSec} grants/s)` : ''}, heartbeat ${r.heartbeatCpuUsPerNodePerBeat} us, ${r.masterBytesPerNode} B/node, ${r.masterBytesPerRunningWorker} B/worker`;
  process.stdout.write(
    `${Object.entries(results)
      .map(([k, r]) => line(k, r))
      .join('\n')}\n`,
  );
  if (external) process.stdout.write(`${externalLine(external)}\n`);
}

// ------------------------------------------------------------------------------------ external scheduler

const EXTERNAL_TARGET_P99_MS = 20;

interface ExternalResult {
  hosts: number;
  placements: number;
  roundTripMs: { p50: number; p90: number; p99: number; max: number; samples: number };
  /** The Place call alone, sent to answered (the rest of the round trip: the push and waiting for the previous call). */
  placeCallMs: { p50: number; p99: number; calls: number };
  target: { p99UnderMs: number; met: boolean };
  placeRejections: number;
  /** State pushes the scheduler received over the run (warm-up included). */
  viewsReceived: number;
  /** A call that does nothing (an empty Place), every 100 ms from the scheduler's process: what the machine's load alone costs a call. */
  noOpCallMs: { p50: number; p99: number; calls: number };
  apps: number;
  windowPerApp: number;
  durationMs: number;
  masterCpuUtilization: number;
  loadAverage1m: number;
}

function externalLine(r: ExternalResult): string {
  return (
    `externalScheduler: ${r.hosts} hosts, ${r.placements} placements, round trip p50 ${r.roundTripMs.p50} ms, p99 ${r.roundTripMs.p99} ms ` +
    `(target < ${EXTERNAL_TARGET_P99_MS} ms); a no-op call p50 ${r.noOpCallMs.p50} ms, p99 ${r.noOpCallMs.p99} ms; load average ${r.loadAverage1m}`
  );
}

async function runExternal(o: Options, dir: string): Promise<ExternalResult> {
  const n = o.externalHosts;
  say(`--- external scheduler, ${n} hosts: starting the master`);
  const master = await MasterProcess.start(o, dir, n);
  let load: LoadGen | undefined;
  // The scheduler runs in a process of its own, as a real one does (sched/external-main.ts).
  const fd = openSync(join(dir, 'external-scheduler.log'), 'a');
  const sched = spawn(process.execPath, [EXT_SCHEDULER, master.address], { stdio: ['ignore', fd, fd, 'ipc'] });
  closeSync(fd);
  let registered = false;
  let report: BenchSchedulerReport | undefined;
  sched.on('message', (m: { type?: string; report?: BenchSchedulerReport }) => {
    if (m.type === 'registered') registered = true;
    if (m.type === 'report') report = m.report;
  });
  try {
    load = new LoadGen({
      master: master.address,
      nodes: n,
      racks: o.racks,
      capacity: { cpuMilli: o.nodeCpuMilli, memoryMb: o.nodeMemoryMb },
      slot: { cpuMilli: o.slotCpuMilli, memoryMb: o.slotMemoryMb },
      pushTransport: o.pushTransport,
      log: say,
    });
    await load.start();
    const lg = load;
    await waitFor('the scheduler to register', () => registered, 30_000);
    const masterClient = connect(loadFuxiProto().MasterService, master.address);
    try {
      for (let i = 0; i < o.apps; i++) {
        const spec = normalizeJobSpec({
          id: `ext-${i}`,
          name: `ext-${i}`,
          priority: 1,
          scheduler: 'bench-ext',
          am: { cpu: '100m', memory: 128 },
          tasks: [{ name: 'work', instances: 4 * o.externalWindow, resources: { cpu: `${o.slotCpuMilli}m`, memory: o.slotMemoryMb }, command: ['true'] }],
        });
        await masterClient.SubmitJob({ spec: jobSpecToProto(spec) }, { deadlineMs: 30_000 });
      }
    } finally {
      masterClient.close();
    }
    await waitFor(`${o.apps} AMs to register`, () => lg.apps.size === o.apps && [...lg.apps.values()].every((a) => a.registered), 60_000);
    say(`${o.apps} apps running; churn with ${o.externalWindow} slots asked per app`);
    lg.setMode({ kind: 'churn', window: o.externalWindow });
    await sleep(o.warmupMs);
    const meter = new CpuMeter(master.pid);
    meter.start();
    sched.send({ type: 'record', on: true });
    await sleep(o.durationMs);
    sched.send({ type: 'record', on: false });
    const cpu = meter.stop();
    sched.send({ type: 'report' });
    await waitFor("the scheduler's report", () => report !== undefined, 30_000);
    const r = report!;
    const samples = Float64Array.from(r.samples).sort();
    const result: ExternalResult = {
      hosts: n,
      placements: r.placed,
      roundTripMs: {
        p50: round(percentile(samples, 50)),
        p90: round(percentile(samples, 90)),
        p99: round(percentile(samples, 99)),
        max: round(samples.length > 0 ? samples[samples.length - 1]! : NaN),
        samples: samples.length,
      },
      placeCallMs: (() => {
        const c = Float64Array.from(r.callSamples).sort();
        return { p50: round(percentile(c, 50)), p99: round(percentile(c, 99)), calls: c.length };
      })(),
      target: { p99UnderMs: EXTERNAL_TARGET_P99_MS, met: percentile(samples, 99) < EXTERNAL_TARGET_P99_MS },
      placeRejections: r.rejected,
      viewsReceived: r.views,
      noOpCallMs: (() => {
        const c = Float64Array.from(r.pingSamples).sort();
        return { p50: round(percentile(c, 50)), p99: round(percentile(c, 99)), calls: c.length };
      })(),
      apps: o.apps,
      windowPerApp: o.externalWindow,
      durationMs: o.durationMs,
      masterCpuUtilization: round(cpu.utilization, 3),
      loadAverage1m: round((await import('node:os')).loadavg()[0] ?? 0, 2),
    };
    say(externalLine(result));
    return result;
  } finally {
    if (sched.connected) sched.send({ type: 'stop' });
    await terminate(sched, 5000);
    await load?.stop().catch(() => undefined);
    await master.stop();
  }
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    process.stderr.write(`bench-sched: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exit(1);
  },
);
