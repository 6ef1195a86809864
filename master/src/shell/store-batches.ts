/**
 * Coalesces the store writes of one input into few store batches: consecutive `store` effects are
 * merged while the merged batch stays within `maxOps` operations and `maxBytes` (etcd refuses a
 * transaction over its --max-txn-ops, 128 by default, and a request over --max-request-bytes,
 * 1.5 MiB by default). One effect's operations are never split (they may need to be atomic); an
 * effect over the limits on its own stays one batch. Other effects keep their place.
 *
 * ```ts
 * for (const e of coalesceStoreWrites(effects)) run(e); // 1,000 submitted jobs: 8 writes, not 1,000
 * ```
 */
import { opBytes, STORE_WRITE_LIMITS, type StoreOp } from '../core/store-ops.js';
import type { Effect } from '../core/types.js';

export function coalesceStoreWrites(effects: readonly Effect[], limits = STORE_WRITE_LIMITS): Effect[] {
  const out: Effect[] = [];
  let batch: StoreOp[] | undefined;
  let bytes = 0;
  for (const e of effects) {
    if (e.kind !== 'store') {
      batch = undefined;
      out.push(e);
      continue;
    }
    const size = e.ops.reduce((n, op) => n + opBytes(op), 0);
    if (batch && batch.length + e.ops.length <= limits.maxOps && bytes + size <= limits.maxBytes) {
      batch.push(...e.ops);
      bytes += size;
      continue;
    }
    batch = [...e.ops];
    bytes = size;
    out.push({ kind: 'store', ops: batch });
  }
  return out;
}
