/**
 * The one retry loop of the shells: exponential backoff with equal jitter (`backoffMs` of
 * @fuxi/common), an initial delay and a cap, an optional attempt limit and deadline, a predicate
 * for which errors are retried (default: UNAVAILABLE / DEADLINE_EXCEEDED), an AbortSignal that
 * ends the wait at once, and an `onRetry` hook that sees the first failure and every Nth after.
 *
 * `retry(fn)` wraps one operation. `Retrier` is the same loop turned inside out, for loops that
 * cannot be a callback (an async generator that yields between attempts, a call loop that also
 * follows redirects): call `failed(e)` after each failure and `reset()` after progress.
 *
 * Sleep, clock and random source are injectable, so tests run without real time.
 */
import { AbortedError, backoffMs, isTransientError } from '@fuxi/common';

export interface RetryEvent {
  /** Consecutive failures so far (1 for the first). */
  attempt: number;
  error: unknown;
  /** The wait before the next attempt. */
  delayMs: number;
  /** Since the first failure of this run. */
  elapsedMs: number;
}

export interface RetryOptions {
  /** Wait after the first failure (before jitter); doubles with each further one. Default 100 ms. */
  initialMs?: number;
  /** The cap of that wait. Default 2000 ms. */
  maxMs?: number;
  /** Attempts in all, the first included (default: no limit). */
  maxAttempts?: number;
  /** Give up when the next attempt would start later than this long after the first failure. */
  retryForMs?: number;
  /** Give up when the next attempt would start after this time (on the `now` clock). */
  deadline?: number;
  /** Which failures are retried (default `isTransientError`); any other is thrown at once. */
  retryIf?: (e: unknown) => boolean;
  /** Stops retrying: a wait ends at once and the last failure is thrown. */
  signal?: AbortSignal;
  /** Sees the first failure and then every `onRetryEvery`-th (for logging). Not called when giving up. */
  onRetry?: (e: RetryEvent) => void;
  /** Default 10; 1 = every failure. */
  onRetryEvery?: number;
  /** Default: a timer that `signal` cuts short. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Default Date.now. */
  now?: () => number;
  /** Default Math.random. */
  random?: () => number;
}

/**
 * Calls `fn` (with the attempt number, from 1) until it resolves, retrying the failures
 * `retryIf` accepts after a jittered, capped, growing wait. Throws the last failure when it is
 * not retried, when `maxAttempts`, `retryForMs` or `deadline` is reached, or when `signal`
 * aborts (an `AbortedError` if it was aborted before the first attempt).
 *
 * ```ts
 * const stopping = new AbortController(); // aborted by stop()
 * const r = await retry(() => master.call('RegisterAgent', req), {
 *   initialMs: 200, maxMs: 5000, signal: stopping.signal,
 *   onRetry: (f) => log.warn({ attempt: f.attempt, err: errorMessage(f.error) }, 'registration failed; retrying'),
 * });
 * ```
 */
export async function retry<T>(fn: (attempt: number) => Promise<T>, opts: RetryOptions = {}): Promise<T> {
  const r = new Retrier(opts);
  for (;;) {
    r.throwIfAborted();
    try {
      return await fn(r.failures + 1);
    } catch (e) {
      await r.failed(e);
    }
  }
}

/** The state of one retry loop; see the module comment. */
export class Retrier {
  private count = 0;
  private firstFailureAt: number | undefined;
  private last: { error: unknown } | undefined;
  private readonly initialMs: number;
  private readonly maxMs: number;
  private readonly every: number;
  private readonly now: () => number;
  private readonly sleep: (ms: number, signal?: AbortSignal) => Promise<void>;

  constructor(private readonly opts: RetryOptions = {}) {
    this.initialMs = opts.initialMs ?? 100;
    this.maxMs = opts.maxMs ?? Math.max(2000, this.initialMs);
    this.every = Math.max(1, Math.floor(opts.onRetryEvery ?? 10));
    this.now = opts.now ?? Date.now;
    this.sleep = opts.sleep ?? abortableSleep;
  }

  /** Consecutive failures since the start or the last reset. */
  get failures(): number {
    return this.count;
  }

  get aborted(): boolean {
    return this.opts.signal?.aborted === true;
  }

  /** Throws when the signal has aborted: the last failure, or an AbortedError if none yet. */
  throwIfAborted(): void {
    if (!this.aborted) return;
    if (this.last) throw this.last.error;
    throw new AbortedError('stopped before the first attempt');
  }

  /**
   * After a failed attempt: throws `e` when it is not to be retried (see `retry`); otherwise
   * reports it to `onRetry` (first and every Nth) and waits the backoff. Throws `e` too when the
   * signal aborts during the wait.
   */
  async failed(e: unknown): Promise<void> {
    this.count++;
    this.last = { error: e };
    const o = this.opts;
    if (this.aborted || !(o.retryIf ?? isTransientError)(e)) throw e;
    if (o.maxAttempts !== undefined && this.count >= o.maxAttempts) throw e;
    const now = this.now();
    this.firstFailureAt ??= now;
    const delayMs = backoffMs(this.count, { initialMs: this.initialMs, maxMs: this.maxMs }, o.random ?? Math.random);
    const end = Math.min(o.deadline ?? Infinity, o.retryForMs === undefined ? Infinity : this.firstFailureAt + o.retryForMs);
    if (now + delayMs > end) throw e;
    if (o.onRetry && (this.count === 1 || this.count % this.every === 0))
      o.onRetry({ attempt: this.count, error: e, delayMs, elapsedMs: now - this.firstFailureAt });
    await this.sleep(delayMs, o.signal);
    if (this.aborted) throw e;
  }

  /** Progress: the next failure waits the initial delay again and starts a new `retryForMs`. */
  reset(): void {
    this.count = 0;
    this.firstFailureAt = undefined;
  }
}

/** setTimeout as a promise that an abort resolves early. */
function abortableSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}
