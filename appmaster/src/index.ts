/**
 * @fuxi/appmaster: the built-in DAG application master (`fuxi-appmaster`). The pure core
 * (`DagAppMaster`) turns the job's task graph, assignments and worker events into requests, plans,
 * returns, stops, snapshot writes and the final result; the shell (`AppMaster`) runs it against
 * the master and agents over gRPC, and resumes a job after an AM restart (attempt > 1) from the
 * snapshot and the workers the agents list.
 *
 * ```ts
 * import { DagAppMaster } from '@fuxi/appmaster';
 * const am = new DagAppMaster({ log });
 * const effects = am.start(spec, { seq: 0, assignments: [] }, Date.now());
 * // -> [{ kind: 'snapshot', topology: '{"v":1,...}', entries: [] },
 * //     { kind: 'request', units: [...], deltas: [{ suId: 'map', location: '', delta: 4 }] }]
 * // After a restart: am.start(spec, held, now, { snapshot, workers, unlistedNodes })
 * ```
 */
export * from './core/types.js';
export {
  DagAppMaster,
  DEFAULT_RETURN_SETTLE_MS,
  failureReason,
  localitiesOf,
  parseWorkerId,
  spread,
  validateDag,
  workerIdOf,
  type DagAmOptions,
} from './core/dag-am.js';
export { decodeEntry, encodeEntry, encodeTopology, sameTopology, topologyOf, type SnapshotEntry, type Topology } from './core/snapshot.js';
export { AppMaster, configFromEnv, isSuperseded, type AppMasterConfig, type AppResult } from './shell/app-master.js';
export { AmHost, DEFAULT_THREAD_INSTANCES, type AmHostOptions, type HostedAppMaster } from './shell/am-host.js';
