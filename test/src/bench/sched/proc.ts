/**
 * Process measurements for the scheduler benchmark, read from /proc (Linux): CPU time of a process
 * (every thread, nanoseconds) and its resident set; plus percentiles.
 */
import { readdirSync, readFileSync } from 'node:fs';

/** CPU time of every thread of `pid` so far, in nanoseconds (sum of /proc/<pid>/task/<tid>/schedstat). */
export function cpuNs(pid: number): number {
  let total = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      total += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      // the thread ended between readdir and read
    }
  }
  return total;
}

/** Resident set size of `pid` in bytes (VmRSS). */
export function rssBytes(pid: number): number {
  const m = /VmRSS:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m?.[1] ? Number(m[1]) * 1024 : NaN;
}

/** A CPU meter over an interval: `start()` then `stop()` returns CPU ns used and wall ns elapsed. */
export class CpuMeter {
  private cpu0 = 0;
  private wall0 = 0n;

  constructor(private readonly pid: number) {}

  start(): void {
    this.cpu0 = cpuNs(this.pid);
    this.wall0 = process.hrtime.bigint();
  }

  stop(): { cpuNs: number; wallNs: number; utilization: number } {
    const cpu = cpuNs(this.pid) - this.cpu0;
    const wall = Number(process.hrtime.bigint() - this.wall0);
    return { cpuNs: cpu, wallNs: wall, utilization: wall > 0 ? cpu / wall : 0 };
  }
}

/** Percentile `p` (0..100) of `sorted` (ascending), nearest-rank; NaN when empty. */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank]!;
}

export const round = (x: number, digits = 2): number => (Number.isFinite(x) ? Number(x.toFixed(digits)) : x);
