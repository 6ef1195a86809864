/**
 * A worker started with no wrapper between it and the spawn helper (spawn-helper.ts): the helper
 * forks the command itself, born inside the worker's cgroups, with its output in the worker's files,
 * and records its pid and its exit code in the worker's directory, as the `/bin/sh` wrapper
 * (process-driver.ts) does. The wrapper cost each task a second exec and a second fork (about 1.3 ms
 * of CPU per task here, more than the task `/bin/true` itself).
 *
 * - **Cgroups.** A child is born in its parent's groups, so the helper joins the worker's groups
 *   (`cgroup.procs`) for the fork and goes back to its own right after: the command runs inside its
 *   limits from its first instruction, as under the wrapper. The helper is a process of its own, so
 *   the agent never moves.
 * - **Files.** `stdout` and `stderr` are opened by the helper (the worker's when it runs as another
 *   user); `pid` holds the pid and its /proc start time (a restarted agent knows the process by
 *   both); `exit` holds the exit code, 128 + the signal's number for a signal (what `sh` records),
 *   written before the helper reports the end. None of them is followed through a symlink: the
 *   directory is the worker's, and the helper may be root.
 * - **Outliving the agent.** The exit codes are the helper's to record, so a helper process outlives
 *   its agent while any worker it started this way runs (helper-channel.ts).
 *
 * Anything that keeps the direct start from happening before the fork (a cgroup that cannot be
 * joined, a command the exec cannot run: not found, not executable) returns
 * `undefined`, and the caller starts the wrapper instead, which reports it as it always has (exit
 * 125 or 127, with the reason in `stderr`). Node's own modules only: the helper starts fast.
 *
 * ```ts
 * const homes = new CgroupHomes();
 * const started = startDirect({ argv: ['/bin/true'], dir, procs }, { cwd: dir, env }, homes, (pid, code, signal) => ...);
 * if (!started) launchDetached('/bin/sh', wrapperArgs, ...); // the wrapper says why
 * ```
 */
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import { constants as osConstants } from 'node:os';
import * as path from 'node:path';
import { parseProcCgroup } from '../core/resource-limits.js';
import { cgroupMounts, dirUnder, type Mount } from './cgroup-paths.js';
import { readStartTime } from './proc-table.js';
import { createFresh, writeFresh } from './worker-files.js';

export interface DirectLaunch {
  /** The command: `argv[0]` is looked up in the `PATH` of the worker's environment. */
  argv: string[];
  /** The worker's directory: `stdout`, `stderr`, `pid` and `exit` go there. */
  dir: string;
  /** The `cgroup.procs` files of the worker's groups ([] when none): the process is born in them. */
  procs: string[];
}

/** What `sh` records as `$?` for a process that ended this way. */
export function shellExitCode(code: number | null, signal: string | null): number {
  if (code !== null) return code;
  const n = signal ? (osConstants.signals as Record<string, number | undefined>)[signal] : undefined;
  return n === undefined ? 255 : 128 + n;
}

/** The pid file's text: the pid and its /proc start time. */
export function pidRecord(pid: number, startTime: string): string {
  return startTime ? `${pid} ${startTime}\n` : `${pid}\n`;
}

/** A pid file's pid and start time ('' when it holds none: the wrapper writes the pid alone). */
export function parsePidRecord(text: string): { pid: number; startTime: string } {
  const [p = '', s = ''] = text.trim().split(/\s+/);
  const pid = Number.parseInt(p, 10);
  return Number.isInteger(pid) && pid > 0 ? { pid, startTime: /^\d+$/.test(s) ? s : '' } : { pid: 0, startTime: '' };
}

/** The group of this process on mount `m`'s hierarchy, from its /proc/self/cgroup (parseProcCgroup). */
function ownGroupOn(m: Mount, own: ReadonlyMap<string, string>): string | undefined {
  if (m.fstype === 'cgroup2') return own.get('');
  for (const o of m.options) {
    const group = o ? own.get(o) : undefined;
    if (group !== undefined) return group;
  }
  return undefined;
}

/**
 * Where this process belongs in each cgroup hierarchy: for a worker's `cgroup.procs` file, the
 * `cgroup.procs` of the group this process is in on the same hierarchy (where it goes back to after
 * a fork inside the worker's group). Read at each fork, so a helper moved by someone else follows.
 */
export class CgroupHomes {
  private mounts: Mount[] | undefined;

  constructor(
    private readonly read: { mountInfo: () => string; ownGroups: () => string } = {
      mountInfo: () => fs.readFileSync('/proc/self/mountinfo', 'utf8'),
      ownGroups: () => fs.readFileSync('/proc/self/cgroup', 'utf8'),
    },
  ) {}

  /** The home `cgroup.procs` for each of `procs`, in order; throws when one is on no known hierarchy. */
  homesFor(procs: readonly string[]): string[] {
    this.mounts ??= cgroupMounts(this.read.mountInfo());
    const own = parseProcCgroup(this.read.ownGroups());
    return procs.map((p) => {
      const m = this.mounts?.filter((x) => p.startsWith(x.dir.endsWith('/') ? x.dir : x.dir + '/')).sort((a, b) => b.dir.length - a.dir.length)[0];
      const group = m ? ownGroupOn(m, own) : undefined;
      if (!m || group === undefined) throw new Error(`${p} is on no cgroup hierarchy this process is in`);
      return path.join(dirUnder(m, group), 'cgroup.procs');
    });
  }
}

/** Where the end of a directly started process goes: its pid, and how it ended. */
export type DirectExit = (pid: number, code: number | null, signal: string | null) => void;

/**
 * Starts `d.argv` as described above (the worker's directory laid out already, `options.cwd` its
 * working directory). Its pid and /proc start time, or undefined when it could not be
 * started this way (nothing is left running, the helper is back in its own groups). `exited` comes
 * after the exit file is written.
 */
export function startDirect(
  d: DirectLaunch,
  options: { cwd: string; env: Record<string, string>; uid?: number; gid?: number },
  homes: CgroupHomes,
  exited: DirectExit,
  onProblem: (message: string) => void = () => {},
): { pid: number; startTime: string } | undefined {
  const [file, ...args] = d.argv;
  if (!file) return undefined;
  const fds: number[] = [];
  let child: ChildProcess | undefined;
  try {
    for (const name of ['stdout', 'stderr']) {
      const fd = createFresh(path.join(d.dir, name));
      fds.push(fd);
      if (options.uid !== undefined) fs.fchownSync(fd, options.uid, options.gid ?? -1);
    }
    // Going back to a group this process never left (a join that failed) changes nothing.
    const joined = d.procs.length > 0 ? homes.homesFor(d.procs) : [];
    try {
      for (const p of d.procs) fs.writeFileSync(p, String(process.pid));
      child = spawn(file, args, { ...options, detached: true, stdio: ['ignore', fds[0] as number, fds[1] as number] });
    } finally {
      for (const h of joined) {
        try {
          fs.writeFileSync(h, String(process.pid));
        } catch (e) {
          onProblem(`cannot go back to the cgroup ${h} after starting a worker: ${(e as Error).message}`);
        }
      }
    }
  } catch {
    child = undefined;
  } finally {
    for (const fd of fds) fs.closeSync(fd);
  }
  // The exec failed (libuv learns it before spawn returns): no process, the wrapper says why.
  if (!child || child.pid === undefined) {
    child?.once('error', () => {});
    return undefined;
  }
  const pid = child.pid;
  const startTime = readStartTime(pid);
  try {
    writeFresh(path.join(d.dir, 'pid'), pidRecord(pid, startTime));
  } catch (e) {
    onProblem(`cannot write the pid file of worker ${d.dir}: ${(e as Error).message}`);
  }
  child.once('error', () => {});
  child.once('exit', (code, signal) => {
    try {
      writeFresh(path.join(d.dir, 'exit'), `${shellExitCode(code, signal)}\n`);
    } catch (e) {
      onProblem(`cannot write the exit file of worker ${d.dir}: ${(e as Error).message}`);
    }
    exited(pid, code, signal);
  });
  return { pid, startTime };
}
