/**
 * @fuxi/deploy: the local-cluster launcher (also used by the integration tests and the demo).
 *
 * ```ts
 * const cluster = await LocalCluster.start({ dir: '/tmp/c', agents: 3 });
 * ```
 */
export * from './cluster-pki.js';
export * from './local-cluster.js';
export * from './ha-cluster.js';
export * from './wordcount.js';
export * from './shuffle.js';
