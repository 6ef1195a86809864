/**
 * The AM host: many application masters in one long-lived process (`fuxi-amhost`, one per node,
 * started by its agent), so that a small job does not pay for a Node process of its own
 * (docs/architecture.md, "The AM host").
 *
 * Each hosted AM is what a dedicated one is: a real `AppMaster` with its own configuration (the
 * environment its agent would have given its process), its own core, snapshot, attempt and
 * epoch, its own address towards the master and the agents (a route of the host's one gRPC
 * server: `SharedAmServers`), and its own log (`<worker dir>/stdout`). Its end is its worker's
 * exit: exit code 0 once FinishApp went through, 1 on a fatal error, written to `<worker dir>/exit`
 * (as a worker's wrapper does) and reported to the agent.
 *
 * Isolation:
 * - **Exceptions.** Every AM runs in an async context of its own (AsyncLocalStorage): an uncaught
 *   exception or unhandled rejection is attributed to the AM whose code raised it (`attribute`),
 *   and that AM alone is ended with exit code 1, so its master restarts it as a new attempt, as it
 *   restarts a dedicated AM that crashed. Only an error no AM owns ends the host.
 * - **Large jobs.** An AM whose job has at least `threadInstances` instances (`FUXI_AM_INSTANCES`,
 *   from the master) runs in a worker thread of its own, with its own event loop: however long its
 *   core steps take, they never delay the grants of the AMs on the main loop. Small AMs share the
 *   main loop (a thread costs ~155 ms of CPU and ~20 MB to load the AM's modules again).
 *
 * ```ts
 * const host = new AmHost({ log, threadInstances: 10_000 });
 * host.onExit((e) => agentConnection.write(encodeLine(e)));
 * host.start({ key: 'job-1/am.1', appId: 'job-1', workerId: 'am.1', dir, env });
 * process.on('uncaughtException', (e) => host.attribute(e) || process.exit(1));
 * ```
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import { pino } from 'pino';
import {
  errorMessage,
  type AmHostExitEvent,
  type AmHostStats,
  type AmInstanceCounts,
  type HostedAmFault,
  type HostedAmInfo,
  type HostedAmSpec,
  type Logger,
} from '@fuxi/common';
import type * as grpc from '@grpc/grpc-js';
import { loadFuxiProto } from '@fuxi/proto';
import { routedAddress, ServiceRouter, startServer, AM_SERVER_BATCHED, type RunningServer, type Transport } from '@fuxi/rpc';
import type { TaskProgress } from '../core/types.js';
import { AmLogFile } from './am-log-file.js';
import { AppMaster, configFromEnv, type AmServing, type AppMasterConfig } from './app-master.js';

/** What the host needs of an application master (AppMaster; tests give fakes). */
export interface HostedAppMaster {
  /** Resolves when the app is finished (exit code 0); rejects on a fatal error (1). */
  run(): Promise<unknown>;
  stop(reason: string): Promise<void>;
  pause(): () => void;
  /** Each task's instance counts and retries (absent in test fakes). */
  progress?(): TaskProgress[];
}

export interface AmHostOptions {
  log: Logger;
  /** AMs of jobs with at least this many instances run in a worker thread (default 10,000; 0: every AM). */
  threadInstances?: number;
  /** Log level of the hosted AMs whose environment sets none (FUXI_LOG_LEVEL; default info). */
  logLevel?: string;
  /** How long an AM the wall threw out may take to shut down before it counts as ended (default 2 s). */
  crashGraceMs?: number;
  /** Replaces the real AppMaster on the main loop (tests). */
  createAm?: (spec: HostedAmSpec, log: Logger) => HostedAppMaster;
  /** The worker thread's entry (default ./am-thread.js; tests). */
  threadEntry?: URL;
}

export const DEFAULT_THREAD_INSTANCES = 10_000;

/** Sampling interval of the main loop's delay monitor. */
const LOOP_RESOLUTION_MS = 10;

/** The async context of one hosted AM: whatever its code schedules carries it. */
export interface AmContext {
  readonly key: string;
  ended: boolean;
}

const contexts = new AsyncLocalStorage<AmContext>();

/**
 * Runs `fn` in no AM's context (what it starts is the host's own). Not `contexts.exit`: on Node 20
 * that disables the storage and enables it again, turning the process's async hooks off and on,
 * at every AM's start.
 */
function outsideEveryAm<T>(fn: () => T): T {
  return contexts.run(undefined as unknown as AmContext, fn);
}

/** The key of the hosted AM whose code is running now (undefined: the host's own). */
export function currentAmKey(): string | undefined {
  return contexts.getStore()?.key;
}

/** Exit code written for an AM that ended by a signal (as a shell reports it). */
const SIGKILL_STATUS = 137;

interface Hosted {
  readonly info: HostedAmInfo;
  readonly spec: HostedAmSpec;
  readonly ctx: AmContext;
  begin(): void;
  stop(graceMs: number): void;
  fault(f: HostedAmFault): void;
  /** The wall caught an exception of this AM. */
  crashed(e: unknown): void;
  /** Its tasks' progress as last known (a thread: as it last told; asks it again). */
  progress(): TaskProgress[];
}

/** A pino logger writing to the AM's `<dir>/stdout` (am-log-file.ts), as a dedicated AM's stdout would be. */
function amLog(spec: HostedAmSpec, level: string): { log: Logger; close(then: () => void): void } {
  const file = new AmLogFile(path.join(spec.dir, 'stdout'));
  const log = pino({ name: 'appmaster', level, base: { pid: process.pid, hosted: true }, timestamp: pino.stdTimeFunctions.isoTime }, file);
  // `then` once every line is in the file (the AM's end is reported with its log whole), or after
  // LOG_CLOSE_WAIT_MS when the disk does not answer.
  return { log: log as unknown as Logger, close: (then) => file.close(then) };
}

/** Writes `<dir>/exit` atomically (a restarted agent reads how the AM ended). */
function writeExitFile(dir: string, code: number): void {
  try {
    fs.writeFileSync(path.join(dir, 'exit.tmp'), `${code}\n`);
    fs.renameSync(path.join(dir, 'exit.tmp'), path.join(dir, 'exit'));
  } catch {
    /* the directory is gone: nobody will read it */
  }
}

export class AmHost {
  private readonly log: Logger;
  private readonly ams = new Map<string, Hosted>();
  private exitCb: (e: AmHostExitEvent) => void = () => {};
  private readonly loop: IntervalHistogram;
  readonly threadInstances: number;
  /** Retries of each AM as last read, and the sum of every increase seen (`stats().retries`). */
  private readonly retriesSeen = new Map<string, number>();
  private retriesTotal = 0;
  private readonly servers: SharedAmServers;

  constructor(private readonly opts: AmHostOptions) {
    this.log = opts.log;
    this.servers = new SharedAmServers(opts.log);
    this.threadInstances = opts.threadInstances ?? DEFAULT_THREAD_INSTANCES;
    // Sampled only while an AM is hosted (`watchLoop`): the monitor wakes the process every
    // LOOP_RESOLUTION_MS, which kept an AM host with nothing to run at about 1 % of a core.
    this.loop = monitorEventLoopDelay({ resolution: LOOP_RESOLUTION_MS });
  }

  /** The loop monitor runs while at least one AM is hosted: their delay is what it measures. */
  private watchLoop(): void {
    // Both are no-ops when the monitor is already in that state.
    if (this.ams.size > 0) this.loop.enable();
    else this.loop.disable();
  }

  /** Registers the exit callback (one). */
  onExit(cb: (e: AmHostExitEvent) => void): void {
    this.exitCb = cb;
  }

  get size(): number {
    return this.ams.size;
  }

  list(): HostedAmInfo[] {
    return [...this.ams.values()].map((a) => ({ ...a.info }));
  }

  /**
   * Starts an AM; answers whether it runs in a thread. Starting a key that runs already is a no-op
   * (an agent repeating itself after a reconnect).
   */
  start(spec: HostedAmSpec): { thread: boolean } {
    const running = this.ams.get(spec.key);
    if (running) return { thread: running.info.thread };
    const instances = Number(spec.env.FUXI_AM_INSTANCES ?? '');
    const thread = Number.isFinite(instances) && instances >= this.threadInstances && !this.opts.createAm;
    const info: HostedAmInfo = { key: spec.key, appId: spec.appId, workerId: spec.workerId, thread, startedAtMs: Date.now() };
    const level = spec.env.FUXI_LOG_LEVEL || this.opts.logLevel || 'info';
    const done = (h: Hosted, exitCode: number | null, signal: string | null, message: string) => this.ended(h, exitCode, signal, message);
    const am = thread ? new ThreadAm(info, spec, level, done, this.opts.threadEntry) : new InlineAm(info, spec, level, done, this.opts, this.servers);
    this.ams.set(spec.key, am);
    this.watchLoop();
    this.log.info({ key: spec.key, appId: spec.appId, workerId: spec.workerId, thread, ams: this.ams.size }, 'hosted application master started');
    am.begin();
    return { thread };
  }

  /** Stops an AM (its worker is being stopped); false when the host does not run it. */
  stop(key: string, graceMs: number): boolean {
    const am = this.ams.get(key);
    if (!am) return false;
    am.stop(graceMs);
    return true;
  }

  /** Fault injection (tests): false when the host does not run `key`. */
  fault(key: string, f: HostedAmFault): boolean {
    const am = this.ams.get(key);
    if (!am) return false;
    this.log.warn({ key, fault: f }, 'fault injected into a hosted application master');
    am.fault(f);
    return true;
  }

  /**
   * The wall: an uncaught exception or unhandled rejection raised in a hosted AM's async context
   * ends that AM alone. True when some AM owned it (running: thrown out; ended already: a leftover
   * callback of it, logged); false when it is the host's own, a bug that ends the host.
   */
  attribute(e: unknown): boolean {
    const ctx = contexts.getStore();
    if (!ctx) return false;
    const am = this.ams.get(ctx.key);
    if (ctx.ended || !am || am.ctx !== ctx) {
      this.log.warn({ key: ctx.key, err: describe(e) }, 'error from an application master that has ended; ignored');
      return true;
    }
    this.log.error({ key: ctx.key, err: describe(e) }, 'uncaught error in a hosted application master: it alone is ended');
    am.crashed(e);
    return true;
  }

  stats(reset = false): AmHostStats {
    // The histogram holds whole sampling intervals: the delay is what exceeds the resolution.
    const ms = (ns: number) => Math.max(0, Math.round((ns - LOOP_RESOLUTION_MS * 1e6) / 1e4) / 100);
    const cpu = process.cpuUsage();
    const h = this.loop;
    const out: AmHostStats = {
      pid: process.pid,
      ams: this.ams.size,
      threads: [...this.ams.values()].filter((a) => a.info.thread).length,
      rssMb: Math.round(process.memoryUsage().rss / 1048576),
      cpuMs: Math.round((cpu.user + cpu.system) / 1000),
      loopDelayMs: { p50: ms(h.percentile(50)), p99: ms(h.percentile(99)), p999: ms(h.percentile(99.9)), max: ms(h.max), samples: h.count },
      ...this.progressStats(),
    };
    if (reset) h.reset();
    return out;
  }

  /** The hosted AMs' instances by state, summed, and every retry since the host started. */
  private progressStats(): { instances: AmInstanceCounts; retries: number } {
    const instances: AmInstanceCounts = { pending: 0, running: 0, succeeded: 0, failed: 0 };
    for (const am of this.ams.values()) {
      for (const t of am.progress()) {
        instances.pending += t.pending;
        instances.running += t.running;
        instances.succeeded += t.succeeded;
        instances.failed += t.failed;
      }
      this.noteRetries(am);
    }
    return { instances, retries: this.retriesTotal };
  }

  /** Adds what an AM retried since its last reading to the host's total. */
  private noteRetries(am: Hosted): void {
    const now = am.progress().reduce((n, t) => n + t.retries, 0);
    const before = this.retriesSeen.get(am.info.key) ?? 0;
    if (now > before) this.retriesTotal += now - before;
    this.retriesSeen.set(am.info.key, Math.max(now, before));
  }

  /** Stops every AM (the host is going away on purpose), the loop monitor and, after `graceMs`, the AMs' servers. */
  close(graceMs = 1000): void {
    for (const am of this.ams.values()) am.stop(graceMs);
    this.loop.disable();
    setTimeout(() => void this.servers.close(), graceMs).unref();
  }

  /** The addresses of the servers of the inline AMs (`host:port`; each AM at a route of one). */
  serverAddresses(): Promise<string[]> {
    return this.servers.addresses();
  }

  private ended(am: Hosted, exitCode: number | null, signal: string | null, message: string): void {
    if (this.ams.get(am.info.key) !== am) return;
    am.ctx.ended = true;
    this.noteRetries(am);
    this.retriesSeen.delete(am.info.key);
    this.ams.delete(am.info.key);
    this.watchLoop();
    writeExitFile(am.spec.dir, exitCode ?? SIGKILL_STATUS);
    this.log.info({ key: am.info.key, exitCode, signal, message, ams: this.ams.size }, 'hosted application master ended');
    this.exitCb({ ev: 'exit', key: am.info.key, appId: am.info.appId, workerId: am.info.workerId, exitCode, signal, message });
  }
}

/**
 * The AppMasterService servers of the host's inline AMs: one per (transport, bind, advertise), in
 * practice one per host, each AM served at a route of it, its key (@fuxi/rpc
 * routing.ts). A job's agents and the master reach its AM over the connection they hold to the
 * host already: no new connection and TLS handshake per job, and no server per AM here.
 *
 * A server runs outside every AM's async context, and each AM's calls run in that AM's own: the
 * wall (`AmHost.attribute`) blames an AM's exception on that AM, whichever AM's start opened the
 * server.
 */
export class SharedAmServers {
  private readonly servers = new Map<Transport | undefined, Map<string, Promise<{ server: RunningServer; router: ServiceRouter }>>>();

  constructor(private readonly log: Logger) {}

  /**
   * The `serve` of an AM's config (app-master.ts): its handlers at its route of the shared server,
   * its host key (app and worker id: one per attempt, and unique among the host's AMs).
   */
  serving(cfg: Pick<AppMasterConfig, 'bind' | 'advertise' | 'transport'>, ctx: AmContext): (handlers: grpc.UntypedServiceImplementation) => Promise<AmServing> {
    return async (handlers) => {
      const { server, router } = await outsideEveryAm(() => this.serverFor(cfg));
      const route = encodeURIComponent(ctx.key);
      const inContext: grpc.UntypedServiceImplementation = {};
      for (const [name, h] of Object.entries(handlers)) {
        const fn = h as (...args: unknown[]) => unknown;
        inContext[name] = ((...args: unknown[]) => contexts.run(ctx, () => fn(...args))) as grpc.UntypedHandleCall;
      }
      router.add(route, inContext);
      let served = true;
      return {
        address: routedAddress(server.address, route),
        shutdown: async () => {
          if (served) router.remove(route);
          served = false;
        },
      };
    };
  }

  private serverFor(cfg: Pick<AppMasterConfig, 'bind' | 'advertise' | 'transport'>): Promise<{ server: RunningServer; router: ServiceRouter }> {
    let byBind = this.servers.get(cfg.transport);
    if (!byBind) this.servers.set(cfg.transport, (byBind = new Map()));
    const bind = cfg.bind ?? '127.0.0.1:0';
    const key = `${bind}\u0000${cfg.advertise ?? ''}`;
    const running = byBind.get(key);
    if (running) return running;
    const def = loadFuxiProto().AppMasterService.service;
    // An agent's worker events, and the master's assignment pushes, for several of the host's AMs
    // come in one call, each to its AM.
    const router = new ServiceRouter(def, { batch: { method: 'Calls', allowed: AM_SERVER_BATCHED } });
    const started = startServer({
      bind,
      ...(cfg.advertise ? { advertise: cfg.advertise } : {}),
      log: this.log,
      ...(cfg.transport ? { transport: cfg.transport } : {}),
      services: [{ name: 'fuxi.v1.AppMasterService', definition: def, handlers: router.handlers() }],
    }).then((server) => {
      this.log.info({ address: server.address, bind }, 'serving hosted application masters');
      return { server, router };
    });
    byBind.set(key, started);
    // A server that could not start (its AM fails to start): the next AM tries again.
    const map = byBind;
    started.catch(() => {
      if (map.get(key) === started) map.delete(key);
    });
    return started;
  }

  async addresses(): Promise<string[]> {
    const up = await Promise.allSettled(this.all());
    return up.flatMap((r) => (r.status === 'fulfilled' ? [r.value.server.address] : []));
  }

  async close(): Promise<void> {
    const all = this.all();
    this.servers.clear();
    await Promise.allSettled(all.map(async (p) => (await p).server.shutdown(500)));
  }

  private all(): Array<Promise<{ server: RunningServer; router: ServiceRouter }>> {
    return [...this.servers.values()].flatMap((m) => [...m.values()]);
  }
}

function describe(e: unknown): string {
  return e instanceof Error ? (e.stack ?? e.message) : String(e);
}

type Done = (h: Hosted, exitCode: number | null, signal: string | null, message: string) => void;

/** An AM on the host's main event loop, in an async context of its own. */
class InlineAm implements Hosted {
  readonly ctx: AmContext;
  private am: HostedAppMaster | undefined;
  private logFile: ReturnType<typeof amLog> | undefined;
  private resume: (() => void) | undefined;
  private over = false;
  private crash: string | undefined;
  private graceTimer: NodeJS.Timeout | undefined;

  constructor(
    readonly info: HostedAmInfo,
    readonly spec: HostedAmSpec,
    private readonly level: string,
    private readonly done: Done,
    private readonly opts: AmHostOptions,
    private readonly servers: SharedAmServers,
  ) {
    this.ctx = { key: info.key, ended: false };
  }

  begin(): void {
    contexts.run(this.ctx, () => {
      try {
        this.logFile = amLog(this.spec, this.level);
        const log = this.logFile.log;
        if (this.opts.createAm) this.am = this.opts.createAm(this.spec, log);
        else {
          const cfg = configFromEnv(this.spec.env, log);
          // Inline AMs share the host's batches of master calls (one call carries many AMs' calls),
          // and take their assignments from the master's batches of pushes to the host's server
          // instead of holding a stream each.
          this.am = new AppMaster({ ...cfg, batchMasterCalls: true, assignmentStream: false, serve: this.servers.serving(cfg, this.ctx) });
        }
      } catch (e) {
        this.logFile?.log.error({ err: errorMessage(e) }, 'application master could not start');
        setImmediate(() => this.end(1, null, `could not start: ${errorMessage(e)}`));
        return;
      }
      this.am.run().then(
        () => this.end(this.crash ? 1 : 0, null, this.crash ?? 'finished'),
        (e: unknown) => this.end(1, null, this.crash ?? errorMessage(e)),
      );
    });
  }

  /**
   * The AM's own code runs in its context whoever calls in (the host's socket handler here): what
   * its stop or pause sets off (timers, callbacks, the rest of its shutdown) is that AM's, and an
   * exception there ends that AM alone, not the host.
   */
  private inContext(fn: () => void): void {
    contexts.run(this.ctx, fn);
  }

  stop(graceMs: number): void {
    if (this.over) return;
    this.inContext(() => void this.am?.stop('stopped by its agent').catch(() => undefined));
    this.deadline(graceMs, 'did not end within its stop grace; abandoned');
  }

  fault(f: HostedAmFault): void {
    if (this.over) return;
    if (f === 'throw') {
      contexts.run(this.ctx, () =>
        setImmediate(() => {
          throw new Error('fault injection: an exception inside the application master');
        }),
      );
    } else if (f === 'pause') this.inContext(() => (this.resume ??= this.am?.pause()));
    else {
      const resume = this.resume;
      this.resume = undefined;
      if (resume) this.inContext(resume);
    }
  }

  progress(): TaskProgress[] {
    try {
      return this.am?.progress?.() ?? [];
    } catch {
      return []; // not started far enough to have a core
    }
  }

  crashed(e: unknown): void {
    if (this.over) return;
    this.crash ??= `uncaught error: ${errorMessage(e)}`;
    this.logFile?.log.error({ err: describe(e) }, 'uncaught error in this application master; the host ends it');
    const crash = this.crash;
    this.inContext(() => void this.am?.stop(crash).catch(() => undefined));
    this.deadline(this.opts.crashGraceMs ?? 2000, this.crash);
  }

  private deadline(ms: number, message: string): void {
    if (this.graceTimer) return;
    this.graceTimer = setTimeout(() => this.end(this.crash ? 1 : null, this.crash ? null : 'SIGKILL', message), ms);
    this.graceTimer.unref();
  }

  private end(exitCode: number | null, signal: string | null, message: string): void {
    if (this.over) return;
    this.over = true;
    if (this.graceTimer) clearTimeout(this.graceTimer);
    const done = () => this.done(this, exitCode, signal, message);
    if (!this.logFile) return done();
    this.logFile.log.info({ exitCode, signal, message }, 'application master ended');
    this.logFile.close(done);
  }
}

/** Messages between the host and an AM's worker thread (am-thread.ts). */
export type ThreadCommand = { op: 'stop'; reason: string } | { op: 'fault'; fault: HostedAmFault } | { op: 'progress' };
/**
 * What the thread tells the host: its tasks' progress, answering `progress`; and its own end, as
 * it decides it, before it exits (`ThreadExit`).
 */
export type ThreadReport = { progress: TaskProgress[] } | { exit: ThreadExit };
/** A thread AM's end as it decided it (0 after FinishApp, 1 on a fatal error), told before it exits. */
export interface ThreadExit {
  code: number;
  message: string;
}
export interface ThreadData {
  spec: HostedAmSpec;
  level: string;
}

/** An AM in a worker thread of its own: its core steps never hold up the main loop. */
/**
 * The module a thread AM runs: am-thread.js beside this one, in the module tree. Bundled
 * (`fuxi-amhost.bundle.cjs` in appmaster/dist, scripts/bundle.mjs), this code's URL is the bundle's,
 * and the thread runs the module tree's file below it.
 */
const AM_THREAD_ENTRY = new URL(import.meta.url.endsWith('.bundle.cjs') ? './shell/am-thread.js' : './am-thread.js', import.meta.url);

class ThreadAm implements Hosted {
  readonly ctx: AmContext;
  private worker: Worker | undefined;
  private over = false;
  private error: string | undefined;
  /** The end the thread told (am-thread.ts, before its process.exit). */
  private ownExit: ThreadExit | undefined;
  private terminated = false;
  private graceTimer: NodeJS.Timeout | undefined;
  private lastProgress: TaskProgress[] = [];

  constructor(
    readonly info: HostedAmInfo,
    readonly spec: HostedAmSpec,
    private readonly level: string,
    private readonly done: Done,
    private readonly entry: URL = AM_THREAD_ENTRY,
  ) {
    this.ctx = { key: info.key, ended: false };
  }

  begin(): void {
    const data: ThreadData = { spec: this.spec, level: this.level };
    const w = new Worker(this.entry, { workerData: data, stdout: false, stderr: false });
    this.worker = w;
    // An exception the thread does not catch ends the thread (and only it): exit code 1.
    w.on('error', (e) => {
      this.error = `uncaught error: ${errorMessage(e)}`;
    });
    w.on('message', (m: Partial<{ progress: unknown; exit: Partial<ThreadExit> }> | undefined) => {
      if (Array.isArray(m?.progress)) this.lastProgress = m.progress as TaskProgress[];
      const own = m?.exit;
      if (own && typeof own.code === 'number') this.ownExit ??= { code: own.code, message: String(own.message ?? '') };
    });
    w.on('exit', (code) => {
      // Every message the thread posted is delivered before its 'exit': an end it told, or an
      // uncaught error of its own, came before the grace's termination took it, even when the
      // grace ran out while its exit was on the way (it exited on its own right at the deadline).
      // Only a thread that had not ended by itself was killed.
      const own = this.ownExit;
      if (own) this.end(own.code, null, own.message);
      else if (this.error) this.end(1, null, this.error);
      else if (this.terminated) this.end(null, 'SIGKILL', 'did not end within its stop grace; thread terminated');
      else this.end(code === 0 ? 0 : 1, null, code === 0 ? 'finished' : `thread exited with code ${code}`);
    });
  }

  stop(graceMs: number): void {
    if (this.over || !this.worker) return;
    this.post({ op: 'stop', reason: 'stopped by its agent' });
    if (this.graceTimer) return;
    this.graceTimer = setTimeout(() => {
      this.terminated = true;
      void this.worker?.terminate();
    }, graceMs);
    this.graceTimer.unref();
  }

  fault(f: HostedAmFault): void {
    this.post({ op: 'fault', fault: f });
  }

  crashed(): void {
    // Errors inside the thread end the thread by themselves; nothing of it runs on this loop.
  }

  progress(): TaskProgress[] {
    this.post({ op: 'progress' });
    return this.lastProgress;
  }

  private post(cmd: ThreadCommand): void {
    if (!this.over) this.worker?.postMessage(cmd);
  }

  private end(exitCode: number | null, signal: string | null, message: string): void {
    if (this.over) return;
    this.over = true;
    if (this.graceTimer) clearTimeout(this.graceTimer);
    this.done(this, exitCode, signal, message);
  }
}
