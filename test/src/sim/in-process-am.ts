/**
 * Helpers of the simulated-node host: a real application master run inside the host process (for
 * `__am__` workers of the simulated driver) and a level filter for the many agents' loggers.
 */
import type { SpawnSpec } from '@fuxi/agent';
import { AppMaster, configFromEnv } from '@fuxi/appmaster';
import { errorMessage, type Logger } from '@fuxi/common';
import type { SimAppMasterHandle } from './sim-driver.js';

const LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'];

/** A Logger that drops records below `level` and passes the rest to `base`. */
export function levelFilter(base: Logger, level: string): Logger {
  const min = LEVELS.indexOf(level);
  const on = (l: string) => min >= 0 && LEVELS.indexOf(l) >= min && level !== 'silent';
  const wrap = (b: Logger): Logger => ({
    debug: (o, m) => (on('debug') ? b.debug(o, m) : undefined),
    info: (o, m) => (on('info') ? b.info(o, m) : undefined),
    warn: (o, m) => (on('warn') ? b.warn(o, m) : undefined),
    error: (o, m) => (on('error') ? b.error(o, m) : undefined),
    child: (bindings) => wrap(b.child(bindings)),
  });
  return wrap(base);
}

/** Starts a real AppMaster in this process for an `__am__` worker, configured from its environment. */
export function startInProcessAm(spec: SpawnSpec, log: Logger): SimAppMasterHandle {
  const env: NodeJS.ProcessEnv = { ...spec.env };
  const am = new AppMaster(configFromEnv(env, log.child({ c: 'am', node: env.FUXI_NODE_ID })));
  const exited = am.run().then(
    () => 0,
    (e: unknown) => {
      log.warn({ appId: spec.appId, err: errorMessage(e) }, 'in-process application master failed');
      return 1;
    },
  );
  return {
    exited,
    kill: () => {
      // AppMaster has no public stop: end it like a fatal error would (run() then shuts it down),
      // and shut it down directly in case it is still registering.
      const inner = am as unknown as { fatal(e: unknown): void; shutdown(): Promise<void> };
      inner.fatal(new Error('killed'));
      void inner.shutdown().catch(() => undefined);
    },
    pause: (ms: number) => pauseAppMaster(am, ms),
  };
}

/**
 * AM timing failure, as far as the master can tell: for `ms` the AM's heartbeat timer does nothing
 * and its master calls (queued behind a sleep) do not go out; agents' worker events are still
 * taken. Resolves with the time from the pause to the first master call answered after it (never,
 * when a newer attempt superseded this AM meanwhile). Reaches into AppMaster's private `onTimer`,
 * `masterQueue`, `updateRequests` (heartbeats) and `persist` (every other master call): test-only
 * fault injection.
 */
export function pauseAppMaster(am: AppMaster, ms: number): Promise<number> {
  type Call = (...a: unknown[]) => Promise<unknown>;
  type Inner = { onTimer: () => void; masterQueue: Promise<void>; updateRequests?: Call; persist?: Call };
  const inner = am as unknown as Inner;
  const proto = Object.getPrototypeOf(am) as Inner;
  const t0 = Date.now();
  const until = t0 + ms;
  const onTimer = proto.onTimer;
  inner.onTimer = function (this: AppMaster) {
    if (Date.now() < until) return;
    onTimer.call(this);
  };
  inner.masterQueue = inner.masterQueue.then(() => new Promise<void>((r) => setTimeout(r, Math.max(0, until - Date.now()))));
  return new Promise<number>((resolve) => {
    const answered = (): void => {
      if (Date.now() < until) return;
      delete inner.updateRequests;
      delete inner.persist;
      resolve(Date.now() - t0);
    };
    for (const m of ['updateRequests', 'persist'] as const) {
      const original = proto[m]!;
      inner[m] = async function (this: AppMaster, ...a: unknown[]) {
        const r = await original.apply(this, a);
        answered();
        return r;
      };
    }
  });
}
