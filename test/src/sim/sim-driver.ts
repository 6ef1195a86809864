/**
 * A simulated ProcessDriver: no processes. A worker is a timer of `SIM_DURATION_MS` (from the
 * plan's environment; default one hour) that then "exits" with `SIM_EXIT_CODE` (default 0);
 * kill ends it at once with SIGTERM. Application-master workers (schedule unit `__am__`) are run by
 * `runAppMaster` instead, e.g. a real in-process `AppMaster`, so that apps make progress.
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
import type { ExitInfo, ProcessDriver, SpawnResult, SpawnSpec } from '@fuxi/agent';
import { nullLogger, type Logger } from '@fuxi/common';

/** Above /proc/sys/kernel/pid_max's ceiling (4194304): never a real pid. */
export const SIM_PID_BASE = 5_000_000;
export const DEFAULT_SIM_DURATION_MS = 3_600_000;
export const AM_SU_ID = '__am__';

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
}

export interface SimProcessDriverOptions {
  pids: PidCounter;
  /** Runs an AM worker; without it an AM worker is a plain timer like any other. */
  runAppMaster?: (spec: SpawnSpec, pid: number) => SimAppMasterHandle;
  /** Duration of a worker whose plan sets no SIM_DURATION_MS (default one hour). */
  defaultDurationMs?: number;
  log?: Logger;
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

export class SimProcessDriver implements ProcessDriver {
  private exitCb: (e: ExitInfo) => void = () => {};
  private readonly byPid = new Map<number, SimWorker>();
  private readonly log: Logger;

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
    if (spec.suId === AM_SU_ID && this.opts.runAppMaster) {
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
      const code = envInt(spec.env, 'SIM_EXIT_CODE', 0);
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
    this.exitCb({ appId: w.spec.appId, workerId: w.spec.workerId, pid: w.pid, exitCode, signal });
  }

  /** Like the real driver's, leaves the workers running (`shutdown` ends them). */
  close(): void {}

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
