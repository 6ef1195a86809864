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
 * The most one store write may carry: etcd refuses a transaction over its --max-txn-ops (128 by
 * default) and a request over --max-request-bytes (1.5 MiB by default). The shell's batches of
 * many writes keep within them (store-batches.ts); a write the core makes of many operations that
 * need not land together is cut into writes within them (`storeWrites`).
 */
export const STORE_WRITE_LIMITS = { maxOps: 128, maxBytes: 1024 * 1024 };

/** The bytes a store operation carries (its key, and a put's value). */
export function opBytes(op: StoreOp): number {
  return op.type === 'put' ? Buffer.byteLength(op.key) + Buffer.byteLength(op.value) : Buffer.byteLength(op.key);
}

/**
 * `ops` as store writes in order, each within `limits` (one operation over them alone is a write
 * of its own). Only for operations that need not land together: each write is atomic, the whole
 * is not (what is written again after a failover must land on the same keys with the same values).
 */
export function storeWrites(ops: readonly StoreOp[], limits = STORE_WRITE_LIMITS): Array<{ kind: 'store'; ops: StoreOp[] }> {
  const out: Array<{ kind: 'store'; ops: StoreOp[] }> = [];
  let cur: StoreOp[] = [];
  let bytes = 0;
  for (const op of ops) {
    const b = opBytes(op);
    if (cur.length > 0 && (cur.length >= limits.maxOps || bytes + b > limits.maxBytes)) {
      out.push({ kind: 'store', ops: cur });
      cur = [];
      bytes = 0;
    }
    cur.push(op);
    bytes += b;
  }
  if (cur.length > 0) out.push({ kind: 'store', ops: cur });
  return out;
}

/**
 * The deletion of an app's hard state at its job's end: the keys this master wrote (`storedKeys`),
 * nothing when it wrote none, and every key under the prefix when it cannot know (listed then).
 * Deletes need not land together: up to STORED_KEYS_KEPT keys go in writes within the store's limits.
 */
export function deleteAppState(
  jobId: string,
  storedKeys: readonly string[] | undefined,
): Array<{ kind: 'store'; ops: StoreOp[] } | { kind: 'deletePrefix'; prefix: string }> {
  if (storedKeys === undefined) return [{ kind: 'deletePrefix', prefix: KEYS.appPrefix(jobId) }];
  if (storedKeys.length === 0) return [];
  return storeWrites([...new Set(storedKeys)].map((key): StoreOp => ({ type: 'del', key })));
}

/** The write that persists a job record (hard state). */
export function putJob(job: { jobId: string }): { kind: 'store'; ops: StoreOp[] } {
  return { kind: 'store', ops: [{ type: 'put', key: KEYS.job(job.jobId), value: JSON.stringify(job) }] };
}

/** The write that records an agent in the roster (hard state: id and address only). */
export function putAgent(info: { nodeId: string; address: string }): { kind: 'store'; ops: StoreOp[] } {
  return { kind: 'store', ops: [{ type: 'put', key: KEYS.agent(info.nodeId), value: JSON.stringify({ nodeId: info.nodeId, address: info.address }) }] };
}
