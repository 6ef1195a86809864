/** Small statistics helpers for the paper evaluation report. */

export interface Summary {
  n: number;
  avg: number;
  stddev: number;
  p50: number;
  p99: number;
  min: number;
  max: number;
}

const round = (v: number, digits = 3): number => (Number.isFinite(v) ? Number(v.toFixed(digits)) : NaN);

/** Nearest-rank percentile of an ascending array. */
export function percentileSorted(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[Math.min(sorted.length, rank) - 1]!;
}

/** Population mean / standard deviation and percentiles; NaN fields for an empty list. */
export function summarize(xs: readonly number[], digits = 3): Summary {
  const s = xs.filter(Number.isFinite).sort((a, b) => a - b);
  if (s.length === 0) return { n: 0, avg: NaN, stddev: NaN, p50: NaN, p99: NaN, min: NaN, max: NaN };
  const avg = s.reduce((a, b) => a + b, 0) / s.length;
  const variance = s.reduce((a, b) => a + (b - avg) ** 2, 0) / s.length;
  return {
    n: s.length,
    avg: round(avg, digits),
    stddev: round(Math.sqrt(variance), digits),
    p50: round(percentileSorted(s, 50), digits),
    p99: round(percentileSorted(s, 99), digits),
    min: round(s[0]!, digits),
    max: round(s[s.length - 1]!, digits),
  };
}

/** Empirical CDF as (value, fraction <= value) points, at most `points` of them. */
export function cdf(xs: readonly number[], points = 200): Array<[number, number]> {
  const s = xs.filter(Number.isFinite).sort((a, b) => a - b);
  if (s.length === 0) return [];
  const out: Array<[number, number]> = [];
  const step = Math.max(1, Math.floor(s.length / points));
  for (let i = step - 1; i < s.length; i += step) out.push([s[i]!, (i + 1) / s.length]);
  if (out[out.length - 1]?.[1] !== 1) out.push([s[s.length - 1]!, 1]);
  return out;
}

export function ratio(a: number, b: number, digits = 5): number {
  return b > 0 ? round(a / b, digits) : 0;
}

export { round };
