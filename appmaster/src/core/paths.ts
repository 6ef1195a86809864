/**
 * Data paths and the slow end of them (PBSE, seed 001: path progress, path diversity, failure
 * groups). A path is one reader worker fetching one upstream output from another host; its record
 * (source host, destination host, bytes, elapsed, done) comes from the reader's SDK and from the
 * serving agent's data service, so a worker that reports nothing is covered too. The AM keeps the
 * latest record per (reader, source worker) and judges them together:
 *
 * - **Reference bandwidth**: the 75th percentile of the bandwidth of paths with enough behind them
 *   (at least MIN_RATE_BYTES moved, or in flight for MIN_PATH_MS). A high percentile, not the
 *   median: with one slow host among three, more than half of all paths touch it.
 * - **Slow path**: not on one host (a local read never crosses a link), with at least MIN_PATH_MS
 *   behind it, and a bandwidth below SLOW_PATH_RATIO of the reference; or one still in flight with
 *   no byte after STALL_MS (a read that stalls at the start).
 * - **Culprit** (failure groups): the host common to slow paths. Greedily, the host on the most
 *   slow paths is a culprit when it is on at least two and at least half of its own paths are
 *   slow; its slow paths are explained and taken out. A slow path left alone (no diversity) blames
 *   the end whose other paths are all slow or absent while the other end has a healthy one; when
 *   both or neither have, it stays unexplained (the reader is left to base speculation).
 *
 * ```ts
 * const { slow, culprits } = judgePaths(records, now);
 * // culprits: ['n3'] when n3 serves or reads every slow path
 * ```
 */
import type { PathObservation } from './am-state.js';
import type { PathRecord } from './types.js';

/** A path judged needs this long behind it (ms). */
export const MIN_PATH_MS = 1_000;
/** An in-flight path with no byte after this long is stalled (ms). */
export const STALL_MS = 2_000;
/** Slow: below this fraction of the reference bandwidth. */
export const SLOW_PATH_RATIO = 0.1;
/** A finished path sets the reference only with at least this many bytes (smaller ones measure latency). */
export const MIN_RATE_BYTES = 64 * 1024;
/** Paths needed before any is judged slow. */
export const MIN_REFERENCE_PATHS = 3;
/** Paths kept per job (the oldest go first). */
export const MAX_PATHS = 20_000;

/** The key of a path: one reader reading one source worker's output. */
export function pathKey(r: Pick<PathRecord, 'readerWorker' | 'srcWorker' | 'srcNode'>): string {
  return `${r.readerWorker}|${r.srcWorker || r.srcNode}`;
}

/**
 * Merges a report into the paths held. The reader's reports (`byReader`, from its SDK) describe
 * what arrived; the serving agent's what it wrote, which runs ahead of the wire by the socket
 * buffers (a small file is "done" at once on a 1 Mbit/s link): once the reader reported a path,
 * the agent's reports of it are ignored. Among reports of one side, the record with more behind it
 * (elapsed) is kept, with the most bytes either saw and done once either saw it end.
 */
export function observePath(paths: Map<string, PathObservation>, r: PathRecord, now: number, byReader = false): void {
  if (!r.readerWorker || !r.srcNode || !r.dstNode) return;
  const k = pathKey(r);
  const old = paths.get(k);
  if (!old || (byReader && !old.byReader)) {
    if (!old && paths.size >= MAX_PATHS) {
      const first = paths.keys().next().value;
      if (first !== undefined) paths.delete(first);
    }
    paths.set(k, { record: { ...r }, seenAt: now, byReader });
    return;
  }
  if (old.byReader && !byReader) return;
  const o = old.record;
  const ageOld = o.elapsedMs + (o.done ? 0 : now - old.seenAt);
  const newer = r.elapsedMs >= ageOld;
  old.record = {
    ...(newer ? r : o),
    bytes: Math.max(o.bytes, r.bytes),
    done: o.done || r.done,
    elapsedMs: o.done && !r.done ? o.elapsedMs : newer || r.done ? r.elapsedMs : o.elapsedMs,
  };
  if (newer || r.done) old.seenAt = now;
}

/** A path as judged now: its age (elapsed plus time since the report, while in flight) and bandwidth. */
export interface JudgedPath {
  record: PathRecord;
  ageMs: number;
  /** Bytes per second. */
  bandwidth: number;
  slow: boolean;
}

export interface PathJudgement {
  /** Every non-local path with its verdict. */
  paths: JudgedPath[];
  /** The reference bandwidth (bytes/s; 0 when too few paths to judge). */
  reference: number;
  /** Slow paths. */
  slow: JudgedPath[];
  /** Hosts found to be the slow end of slow paths, most slow paths first. */
  culprits: string[];
}

/**
 * Judges the paths held (see the header). A path still in flight whose reader is not `live` any
 * more (stopped, replaced) is left out: its transfer ended without a last report.
 */
export function judgePaths(observations: Iterable<PathObservation>, now: number, live: (readerWorker: string) => boolean = () => true): PathJudgement {
  const paths: JudgedPath[] = [];
  for (const o of observations) {
    const r = o.record;
    if (r.srcNode === r.dstNode || (!r.done && !live(r.readerWorker))) continue;
    const ageMs = Math.max(0, r.elapsedMs + (r.done ? 0 : now - o.seenAt));
    paths.push({ record: r, ageMs, bandwidth: ageMs > 0 ? (r.bytes * 1000) / ageMs : 0, slow: false });
  }
  const ref = paths.filter((p) => p.record.bytes >= MIN_RATE_BYTES || (!p.record.done && p.ageMs >= MIN_PATH_MS)).map((p) => p.bandwidth);
  const reference = ref.length >= MIN_REFERENCE_PATHS ? percentile(ref, 0.75) : 0;
  if (reference > 0) {
    for (const p of paths) {
      if (p.ageMs < MIN_PATH_MS) continue;
      const stalled = !p.record.done && p.record.bytes === 0 && p.ageMs >= STALL_MS;
      const measured = p.record.bytes >= MIN_RATE_BYTES || !p.record.done;
      p.slow = stalled || (measured && p.bandwidth < SLOW_PATH_RATIO * reference);
    }
  }
  const slow = paths.filter((p) => p.slow);
  return { paths, reference, slow, culprits: culpritsOf(paths, slow) };
}

/** The hosts common to slow paths (failure groups; see the header). */
export function culpritsOf(paths: readonly JudgedPath[], slow: readonly JudgedPath[]): string[] {
  const total = new Map<string, number>();
  const healthy = new Map<string, number>();
  for (const p of paths) {
    for (const h of [p.record.srcNode, p.record.dstNode]) {
      total.set(h, (total.get(h) ?? 0) + 1);
      if (!p.slow) healthy.set(h, (healthy.get(h) ?? 0) + 1);
    }
  }
  const culprits: string[] = [];
  let left = [...slow];
  for (;;) {
    const count = new Map<string, number>();
    for (const p of left) for (const h of [p.record.srcNode, p.record.dstNode]) count.set(h, (count.get(h) ?? 0) + 1);
    const best = [...count]
      .filter(([h, n]) => n >= 2 && n / (total.get(h) ?? n) >= 0.5)
      .sort((a, b) => b[1] - a[1] || b[1] / total.get(b[0])! - a[1] / total.get(a[0])! || (a[0] < b[0] ? -1 : 1))[0];
    if (!best) break;
    culprits.push(best[0]);
    left = left.filter((p) => p.record.srcNode !== best[0] && p.record.dstNode !== best[0]);
  }
  // Lone slow paths: the end with no healthy path of its own, if the other end has one.
  for (const p of left) {
    const { srcNode: a, dstNode: b } = p.record;
    if (culprits.includes(a) || culprits.includes(b)) continue;
    const ha = healthy.get(a) ?? 0;
    const hb = healthy.get(b) ?? 0;
    if (ha === 0 && hb > 0) culprits.push(a);
    else if (hb === 0 && ha > 0) culprits.push(b);
  }
  return culprits;
}

/** The q-quantile (0-1) of `xs` (nearest rank; `xs` not empty). */
export function percentile(xs: readonly number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))]!;
}
