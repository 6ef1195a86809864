/**
 * Group commit of the master's hard-state writes. Writes go to the store one batch at a time, in
 * the order they were queued; every write queued while a batch is under way goes in the next
 * batch together, so a busy master makes few large writes instead of a chain of small ones. A
 * write's promise settles once the batch holding it is durable (or failed).
 *
 * Before, each write was its own store batch, started when the one before it had finished: each
 * cost a turn of the master's event loop and an fsync (embedded) or a round trip (etcd). Under
 * `sdkMany` the chain ran about a second behind, and every call that waits for its writes waited
 * that long (an AM's RegisterApp answer, the launch of the next AM).
 *
 * Writes merge only with neighbours of the same `group` key (the leader's term and store: a write
 * of an ended term is refused by the writer, not carried in with the next term's). One write's
 * operations are never split (they may need to be atomic); a batch holds whole writes within
 * `maxOps` operations and `maxBytes` (etcd's --max-txn-ops and request size), or one write larger
 * than that alone. A prefix deletion (an ended job's app state) lists the prefix when its batch is
 * built and deletes what it finds, and what earlier writes of the same batch put under it, in
 * chunks of `DELETE_CHUNK` keys (not atomic, as before). Once a batch of a group fails, nothing
 * more of that group is written: every later write of it fails with the same error, unsent.
 *
 * ```ts
 * const gc = new GroupCommit({ write: (group, ops) => store.batch(ops), list: (group, prefix) => keysUnder(prefix) });
 * await gc.write(term, [{ type: 'put', key: 'jobs/a', value: '{}' }]); // durable now
 * await gc.settled(); // everything queued so far has been written (or failed)
 * ```
 */
import { opBytes, STORE_WRITE_LIMITS, type StoreOp } from '../core/store-ops.js';

export interface GroupCommitStore<G extends object> {
  /** Writes one batch atomically; rejects when it was not made (or its outcome is unknown). */
  write(group: G, ops: StoreOp[]): Promise<void>;
  /** The keys under `prefix` now. */
  list(group: G, prefix: string): Promise<string[]>;
}

/** Keys deleted per batch by a prefix deletion. */
export const DELETE_CHUNK = 100;

interface Entry<G> {
  group: G;
  ops?: StoreOp[];
  prefix?: string;
  resolve: () => void;
  reject: (e: unknown) => void;
  /** Batches of this entry not written yet, and the first failure among them. */
  left: number;
  failed?: { err: unknown };
}

interface Unit<G> {
  entry: Entry<G>;
  ops: StoreOp[];
  bytes: number;
}

export interface GroupCommitStats {
  /** Writes queued, and store batches made of them. */
  writes: number;
  batches: number;
}

export class GroupCommit<G extends object> {
  private pending: Array<Entry<G>> = [];
  /**
   * Groups one of whose batches failed, with its error: nothing more of theirs is written (a later
   * write landing without an earlier one would break the order the store is promised). The group
   * is the leader's term: a failed write ends it, and the next term is a new group.
   */
  private readonly failedGroups = new WeakMap<G, { err: unknown }>();
  private running = false;
  private last: Promise<void> = Promise.resolve();
  /** Writes queued and not settled yet. */
  private unsettled = 0;
  readonly stats: GroupCommitStats = { writes: 0, batches: 0 };

  constructor(
    private readonly store: GroupCommitStore<G>,
    private readonly limits = STORE_WRITE_LIMITS,
    /** A prefix that could not be listed: its deletion is skipped (and resolves). */
    private readonly onListError: (prefix: string, err: unknown) => void = () => {},
  ) {}

  /** Queues `ops` (one atomic write); resolves once they are durable. */
  write(group: G, ops: StoreOp[]): Promise<void> {
    return this.enqueue({ group, ops });
  }

  /** Queues the deletion of every key under `prefix`, after the writes queued before it. */
  deletePrefix(group: G, prefix: string): Promise<void> {
    return this.enqueue({ group, prefix });
  }

  /** Settles once everything queued so far has (rejects as the last write queued did). */
  settled(): Promise<void> {
    return this.last;
  }

  /**
   * Undefined when no write is queued or under way; otherwise a promise that resolves (never
   * rejects) once everything queued so far has settled, after the callers of those writes have
   * seen how they settled.
   */
  barrier(): Promise<void> | undefined {
    if (this.unsettled === 0) return undefined;
    const done = () => undefined;
    return this.last.then(done, done);
  }

  private enqueue(e: { group: G; ops?: StoreOp[]; prefix?: string }): Promise<void> {
    const p = new Promise<void>((resolve, reject) => this.pending.push({ ...e, resolve, reject, left: 0 }));
    this.stats.writes++;
    this.last = p;
    this.unsettled++;
    const settle = () => void this.unsettled--;
    p.then(settle, settle);
    if (!this.running) {
      this.running = true;
      // Everything queued in this turn of the loop goes in the first batch.
      queueMicrotask(() => void this.drain());
    }
    return p;
  }

  private async drain(): Promise<void> {
    while (this.pending.length > 0) {
      const group = this.pending[0]!.group;
      let n = 1;
      while (n < this.pending.length && this.pending[n]!.group === group) n++;
      const entries = this.pending.splice(0, n);
      try {
        await this.writeGroup(group, entries);
      } catch (err) {
        // Only a bug gets here (store failures are caught per batch): nothing waits forever.
        for (const e of entries) e.reject(err);
      }
    }
    this.running = false;
  }

  private async writeGroup(group: G, entries: Array<Entry<G>>): Promise<void> {
    const units: Array<Unit<G>> = [];
    // Deletions with nothing to delete (or a prefix that could not be listed) settle after the
    // batches: never before a write queued ahead of them.
    const noWrite: Array<() => void> = [];
    for (const e of entries) {
      if (e.ops) {
        units.push({ entry: e, ops: e.ops, bytes: e.ops.reduce((s, op) => s + opBytes(op), 0) });
        continue;
      }
      const prefix = e.prefix!;
      let keys: string[];
      try {
        keys = await this.store.list(group, prefix);
      } catch (err) {
        // Not fatal, as a failed deletion never was: the state stays behind, the writes go on.
        this.onListError(prefix, err);
        noWrite.push(() => e.resolve());
        continue;
      }
      // What this batch puts under the prefix before the deletion is deleted too.
      const seen = new Set(keys);
      for (const u of units) {
        for (const op of u.ops) {
          if (!op.key.startsWith(prefix) || seen.has(op.key)) continue;
          seen.add(op.key);
          keys.push(op.key);
        }
      }
      if (keys.length === 0) {
        noWrite.push(() => e.resolve());
        continue;
      }
      for (let i = 0; i < keys.length; i += DELETE_CHUNK) {
        const ops = keys.slice(i, i + DELETE_CHUNK).map((key) => ({ type: 'del' as const, key }));
        units.push({ entry: e, ops, bytes: ops.reduce((s, op) => s + opBytes(op), 0) });
      }
    }
    for (const u of units) u.entry.left++;
    let i = 0;
    while (i < units.length) {
      const batch: Array<Unit<G>> = [units[i]!];
      let ops = units[i]!.ops.length;
      let bytes = units[i]!.bytes;
      i++;
      while (i < units.length && ops + units[i]!.ops.length <= this.limits.maxOps && bytes + units[i]!.bytes <= this.limits.maxBytes) {
        ops += units[i]!.ops.length;
        bytes += units[i]!.bytes;
        batch.push(units[i]!);
        i++;
      }
      let failure = this.failedGroups.get(group);
      if (!failure) {
        this.stats.batches++;
        try {
          await this.store.write(
            group,
            batch.flatMap((u) => u.ops),
          );
        } catch (err) {
          failure = { err };
          this.failedGroups.set(group, failure);
        }
      }
      for (const u of batch) {
        const e = u.entry;
        if (failure && !e.failed) e.failed = failure;
        if (--e.left > 0) continue;
        if (e.failed) e.reject(e.failed.err);
        else e.resolve();
      }
    }
    for (const settle of noWrite) settle();
  }
}
