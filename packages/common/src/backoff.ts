/**
 * Retry delays: the one backoff arithmetic of Fuxi-TS (pure; the loop that sleeps is `retry` in
 * @fuxi/rpc, and callers that run their own timer, like heartbeats, call `backoffMs` directly).
 *
 * Exponential with **equal jitter**: after the n-th consecutive failure the step is
 * `min(maxMs, initialMs * 2^(n-1))` and the delay is drawn uniformly from [step/2, step].
 * Equal rather than full jitter ([0, step]): a retry never comes back almost at once (after a
 * master dies, a heartbeat or registration at ~0 ms would only find no leader again), yet many
 * agents that failed together still spread over half the step instead of retrying in lockstep.
 */

export interface BackoffOptions {
  /** The step after the first failure. */
  initialMs: number;
  /** The step never grows past this (and so neither does a delay). */
  maxMs: number;
}

/**
 * The delay before retrying after `attempt` consecutive failures (1 = after the first), in whole
 * milliseconds within [step/2, step]; 0 for `attempt` < 1 (nothing failed). `random` returns a
 * number in [0, 1) (`Math.random` in shells, a seeded generator in cores and tests).
 *
 * ```ts
 * backoffMs(1, { initialMs: 250, maxMs: 1000 }, () => 0.5); // 188 (step 250)
 * backoffMs(5, { initialMs: 250, maxMs: 1000 }, () => 0.5); // 750 (step capped at 1000)
 * ```
 */
export function backoffMs(attempt: number, opts: BackoffOptions, random: () => number): number {
  const step = backoffStepMs(attempt, opts);
  return Math.round(step / 2 + (random() * step) / 2);
}

/** The ceiling of `backoffMs` for `attempt` (no jitter): `min(maxMs, initialMs * 2^(attempt-1))`. */
export function backoffStepMs(attempt: number, opts: BackoffOptions): number {
  if (!(attempt >= 1) || !(opts.initialMs > 0)) return 0;
  const maxMs = Math.max(0, opts.maxMs);
  return Math.min(maxMs, opts.initialMs * 2 ** Math.min(attempt - 1, 52));
}
