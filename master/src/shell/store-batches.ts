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
import type { StoreOp } from '../core/store-ops.js';
import type { Effect } from '../core/types.js';

export const STORE_BATCH_LIMITS = { maxOps: 128, maxBytes: 1024 * 1024 };

function opBytes(op: StoreOp): number {
  return op.type === 'put' ? Buffer.byteLength(op.key) + Buffer.byteLength(op.value) : Buffer.byteLength(op.key);
}

export function coalesceStoreWrites(effects: readonly Effect[], limits = STORE_BATCH_LIMITS): Effect[] {
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

/**
 * Group commit across inputs: a store write still waiting for the one before it (the store queue
 * writes one batch at a time) takes in the writes of later inputs while they fit, so that under
 * load the master makes one store batch (one fsync, one etcd transaction) for many calls instead
 * of one each. Only writes of one term join; a write that has started takes nothing more; every
 * caller of a group waits for the group's batch, and its failure is each one's failure.
 */
export class WriteGroup {
  readonly ops: StoreOp[] = [];
  private bytes = 0;
  /** The batch is being written: nothing joins it any more. */
  started = false;

  constructor(
    readonly term: number,
    private readonly limits = STORE_BATCH_LIMITS,
  ) {}

  /** Whether `ops` may join: same term, not started, and the group stays within the limits (an empty group takes anything). */
  fits(term: number, ops: readonly StoreOp[]): boolean {
    if (this.started || term !== this.term) return false;
    if (this.ops.length === 0) return true;
    return this.ops.length + ops.length <= this.limits.maxOps && this.bytes + ops.reduce((n, op) => n + opBytes(op), 0) <= this.limits.maxBytes;
  }

  add(ops: readonly StoreOp[]): void {
    this.ops.push(...ops);
    this.bytes += ops.reduce((n, op) => n + opBytes(op), 0);
  }
}
