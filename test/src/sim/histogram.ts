/**
 * A small mergeable latency histogram (log buckets, 2 % wide) with exact count, sum, sum of squares
 * and max: avg / stddev exact, percentiles within 2 %. Plain JSON, so simulated-node hosts can send
 * theirs to the benchmark, which merges them.
 *
 * ```ts
 * const h = new Histogram();
 * h.add(0.84);
 * const merged = Histogram.from(h.toJSON()).merge(other);
 * merged.percentile(99);
 * ```
 */

const MIN = 0.001;
const STEP = Math.log(1.02);

export interface HistogramJson {
  count: number;
  sum: number;
  sumSq: number;
  max: number;
  /** bucket index -> count (sparse). */
  buckets: Record<string, number>;
}

export class Histogram {
  count = 0;
  sum = 0;
  sumSq = 0;
  max = 0;
  private readonly buckets = new Map<number, number>();

  static from(j: HistogramJson): Histogram {
    const h = new Histogram();
    h.count = j.count;
    h.sum = j.sum;
    h.sumSq = j.sumSq;
    h.max = j.max;
    for (const [k, v] of Object.entries(j.buckets)) h.buckets.set(Number(k), v);
    return h;
  }

  add(v: number): void {
    if (!Number.isFinite(v) || v < 0) return;
    this.count++;
    this.sum += v;
    this.sumSq += v * v;
    if (v > this.max) this.max = v;
    const b = v <= MIN ? 0 : Math.floor(Math.log(v / MIN) / STEP) + 1;
    this.buckets.set(b, (this.buckets.get(b) ?? 0) + 1);
  }

  merge(o: Histogram): this {
    this.count += o.count;
    this.sum += o.sum;
    this.sumSq += o.sumSq;
    this.max = Math.max(this.max, o.max);
    for (const [k, v] of o.buckets) this.buckets.set(k, (this.buckets.get(k) ?? 0) + v);
    return this;
  }

  get avg(): number {
    return this.count ? this.sum / this.count : NaN;
  }

  get stddev(): number {
    if (this.count < 2) return this.count ? 0 : NaN;
    const m = this.avg;
    return Math.sqrt(Math.max(0, this.sumSq / this.count - m * m));
  }

  /** The value below which `p` percent of the samples fall (the bucket's upper edge, capped at max). */
  percentile(p: number): number {
    if (this.count === 0) return NaN;
    const rank = Math.ceil((p / 100) * this.count);
    let seen = 0;
    for (const k of [...this.buckets.keys()].sort((a, b) => a - b)) {
      seen += this.buckets.get(k)!;
      if (seen >= rank) return Math.min(this.max, k === 0 ? MIN : MIN * Math.exp(k * STEP));
    }
    return this.max;
  }

  toJSON(): HistogramJson {
    return {
      count: this.count,
      sum: this.sum,
      sumSq: this.sumSq,
      max: this.max,
      buckets: Object.fromEntries([...this.buckets].map(([k, v]) => [String(k), v])),
    };
  }
}
