/**
 * What leader election needs from etcd, as plain TypeScript: leases with a visible keep-alive loop,
 * create-if-absent under a lease, range queries by create revision, and watches. `EtcdStore`
 * implements it (`store.coordination()`); the election itself (election.ts) never imports etcd3.
 *
 * Keys are relative to the store's prefix, like every other store key. Revisions and lease ids are
 * int64 decimal strings.
 */
/** A write guard: writes apply only while `key` exists with this create revision (decimal). */
export interface StoreGuard {
  key: string;
  createRevision: string;
}

export interface KeyRecord {
  key: string;
  value: string;
  createRevision: string;
  modRevision: string;
  /** Lease id ('0' when none). */
  lease: string;
}

/** What happens in a lease's keep-alive loop; the election's watchdog feeds on these. */
export interface LeaseListener {
  /** A keep-alive request was written to the stream. */
  keepAliveSent?(): void;
  /** etcd answered a keep-alive: the lease lives on (the answer to the oldest unanswered request). */
  keepAliveOk?(ttlSec: number): void;
  /** The keep-alive stream broke; the client retries on a new stream (`streamOpened`). */
  keepAliveFailed?(err: Error): void;
  /** A new keep-alive stream is open (requests sent on older streams will not be answered). */
  streamOpened?(): void;
  /** The lease is gone (revoked or expired, or unrenewable for 2 x TTL). Not fired by revoke(). */
  lost?(err: Error): void;
}

export interface LeaseHandle {
  /** The lease id, decimal. */
  readonly id: string;
  readonly ttlSec: number;
  /** Revokes the lease (deleting its keys); stops the keep-alive loop first. Rejects on timeout. */
  revoke(timeoutMs?: number): Promise<void>;
  /** Stops keep-alives without revoking: the lease expires by itself after its TTL. */
  release(): void;
}

export interface WatchEvent {
  type: 'put' | 'delete';
  key: string;
  /** The value put (empty for deletes). */
  value: string;
  modRevision: string;
}

export interface WatchHandle {
  /** Stops the watch. Never blocks on etcd (safe while etcd is unreachable). */
  cancel(): void;
}

/**
 * etcd cancelled a watch because the revision it was to resume from has been compacted (a watch
 * that reconnects after auto-compaction, or one started behind): events since then are lost, so
 * the watcher reads the current state and watches again from there.
 */
export class WatchCompactedError extends Error {
  constructor(
    readonly key: string,
    readonly fromRevision: string,
  ) {
    super(`watch on ${key} cancelled by etcd: revision ${fromRevision} has been compacted`);
    this.name = 'WatchCompactedError';
  }
}

export interface WatchCallbacks {
  onEvent(e: WatchEvent): void;
  /** The watch cannot continue (its start revision was compacted: `WatchCompactedError`); it is cancelled. */
  onError(err: Error): void;
  /** The stream reconnected after a disconnect (events are resumed, none are lost). */
  onReconnect?(): void;
}

export interface CoordinationBackend {
  /** Grants a lease with automatic keep-alives; rejects if etcd cannot be reached. */
  grantLease(ttlSec: number, listener: LeaseListener): Promise<LeaseHandle>;
  /**
   * `IF create_revision(key) == 0 THEN put(key, value, lease)`; either way returns the key's create
   * revision and the revision of the store at that point.
   */
  createWithLease(key: string, value: string, leaseId: string): Promise<{ created: boolean; createRevision: string; revision: string }>;
  /** One key (with revisions), and the store revision of the read. */
  getRecord(key: string): Promise<{ kv: KeyRecord | undefined; revision: string }>;
  /**
   * The key under `prefix` with the highest create revision that is <= maxCreateRevision, or with
   * `maxCreateRevision` undefined the key with the LOWEST create revision (the election's leader).
   */
  findByCreateRevision(prefix: string, maxCreateRevision: string | undefined): Promise<{ kv: KeyRecord | undefined; revision: string }>;
  /** Watches one key, or every key under `prefix` when `prefix` is true, from `fromRevision` on. */
  watch(key: string, opts: { prefix?: boolean; fromRevision: string }, cb: WatchCallbacks): WatchHandle;
}
