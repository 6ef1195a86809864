/**
 * @fuxi/common: what every Fuxi-TS component shares: resource arithmetic, typed errors, the job
 * spec (parsing and validation), ids, int64 helpers, the logger interface and the backoff
 * arithmetic of every retry (`backoffMs`; the sleeping loop is `retry` in @fuxi/rpc).
 *
 * ```ts
 * import { res, fits, InvalidArgumentError, backoffMs } from '@fuxi/common';
 * if (!fits(res(500, 256), node.free)) throw new InvalidArgumentError('resources', 'too large');
 * // a heartbeat that failed `failures` times in a row retries soon, backing off to its interval:
 * const waitMs = failures ? backoffMs(failures, { initialMs: 250, maxMs: intervalMs }, Math.random) : intervalMs;
 * ```
 */
export * from './resource.js';
export * from './errors.js';
export * from './backoff.js';
export * from './logger.js';
export * from './epoch.js';
export * from './substitute.js';
export * from './job-spec.js';
export * from './fsm-state.js';
export * from './address.js';
export * from './protocol.js';
export * from './first-difference.js';
export * from './am-host-protocol.js';
export * from './version.js';
export * from './random.js';
export * from './worker-progress.js';
export * from './app-snapshot.js';
