/**
 * CPU time and resident memory of processes, from /proc (Linux): the master's CPU and memory of
 * the paper's Table 6 and the master CPU time behind the per-instance scheduling overhead.
 */
import { readFileSync } from 'node:fs';

/** USER_HZ: /proc times are in these ticks (100 on every Linux the benchmark targets). */
const TICKS_PER_SEC = 100;

export interface ProcSample {
  /** utime + stime in milliseconds. */
  cpuMs: number;
  rssKb: number;
}

/** undefined when the process is gone. */
export function sampleProc(pid: number): ProcSample | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the ")" of the command name: state is field 3, utime 14, stime 15.
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const utime = Number(rest[11]);
    const stime = Number(rest[12]);
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const rss = /VmRSS:\s+(\d+)\s+kB/.exec(status);
    return { cpuMs: ((utime + stime) * 1000) / TICKS_PER_SEC, rssKb: rss ? Number(rss[1]) : 0 };
  } catch {
    return undefined;
  }
}

/**
 * Samples a changing set of processes every `everyMs`: keeps each pid's latest CPU time (so the CPU
 * of a process that was killed counts up to its last sample) and, for the process `focus()` names
 * (the current leader), CPU percent per interval and RSS.
 */
export class ProcSampler {
  private readonly lastCpu = new Map<number, number>();
  private readonly firstCpu = new Map<number, number>();
  readonly focusCpuPct: number[] = [];
  readonly focusRssKb: number[] = [];
  private timer: NodeJS.Timeout | undefined;
  private prev: { pid: number; cpuMs: number; at: number } | undefined;

  constructor(
    private readonly pids: () => number[],
    private readonly focus: () => number | undefined,
    private readonly everyMs = 1000,
  ) {}

  start(): void {
    this.sample();
    this.timer = setInterval(() => this.sample(), this.everyMs);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.sample();
  }

  /** CPU milliseconds used by all sampled processes since they were first seen. */
  get totalCpuMs(): number {
    let t = 0;
    for (const [pid, last] of this.lastCpu) t += last - (this.firstCpu.get(pid) ?? last);
    return t;
  }

  private sample(): void {
    const now = Date.now();
    for (const pid of this.pids()) {
      const s = sampleProc(pid);
      if (!s) continue;
      if (!this.firstCpu.has(pid)) this.firstCpu.set(pid, s.cpuMs);
      this.lastCpu.set(pid, s.cpuMs);
    }
    const f = this.focus();
    const s = f === undefined ? undefined : sampleProc(f);
    if (f === undefined || !s) {
      this.prev = undefined;
      return;
    }
    if (this.prev && this.prev.pid === f && now > this.prev.at) this.focusCpuPct.push((100 * (s.cpuMs - this.prev.cpuMs)) / (now - this.prev.at));
    this.focusRssKb.push(s.rssKb);
    this.prev = { pid: f, cpuMs: s.cpuMs, at: now };
  }
}
