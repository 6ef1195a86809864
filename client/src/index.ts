/**
 * @fuxi/client: the TypeScript SDK for Fuxi-TS (the `fuxi` CLI is built on it).
 *
 * ```ts
 * import { readFileSync } from 'node:fs';
 * import { FuxiClient, normalizeJobSpec, parseJobSpecText } from '@fuxi/client';
 *
 * const fuxi = new FuxiClient({
 *   masters: ['10.0.0.1:7070', '10.0.0.2:7070'], // default: $FUXI_MASTER or 127.0.0.1:7070
 *   tls: { ca: 'pki/ca.crt', cert: 'pki/ops.crt', key: 'pki/ops.key' }, // default: $FUXI_TLS_CA, _CERT, _KEY
 * });
 * const spec = normalizeJobSpec(parseJobSpecText(readFileSync('wordcount.yaml', 'utf8'), 'wordcount.yaml'));
 * const { jobId } = await fuxi.submit(spec);           // validated locally; the id makes retries idempotent
 * const done = await fuxi.waitFor(jobId, (job) => console.log(job.state, job.tasks));
 * if (done.state !== 'JOB_STATE_SUCCEEDED') console.error(done.message);
 *
 * for await (const chunk of fuxi.logs(jobId, 'map', 0, { stream: 'stderr' })) process.stdout.write(chunk);
 * const counts = await fuxi.fetchOutput(jobId, 'reduce', 0, 'counts.json'); // from the host that wrote it
 * const st = await fuxi.clusterStatus();               // fault FSM state, open fault events, recovery
 * console.log(fsmStateLabel(st.fsmState), st.openEvents.length);
 * fuxi.close();
 * ```
 *
 * Errors are typed (`@fuxi/common`): calls reject with `RpcError` whose `.code` is
 * `INVALID_ARGUMENT`, `NOT_FOUND`, `UNAVAILABLE`, ...; local validation throws
 * `InvalidArgumentError` with a field path such as `tasks[1].resources.cpu`.
 */
export * from './sdk/fuxi-client.js';
export * from './sdk/external-scheduler.js';
export * from './sdk/job-state.js';
export * from './sdk/job-id.js';
export { loadJobSpecFile } from './sdk/job-file.js';
export { CERT_ROLES, checkIssueOptions, issueCert, makeCa, type CertRole, type IssuedCert, type IssueOptions } from './sdk/certs.js';
export {
  DEFAULT_AM_RESOURCE,
  InvalidArgumentError,
  NotFoundError,
  normalizeJobSpec,
  parseJobSpecText,
  topoOrder,
  validateJobSpec,
  type CommandSpec,
  type JobNetwork,
  type JobSpec,
  type Resource,
  type TaskSpec,
} from '@fuxi/common';
export { RpcError } from '@fuxi/rpc';
export type {
  ClusterStatus__Output as ClusterStatus,
  FaultEvent__Output as FaultEvent,
  JobInfo__Output as JobInfo,
  NodeStatus__Output as NodeStatus,
  RecoveryProgress__Output as RecoveryProgress,
  TaskProgress__Output as TaskProgress,
} from '@fuxi/proto';
export { FSM_STATE_NAMES, fsmStateLabel } from './sdk/cluster-state.js';
export { fetchUpstream, readOutput, upstreamOutputs, type FetchOptions, type OutputRef, type UpstreamOutput } from './sdk/outputs.js';
