/**
 * Heartbeat failure detectors: one interface (arrivals in; a suspicion level and the time the host
 * becomes suspect out), five kinds, all pure and deterministic (time is an argument).
 *
 * - `fixed`: suspect `timeoutMs` after the last arrival (the master's original rule).
 * - `chen` (Chen, Toueg and Aguilera, "On the Quality of Service of Failure Detectors", 2002): the
 *   next arrival is estimated from the last `windowSize` arrivals,
 *   EA(k+1) = mean over the window of (A(i) + (k+1-i) * interval), with the interval estimated from
 *   the window (least squares); suspect at EA + a constant safety margin `alphaMs`.
 * - `bertier` (Bertier, Marin and Sens, DSN 2002): Chen's estimate, with the margin computed the way
 *   Jacobson estimates round-trip times: error = A - EA - delay; delay += gamma * error;
 *   var += gamma * (|error| - var); margin = beta * delay + phi * var, at least `minMarginMs` and
 *   the jitter the window has shown (`floor`: a metronome host is not suspected at the instant its
 *   beat is due, nor a jittery one after a calm spell).
 * - `phi` (Hayashibara et al., "The phi Accrual Failure Detector", SRDS 2004): inter-arrival times
 *   in a window are taken as normal (mean, standard deviation at least `minStdMs`);
 *   phi(t) = -log10(1 - F(t - A(last))); suspect when phi reaches `threshold`.
 * - `sfd` (Xiong et al., "A Self-tuning Failure Detection Scheme for Cloud Computing Service",
 *   IPDPS 2012): Chen's estimate plus a safety margin that tunes itself from the detector's own
 *   output: each mistake (a heartbeat that arrives after the host was suspected) raises the margin
 *   by `increase` (multiplicative), and while the observed mistake rate is under
 *   `targetMistakesPerHour` the margin decays by `decrease` per heartbeat towards `minMarginMs`.
 *
 * Every adaptive kind falls back to `bootstrapMs` after the last arrival until it has seen
 * `minSamples` arrivals. The suspicion level is 0 up to the suspect time and at least 1 after it
 * (phi: phi / threshold), so callers compare it with 1. The ATLAS+ paper (docs/design.md) compares
 * these on Hadoop; the benchmark in `make bench-detectors` picks the default here.
 *
 * ```ts
 * const d = createDetector({ kind: 'phi', windowSize: 100, threshold: 8, minStdMs: 50, bootstrapMs: 3000, minSamples: 5 });
 * d.heartbeat(1000); d.heartbeat(2000); // ...
 * if (d.suspicion(now) >= 1) markTimingOut();
 * ```
 */
import { InvalidArgumentError } from '@fuxi/common';

export interface FailureDetector {
  readonly kind: DetectorKind;
  /** A heartbeat arrived at `now` (ms, non-decreasing). */
  heartbeat(now: number): void;
  /** When the host becomes suspect if nothing more arrives (ms; Infinity before the first arrival). */
  suspectAt(): number;
  /** 0 up to `suspectAt()`, at least 1 after it. */
  suspicion(now: number): number;
  /** Mistakes seen so far: heartbeats that arrived after the host had become suspect. */
  readonly mistakes: number;
}

export type DetectorKind = 'fixed' | 'chen' | 'bertier' | 'phi' | 'sfd';

interface Common {
  /** Arrivals kept (adaptive kinds). */
  windowSize: number;
  /** Arrivals needed before the estimate is used; until then `bootstrapMs` after the last one. */
  minSamples: number;
  bootstrapMs: number;
}

export type DetectorConfig =
  | { kind: 'fixed'; timeoutMs: number }
  | ({ kind: 'chen'; alphaMs: number } & Common)
  | ({ kind: 'bertier'; beta: number; phi: number; gamma: number; minMarginMs: number } & Common)
  | ({ kind: 'phi'; threshold: number; minStdMs: number } & Common)
  | ({ kind: 'sfd'; initialMarginMs: number; minMarginMs: number; increase: number; decrease: number; targetMistakesPerHour: number } & Common);

/** Defaults per kind, for `timeoutMs` = the fixed timeout they replace (the bootstrap value). */
export function defaultDetectorConfig(kind: DetectorKind, timeoutMs: number): DetectorConfig {
  const common: Common = { windowSize: 100, minSamples: 10, bootstrapMs: timeoutMs };
  switch (kind) {
    case 'fixed':
      return { kind, timeoutMs };
    case 'chen':
      return { kind, alphaMs: 200, ...common };
    case 'bertier':
      return { kind, beta: 1, phi: 4, gamma: 0.1, minMarginMs: 50, ...common };
    case 'phi':
      return { kind, threshold: 8, minStdMs: 50, ...common };
    case 'sfd':
      return { kind, initialMarginMs: 200, minMarginMs: 50, increase: 1.5, decrease: 0.995, targetMistakesPerHour: 1, ...common };
  }
}

const KINDS: readonly DetectorKind[] = ['fixed', 'chen', 'bertier', 'phi', 'sfd'];

/**
 * Checks a `failureDetector` config object (`{kind, ...params}`); unset parameters take the
 * defaults of `defaultDetectorConfig(kind, timeoutMs)`. Errors name the field and the reason.
 */
export function parseDetectorConfig(raw: unknown, timeoutMs: number, field = 'failureDetector'): DetectorConfig {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new InvalidArgumentError(field, 'must be an object such as {kind: phi}');
  const obj = raw as Record<string, unknown>;
  const kind = obj['kind'] ?? 'fixed';
  if (typeof kind !== 'string' || !KINDS.includes(kind as DetectorKind)) throw new InvalidArgumentError(`${field}.kind`, `must be one of ${KINDS.join(', ')}`);
  const cfg = defaultDetectorConfig(kind as DetectorKind, timeoutMs) as unknown as Record<string, unknown>;
  for (const [key, value] of Object.entries(obj)) {
    if (key === 'kind') continue;
    if (!(key in cfg))
      throw new InvalidArgumentError(
        `${field}.${key}`,
        `is not a parameter of the ${kind} detector (${Object.keys(cfg)
          .filter((k) => k !== 'kind')
          .join(', ')})`,
      );
    if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) throw new InvalidArgumentError(`${field}.${key}`, 'must be a number >= 0');
    cfg[key] = value;
  }
  const c = cfg as unknown as DetectorConfig;
  const positive = (k: string) => {
    if (!((cfg[k] as number) > 0)) throw new InvalidArgumentError(`${field}.${k}`, 'must be greater than 0');
  };
  if (c.kind === 'fixed') positive('timeoutMs');
  else {
    positive('bootstrapMs');
    if (!Number.isInteger(c.windowSize) || c.windowSize < 2) throw new InvalidArgumentError(`${field}.windowSize`, 'must be an integer >= 2');
    if (!Number.isInteger(c.minSamples) || c.minSamples < 2 || c.minSamples > c.windowSize)
      throw new InvalidArgumentError(`${field}.minSamples`, `must be an integer from 2 to windowSize (${c.windowSize})`);
  }
  if (c.kind === 'phi') positive('threshold');
  if (c.kind === 'bertier' && !(c.gamma > 0 && c.gamma <= 1)) throw new InvalidArgumentError(`${field}.gamma`, 'must be in (0, 1]');
  if (c.kind === 'sfd') {
    if (!(c.increase > 1)) throw new InvalidArgumentError(`${field}.increase`, 'must be greater than 1');
    if (!(c.decrease > 0 && c.decrease <= 1)) throw new InvalidArgumentError(`${field}.decrease`, 'must be in (0, 1]');
  }
  return c;
}

export function createDetector(cfg: DetectorConfig): FailureDetector {
  switch (cfg.kind) {
    case 'fixed':
      return new FixedDetector(cfg.timeoutMs);
    case 'chen':
      return new MarginDetector(cfg, () => cfg.alphaMs);
    case 'bertier':
      return new BertierDetector(cfg);
    case 'phi':
      return new PhiDetector(cfg);
    case 'sfd':
      return new SelfTuningDetector(cfg);
  }
}

// ------------------------------------------------------------------ fixed

class FixedDetector implements FailureDetector {
  readonly kind = 'fixed' as const;
  mistakes = 0;
  private last = -Infinity;
  constructor(private readonly timeoutMs: number) {}
  heartbeat(now: number): void {
    if (this.last > -Infinity && now > this.suspectAt()) this.mistakes++;
    this.last = now;
  }
  suspectAt(): number {
    return this.last + this.timeoutMs;
  }
  suspicion(now: number): number {
    return now > this.suspectAt() ? Math.max(1, (now - this.last) / this.timeoutMs) : 0;
  }
}

// ------------------------------------------------------------------ Chen's estimate

/** A ring of the last arrivals, with Chen's estimate of the next one. */
class Arrivals {
  private readonly a: number[] = [];
  count = 0;
  constructor(private readonly size: number) {}
  push(t: number): void {
    this.a.push(t);
    if (this.a.length > this.size) this.a.shift();
    this.count++;
  }
  get length(): number {
    return this.a.length;
  }
  get last(): number {
    return this.a.length > 0 ? this.a[this.a.length - 1]! : -Infinity;
  }
  /**
   * The inter-arrival time over the window: the least-squares slope of arrival time against arrival
   * number (Chen's formula takes the sending period as known; agents also beat early at times, so
   * it is estimated, and the slope's error shrinks with the window where first-to-last does not).
   */
  interval(): number {
    const n = this.a.length;
    if (n < 2) return 0;
    const mi = (n - 1) / 2;
    let mean = 0;
    for (const t of this.a) mean += t;
    mean /= n;
    let num = 0;
    let den = 0;
    for (let i = 0; i < n; i++) {
      num += (i - mi) * (this.a[i]! - mean);
      den += (i - mi) ** 2;
    }
    return num / den;
  }
  /** EA(k+1) = mean over the window of A(i) + (k+1-i) * interval. */
  expectedNext(): number {
    const n = this.a.length;
    const d = this.interval();
    let sum = 0;
    for (let i = 0; i < n; i++) sum += this.a[i]! + (n - i) * d;
    return sum / n;
  }
  /** The largest distance of an arrival in the window from the least-squares line through them. */
  maxResidual(): number {
    const n = this.a.length;
    if (n < 2) return 0;
    const slope = this.interval();
    const mi = (n - 1) / 2;
    const mean = this.a.reduce((x, t) => x + t, 0) / n;
    let worst = 0;
    for (let i = 0; i < n; i++) worst = Math.max(worst, Math.abs(this.a[i]! - (mean + (i - mi) * slope)));
    return worst;
  }
  /** Mean absolute deviation of the inter-arrival times in the window. */
  jitter(): number {
    const g = this.gaps();
    if (g.length === 0) return 0;
    const mean = g.reduce((a, x) => a + x, 0) / g.length;
    return g.reduce((a, x) => a + Math.abs(x - mean), 0) / g.length;
  }
  /** Inter-arrival times in the window. */
  gaps(): number[] {
    const g: number[] = [];
    for (let i = 1; i < this.a.length; i++) g.push(this.a[i]! - this.a[i - 1]!);
    return g;
  }
}

/** Chen's estimate plus a margin (constant for Chen; computed by the subclasses). */
class MarginDetector implements FailureDetector {
  readonly kind: DetectorKind = 'chen';
  mistakes = 0;
  protected readonly arrivals: Arrivals;
  protected next = Infinity;
  constructor(
    protected readonly cfg: Common,
    private readonly margin: () => number,
  ) {
    this.arrivals = new Arrivals(cfg.windowSize);
  }
  heartbeat(now: number): void {
    const late = this.arrivals.length > 0 && now > this.suspectAt();
    if (late) this.mistakes++;
    this.observe(now, late);
    this.arrivals.push(now);
    // The estimate is kept from the second arrival on (Bertier and SFD learn from it); it is used
    // for suspicion only from minSamples on.
    this.next = this.arrivals.length >= 2 ? this.arrivals.expectedNext() : Infinity;
  }
  /**
   * The least margin an adaptive one may shrink to: the jitter the window has shown (four mean
   * absolute deviations of its gaps, and twice its largest distance from the fitted line, since an
   * arrival as early as that one may be followed by one as late).
   */
  protected floor(): number {
    return Math.max(4 * this.arrivals.jitter(), 2 * this.arrivals.maxResidual());
  }
  /** Called before `now` joins the window (the estimate still predicts it). */
  protected observe(_now: number, _late: boolean): void {}
  suspectAt(): number {
    if (this.arrivals.length === 0) return Infinity;
    if (this.arrivals.length < this.cfg.minSamples) return this.arrivals.last + this.cfg.bootstrapMs;
    return this.next + this.margin();
  }
  suspicion(now: number): number {
    const at = this.suspectAt();
    if (now <= at) return 0;
    const scale = Math.max(1, at - this.arrivals.last);
    return 1 + (now - at) / scale;
  }
}

class BertierDetector extends MarginDetector {
  override readonly kind = 'bertier' as const;
  private delay = 0;
  private variance = 0;
  constructor(private readonly b: Extract<DetectorConfig, { kind: 'bertier' }>) {
    super(b, () => Math.max(this.b.minMarginMs, this.floor(), this.b.beta * this.delay + this.b.phi * this.variance));
  }
  private observed = 0;
  protected override observe(now: number): void {
    if (this.next === Infinity) return;
    // Until 1/gamma errors are in, a plain running mean (a moving average started at 0 would
    // understate the margin for its first few dozen beats).
    const g = Math.max(this.b.gamma, 1 / ++this.observed);
    const error = now - this.next - this.delay;
    this.delay += g * error;
    this.variance += g * (Math.abs(error) - this.variance);
  }
}

class SelfTuningDetector extends MarginDetector {
  override readonly kind = 'sfd' as const;
  private marginMs: number;
  private firstMs = NaN;
  constructor(private readonly s: Extract<DetectorConfig, { kind: 'sfd' }>) {
    super(s, () => Math.max(this.marginMs, this.floor()));
    this.marginMs = s.initialMarginMs;
  }
  protected override observe(now: number, late: boolean): void {
    if (Number.isNaN(this.firstMs)) this.firstMs = now;
    if (late) {
      this.marginMs = Math.max(this.s.minMarginMs, this.marginMs) * this.s.increase;
      return;
    }
    const hours = Math.max((now - this.firstMs) / 3_600_000, 1 / 60);
    if (this.mistakes / hours < this.s.targetMistakesPerHour) this.marginMs = Math.max(this.s.minMarginMs, this.marginMs * this.s.decrease);
  }
  /** The margin now (for tests and the benchmark). */
  get currentMarginMs(): number {
    return this.marginMs;
  }
}

// ------------------------------------------------------------------ phi accrual

/** Standard normal CDF (Abramowitz and Stegun 7.1.26 via erf; absolute error below 1.5e-7). */
export function normalCdf(z: number): number {
  const x = Math.abs(z) / Math.SQRT2;
  const t = 1 / (1 + 0.3275911 * x);
  const y = 1 - ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * Math.exp(-x * x);
  return z >= 0 ? 0.5 * (1 + y) : 0.5 * (1 - y);
}

/** -log10 of the upper tail of the standard normal at z, stable far into the tail. */
export function phiOf(z: number): number {
  if (z < 5) return -Math.log10(Math.max(1 - normalCdf(z), 1e-300));
  // Mills ratio: 1 - F(z) ~ pdf(z) / z * (1 - 1/z^2 + 3/z^4)
  const lnTail = -0.5 * z * z - Math.log(z) - 0.5 * Math.log(2 * Math.PI) + Math.log(1 - 1 / (z * z) + 3 / z ** 4);
  return -lnTail / Math.LN10;
}

class PhiDetector implements FailureDetector {
  readonly kind = 'phi' as const;
  mistakes = 0;
  private readonly arrivals: Arrivals;
  private mean = 0;
  private std = 0;
  /** z at which phi reaches the threshold. */
  private readonly zAt: number;
  constructor(private readonly cfg: Extract<DetectorConfig, { kind: 'phi' }>) {
    this.arrivals = new Arrivals(cfg.windowSize);
    let lo = -10;
    let hi = 60;
    for (let i = 0; i < 100; i++) {
      const mid = (lo + hi) / 2;
      if (phiOf(mid) < cfg.threshold) lo = mid;
      else hi = mid;
    }
    this.zAt = hi;
  }
  heartbeat(now: number): void {
    if (this.arrivals.length > 0 && now > this.suspectAt()) this.mistakes++;
    this.arrivals.push(now);
    const g = this.arrivals.gaps();
    if (g.length === 0) return;
    this.mean = g.reduce((s, x) => s + x, 0) / g.length;
    const v = g.reduce((s, x) => s + (x - this.mean) ** 2, 0) / g.length;
    this.std = Math.max(Math.sqrt(v), this.cfg.minStdMs);
  }
  private ready(): boolean {
    return this.arrivals.length >= this.cfg.minSamples;
  }
  phi(now: number): number {
    if (!this.ready()) return 0;
    return phiOf((now - this.arrivals.last - this.mean) / this.std);
  }
  suspectAt(): number {
    if (this.arrivals.length === 0) return Infinity;
    if (!this.ready()) return this.arrivals.last + this.cfg.bootstrapMs;
    return this.arrivals.last + this.mean + this.zAt * this.std;
  }
  suspicion(now: number): number {
    if (!this.ready()) return now > this.suspectAt() ? 1 : 0;
    return now > this.suspectAt() ? Math.max(1, this.phi(now) / this.cfg.threshold) : 0;
  }
}
