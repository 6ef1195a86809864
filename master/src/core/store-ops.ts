/** Store writes as core effects (structurally the same as @fuxi/store's StoreOp). */
export type StoreOp = { type: 'put'; key: string; value: string } | { type: 'del'; key: string };

/** Hard-state layout (DESIGN.md section 4): small records, written per job and per agent. */
export const KEYS = {
  job: (jobId: string) => `jobs/${jobId}`,
  jobsPrefix: 'jobs/',
  agent: (nodeId: string) => `agents/${nodeId}`,
  agentsPrefix: 'agents/',
  epoch: 'master/epoch',
} as const;
