/**
 * Real worker processes.
 *
 * Each worker gets a directory `<workDir>/apps/<appId>/<workerId>/` holding `cmd.json` (what was
 * run), `pid` (the worker's root pid, see below), `stdout`, `stderr`,
 * `out/` (the worker's output directory, `$FUXI_OUTPUT_DIR`: what it writes there the agent's data
 * service serves to other workers of its job once it succeeded; `cmd.json` also holds `family`, the
 * worker's marker, see below) and, once it ends, `exit` (its exit code, so it survives an agent restart; written by the
 * wrapper with one write, by a shell builtin: a wrapper killed halfway leaves an empty file, which
 * reads as none, as a missing one does). The worker runs in its own session and process group
 * (`detached`), with no pipes to the agent, so it outlives the agent.
 *
 * Its root is the command itself, forked by the spawn helper (direct-launch.ts), which joins the
 * worker's cgroups for the fork, writes `pid` (the pid and its /proc start time) and, once the
 * command ended, `exit`, and outlives the agent until it has. Where the helper is a thread of the
 * agent, or the command cannot be exec'd (not found, not executable), the root is a
 * `/bin/sh` wrapper instead, which joins the groups, writes `pid` (its own pid, first thing) and
 * `exit` itself, and reports a command that cannot run as sh does (127, the reason in `stderr`).
 *
 * Starting one is off the agent's event loop (spawner.ts): the directory and files above, the
 * `cwd` check and the ownership are laid out by the spawn helper with synchronous calls
 * (launch-prep.ts), right before the helper forks the worker. The loop pays one message each way.
 *
 * Kill = the worker's whole process family (worker-families.ts, core/process-family.ts): every
 * launch gets a unique marker in its environment (`FUXI_WORKER_FAMILY`, also in the `family` file,
 * so a restarted agent knows it), and the family is every process carrying it, the root, the members
 * remembered from samples of /proc taken while the worker lives, and all their descendants. SIGTERM
 * to all of it, then after a grace SIGSTOP and SIGKILL to whatever is left, until nothing is; so
 * children that called `setsid` or double-forked die too. Never by name, never a reused pid.
 *
 * Limits (with an `enforcer`, shell/cgroups.ts; docs/architecture.md, "Enforced resources"): the
 * worker's cgroups are made with its grant's limits before it is spawned, and it is born in them
 * (or its wrapper writes its own pid into them before it runs the command). When the worker ends, a kill for memory in its
 * group (or, in `rss` mode, by the family sampler) becomes the exit's `detail`, `OOM: used X of Y`.
 *
 * A spawn whose helper died (or whose reply was lost) under way (spawner.ts,
 * `SpawnOutcomeUnknownError`) may have a running worker behind it. It is looked for as a restarted
 * agent looks for a worker whose spawn it never recorded: its `pid` file (pid and start time, or the
 * wrapper's pid with its command line naming the worker's directory), then, while the helper may
 * have died between the fork and that file, the process carrying the launch's marker in /proc, for
 * up to `lostSpawnWaitMs` (the exec after a fork takes a moment). One found is adopted (watched
 * through /proc, as below) and the spawn succeeds with its pid; so is one that ran and has ended
 * already (its pid file says it ran), whose end then follows at the next poll, with the code from
 * its exit file when there is one. Only a launch that never started is a failed spawn: a task whose
 * start went unanswered neither runs twice nor runs on unwatched. A child forked just before its
 * helper died may still exec after the wait (a machine busy enough to hold it back that long): for
 * `LATE_LAUNCH_WATCH_MS` after a launch is reported failed, a process carrying its marker is
 * stopped with no grace (it is no worker any more: its task may run elsewhere).
 *
 * After an agent restart, `probe()` tells whether a registered worker is still the same process
 * (pid + /proc start time + host boot id; never a reused pid) and `adopt()` watches one that is:
 * the agent is no longer its parent, so it polls /proc (every `adoptPollMs`) and, once the process
 * is gone (or a zombie), reports the exit code from the `exit` file.
 *
 * ```ts
 * const driver = new RealProcessDriver({ workDir: '/var/lib/fuxi/agent' });
 * driver.onExit((e) => core.workerExited(e.appId, e.workerId, e.exitCode, e.signal, Date.now()));
 * const { pid, startTime } = await driver.spawn(spec);
 * ```
 */
import { randomUUID } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { nullLogger, PROGRESS_FILE, PROGRESS_FILE_ENV, redactedEnv, type Logger, type Resource } from '@fuxi/common';
import type { Liveness, SpawnSpec, WorkerRef } from '../core/agent-core.js';
import { FAMILY_ENV, markedRoot, type ProcEntry, type ProcId } from '../core/process-family.js';
import { limitsFor, oomVerdict, overMemory, type OomEvidence, type WorkerLimits } from '../core/resource-limits.js';
import { workerEnv, type UserEntry } from '../core/worker-identity.js';
import type { ResourceEnforcer } from './cgroups.js';
import type { LaunchPrep } from './launch-prep.js';
import { WorkerFamilies, type FamilyRecord } from './worker-families.js';
import { ProcTable, readProcStat, readStartTime, sameProcessAlive } from './proc-table.js';
import { HelperSpawner, SpawnOutcomeUnknownError, type Spawner } from './spawner.js';
import { parsePidRecord } from './direct-launch.js';
import { readRegular } from './worker-files.js';

export { readProcStat, readStartTime, sameProcessAlive };

export interface SpawnResult {
  pid: number;
  /** /proc/<pid>/stat field 22 (clock ticks after boot); with `bootId`, identifies the process. */
  startTime: string;
  bootId: string;
}

export interface ExitInfo {
  appId: string;
  workerId: string;
  pid: number;
  /** The worker's exit code; null when a signal ended it. */
  exitCode: number | null;
  /** Name of the signal that ended it (e.g. 'SIGTERM'); null when it exited. */
  signal: string | null;
  /**
   * Both null: why nothing is known (a re-adopted worker that left no exit code). Or what ended
   * it: `OOM: used X of Y` (killed for memory past its grant).
   */
  detail?: string;
}

/** A worker of an earlier agent run, as the registry knows it. */
export interface RegisteredWorker {
  appId: string;
  workerId: string;
  /** 0 when the agent died before the spawn was recorded. */
  pid: number;
  startTime: string;
  bootId: string;
  /** Its grant (the limits it runs under); absent: none known. */
  resource?: Resource;
}

export interface ProcessDriver {
  /** Starts a worker; rejects when it cannot be started. */
  spawn(spec: SpawnSpec): Promise<SpawnResult>;
  /**
   * Stops the worker whose root process is `pid`, with everything it started (the real driver: its
   * whole process family): SIGTERM, then SIGKILL after `graceMs` to whatever is left.
   */
  kill(pid: number, graceMs?: number, worker?: WorkerRef): void;
  /** Registers the exit callback (one per driver). */
  onExit(cb: (e: ExitInfo) => void): void;
  /** Where the worker's stdout / stderr go ('' when the driver keeps no files). */
  logPath(appId: string, workerId: string, stream: 'stdout' | 'stderr'): string;
  /** Cancels running stops and stops watching (the workers themselves are left running). */
  close(): void;
  /**
   * After an agent restart: is the registered worker's process still the same one, or how did it
   * end? Without it (simulated drivers) every worker of an earlier run counts as gone.
   */
  probe?(w: RegisteredWorker): Liveness;
  /** Watches a re-adopted worker (not the agent's child) and reports its exit through onExit. */
  adopt?(w: RegisteredWorker): void;
  /**
   * After an agent restart, before `probe`: finds again what the driver supervises besides workers
   * (the AM host, hosted-am-driver.ts).
   */
  attach?(): Promise<void>;
}

export interface RealProcessDriverOptions {
  workDir: string;
  /** Default grace between SIGTERM and SIGKILL (default 5 s). */
  stopGraceMs?: number;
  /**
   * The environment system processes (`isSystem`) start from (default: the agent's own). Job
   * processes never see it: theirs is built from nothing (core/worker-identity.ts, `workerEnv`).
   */
  baseEnv?: Record<string, string | undefined>;
  /**
   * The user a job process runs as (its directory is made its own, 0700); undefined: the agent's
   * own user (an agent that is not root cannot switch). Absent: every process runs as the agent.
   */
  runAs?: (spec: SpawnSpec) => UserEntry | undefined;
  /**
   * A system component of this installation (the built-in AM run as a process of its own): it runs
   * as the agent with the agent's environment. Absent: nothing is.
   */
  isSystem?: (spec: SpawnSpec) => boolean;
  /** Roots besides the worker's directory that a job's `cwd` may resolve into (config `allowedPaths`). */
  allowedPaths?: readonly string[];
  /** How often re-adopted workers are checked for liveness (default 500 ms). */
  adoptPollMs?: number;
  /**
   * How long a spawn whose helper died under way is looked for in /proc before it counts as never
   * started, once its directory shows the helper got as far as laying it out (default 1000 ms).
   */
  lostSpawnWaitMs?: number;
  /** How often the process families of live workers are sampled from /proc (default 1000 ms). */
  familySampleMs?: number;
  /** How often a running stop looks at /proc again (default 100 ms). */
  familyPollMs?: number;
  /**
   * Enforces each worker's grant (shell/cgroups.ts): its own cgroup with the grant's limits, or, in
   * `rss` mode, the family's RSS sampled (every `familySampleMs`) and the family killed past its
   * memory. Absent: nothing enforced.
   */
  enforcer?: ResourceEnforcer;
  /** Starts the wrapper processes (default: a `HelperSpawner`, off the agent's event loop and process; spawner.ts). */
  spawner?: Spawner;
  log?: Logger;
}

export const DEFAULT_ADOPT_POLL_MS = 500;

export const DEFAULT_STOP_GRACE_MS = 5000;

export const DEFAULT_LOST_SPAWN_WAIT_MS = 1000;

/** How often a spawn whose helper died under way is looked for again. */
const LOST_SPAWN_POLL_MS = 20;

/** How long after a lost launch is reported failed a late exec of it is looked for (and stopped). */
const LATE_LAUNCH_WATCH_MS = 30_000;
/** How often /proc is read for a late exec while one is looked for. */
const LATE_LAUNCH_POLL_MS = 250;

/**
 * The wrapper: `$1` is the worker dir, then the `cgroup.procs` files of the worker's groups, `--`,
 * and argv. Joins the groups (so the command runs inside its limits from its first instruction),
 * runs argv with its output in files, then records the exit code.
 */
const WRAPPER = [
  'd="$1"; shift',
  'echo "$$" >"$d/pid"',
  'while [ "$1" != "--" ]; do',
  '  echo "$$" >"$1" || { echo "fuxi: cannot join the cgroup $1" >"$d/stderr"; exit 125; }',
  '  shift',
  'done',
  'shift',
  '"$@" >"$d/stdout" 2>"$d/stderr" </dev/null',
  'c=$?',
  // A builtin, no rename: an `mv` was a third process per worker (1.1 ms of CPU here).
  'echo "$c" >"$d/exit"',
  'exit "$c"',
].join('\n');

/** A file-system-safe name for an id (ids chosen by AMs may contain `/` or `..`). */
export function safeName(id: string): string {
  if (/^[A-Za-z0-9_.-]+$/.test(id) && id !== '.' && id !== '..') return id;
  return encodeURIComponent(id).replace(/\./g, '%2E').replace(/\*/g, '%2A');
}

export function workerDir(workDir: string, appId: string, workerId: string): string {
  return path.join(workDir, 'apps', safeName(appId), safeName(workerId));
}

/** Where a worker writes the files it offers to later tasks (`$FUXI_OUTPUT_DIR`), in its worker dir. */
export const OUTPUT_SUBDIR = 'out';

export function outputDir(workDir: string, appId: string, workerId: string): string {
  return path.join(workerDir(workDir, appId, workerId), OUTPUT_SUBDIR);
}

let cachedBootId: string | undefined;
export function readBootId(): string {
  if (cachedBootId === undefined) {
    try {
      cachedBootId = fs.readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
    } catch {
      cachedBootId = '';
    }
  }
  return cachedBootId;
}

/** True while any process of group `pgid` is alive. */
export function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Reads `<dir>/exit`: the exit code, or null when the file is missing or unreadable. */
export function readExitFile(dir: string): number | null {
  const text = readRegular(path.join(dir, 'exit'))?.trim();
  if (text === undefined) return null;
  const n = Number.parseInt(text, 10);
  return Number.isFinite(n) ? n : null;
}

/** The file in which agents before the marker moved into `cmd.json` kept a worker's family marker. */
export const FAMILY_FILE = 'family';

/**
 * The worker's family marker: `family` in its `cmd.json` (one file fewer to create per worker), or
 * `<dir>/family` for a worker an older agent launched; '' for a worker launched without one.
 */
export function readFamilyFile(dir: string): string {
  let text = '';
  try {
    const cmd = JSON.parse(readRegular(path.join(dir, 'cmd.json')) ?? '') as { family?: unknown };
    if (typeof cmd.family === 'string') text = cmd.family;
  } catch {
    /* no cmd.json, or not ours */
  }
  if (!text) text = readRegular(path.join(dir, FAMILY_FILE))?.trim() ?? '';
  return /^[A-Za-z0-9-]+$/.test(text) ? text : '';
}

/** Reads `<dir>/pid`: the worker's root pid (0 when none) and, when the helper wrote it, its start time. */
export function readPidRecord(dir: string): { pid: number; startTime: string } {
  const text = readRegular(path.join(dir, 'pid'));
  return text === undefined ? { pid: 0, startTime: '' } : parsePidRecord(text);
}

/** Reads `<dir>/pid`, or 0. */
export function readPidFile(dir: string): number {
  return readPidRecord(dir).pid;
}

/**
 * The live process the pid file of `dir` names, with its start time: the one the helper recorded
 * (pid and start time), or the wrapper, whose command line names `dir`. Never a reused pid.
 */
function rootOnDisk(dir: string): { pid: number; startTime: string } | undefined {
  const rec = readPidRecord(dir);
  const st = rec.pid > 0 ? readProcStat(rec.pid) : undefined;
  if (!st || st.state === 'Z' || st.state === 'X') return undefined;
  if (rec.startTime) return st.startTime === rec.startTime ? { pid: rec.pid, startTime: st.startTime } : undefined;
  return (readCmdline(rec.pid) ?? []).includes(dir) ? { pid: rec.pid, startTime: st.startTime } : undefined;
}

/** How long a root may be gone with no exit file yet before its end is reported without a code. */
const EXIT_FILE_WAIT_MS = 1000;

/** Resident memory of `pid` in bytes (/proc/<pid>/status VmRSS), 0 when it is gone. */
export function readRss(pid: number): number {
  try {
    const m = /^VmRSS:\s+(\d+)\s*kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'latin1'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/** The arguments of `pid` (/proc/<pid>/cmdline), or undefined when it is gone. */
function readCmdline(pid: number): string[] | undefined {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  } catch {
    return undefined;
  }
}

export class RealProcessDriver implements ProcessDriver {
  private exitCb: (e: ExitInfo) => void = () => {};
  private readonly spawner: Spawner;
  private readonly families: WorkerFamilies;
  private readonly log: Logger;
  private readonly graceMs: number;
  /** Re-adopted workers by pid. */
  private readonly adopted = new Map<number, RegisteredWorker>();
  /** Re-adopted roots seen gone with no exit file yet, since when. */
  private readonly goneWithoutExit = new Map<number, number>();
  private pollTimer: NodeJS.Timeout | undefined;
  private closed = false;
  /** `rss` mode: the memory limit of each live worker (by root pid), and what its sampler saw. */
  private readonly rssWatch = new Map<number, { limits: WorkerLimits; maxRss: number; killedAt: number }>();
  /** /proc as last read for spawns whose helper died under way (one read serves all of them). */
  private lostTable: ProcTable | undefined;
  private lostSnapshot: { atMs: number; procs: ProcEntry[] } | undefined;
  /** Launches reported failed whose late exec is looked for: marker -> the worker and until when. */
  private readonly lateLaunches = new Map<string, { appId: string; workerId: string; untilMs: number }>();
  private lateTimer: NodeJS.Timeout | undefined;

  constructor(private readonly opts: RealProcessDriverOptions) {
    this.log = opts.log ?? nullLogger;
    this.graceMs = opts.stopGraceMs ?? DEFAULT_STOP_GRACE_MS;
    this.spawner = opts.spawner ?? new HelperSpawner({ log: this.log });
    this.families = new WorkerFamilies({
      log: this.log,
      ...(opts.enforcer?.mode === 'rss' ? { onSample: (key, rec, members) => this.sampleRss(key, rec, members) } : {}),
      // In a cgroup mode the worker's group says who is in it, whatever their environment.
      ...(opts.enforcer && (opts.enforcer.mode === 'cgroup-v1' || opts.enforcer.mode === 'cgroup-v2')
        ? { groupPids: (rec: FamilyRecord) => this.groupPidsOf(rec), leftoverGraceMs: this.graceMs }
        : {}),
      ...(opts.familySampleMs !== undefined ? { sampleMs: opts.familySampleMs } : {}),
      ...(opts.familyPollMs !== undefined ? { pollMs: opts.familyPollMs } : {}),
    });
  }

  /**
   * `alive` when the registered pid still runs with the registered start time on the same boot. A
   * worker whose spawn was never recorded (pid 0: the agent died in between) is found through its
   * `pid` file (rootOnDisk). Otherwise the `exit` file says how it ended (`exited`, with the file's time), or
   * nothing does (`gone`).
   */
  probe(w: RegisteredWorker): Liveness {
    const dir = workerDir(this.opts.workDir, w.appId, w.workerId);
    const bootId = readBootId();
    const sameBoot = !w.bootId || !bootId || w.bootId === bootId;
    if (sameBoot && w.pid > 0 && sameProcessAlive(w.pid, w.startTime)) return { kind: 'alive', pid: w.pid, startTime: w.startTime, bootId: w.bootId || bootId };
    if (sameBoot && w.pid === 0) {
      const root = rootOnDisk(dir);
      if (root) return { kind: 'alive', pid: root.pid, startTime: root.startTime, bootId };
    }
    const code = readExitFile(dir);
    if (code === null) return { kind: 'gone' };
    let atMs: number | undefined;
    try {
      atMs = Math.floor(fs.statSync(path.join(dir, 'exit')).mtimeMs);
    } catch {
      atMs = undefined;
    }
    return atMs === undefined ? { kind: 'exited', exitCode: code } : { kind: 'exited', exitCode: code, atMs };
  }

  adopt(w: RegisteredWorker): void {
    if (w.pid <= 0) return;
    this.adopted.set(w.pid, { ...w });
    // Its cgroups (path from app and worker id) hold it still; in rss mode sampling resumes.
    if (this.opts.enforcer?.mode === 'rss' && w.resource) this.watchRss(w.pid, limitsFor(w.resource));
    const marker = readFamilyFile(workerDir(this.opts.workDir, w.appId, w.workerId));
    this.families.track(w.pid, { appId: w.appId, workerId: w.workerId, root: { pid: w.pid, startTime: w.startTime }, marker });
    if (!this.pollTimer) {
      this.pollTimer = setInterval(() => this.pollAdopted(), this.opts.adoptPollMs ?? DEFAULT_ADOPT_POLL_MS);
      this.pollTimer.unref();
    }
  }

  /** Number of re-adopted workers still watched. */
  get adoptedCount(): number {
    return this.adopted.size;
  }

  private pollAdopted(): void {
    const now = Date.now();
    for (const [pid, w] of this.adopted) {
      if (sameProcessAlive(pid, w.startTime)) continue;
      const code = readExitFile(workerDir(this.opts.workDir, w.appId, w.workerId));
      // A root the helper started: its exit file comes a moment after the helper reaped it.
      if (code === null) {
        const since = this.goneWithoutExit.get(pid) ?? now;
        this.goneWithoutExit.set(pid, since);
        if (now - since < EXIT_FILE_WAIT_MS) continue;
      }
      this.goneWithoutExit.delete(pid);
      this.adopted.delete(pid);
      this.families.rootEnded(pid);
      const oom = oomVerdict(code, null, this.enforcementEvidence(pid, w.appId, w.workerId));
      const info: ExitInfo =
        oom || code !== null
          ? { appId: w.appId, workerId: w.workerId, pid, exitCode: code, signal: null, ...(oom ? { detail: oom } : {}) }
          : {
              appId: w.appId,
              workerId: w.workerId,
              pid,
              exitCode: null,
              signal: null,
              detail: 'ended without an exit code (nothing recorded it: its wrapper or its spawn helper was killed before it ended)',
            };
      this.log.info({ workerId: w.workerId, appId: w.appId, pid, exitCode: code }, 're-adopted worker ended');
      this.exitCb(info);
    }
    if (this.adopted.size === 0 && this.pollTimer) {
      clearInterval(this.pollTimer);
      this.pollTimer = undefined;
    }
  }

  onExit(cb: (e: ExitInfo) => void): void {
    this.exitCb = cb;
  }

  logPath(appId: string, workerId: string, stream: 'stdout' | 'stderr'): string {
    return path.join(workerDir(this.opts.workDir, appId, workerId), stream);
  }

  async spawn(spec: SpawnSpec): Promise<SpawnResult> {
    const dir = workerDir(this.opts.workDir, spec.appId, spec.workerId);
    const out = path.join(dir, OUTPUT_SUBDIR);
    // A new marker per launch (a reused worker id gets another): written before the process exists.
    const marker = randomUUID();
    const system = this.opts.isSystem?.(spec) ?? false;
    const user = system ? undefined : this.opts.runAs?.(spec);
    const launchEnv: Record<string, string> = {
      FUXI_OUTPUT_DIR: out,
      [PROGRESS_FILE_ENV]: path.join(dir, PROGRESS_FILE),
      [FAMILY_ENV]: marker,
    };
    let env: Record<string, string>;
    if (system) {
      env = {};
      for (const [k, v] of Object.entries(this.opts.baseEnv ?? process.env)) if (v !== undefined) env[k] = v;
      Object.assign(env, spec.env, launchEnv);
    } else env = workerEnv(dir, process.env.LANG ?? '', spec.env, launchEnv);
    const enforcer = this.opts.enforcer;
    const limits = spec.resource ? limitsFor(spec.resource) : undefined;
    // The worker's groups exist with its limits before it is born in them (or its wrapper joins them).
    let procs: string[] = [];
    if (enforcer && limits) {
      try {
        procs = enforcer.prepare(spec.appId, spec.workerId, limits);
      } catch (e) {
        enforcer.finish(spec.appId, spec.workerId);
        throw new Error(`cannot make the worker's cgroup (${enforcer.mode}): ${(e as Error).message}`);
      }
    }
    const prep: LaunchPrep = {
      dir,
      subdirs: [out],
      staleFiles: [path.join(dir, 'exit'), path.join(dir, 'pid')],
      files: [
        {
          path: path.join(dir, 'cmd.json'),
          text: JSON.stringify({ ...spec, env: redactedEnv(spec.env), family: marker, startedAt: new Date().toISOString() }, null, 2) + '\n',
        },
      ],
      // Symlinks and `..` resolved: a job's cwd stays in its directory or the allowed roots.
      cwd: system ? { path: spec.cwd || dir } : { confine: { field: 'cwd', given: spec.cwd, allowed: [...(this.opts.allowedPaths ?? [])] } },
      // The wrapper joins its groups itself, as the worker's user (cgroup v1: the procs file must be writable).
      ...(user
        ? {
            owner: {
              uid: user.uid,
              gid: user.gid,
              passThrough: [this.opts.workDir, path.dirname(path.dirname(dir)), path.dirname(dir)],
              give: [out, dir],
              chown: procs,
            },
          }
        : {}),
    };
    const onExit = (pid: number, code: number | null, signal: string | null): void => {
      this.families.rootEnded(pid);
      // As the helper saw the root end (the wrapper exits with its command's code); when it could not
      // (it died first), as the exit file says.
      const fromFile = signal === null && code === null ? readExitFile(dir) : null;
      const info: ExitInfo = signal
        ? { appId: spec.appId, workerId: spec.workerId, pid, exitCode: null, signal }
        : code !== null
          ? { appId: spec.appId, workerId: spec.workerId, pid, exitCode: code, signal: null }
          : fromFile !== null
            ? { appId: spec.appId, workerId: spec.workerId, pid, exitCode: fromFile, signal: null }
            : { appId: spec.appId, workerId: spec.workerId, pid, exitCode: null, signal: null, detail: 'ended without an exit code' };
      const oom = oomVerdict(info.exitCode, info.signal, this.enforcementEvidence(pid, spec.appId, spec.workerId));
      if (oom) {
        info.detail = oom;
        this.log.warn(
          { appId: spec.appId, workerId: spec.workerId, pid, exitCode: info.exitCode, signal: info.signal, detail: oom },
          'worker killed for memory',
        );
      }
      this.exitCb(info);
    };
    let pid: number;
    let startTime: string;
    try {
      // With uid/gid, libuv also clears the supplementary groups (setgroups(0, NULL)).
      const ids = user ? { uid: user.uid, gid: user.gid } : {};
      ({ pid, startTime } = await this.spawner.spawn(
        {
          file: '/bin/sh',
          args: ['-c', WRAPPER, 'fuxi-worker', dir, ...procs, '--', ...spec.argv],
          ...(spec.argv.length > 0 ? { direct: { argv: spec.argv, dir, procs } } : {}),
          prep,
          env,
          ...ids,
        },
        onExit,
      ));
    } catch (e) {
      const lost = e instanceof SpawnOutcomeUnknownError;
      const found = lost ? await this.lostSpawnRoot(dir, marker) : undefined;
      if (!found || this.closed) {
        if (lost && !found) this.watchLateLaunch(marker, spec.appId, spec.workerId);
        if (enforcer && limits) enforcer.finish(spec.appId, spec.workerId);
        throw e instanceof Error ? e : new Error(String(e));
      }
      // It started: watched from now on as a worker of an earlier agent run is (its exit through /proc
      // and its exit file), under the same marker and limits.
      const bootId = readBootId();
      this.log.warn(
        { appId: spec.appId, workerId: spec.workerId, pid: found.pid, alive: sameProcessAlive(found.pid, found.startTime) },
        'spawn helper ended before it answered; the worker had started: adopted',
      );
      this.adopt({
        appId: spec.appId,
        workerId: spec.workerId,
        pid: found.pid,
        startTime: found.startTime,
        bootId,
        ...(spec.resource ? { resource: spec.resource } : {}),
      });
      return { pid: found.pid, startTime: found.startTime, bootId };
    }
    this.families.track(pid, { appId: spec.appId, workerId: spec.workerId, root: { pid, startTime }, marker });
    if (enforcer?.mode === 'rss' && limits) this.watchRss(pid, limits);
    return { pid, startTime, bootId: readBootId() };
  }

  /**
   * The root of the launch with `marker` in `dir`, whose spawn helper ended before it answered; or
   * undefined when it never started. Its `cmd.json` written with `marker` says the helper got as far
   * as laying the launch out (before that, nothing is forked). Then its pid file names the root
   * (rootOnDisk; a pid file naming no live root: the worker ran and ended already, and that pid is
   * reported), or, before the pid file, the process carrying `marker` in /proc is it; looked for
   * until `lostSpawnWaitMs` has passed (a child forked just before the helper died takes a moment to
   * exec and show its environment).
   */
  private async lostSpawnRoot(dir: string, marker: string): Promise<ProcId | undefined> {
    const until = Date.now() + (this.opts.lostSpawnWaitMs ?? DEFAULT_LOST_SPAWN_WAIT_MS);
    for (;;) {
      if (this.closed || readFamilyFile(dir) !== marker) return undefined;
      const rec = readPidRecord(dir);
      if (rec.pid > 0) return rootOnDisk(dir) ?? rec;
      const root = markedRoot(this.lostProcs(), marker);
      if (root) return root;
      if (Date.now() >= until) return undefined;
      await new Promise((r) => setTimeout(r, LOST_SPAWN_POLL_MS));
    }
  }

  /**
   * A lost launch was reported failed: a child of its dead helper that execs only now carries its
   * marker, and is stopped (at once: it is no worker, and its task may be running elsewhere by then).
   */
  private watchLateLaunch(marker: string, appId: string, workerId: string): void {
    if (this.closed) return;
    this.lateLaunches.set(marker, { appId, workerId, untilMs: Date.now() + LATE_LAUNCH_WATCH_MS });
    this.lateTimer ??= setInterval(() => this.stopLateLaunches(), LATE_LAUNCH_POLL_MS);
    this.lateTimer.unref();
  }

  private stopLateLaunches(): void {
    const now = Date.now();
    const procs = this.lostProcs();
    for (const [marker, w] of this.lateLaunches) {
      const root = markedRoot(procs, marker);
      if (root) {
        this.log.warn({ ...w, pid: root.pid }, 'a launch reported failed started late (its spawn helper died before the exec): stopped');
        this.families.stop(root.pid, 0, { appId: w.appId, workerId: w.workerId, root, marker });
      }
      if (root || now >= w.untilMs) this.lateLaunches.delete(marker);
    }
    if (this.lateLaunches.size === 0 && this.lateTimer) {
      clearInterval(this.lateTimer);
      this.lateTimer = undefined;
    }
  }

  /** The process table for `lostSpawnRoot`: read again once older than a poll. */
  private lostProcs(): ProcEntry[] {
    const now = Date.now();
    if (!this.lostSnapshot || now - this.lostSnapshot.atMs >= LOST_SPAWN_POLL_MS / 2) {
      this.lostTable ??= new ProcTable(FAMILY_ENV);
      this.lostSnapshot = { atMs: now, procs: this.lostTable.read() };
    }
    return this.lostSnapshot.procs;
  }

  /**
   * Stops the worker's whole process family. A worker this driver neither started nor adopted is
   * found through `worker`: its marker file, and its root when its pid file names `pid` (rootOnDisk).
   * Nothing else is ever signalled.
   */
  kill(pid: number, graceMs = this.graceMs, worker?: WorkerRef): void {
    if (pid <= 0) return;
    const tracked = this.families.recordOf(pid);
    if (tracked && worker && (tracked.appId !== worker.appId || tracked.workerId !== worker.workerId)) {
      // The pid is another worker's now (this one's root ended and the pid was reused).
      this.log.warn(
        { pid, ...worker, runningThere: `${tracked.appId}/${tracked.workerId}` },
        "kill of a worker whose pid is another worker's now: nothing signalled",
      );
      return;
    }
    if (tracked) {
      this.families.stop(pid, graceMs);
      return;
    }
    const rec = worker ? this.familyOnDisk(pid, worker) : undefined;
    if (!rec) {
      this.log.warn({ pid, ...worker }, 'kill of a process that is no known worker: nothing signalled');
      return;
    }
    this.families.stop(pid, graceMs, rec);
  }

  /** The family record of a worker from its directory (after its root's exit, or of an unknown run). */
  private familyOnDisk(pid: number, w: WorkerRef): FamilyRecord | undefined {
    const dir = workerDir(this.opts.workDir, w.appId, w.workerId);
    const marker = readFamilyFile(dir);
    const onDisk = rootOnDisk(dir);
    const root = onDisk?.pid === pid ? onDisk : undefined;
    if (!marker && !root) return undefined;
    return { appId: w.appId, workerId: w.workerId, marker, ...(root ? { root } : {}) };
  }

  /** `rss` mode: samples the worker's family from now on (a grant without memory is not watched). */
  private watchRss(pid: number, limits: WorkerLimits): void {
    if (limits.memoryBytes !== null) this.rssWatch.set(pid, { limits, maxRss: 0, killedAt: 0 });
  }

  /** `rss` mode, at each family sample: the family's RSS; past its grant, SIGKILL to all of it. */
  private sampleRss(key: number, rec: FamilyRecord, members: readonly ProcId[]): void {
    const w = this.rssWatch.get(key);
    if (!w || w.killedAt > 0) return;
    let rss = 0;
    for (const m of members) rss += readRss(m.pid);
    w.maxRss = Math.max(w.maxRss, rss);
    if (!overMemory(rss, w.limits)) return;
    w.killedAt = rss;
    this.log.warn(
      { appId: rec.appId, workerId: rec.workerId, pid: key, rssBytes: rss, limitBytes: w.limits.memoryBytes },
      'worker family over its memory grant: killing it',
    );
    this.families.stop(key, 0);
  }

  /**
   * What the enforcement knows of memory kills in the worker that ended (its root `pid`): its
   * cgroup's counters (the group is removed then), or whether the RSS sampler killed it.
   */
  private enforcementEvidence(pid: number, appId: string, workerId: string): OomEvidence | undefined {
    const enforcer = this.opts.enforcer;
    // Closed (the agent stopping): the groups stay for the agent that re-adopts the worker.
    if (!enforcer || this.closed) return undefined;
    if (enforcer.mode === 'rss') {
      const w = this.rssWatch.get(pid);
      this.rssWatch.delete(pid);
      return w && w.killedAt > 0 ? { oomKills: 1, maxUsageBytes: w.killedAt, limitBytes: w.limits.memoryBytes } : undefined;
    }
    return enforcer.finish(appId, workerId);
  }

  /** The processes in the worker's cgroup (none once the agent is closing: they stay for the next). */
  private groupPidsOf(rec: FamilyRecord): number[] {
    if (this.closed || !this.opts.enforcer) return [];
    return this.opts.enforcer.groupPids(rec.appId, rec.workerId).filter((pid) => pid !== process.pid);
  }

  /** Number of stops still running (a family is dropped once nothing of it is left). */
  get stopsRunning(): number {
    return this.families.stopping;
  }

  close(): void {
    this.closed = true;
    this.spawner.close();
    this.families.close();
    if (this.pollTimer) clearInterval(this.pollTimer);
    this.pollTimer = undefined;
    this.adopted.clear();
    this.goneWithoutExit.clear();
    if (this.lateTimer) clearInterval(this.lateTimer);
    this.lateTimer = undefined;
    this.lateLaunches.clear();
  }
}
