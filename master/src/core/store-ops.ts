/** Store writes as core effects (structurally the same as @fuxi/store's StoreOp). */
export type StoreOp = { type: 'put'; key: string; value: string } | { type: 'del'; key: string };

/** Hard-state layout (docs/design.md, "Hard state and soft state"): small records, written per job and per agent. */
export const KEYS = {
  job: (jobId: string) => `jobs/${jobId}`,
  jobsPrefix: 'jobs/',
  agent: (nodeId: string) => `agents/${nodeId}`,
  agentsPrefix: 'agents/',
  epoch: 'master/epoch',
  /** An operator's cordon or drain of a node (node-admin.ts). */
  nodeAdmin: (nodeId: string) => `nodeadmin/${nodeId}`,
  nodeAdminPrefix: 'nodeadmin/',
  /** An operator's testbed: hosts reserved for a quota group (testbeds.ts). */
  testbed: (name: string) => `testbeds/${name}`,
  testbedsPrefix: 'testbeds/',
  /** An AM's hard state: its topology (once) and its log of finished instances. */
  appPrefix: (appId: string) => `apps/${appId}/`,
  appTopology: (appId: string) => `apps/${appId}/topology`,
  appLogPrefix: (appId: string) => `apps/${appId}/log/`,
  appLogEntry: (appId: string, attempt: number, seq: number, i: number) =>
    `apps/${appId}/log/${String(attempt).padStart(4, '0')}-${String(seq).padStart(12, '0')}-${String(i).padStart(6, '0')}`,
} as const;

/** At most this many keys of an app's hard state are kept in memory (`AppState.storedKeys`). */
export const STORED_KEYS_KEPT = 256;

/**
 * The deletion of an app's hard state at its job's end: the keys this master wrote (`storedKeys`),
 * nothing when it wrote none, and every key under the prefix when it cannot know (listed then).
 */
export function deleteAppState(
  jobId: string,
  storedKeys: readonly string[] | undefined,
): Array<{ kind: 'store'; ops: StoreOp[] } | { kind: 'deletePrefix'; prefix: string }> {
  if (storedKeys === undefined) return [{ kind: 'deletePrefix', prefix: KEYS.appPrefix(jobId) }];
  if (storedKeys.length === 0) return [];
  return [{ kind: 'store', ops: [...new Set(storedKeys)].map((key) => ({ type: 'del', key })) }];
}

/** The write that persists a job record (hard state). */
export function putJob(job: { jobId: string }): { kind: 'store'; ops: StoreOp[] } {
  return { kind: 'store', ops: [{ type: 'put', key: KEYS.job(job.jobId), value: JSON.stringify(job) }] };
}

/** The write that records an agent in the roster (hard state: id and address only). */
export function putAgent(info: { nodeId: string; address: string }): { kind: 'store'; ops: StoreOp[] } {
  return { kind: 'store', ops: [{ type: 'put', key: KEYS.agent(info.nodeId), value: JSON.stringify({ nodeId: info.nodeId, address: info.address }) }] };
}
