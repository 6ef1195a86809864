/**
 * @fuxi/appmaster: the built-in DAG application master (`fuxi-appmaster`). The pure core
 * (`DagAppMaster`) turns the job's task graph, assignments and worker events into requests, plans,
 * returns, stops and the final result; the shell (`AppMaster`) runs it against the master and
 * agents over gRPC.
 *
 * ```ts
 * import { DagAppMaster } from '@fuxi/appmaster';
 * const am = new DagAppMaster({ log });
 * const effects = am.start(spec, { seq: 0, assignments: [] }, Date.now());
 * // -> [{ kind: 'request', units: [...], deltas: [{ suId: 'map', location: '', delta: 4 }] }]
 * ```
 */
export * from './core/types.js';
export { DagAppMaster, DEFAULT_RETURN_SETTLE_MS, failureReason, localitiesOf, parseWorkerId, spread, validateDag, workerIdOf, type DagAmOptions } from './core/dag-am.js';
export { AppMaster, configFromEnv, type AppMasterConfig, type AppResult } from './shell/app-master.js';
