/**
 * @fuxi/client/worker: what a worker process needs from Fuxi, without the master client: where the
 * outputs of the tasks it depends on are (`$FUXI_UPSTREAM`) and fetching them from the hosts that
 * wrote them (the agents' data service). A worker writes its own outputs into `$FUXI_OUTPUT_DIR`.
 *
 * ```ts
 * import { fetchUpstream, upstreamOutputs } from '@fuxi/client/worker';
 * const maps = upstreamOutputs('map').length;
 * const part = await fetchUpstream('map', 0, `part-${process.env.FUXI_INSTANCE}.json`);
 * ```
 */
export { fetchUpstream, readOutput, upstreamOutputs, type FetchOptions, type OutputRef, type UpstreamOutput } from './sdk/outputs.js';
export { reportProgress, workerProgress, ProgressTracker } from './sdk/progress.js';
