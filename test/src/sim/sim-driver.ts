/**
 * A simulated ProcessDriver: no processes. A worker is a timer of `SIM_DURATION_MS` (from the
 * plan's environment; default one hour) that then "exits" with `SIM_EXIT_CODE` (default 0), or,
 * with probability `SIM_FAIL_PROBABILITY` (0-1, default 0), with `SIM_FAIL_EXIT_CODE` (default 1):
 * the draw is a hash of (app, worker id), so it is the same on every run and differs per attempt;
 * kill ends it at once with SIGTERM. A host may also be failure-prone (`hostFailure`, hidden from
 * the master): a worker then also fails with the probability it gives at spawn (a draw of its own). Application-master workers (schedule unit `__am__`) are run by
 * `runAppMaster` instead, e.g. a real in-process `AppMaster`, so that apps make progress.
 *
 * Agent restarts (fault injection): `close()` (called by `Agent.stop()`) detaches the driver: the
 * workers keep running, but their exits are only recorded, as a real process's exit file would be.
 * A new `Agent` on the same driver then `probe()`s its checkpoint's workers (alive, or exited with
 * the recorded code) and re-adopts the live ones; `reattach()` afterwards delivers the exits the
 * probe did not report. `crashAppMaster` / `pauseAppMaster` inject AM faults; `observer` sees every
 * spawn and exit (the benchmark's instance counts).
 *
 * Fake pids come from a counter shared by every driver of one host process, starting above Linux's
 * largest possible pid (2^22), so a fake pid can never name a real process: a stray
 * `process.kill(-pid)` on one fails with ESRCH instead of hitting something.
 *
 * ```ts
 * const pids = new PidCounter();
 * const driver = new SimProcessDriver({ pids, runAppMaster: (spec) => startInProcessAm(spec) });
 * const agent = new Agent(config, { driver, log });
 * ```
 */
import type { ExitInfo, Liveness, ProcessDriver, RegisteredWorker, SpawnResult, SpawnSpec } from '@fuxi/agent';
import { AM_SU, nullLogger, type Logger } from '@fuxi/common';

/** Above /proc/sys/kernel/pid_max's ceiling (4194304): never a real pid. */
export const SIM_PID_BASE = 5_000_000;
export const DEFAULT_SIM_DURATION_MS = 3_600_000;

/** Unique fake pids for one host process. */
export class PidCounter {
  private next: number;
  constructor(base = SIM_PID_BASE) {
    this.next = base;
  }
  take(): number {
    return this.next++;
  }
}

/** A running in-process application master, as the driver sees it. */
export interface SimAppMasterHandle {
  /** Resolves with the AM's exit code (0 after FinishApp, 1 on a fatal error). */
  readonly exited: Promise<number>;
  /** Stops the AM (the worker is being killed); `exited` then resolves. */
  kill(): void;
  /**
   * Timing failure: the AM stops heartbeating and calling the master for `ms`; resolves with the
   * time until the master answered it again.
   */
  pause?(ms: number): Promise<number>;
}

/** Sees every simulated worker start and end (AM workers included; `spec.suId` tells them apart). */
export interface SimDriverObserver {
  spawned(spec: SpawnSpec): void;
  finished(spec: SpawnSpec, exitCode: number | null, signal: string | null): void;
}

export interface SimProcessDriverOptions {
  pids: PidCounter;
  /** Runs an AM worker; without it an AM worker is a plain timer like any other. */
  runAppMaster?: (spec: SpawnSpec, pid: number) => SimAppMasterHandle;
  /** Duration of a worker whose plan sets no SIM_DURATION_MS (default one hour). */
  defaultDurationMs?: number;
  log?: Logger;
  observer?: SimDriverObserver;
  /**
   * The host's own failure proneness: the probability that it fails this (non-AM) worker, asked
   * at spawn (e.g. higher under memory pressure). Drawn apart from SIM_FAIL_PROBABILITY (key
   * `<app>/<worker>/host`), so jobs' own draws stay what they are. Absent: the host never fails one.
   */
  hostFailure?: (spec: SpawnSpec) => number;
}

interface SimWorker {
  spec: SpawnSpec;
  pid: number;
  timer?: NodeJS.Timeout;
  am?: SimAppMasterHandle;
  done: boolean;
}

function envInt(env: Record<string, string>, key: string, dflt: number): number {
  const v = env[key];
  if (v === undefined || v.trim() === '') return dflt;
  const n = Number(v);
  return Number.isFinite(n) && n >= 0 ? Math.floor(n) : dflt;
}

function envProbability(env: Record<string, string>, key: string): number {
  const n = Number(env[key] ?? '');
  return Number.isFinite(n) ? Math.min(1, Math.max(0, n)) : 0;
}

/** A number in [0, 1) from `key` (FNV-1a): the same key always draws the same number. */
export function draw(key: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    h ^= key.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  // One more mixing round (murmur3 finalizer) so that nearby keys spread over the range.
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b) >>> 0;
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35) >>> 0;
  h ^= h >>> 16;
  return (h >>> 0) / 2 ** 32;
}

export class SimProcessDriver implements ProcessDriver {
  private exitCb: (e: ExitInfo) => void = () => {};
  private readonly byPid = new Map<number, SimWorker>();
  private readonly log: Logger;
  /** Set by close() (the agent stopped): exits are recorded, not reported, until reattach(). */
  private detached = false;
  private readonly endedWhileDetached = new Map<number, { w: SimWorker; exitCode: number | null; signal: string | null; probed: boolean }>();

  constructor(private readonly opts: SimProcessDriverOptions) {
    this.log = opts.log ?? nullLogger;
  }

  onExit(cb: (e: ExitInfo) => void): void {
    this.exitCb = cb;
  }

  logPath(): string {
    return '';
  }

  /** Workers currently "running" (for tests and the host's status). */
  get running(): number {
    return this.byPid.size;
  }

  async spawn(spec: SpawnSpec): Promise<SpawnResult> {
    const pid = this.opts.pids.take();
    const w: SimWorker = { spec, pid, done: false };
    this.byPid.set(pid, w);
    this.opts.observer?.spawned(spec);
    if (spec.suId === AM_SU && this.opts.runAppMaster) {
      try {
        w.am = this.opts.runAppMaster(spec, pid);
      } catch (e) {
        this.byPid.delete(pid);
        throw e;
      }
      w.am.exited.then(
        (code) => this.finish(w, code, null),
        (e: unknown) => {
          this.log.warn({ appId: spec.appId, workerId: spec.workerId, err: String(e) }, 'simulated application master crashed');
          this.finish(w, 1, null);
        },
      );
    } else {
      const ms = envInt(spec.env, 'SIM_DURATION_MS', this.opts.defaultDurationMs ?? DEFAULT_SIM_DURATION_MS);
      const failP = envProbability(spec.env, 'SIM_FAIL_PROBABILITY');
      const hostP = this.opts.hostFailure ? Math.min(1, Math.max(0, this.opts.hostFailure(spec))) : 0;
      const fails = (failP > 0 && draw(`${spec.appId}/${spec.workerId}`) < failP) || (hostP > 0 && draw(`${spec.appId}/${spec.workerId}/host`) < hostP);
      const code = fails ? envInt(spec.env, 'SIM_FAIL_EXIT_CODE', 1) : envInt(spec.env, 'SIM_EXIT_CODE', 0);
      w.timer = setTimeout(() => this.finish(w, code, null), ms);
    }
    return { pid, startTime: String(pid), bootId: 'sim' };
  }

  kill(pid: number): void {
    const w = this.byPid.get(pid);
    if (!w || w.done) return;
    if (w.timer) clearTimeout(w.timer);
    // The AM's own end (through `exited`) comes later and is ignored: it was killed.
    w.am?.kill();
    // Reported asynchronously, like a real process exit (never from inside the agent's kill effect).
    setImmediate(() => this.finish(w, null, 'SIGTERM'));
  }

  private finish(w: SimWorker, exitCode: number | null, signal: string | null): void {
    if (w.done) return;
    w.done = true;
    if (w.timer) clearTimeout(w.timer);
    this.byPid.delete(w.pid);
    this.opts.observer?.finished(w.spec, exitCode, signal);
    if (this.detached) {
      this.endedWhileDetached.set(w.pid, { w, exitCode, signal, probed: false });
      return;
    }
    this.exitCb({ appId: w.spec.appId, workerId: w.spec.workerId, pid: w.pid, exitCode, signal });
  }

  /**
   * Like the real driver's, leaves the workers running (`shutdown` ends them) and stops reporting
   * their exits: they are recorded for `probe()` and `reattach()` (an agent restart).
   */
  close(): void {
    this.detached = true;
  }

  /** After an agent restart: is the worker still running, or how did it end while the agent was down? */
  probe(r: RegisteredWorker): Liveness {
    const w = this.byPid.get(r.pid);
    if (w && !w.done && w.spec.workerId === r.workerId) return { kind: 'alive', pid: w.pid, startTime: String(w.pid), bootId: 'sim' };
    const ended = this.endedWhileDetached.get(r.pid);
    if (ended && ended.w.spec.workerId === r.workerId) {
      ended.probed = true;
      // A signal death shows as 128 + signal number, as a shell wrapper would record it.
      return { kind: 'exited', exitCode: ended.exitCode ?? (ended.signal === 'SIGKILL' ? 137 : 143) };
    }
    return { kind: 'gone' };
  }

  /** The worker's timer keeps running; its exit goes to whichever agent registered `onExit` last. */
  adopt(): void {}

  /**
   * Ends the detached period (after the restarted agent's start()): exits recorded meanwhile that
   * the restarted agent did not learn from `probe()` are reported now.
   */
  reattach(): void {
    this.detached = false;
    const pending = [...this.endedWhileDetached.values()].filter((e) => !e.probed);
    this.endedWhileDetached.clear();
    for (const e of pending) this.exitCb({ appId: e.w.spec.appId, workerId: e.w.spec.workerId, pid: e.w.pid, exitCode: e.exitCode, signal: e.signal });
  }

  /** App ids (and AM attempts) of the application masters running here. */
  appMasters(): Array<{ appId: string; amAttempt: number; workerId: string }> {
    const out: Array<{ appId: string; amAttempt: number; workerId: string }> = [];
    for (const w of this.byPid.values()) {
      if (w.done || !w.am) continue;
      out.push({ appId: w.spec.appId, amAttempt: Number(w.spec.env.FUXI_AM_ATTEMPT ?? '1') || 1, workerId: w.spec.workerId });
    }
    return out;
  }

  /**
   * AM crash: stops the app's in-process AM and reports its worker as killed by SIGKILL (as a
   * `kill -9` of a real AM process would be). False when no AM of `appId` runs here.
   */
  crashAppMaster(appId: string): boolean {
    for (const w of this.byPid.values()) {
      if (w.done || !w.am || w.spec.appId !== appId) continue;
      w.am.kill();
      this.finish(w, null, 'SIGKILL');
      return true;
    }
    return false;
  }

  /**
   * AM timing failure: the app's AM goes silent towards the master for `ms`. Resolves with the time
   * until the master answered it again; undefined when no AM of `appId` runs here.
   */
  pauseAppMaster(appId: string, ms: number): Promise<number> | undefined {
    for (const w of this.byPid.values()) {
      if (w.done || !w.am?.pause || w.spec.appId !== appId) continue;
      return w.am.pause(ms);
    }
    return undefined;
  }

  /** Ends every worker silently (host shutdown). */
  shutdown(): void {
    for (const w of this.byPid.values()) {
      w.done = true;
      if (w.timer) clearTimeout(w.timer);
      w.am?.kill();
    }
    this.byPid.clear();
  }
}
