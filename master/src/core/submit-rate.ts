/**
 * Per-caller rate limits on job submission: a token bucket per caller key (the shell's
 * `callerKey(call)`: the authenticated caller, else the peer's host). A
 * bucket holds up to `burst` jobs and refills at `ratePerSec`; SubmitJob takes one token, SubmitJobs
 * one per spec. A call that finds too few tokens is refused whole, with the time after which it
 * would pass (`retryAfterMs`), and takes nothing. Pure: time comes in.
 *
 * ```ts
 * const rate = new SubmitRate({ ratePerSec: 50, burst: 500 });
 * const v = rate.take('10.0.0.7', 1, now); // { ok: true } or { ok: false, retryAfterMs: 120 }
 * ```
 */

export interface SubmitRateSettings {
  /** Jobs a second a caller's bucket refills with; 0 = no limit. */
  ratePerSec: number;
  /** Most jobs a caller may submit at once (the bucket's size). */
  burst: number;
}

/** A client may submit 2,000 jobs at once (two full SubmitJobs batches) and 50 a second after that. */
export const DEFAULT_SUBMIT_RATE: Readonly<SubmitRateSettings> = Object.freeze({ ratePerSec: 50, burst: 2000 });

export type TakeVerdict = { ok: true } | { ok: false; retryAfterMs: number; reason: string };

interface Bucket {
  tokens: number;
  atMs: number;
}

export class SubmitRate {
  private readonly buckets = new Map<string, Bucket>();

  constructor(private readonly s: SubmitRateSettings) {}

  /** Takes `cost` tokens of `caller`'s bucket at `nowMs`, or says when to come back. */
  take(caller: string, cost: number, nowMs: number): TakeVerdict {
    if (this.s.ratePerSec <= 0) return { ok: true };
    const burst = Math.max(1, this.s.burst);
    if (cost > burst)
      return { ok: false, retryAfterMs: 0, reason: `${cost} jobs in one call is more than the submit burst (${burst}, submitBurst): send smaller batches` };
    const b = this.refill(caller, nowMs, burst);
    if (b.tokens >= cost) {
      b.tokens -= cost;
      this.buckets.set(caller, b);
      return { ok: true };
    }
    const retryAfterMs = Math.ceil(((cost - b.tokens) / this.s.ratePerSec) * 1000);
    this.buckets.set(caller, b);
    return {
      ok: false,
      retryAfterMs,
      reason: `submit rate limit of this caller (${this.s.ratePerSec} jobs/s, burst ${burst}; submitRatePerSec, submitBurst): retry after ${retryAfterMs} ms`,
    };
  }

  /** Number of callers with a bucket that is not full (what `sweep` keeps). */
  get size(): number {
    return this.buckets.size;
  }

  /** Forgets buckets that are full again at `nowMs` (they would behave the same as new ones). */
  sweep(nowMs: number): void {
    const burst = Math.max(1, this.s.burst);
    for (const k of this.buckets.keys()) if (this.refill(k, nowMs, burst).tokens >= burst) this.buckets.delete(k);
  }

  private refill(caller: string, nowMs: number, burst: number): Bucket {
    const b = this.buckets.get(caller);
    if (!b) return { tokens: burst, atMs: nowMs };
    const elapsed = Math.max(0, nowMs - b.atMs);
    return { tokens: Math.min(burst, b.tokens + (elapsed * this.s.ratePerSec) / 1000), atMs: Math.max(b.atMs, nowMs) };
  }
}
