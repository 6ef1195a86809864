/**
 * What a daemon does with an error nobody awaited. A store or peer that is unavailable (the
 * leader lost its lease, etcd paused, a peer gone), a store out of space, or a write fenced after a
 * lost leadership is weather, not a bug: logged, and the daemon
 * stays up (a master steps down and campaigns again). Anything else is a bug: logged with its
 * stack, and the process exits 1 so that systemd restarts it from a clean state.
 *
 * ```ts
 * installProcessGuards(log, 'fuxi-master');
 * ```
 */
import { FuxiError, type Logger } from '@fuxi/common';

/**
 * True for errors a daemon outlives: UNAVAILABLE / DEADLINE_EXCEEDED from a store or a peer,
 * RESOURCE_EXHAUSTED (etcd out of space: the master holds still until an operator frees it), and a
 * store write fenced because this master lost its leadership (`FencedError` of @fuxi/store): the
 * election steps it down and it campaigns again.
 */
export function isWeather(e: unknown): boolean {
  return e instanceof FuxiError && (e.code === 'UNAVAILABLE' || e.code === 'DEADLINE_EXCEEDED' || e.code === 'RESOURCE_EXHAUSTED' || e.name === 'FencedError');
}

export function installProcessGuards(log: Logger, daemon: string): void {
  const describe = (e: unknown) => (e instanceof Error ? (e.stack ?? e.message) : String(e));
  process.on('unhandledRejection', (reason) => {
    if (isWeather(reason)) {
      log.warn({ err: describe(reason) }, 'unhandled rejection of an unavailable or full store, or of a peer; still running');
      return;
    }
    log.error({ err: describe(reason), daemon }, 'unhandled rejection (a bug); exiting');
    setTimeout(() => process.exit(1), 200).unref();
    process.exitCode = 1;
  });
  process.on('uncaughtException', (e) => {
    log.error({ err: describe(e), daemon }, 'uncaught exception (a bug); exiting');
    process.exit(1);
  });
}
