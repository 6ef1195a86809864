/**
 * The rack harness: hosts made of network namespaces (`Rack`) and a Fuxi cluster placed on them
 * (`RackCluster`). See `rack.ts` and `rack-cluster.ts`.
 *
 * ```ts
 * import { RackCluster } from '@fuxi/test/rack';
 * const rc = await RackCluster.start({ dir, agents: 3 });
 * await rc.rack.cut('a1', 'a2');
 * await rc.stop();
 * ```
 */
export * from './rack.js';
export * from './rack-cluster.js';
