/**
 * The etcd backend (docs/design.md, "Hard state and soft state" and "Failover"): the production and HA store. This file is the only one
 * that imports etcd3; everything the master needs from etcd goes through it:
 *
 * - `EtcdStore` implements `Store` under a key prefix (default `/fuxi/`); `batch` is one etcd txn.
 * - `withGuard({ key, createRevision })` returns a fenced view: every write is one txn
 *   `IF create_revision(key) == createRevision THEN ops ELSE fail`, throwing `FencedError` on
 *   failure. With the guard taken from the election (the leader's campaign key and its create
 *   revision = the epoch), a deposed master cannot write any more, however late it learns it.
 * - `coordination()` gives the lease / txn / watch primitives that `LeaderElection` runs on.
 *
 * Keys passed to every method are relative to the prefix; the subtree `election/` under it is used by
 * `LeaderElection`. `etcd3-watch-guard.ts` keeps a fault of the client's watch streams from ending
 * the process.
 */
import './etcd3-watch-guard.js';
import {
  AlarmAction,
  AlarmType,
  CompareResult,
  CompareTarget,
  Etcd3,
  GRPCDeadlineExceededError,
  GRPCResourceExhastedError,
  SortOrder,
  SortTarget,
  isRecoverableError,
  type ICompare,
  type IKeyValue,
  type IOptions,
  type IRequestOp,
  type Lease,
} from 'etcd3';
import {
  backoffMs,
  FailedPreconditionError,
  FuxiError,
  InternalError,
  InvalidArgumentError,
  ResourceExhaustedError,
  UnavailableError,
  errorMessage,
  nullLogger,
  type Logger,
} from '@fuxi/common';
import {
  WatchCompactedError,
  type CoordinationBackend,
  type KeyRecord,
  type LeaseHandle,
  type LeaseListener,
  type StoreGuard,
  type WatchCallbacks,
  type WatchHandle,
} from './coordination.js';
import type { KeyValue, Store, StoreOp } from './store.js';

export interface EtcdStoreOptions {
  /** Client URLs, e.g. `['http://10.0.0.1:2379', 'http://10.0.0.2:2379']` (or one string). */
  endpoints: string[] | string;
  /** Namespace for every key, default `/fuxi/`. */
  prefix?: string;
  /** Deadline of every unary etcd call (ms), default 5000. Streams (watch, keep-alive) have none. */
  requestTimeoutMs?: number;
  /** Most distinct keys in one batch: etcd's `--max-txn-ops` (default 128 in etcd). */
  maxTxnOps?: number;
  /** Keys fetched per range request in `list` (pages read at one revision), default 1000. */
  listPageSize?: number;
  auth?: { username: string; password: string };
  log?: Logger;
}

export type { StoreGuard };

/** A store whose writes can be fenced by a guard key. */
export interface GuardableStore extends Store {
  withGuard(guard: StoreGuard): Store;
}

export function isGuardable(store: Store): store is GuardableStore {
  return typeof (store as Partial<GuardableStore>).withGuard === 'function';
}

/**
 * A guarded write failed: the guard key is gone or was re-created, i.e. the writer lost the
 * leadership the guard stands for. Nothing of the write was applied.
 */
export class FencedError extends FailedPreconditionError {
  constructor(
    readonly guard: StoreGuard,
    /** The guard key's create revision now, '' if it does not exist. */
    readonly actualCreateRevision: string,
  ) {
    super(
      `fenced: guard key "${guard.key}" ${actualCreateRevision ? `has create revision ${actualCreateRevision}` : 'does not exist'}, ` +
        `expected ${guard.createRevision}; this writer no longer holds the leadership`,
      { fenced: guard.key, expected: guard.createRevision, actual: actualCreateRevision },
    );
  }
}

/**
 * etcd is out of space (`etcdserver: mvcc: database space exceeded`; its NOSPACE alarm is raised):
 * it refuses every write (reads, deletes and lease keep-alives still work) until an operator frees
 * space and disarms the alarm. The write that got this answer may still have been applied: etcd
 * applies a write that crosses its quota and then answers NOSPACE (its `quotaApplierV3`); only the
 * writes after it are refused before they are applied. So its outcome is unknown: a reader must
 * look at the store to know.
 */
export class StoreOutOfSpaceError extends ResourceExhaustedError {
  constructor(op: string, detail: string) {
    super(
      'store space',
      `etcd ${op}: etcd is out of space (${detail}). Free space: etcdctl compact <current revision>, ` +
        'etcdctl defrag, then etcdctl alarm disarm (and raise --quota-backend-bytes if it is too small)',
    );
  }
}

/**
 * etcd's NOSPACE answer: gRPC RESOURCE_EXHAUSTED with "database space exceeded" (grpc-js also says
 * RESOURCE_EXHAUSTED for a message over its size limit, which is not etcd being full).
 */
function isNoSpace(e: unknown): boolean {
  return e instanceof GRPCResourceExhastedError && /database space exceeded/.test(e.message);
}

/** A read at a revision that etcd has compacted away ("required revision has been compacted"). */
function isCompacted(e: unknown): boolean {
  return e instanceof Error && /required revision has been compacted/.test(e.message);
}

type FaultHandling = NonNullable<IOptions['faultHandling']>;
type Policy = ReturnType<NonNullable<FaultHandling['host']>>;
type WatchBackoff = NonNullable<FaultHandling['watchBackoff']>;

const noEvent = () => ({ dispose() {} });

/**
 * etcd3's default fault handling puts a circuit breaker on each host that stays open 5 s after three
 * failures, which delays the first successful call after etcd comes back. We retry by ourselves
 * (the election's backoff, the master's callers), so: no breaker, and one immediate retry (on the
 * next host) of calls that failed for connection reasons; a call that ran into its deadline is not
 * retried (its time budget is spent), nor one refused for space (etcd3 counts it as recoverable).
 */
function retryPolicy(maxAttempts: number): Policy {
  return {
    onSuccess: noEvent,
    onFailure: noEvent,
    async execute<T>(fn: (ctx: { signal: AbortSignal }) => PromiseLike<T> | T, signal?: AbortSignal): Promise<T> {
      const ctx = { signal: signal ?? new AbortController().signal };
      for (let attempt = 1; ; attempt++) {
        try {
          return await fn(ctx);
        } catch (e) {
          if (attempt >= maxAttempts || !(e instanceof Error) || !isRecoverableError(e) || e instanceof GRPCDeadlineExceededError || isNoSpace(e)) throw e;
        }
      }
    },
  } as unknown as Policy;
}

/**
 * Watch streams reconnect after 100 ms, doubling to at most 2 s, jittered (`backoffMs`; etcd3's
 * default grows to 30 s): the wait after the `attempt`-th consecutive failure, and the next ones.
 */
function watchBackoff(attempt = 1): WatchBackoff & { duration: number } {
  return { duration: backoffMs(attempt, { initialMs: 100, maxMs: 2000 }, Math.random), next: () => watchBackoff(attempt + 1) } as unknown as WatchBackoff & {
    duration: number;
  };
}

/** The range end covering every key that starts with `prefix` (etcd's "prefix + 1"). */
function prefixRangeEnd(prefix: Buffer): Buffer {
  const end = Buffer.from(prefix);
  for (let i = end.length - 1; i >= 0; i--) {
    if (end[i]! < 0xff) {
      end[i] = end[i]! + 1;
      return end.subarray(0, i + 1);
    }
  }
  return Buffer.from([0]); // all keys
}

function normalizeOps(ops: readonly StoreOp[]): StoreOp[] {
  // etcd refuses a txn that touches a key twice; the last op on a key decides its final state.
  const last = new Map<string, StoreOp>();
  for (const op of ops) {
    last.delete(op.key);
    last.set(op.key, op);
  }
  return [...last.values()];
}

export class EtcdStore implements GuardableStore {
  readonly kind = 'etcd';
  readonly prefix: string;
  private readonly prefixBuf: Buffer;
  private readonly requestTimeoutMs: number;
  private readonly maxTxnOps: number;
  private readonly listPageSize: number;
  private readonly log: Logger;
  private readonly leases = new Set<Lease>();
  private closed = false;

  private constructor(
    private readonly client: Etcd3,
    opts: EtcdStoreOptions,
  ) {
    this.prefix = opts.prefix ?? '/fuxi/';
    this.prefixBuf = Buffer.from(this.prefix, 'utf8');
    this.requestTimeoutMs = opts.requestTimeoutMs ?? 5000;
    this.maxTxnOps = opts.maxTxnOps ?? 128;
    this.listPageSize = opts.listPageSize ?? 1000;
    this.log = (opts.log ?? nullLogger).child({ store: 'etcd' });
  }

  /**
   * Creates the client. Does not contact etcd (an unreachable etcd makes calls fail with
   * `UnavailableError`, and the election retries); use `ping()` to check.
   */
  static async open(opts: EtcdStoreOptions): Promise<EtcdStore> {
    const hosts = typeof opts.endpoints === 'string' ? [opts.endpoints] : opts.endpoints;
    if (hosts.length === 0 || hosts.some((h) => !h)) throw new InvalidArgumentError('store.endpoints', 'at least one etcd endpoint is required');
    if (opts.prefix !== undefined && !opts.prefix) throw new InvalidArgumentError('store.prefix', 'must not be empty');
    const timeout = opts.requestTimeoutMs ?? 5000;
    const client = new Etcd3({
      hosts,
      ...(opts.auth ? { auth: opts.auth } : {}),
      dialTimeout: timeout,
      defaultCallOptions: (ctx) => (ctx.isStream ? {} : { deadline: Date.now() + timeout }),
      // No limit on the size of an answer (grpc-js's default is 4 MiB): a page of `list` holds up
      // to listPageSize values, and a job spec alone may be up to maxJobSpecBytes (1 MiB).
      grpcOptions: { 'grpc.initial_reconnect_backoff_ms': 200, 'grpc.max_reconnect_backoff_ms': 2000, 'grpc.max_receive_message_length': -1 },
      faultHandling: {
        host: () => retryPolicy(1),
        global: retryPolicy(Math.max(2, hosts.length)),
        watchBackoff: { next: () => watchBackoff() } as unknown as WatchBackoff,
      },
    });
    return new EtcdStore(client, opts);
  }

  // ---- keys ----

  private full(key: string): Buffer {
    return Buffer.concat([this.prefixBuf, Buffer.from(key, 'utf8')]);
  }

  private rel(key: Buffer): string {
    return key.subarray(this.prefixBuf.length).toString('utf8');
  }

  private record(kv: IKeyValue): KeyRecord {
    return { key: this.rel(kv.key), value: kv.value.toString('utf8'), createRevision: kv.create_revision, modRevision: kv.mod_revision, lease: kv.lease };
  }

  private check(): void {
    if (this.closed) throw new Error('store is closed');
  }

  /** Maps etcd3 errors to the typed errors of @fuxi/common. */
  private wrap(op: string, e: unknown): Error {
    if (e instanceof FuxiError) return e;
    const msg = errorMessage(e);
    if (isNoSpace(e)) return new StoreOutOfSpaceError(op, msg.replace(/^\d+ RESOURCE_EXHAUSTED: /, ''));
    if (e instanceof Error && isRecoverableError(e)) return new UnavailableError(`etcd ${op}: ${msg}`);
    return new InternalError(`etcd ${op}: ${msg}`);
  }

  private async call<T>(op: string, fn: () => Promise<T>): Promise<T> {
    this.check();
    try {
      return await fn();
    } catch (e) {
      throw this.wrap(op, e);
    }
  }

  // ---- Store ----

  async get(key: string): Promise<string | undefined> {
    return this.call('get', async () => {
      const res = await this.client.kv.range({ key: this.full(key) });
      return res.kvs[0]?.value.toString('utf8');
    });
  }

  /**
   * Every key under `prefix`, read in pages at the revision of the first page (one consistent
   * view). When etcd compacts that revision away before the last page (auto-compaction, an
   * operator), the listing starts over at the current revision, up to 5 times.
   */
  async list(prefix: string): Promise<KeyValue[]> {
    return this.call('list', async () => {
      for (let attempt = 1; ; attempt++) {
        try {
          return await this.listAtOneRevision(prefix);
        } catch (e) {
          if (!isCompacted(e) || attempt >= 5) throw e;
          this.log.info({ prefix, attempt }, 'list: etcd compacted the revision being read; reading again at the current one');
        }
      }
    });
  }

  private async listAtOneRevision(prefix: string): Promise<KeyValue[]> {
    const start = this.full(prefix);
    const end = prefixRangeEnd(start);
    const out: KeyValue[] = [];
    let from = start;
    let revision: string | undefined;
    for (;;) {
      const res = await this.client.kv.range({
        key: from,
        range_end: end,
        limit: this.listPageSize,
        sort_target: SortTarget.Key,
        sort_order: SortOrder.Ascend,
        ...(revision ? { revision } : {}),
      });
      revision ??= res.header.revision;
      for (const kv of res.kvs) out.push({ key: this.rel(kv.key), value: kv.value.toString('utf8') });
      const last = res.kvs[res.kvs.length - 1];
      if (!res.more || !last) break;
      from = Buffer.concat([last.key, Buffer.from([0])]);
    }
    return out;
  }

  async put(key: string, value: string): Promise<void> {
    await this.write('put', [{ type: 'put', key, value }], undefined);
  }

  async delete(key: string): Promise<void> {
    await this.write('delete', [{ type: 'del', key }], undefined);
  }

  async batch(ops: readonly StoreOp[]): Promise<void> {
    await this.write('batch', ops, undefined);
  }

  /** A view of this store whose every write is fenced by `guard` (see FencedError). Reads are not. */
  withGuard(guard: StoreGuard): Store {
    if (!guard.key) throw new InvalidArgumentError('guard.key', 'must not be empty');
    if (!/^[1-9][0-9]*$/.test(guard.createRevision))
      throw new InvalidArgumentError('guard.createRevision', `not a positive revision: "${guard.createRevision}"`);
    return new GuardedEtcdStore(this, { ...guard });
  }

  /** @internal The one write path: a txn of `ops`, under `guard` if given. */
  async write(op: string, ops: readonly StoreOp[], guard: StoreGuard | undefined): Promise<void> {
    const norm = normalizeOps(ops);
    // An empty unguarded batch is a no-op; an empty guarded one still checks the guard.
    if (norm.length === 0 && !guard) return;
    if (norm.length > this.maxTxnOps)
      throw new InvalidArgumentError('ops', `an atomic batch on etcd touches at most ${this.maxTxnOps} keys (etcd --max-txn-ops); got ${norm.length}`);
    const success: IRequestOp[] = norm.map((o) =>
      o.type === 'put' ? { request_put: { key: this.full(o.key), value: Buffer.from(o.value, 'utf8') } } : { request_delete_range: { key: this.full(o.key) } },
    );
    await this.call(op, async () => {
      if (!guard) {
        if (success.length === 1) {
          const only = success[0]!;
          if (only.request_put) await this.client.kv.put(only.request_put);
          else await this.client.kv.deleteRange(only.request_delete_range!);
        } else {
          await this.client.kv.txn({ compare: [], success, failure: [] });
        }
        return;
      }
      const guardKey = this.full(guard.key);
      const compare: ICompare = { key: guardKey, target: CompareTarget.Create, result: CompareResult.Equal, create_revision: guard.createRevision };
      const res = await this.client.kv.txn({ compare: [compare], success, failure: [{ request_range: { key: guardKey } }] });
      if (!res.succeeded) {
        const actual = res.responses[0]?.response_range?.kvs[0]?.create_revision ?? '';
        this.log.warn({ guard, actual, op }, 'fenced write rejected');
        throw new FencedError(guard, actual);
      }
    });
  }

  /** Checks that etcd answers (a linearizable read). Throws UnavailableError if not. */
  async ping(timeoutMs = this.requestTimeoutMs): Promise<void> {
    await this.call('ping', async () => {
      await this.client.kv.range({ key: this.prefixBuf, count_only: true }, { deadline: Date.now() + timeoutMs });
    });
  }

  /** Revokes a lease by id (operators forcing a leader out; tests). Its keys are deleted. */
  async revokeLease(leaseId: string): Promise<void> {
    await this.call('lease revoke', async () => {
      await this.client.leaseClient.leaseRevoke({ ID: leaseId });
    });
  }

  // ---- maintenance (the master asks about space; operators and tests free it) ----

  /** Whether etcd's NOSPACE alarm is raised on any member (then every write is refused). */
  async outOfSpace(timeoutMs = this.requestTimeoutMs): Promise<boolean> {
    return this.call('alarm list', async () => {
      const res = await this.client.maintenance.alarm({ action: AlarmAction.Get, memberID: 0, alarm: AlarmType.None }, { deadline: Date.now() + timeoutMs });
      return res.alarms.some((a) => a.alarm === 'Nospace');
    });
  }

  /** `etcdctl compact <current revision>`: drops every older revision of every key (all prefixes); returns that revision. */
  async compact(): Promise<string> {
    return this.call('compact', async () => {
      const { header } = await this.client.kv.range({ key: this.prefixBuf, count_only: true });
      await this.client.kv.compact({ revision: header.revision, physical: true });
      return header.revision;
    });
  }

  /** `etcdctl defrag` on the member this client talks to: gives the space compaction freed back. */
  async defragment(): Promise<void> {
    await this.call('defragment', async () => {
      await this.client.maintenance.defragment({ deadline: Date.now() + Math.max(this.requestTimeoutMs, 30_000) });
    });
  }

  /** `etcdctl alarm disarm` for NOSPACE: etcd accepts writes again (raised again if still full). */
  async disarmNoSpace(): Promise<void> {
    await this.call('alarm disarm', async () => {
      const res = await this.client.maintenance.alarm({ action: AlarmAction.Get, memberID: 0, alarm: AlarmType.None });
      for (const a of res.alarms) {
        if (a.alarm === 'Nospace') await this.client.maintenance.alarm({ action: AlarmAction.Deactivate, memberID: a.memberID, alarm: AlarmType.Nospace });
      }
    });
  }

  /** Releases every lease granted through this store (they expire after their TTL), then disconnects. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const l of this.leases) l.release();
    this.leases.clear();
    this.client.close();
  }

  // ---- coordination primitives (for LeaderElection) ----

  coordination(): CoordinationBackend {
    return {
      grantLease: (ttlSec, listener) => this.grantLease(ttlSec, listener),
      createWithLease: (key, value, leaseId) => this.createWithLease(key, value, leaseId),
      getRecord: (key) => this.getRecord(key),
      findByCreateRevision: (prefix, max) => this.findByCreateRevision(prefix, max),
      watch: (key, opts, cb) => this.watch(key, opts, cb),
    };
  }

  private async grantLease(ttlSec: number, listener: LeaseListener): Promise<LeaseHandle> {
    this.check();
    if (!Number.isInteger(ttlSec) || ttlSec < 1) throw new InvalidArgumentError('ttlSec', `a lease TTL is a whole number of seconds >= 1, got ${ttlSec}`);
    const lease = this.client.lease(ttlSec, { autoKeepAlive: true });
    lease.on('keepaliveFired', () => listener.keepAliveSent?.());
    lease.on('keepaliveSucceeded', (res) => listener.keepAliveOk?.(Number(res.TTL)));
    lease.on('keepaliveFailed', (err) => listener.keepAliveFailed?.(err as unknown as Error));
    lease.on('keepaliveEstablished', () => listener.streamOpened?.());
    lease.on('lost', (err) => listener.lost?.(err));
    this.leases.add(lease);
    let id: string;
    try {
      id = await lease.grant();
    } catch (e) {
      this.leases.delete(lease);
      lease.release();
      throw this.wrap('lease grant', e);
    }
    return {
      id,
      ttlSec,
      revoke: async (timeoutMs = this.requestTimeoutMs) => {
        this.leases.delete(lease);
        if (this.closed) return;
        try {
          await lease.revoke({ deadline: Date.now() + timeoutMs });
        } catch (e) {
          throw this.wrap('lease revoke', e);
        }
      },
      release: () => {
        this.leases.delete(lease);
        lease.release();
      },
    };
  }

  private async createWithLease(key: string, value: string, leaseId: string): Promise<{ created: boolean; createRevision: string; revision: string }> {
    return this.call('campaign', async () => {
      const k = this.full(key);
      const res = await this.client.kv.txn({
        compare: [{ key: k, target: CompareTarget.Create, result: CompareResult.Equal, create_revision: 0 }],
        success: [{ request_put: { key: k, value: Buffer.from(value, 'utf8'), lease: leaseId } }],
        failure: [{ request_range: { key: k } }],
      });
      if (res.succeeded) return { created: true, createRevision: res.header.revision, revision: res.header.revision };
      const kv = res.responses[0]?.response_range?.kvs[0];
      if (!kv) throw new InternalError(`etcd campaign: key ${key} exists and does not`);
      return { created: false, createRevision: kv.create_revision, revision: res.header.revision };
    });
  }

  private async getRecord(key: string): Promise<{ kv: KeyRecord | undefined; revision: string }> {
    return this.call('get', async () => {
      const res = await this.client.kv.range({ key: this.full(key) });
      const kv = res.kvs[0];
      return { kv: kv ? this.record(kv) : undefined, revision: res.header.revision };
    });
  }

  private async findByCreateRevision(prefix: string, maxCreateRevision: string | undefined): Promise<{ kv: KeyRecord | undefined; revision: string }> {
    return this.call('range', async () => {
      const start = this.full(prefix);
      const res = await this.client.kv.range({
        key: start,
        range_end: prefixRangeEnd(start),
        limit: 1,
        sort_target: SortTarget.Create,
        sort_order: maxCreateRevision === undefined ? SortOrder.Ascend : SortOrder.Descend,
        ...(maxCreateRevision === undefined ? {} : { max_create_revision: maxCreateRevision }),
      });
      const kv = res.kvs[0];
      return { kv: kv ? this.record(kv) : undefined, revision: res.header.revision };
    });
  }

  private watch(key: string, opts: { prefix?: boolean; fromRevision: string }, cb: WatchCallbacks): WatchHandle {
    this.check();
    const builder = this.client.watch();
    const w = (opts.prefix ? builder.prefix(this.full(key)) : builder.key(this.full(key))).startRevision(opts.fromRevision).watcher();
    let cancelled = false;
    let disconnected = false;
    const cancel = () => {
      if (cancelled) return;
      cancelled = true;
      // Never awaited: cancelling a watch that is still connecting waits for etcd.
      void w.cancel().catch(() => undefined);
    };
    w.on('put', (kv) => {
      if (!cancelled) cb.onEvent({ type: 'put', key: this.rel(kv.key), value: kv.value.toString('utf8'), modRevision: kv.mod_revision });
    });
    w.on('delete', (kv) => {
      if (!cancelled) cb.onEvent({ type: 'delete', key: this.rel(kv.key), value: '', modRevision: kv.mod_revision });
    });
    w.on('disconnected', () => {
      disconnected = true;
    });
    w.on('connected', () => {
      if (disconnected && !cancelled) {
        disconnected = false;
        cb.onReconnect?.();
      }
    });
    w.on('error', (err) => {
      if (cancelled) return;
      cancel();
      // etcd cancels a watch whose start revision it compacted with an empty reason (the etcd3
      // client does not pass the compact revision on); every other cancellation names its reason.
      cb.onError(/^Watcher canceled: ?$/.test(err.message.trim()) ? new WatchCompactedError(key, String(w.lastRevision() ?? opts.fromRevision)) : err);
    });
    return { cancel };
  }
}

/** The fenced view returned by `EtcdStore.withGuard`. `close()` closes the view only. */
class GuardedEtcdStore implements GuardableStore {
  readonly kind = 'etcd';
  private closed = false;

  constructor(
    private readonly parent: EtcdStore,
    readonly guard: StoreGuard,
  ) {}

  private check(): void {
    if (this.closed) throw new Error('store is closed');
  }

  async get(key: string): Promise<string | undefined> {
    this.check();
    return this.parent.get(key);
  }

  async list(prefix: string): Promise<KeyValue[]> {
    this.check();
    return this.parent.list(prefix);
  }

  async put(key: string, value: string): Promise<void> {
    this.check();
    await this.parent.write('put', [{ type: 'put', key, value }], this.guard);
  }

  async delete(key: string): Promise<void> {
    this.check();
    await this.parent.write('delete', [{ type: 'del', key }], this.guard);
  }

  async batch(ops: readonly StoreOp[]): Promise<void> {
    this.check();
    await this.parent.write('batch', ops, this.guard);
  }

  withGuard(guard: StoreGuard): Store {
    return this.parent.withGuard(guard);
  }

  async close(): Promise<void> {
    this.closed = true;
  }
}
