/**
 * Starting worker processes without blocking the agent's event loop, and without forking the agent.
 *
 * `child_process.spawn` returns only once the child has exec'd: the calling thread waits on a
 * close-on-exec pipe while the kernel copies the caller's page tables and schedules the child, and
 * the caller then takes a copy-on-write fault on each page it writes again. Forked from the agent
 * (a heap of tens of MB), that copy and those faults were about a third of the agent's CPU when it
 * started many short tasks (a profile of make bench-throughput's oneJob: copy_page_range alone,
 * 12-14 % of its samples). `HelperSpawner` hands each spawn to a small helper process of its own
 * (spawn-helper.ts, Node's own modules only), started with the first spawn: the forks copy the
 * helper's few pages, and the agent's loop pays one message each way. With `helper: 'thread'` the
 * helper is a thread of the agent instead (the spawn still blocks only that thread; the fork copies
 * the agent). With the spawn goes the worker's `LaunchPrep` (launch-prep.ts): its directory, files
 * and ownership are laid out by the helper too, with synchronous calls. `InlineSpawner` does both on
 * the calling thread (where no helper is wanted).
 *
 * A request's `direct` start (the command with no wrapper, direct-launch.ts) is used by a helper
 * process only; a thread, and `InlineSpawner`, start `file` (the wrapper).
 *
 * The workers are the helper's children (it reaps them and reports how they ended, by pid). A helper
 * process ends with its channel, or, while processes it started directly run, once they have ended
 * and their exit codes are on disk: when the agent stops, or dies, the workers run on (their own
 * sessions), to be adopted by the next agent as before. If the helper dies (or its channel ends, the
 * replies it still had to send lost), the processes it started are watched through /proc (pid and
 * start time, every `pollMs`); their end is then reported with neither code nor signal (the caller
 * reads the wrapper's exit file). Spawns under way then reject with `SpawnOutcomeUnknownError`: the
 * helper may have forked the process before it died, so the caller looks for it where the process
 * leaves its traces (process-driver.ts: its pid file, its marker in /proc) before it counts the
 * spawn as failed. The next spawn starts a new helper.
 *
 * ```ts
 * const spawner = new HelperSpawner();
 * const { pid, startTime } = await spawner.spawn({ file: '/bin/sh', args, cwd, env }, (code, signal) => ...);
 * ```
 */
import { fork, type ChildProcess, type ForkOptions } from 'node:child_process';
import { Worker } from 'node:worker_threads';
import { InvalidArgumentError, nullLogger, type Logger } from '@fuxi/common';
import { launchDetached, LaunchPrepError, type LaunchPrep } from './launch-prep.js';
import { readStartTime, sameProcessAlive } from './proc-table.js';
import type { SpawnMessage, SpawnReply } from './spawn-helper.js';
import type { DirectLaunch } from './direct-launch.js';

export interface SpawnRequest {
  file: string;
  args: string[];
  /** The working directory; with `prep`, the one `prep` decides. */
  cwd?: string;
  /**
   * Laid out right before the spawn (launch-prep.ts). A spec field at fault (a `cwd` outside the
   * worker's directory) rejects with InvalidArgumentError naming it.
   */
  prep?: LaunchPrep;
  env: Record<string, string>;
  /**
   * Start the command itself instead of `file` (a wrapper), when the helper is a process of its own
   * (direct-launch.ts); `file` and `args` otherwise, and when the command cannot start directly.
   */
  direct?: DirectLaunch;
  /** Run as this user and group (libuv also clears the supplementary groups). */
  uid?: number;
  gid?: number;
}

/**
 * How process `pid` ended: its exit code, or the name of the signal that ended it; both null:
 * unknown. Never called before `spawn` has resolved (and its continuation ran).
 */
export type ExitCallback = (pid: number, code: number | null, signal: string | null) => void;

export interface Spawner {
  /**
   * Starts `file` detached (its own session and process group), with no stdio. Resolves once it
   * runs; rejects when it cannot be started, or with `SpawnOutcomeUnknownError` when whether it
   * started is not known (then `onExit` is never called). `onExit` is called once, when it ends.
   */
  spawn(req: SpawnRequest, onExit: ExitCallback): Promise<{ pid: number; startTime: string }>;
  /** Stops the spawning; started processes keep running (their exits are no longer reported). */
  close(): void;
}

/**
 * The helper ended (died, or its channel did) after it was handed the spawn and before its answer
 * came: the process may run (forked just before the helper died, or its `spawned` reply lost) or may
 * never have started. Nothing of it is watched here; the caller has to find out which.
 */
export class SpawnOutcomeUnknownError extends Error {
  constructor(message = 'the spawn helper ended before it said whether the process started') {
    super(message);
    this.name = 'SpawnOutcomeUnknownError';
  }
}

/** A LaunchPrepError as the caller sees it: InvalidArgumentError when a spec field is at fault. */
function launchError(message: string, field: string | undefined, reason: string | undefined, code?: string): Error {
  if (field) return new InvalidArgumentError(field, reason ?? message);
  return Object.assign(new Error(message), code ? { code } : {});
}

function options(req: SpawnRequest): SpawnMessage['options'] {
  return { cwd: req.cwd ?? '', env: req.env, ...(req.uid !== undefined ? { uid: req.uid } : {}), ...(req.gid !== undefined ? { gid: req.gid } : {}) };
}

export class InlineSpawner implements Spawner {
  spawn(req: SpawnRequest, onExit: ExitCallback): Promise<{ pid: number; startTime: string }> {
    return new Promise((resolve, reject) => {
      launchDetached(req.file, req.args, options(req), req.prep, {
        started: (pid) => resolve({ pid, startTime: readStartTime(pid) }),
        failed: (e) => reject(e instanceof LaunchPrepError ? launchError(e.message, e.field, e.reason) : e),
        exited: onExit,
      })?.unref();
    });
  }

  close(): void {}
}

export interface HelperSpawnerOptions {
  /** A helper process (the default), or a thread of this process. */
  helper?: 'process' | 'thread';
  /** How often processes left by a dead helper are checked (default 200 ms). */
  pollMs?: number;
  log?: Logger;
}

interface Running {
  startTime: string;
  onExit: ExitCallback;
}

/**
 * Node flags of a helper process. Its forks copy the page tables of every page it has touched, and
 * V8 grows a busy process's young generation (up to 16 MB a semi-space) and runs its collector and
 * compiler on threads of their own: a young generation of at most 1 MB and no V8 threads keep the
 * helper's heap and thread count small. In make bench-throughput's oneJob (1,000 workers) the
 * helpers' CPU went from 1.28 s (three runs) to 1.06-1.07 s (two runs), each flag alone 1.08-1.12.
 */
export const HELPER_NODE_ARGS: readonly string[] = Object.freeze(['--max-semi-space-size=1', '--single-threaded']);

/** How a helper process is forked: no stdin or stdout, the agent's stderr, a channel, HELPER_NODE_ARGS. */
export function helperForkOptions(): ForkOptions {
  return { stdio: ['ignore', 'ignore', 'inherit', 'ipc'], execArgv: [...HELPER_NODE_ARGS] };
}

export class HelperSpawner implements Spawner {
  private helper: Worker | ChildProcess | undefined;
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (r: { pid: number; startTime: string }) => void; reject: (e: Error) => void; onExit: ExitCallback }>();
  private readonly running = new Map<number, Running>();
  /** Processes whose helper died, watched through /proc. */
  private readonly orphans = new Map<number, Running>();
  private pollTimer: NodeJS.Timeout | undefined;
  private closed = false;
  private readonly log: Logger;

  constructor(private readonly opts: HelperSpawnerOptions = {}) {
    this.log = opts.log ?? nullLogger;
  }

  spawn(req: SpawnRequest, onExit: ExitCallback): Promise<{ pid: number; startTime: string }> {
    if (this.closed) return Promise.reject(new Error('the spawner is closed'));
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      // First: a helper found gone here fails what it had under way, not this one.
      const w = this.startedHelper();
      this.pending.set(id, { resolve, reject, onExit });
      const m: SpawnMessage = {
        t: 'spawn',
        id,
        file: req.file,
        args: req.args,
        options: options(req),
        ...(req.prep ? { prep: req.prep } : {}),
        ...(req.direct ? { direct: req.direct } : {}),
      };
      if (w instanceof Worker) w.postMessage(m);
      else w.send(m);
    });
  }

  /** Processes started and not yet known to have ended. */
  get runningCount(): number {
    return this.running.size + this.orphans.size;
  }

  close(): void {
    this.closed = true;
    const w = this.helper;
    this.helper = undefined;
    if (w instanceof Worker) void w.terminate();
    else if (w) w.disconnect();
    this.failPending(new Error('the spawner is closed'));
    this.running.clear();
    this.orphans.clear();
    if (this.pollTimer) clearInterval(this.pollTimer);
    this.pollTimer = undefined;
  }

  /** The helper process's pid (undefined: none runs, or the helper is a thread). */
  get helperPid(): number | undefined {
    return this.helper instanceof Worker ? undefined : this.helper?.pid;
  }

  /** For tests: ends the helper as a crash would. */
  async killHelper(): Promise<void> {
    const w = this.helper;
    if (w instanceof Worker) await w.terminate();
    else if (w) {
      w.kill('SIGKILL');
      await new Promise((r) => w.once('exit', r));
      // Its end is taken once the channel has closed too (startedHelper).
      if (w.connected) await new Promise((r) => w.once('disconnect', r));
    }
  }

  /** The helper, started when none runs. */
  private startedHelper(): Worker | ChildProcess {
    const had = this.helper;
    // A helper process whose channel is closing (its 'disconnect' not seen yet) takes no more spawns.
    if (had && (had instanceof Worker || had.connected)) return had;
    if (had) this.helperEnded(had);
    const url = new URL('./spawn-helper.js', import.meta.url);
    // A process without this one's flags (a profiler's, say): Node and its few modules, kept small
    // (HELPER_NODE_ARGS), since every fork copies the page tables of what it has touched.
    const h = (this.opts.helper ?? 'process') === 'process' ? fork(url, [], helperForkOptions()) : new Worker(url, { stdout: false, stderr: false });
    h.unref();
    if (!(h instanceof Worker)) h.channel?.unref();
    h.on('message', (r: SpawnReply) => this.onReply(r));
    h.on('error', (e: Error) => this.log.error({ err: e.message }, 'spawn helper failed'));
    if (h instanceof Worker) h.on('exit', () => this.helperEnded(h));
    else {
      // The end of the channel, not the process's exit, ends a helper process: replies still in the
      // channel when it exited come first, and a channel that ends alone (the helper running on for
      // its workers' exit codes) can carry no more replies or spawns.
      h.on('disconnect', () => this.helperEnded(h));
      h.on('exit', () => {
        if (!h.connected) this.helperEnded(h);
      });
    }
    this.helper = h;
    return h;
  }

  private onReply(r: SpawnReply): void {
    if (r.t === 'exit') {
      const run = this.running.get(r.pid);
      this.running.delete(r.pid);
      // A turn later: the spawn's own continuation (which resolved in this turn) runs first.
      if (run) setImmediate(() => run.onExit(r.pid, r.code, r.signal));
      return;
    }
    const p = this.pending.get(r.id);
    if (!p) return;
    this.pending.delete(r.id);
    if (r.t === 'failed') {
      p.reject(launchError(r.message, r.field, r.reason, r.code));
      return;
    }
    this.running.set(r.pid, { startTime: r.startTime, onExit: p.onExit });
    p.resolve({ pid: r.pid, startTime: r.startTime });
  }

  private helperEnded(w: Worker | ChildProcess): void {
    if (this.helper !== w) return; // closed, or replaced already
    this.helper = undefined;
    if (this.closed) return;
    this.log.warn({ running: this.running.size, starting: this.pending.size }, 'spawn helper ended; watching its processes through /proc');
    // It may have forked a process for any of them before it ended: the caller looks for it.
    this.failPending(new SpawnOutcomeUnknownError());
    for (const [pid, run] of this.running) this.orphans.set(pid, run);
    this.running.clear();
    if (this.orphans.size > 0 && !this.pollTimer) {
      this.pollTimer = setInterval(() => this.pollOrphans(), this.opts.pollMs ?? 200);
      this.pollTimer.unref();
    }
  }

  private pollOrphans(): void {
    for (const [pid, run] of this.orphans) {
      if (sameProcessAlive(pid, run.startTime)) continue;
      this.orphans.delete(pid);
      run.onExit(pid, null, null);
    }
    if (this.orphans.size === 0 && this.pollTimer) {
      clearInterval(this.pollTimer);
      this.pollTimer = undefined;
    }
  }

  private failPending(e: Error): void {
    const pending = [...this.pending.values()];
    this.pending.clear();
    for (const p of pending) p.reject(e);
  }
}
