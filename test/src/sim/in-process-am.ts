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
  };
}

