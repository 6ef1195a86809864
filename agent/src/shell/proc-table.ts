/**
 * Reading the host's process table from /proc, and signalling one process by pid AND start time.
 *
 * `ProcTable.read()` returns every process (pid, ppid, start time, state) and the value of the
 * worker-family variable in its environment. An environment is read once per process (pid + start
 * time) and remembered while the process lives: a process keeps its pid and start time across
 * `exec`, so once seen with a marker it stays a member even if it re-executes with a scrubbed
 * environment. An empty one (a process inside its exec, a zombie) is read again the next time. Environments of other users' processes are unreadable unless the agent is root; they
 * count as unmarked.
 *
 * ```ts
 * const table = new ProcTable(FAMILY_ENV);
 * const members = familyOf(table.read(), query);
 * for (const m of members) signalProcess(m, 'SIGKILL');
 * ```
 */
import * as fs from 'node:fs';
import { procKey, type ProcEntry, type ProcId } from '../core/process-family.js';

/** Parses /proc/<pid>/stat text: state (3), ppid (4), start time (22); undefined when malformed. */
export function parseStat(pid: number, text: string): Omit<ProcEntry, 'marker'> | undefined {
  // comm (field 2) is in parentheses and may contain spaces and ')': split after the last ')'.
  const close = text.lastIndexOf(')');
  if (close < 0) return undefined;
  const rest = text.slice(close + 2).split(' ');
  // rest[0] is field 3, so field 4 is rest[1] and field 22 is rest[19].
  const state = rest[0] ?? '';
  const ppid = Number(rest[1]);
  const startTime = rest[19] ?? '';
  if (!state || !Number.isInteger(ppid) || !/^\d+$/.test(startTime)) return undefined;
  return { pid, ppid, startTime, state };
}

/** The value of `NAME=` in a NUL-separated environment block, or undefined. */
export function envValue(environ: Buffer, prefix: Buffer): string | undefined {
  let i = environ.indexOf(prefix);
  while (i >= 0) {
    if (i === 0 || environ[i - 1] === 0) {
      const end = environ.indexOf(0, i);
      return environ.toString('utf8', i + prefix.length, end < 0 ? environ.length : end);
    }
    i = environ.indexOf(prefix, i + 1);
  }
  return undefined;
}

export class ProcTable {
  private readonly prefix: Buffer;
  /** Marker per process (pid:startTime) read earlier; null = none. */
  private markers = new Map<string, string | null>();

  constructor(
    envName: string,
    private readonly procDir = '/proc',
  ) {
    this.prefix = Buffer.from(`${envName}=`);
  }

  /** Every process now (those that end while it reads are left out). */
  read(): ProcEntry[] {
    let names: string[];
    try {
      names = fs.readdirSync(this.procDir);
    } catch {
      return [];
    }
    const out: ProcEntry[] = [];
    const markers = new Map<string, string | null>();
    for (const name of names) {
      const c = name.charCodeAt(0);
      if (c < 48 || c > 57) continue;
      const pid = Number(name);
      let stat: Omit<ProcEntry, 'marker'> | undefined;
      try {
        stat = parseStat(pid, fs.readFileSync(`${this.procDir}/${name}/stat`, 'latin1'));
      } catch {
        continue; // ended meanwhile
      }
      if (!stat) continue;
      const key = procKey(stat);
      let marker = this.markers.get(key);
      // Kernel threads (kthreadd, pid 2, and its children) have no environment.
      if (marker === undefined) marker = pid === 2 || stat.ppid === 2 ? null : this.readMarker(name);
      // An empty environment is not remembered: a process inside its exec, or a zombie, shows
      // none for a while, and a child caught so must be known by its marker at the next read.
      if (marker !== undefined) markers.set(key, marker);
      out.push(marker == null ? stat : { ...stat, marker });
    }
    this.markers = markers; // forget processes that ended
    return out;
  }

  /** The marker; null when the environment has none; undefined when it shows no environment now. */
  private readMarker(name: string): string | null | undefined {
    try {
      const environ = fs.readFileSync(`${this.procDir}/${name}/environ`);
      if (environ.length === 0) return undefined;
      return envValue(environ, this.prefix) ?? null;
    } catch {
      return null; // another user's process, or ended
    }
  }
}

/** State (field 3, e.g. 'S', 'Z'), ppid and start time (field 22) of `pid` now, or undefined when it is gone. */
export function readProcStat(pid: number): Omit<ProcEntry, 'marker'> | undefined {
  if (!Number.isInteger(pid) || pid <= 0) return undefined;
  try {
    return parseStat(pid, fs.readFileSync(`/proc/${pid}/stat`, 'latin1'));
  } catch {
    return undefined;
  }
}

/** The start time of `pid` (field 22 of /proc/<pid>/stat, clock ticks after boot), or '' when it is gone. */
export function readStartTime(pid: number): string {
  return readProcStat(pid)?.startTime ?? '';
}

/**
 * True while `pid` is the process that started at `startTime` and has not ended: a zombie (exited,
 * not reaped: its parent, e.g. init after the agent died, may never reap it) counts as ended;
 * another process with the same pid (reuse) does not match its start time.
 */
export function sameProcessAlive(pid: number, startTime: string): boolean {
  if (!startTime) return false;
  const st = readProcStat(pid);
  return st !== undefined && st.startTime === startTime && st.state !== 'Z' && st.state !== 'X';
}

/**
 * Sends `signal` to `p` only while `p.pid` is still the process that started at `p.startTime` and
 * has not ended (never to a reused pid). Returns whether it was sent.
 */
export function signalProcess(p: ProcId, signal: NodeJS.Signals): boolean {
  if (!Number.isInteger(p.pid) || p.pid <= 1 || !sameProcessAlive(p.pid, p.startTime)) return false;
  try {
    process.kill(p.pid, signal);
    return true;
  } catch {
    return false; // ended meanwhile, or not ours to signal
  }
}
