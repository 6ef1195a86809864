/**
 * `ExternalScheduler`: the base of an external scheduler, a process that places the task slots of
 * the jobs whose spec says `scheduler: <its name>`. A subclass decides; the base does the rest:
 * finds the leader, registers (SchedulerService.Watch) and keeps the cluster view it streams up to
 * date, calls the subclass when the view changed, sends its placements (Place) one batch at a
 * time (views that arrive meanwhile are merged, so a slow scheduler is never flooded), sends
 * keepalives, reports rejections, and after a master failover or a dropped stream registers again
 * with the (new) leader. A newer registration of the same name fences this one: `run()` then ends
 * with an error.
 *
 * Slot-based: implement `onState(view)`, returning placements for any pending requests.
 * Queue-based: implement `pickNext(queue, view)`, returning the placements of the queue's head
 * (or none to stop this round); the base calls it again with the rest of the queue and the room
 * those placements took off the view.
 *
 * ```ts
 * class FirstFit extends ExternalScheduler {
 *   pickNext(queue: PendingRequest[], view: ClusterView): Placement[] | undefined {
 *     const req = queue[0]!;
 *     const host = [...view.hosts.values()].find((h) => h.schedulable && fitsIn(req.resource, h.free));
 *     return host && [{ appId: req.appId, unit: req.unit, nodeId: host.nodeId, count: 1 }];
 *   }
 * }
 * await new FirstFit({ name: 'ff', style: 'queue', masters: ['127.0.0.1:7070'] }).run();
 * ```
 */
import { errorMessage, type Resource } from '@fuxi/common';
import { loadFuxiProto, type SchedulerEvent__Output, type SchedulerServiceDefinition, type SchedulerView__Output } from '@fuxi/proto';
import { connect, MasterConnection, RpcError, type TlsFiles, type Transport, type TypedClient } from '@fuxi/rpc';
import { clientTransport } from './fuxi-client.js';
import { defaultMasters } from './masters.js';

export interface HostInfo {
  nodeId: string;
  rack: string;
  capacity: Resource;
  free: Resource;
  /** False: cordoned, draining, timing out or lost; placements there are rejected. */
  schedulable: boolean;
}

export interface PendingRequest {
  appId: string;
  /** The task (schedule unit). */
  unit: string;
  /** One slot. */
  resource: Resource;
  /** Slots still wanted. */
  count: number;
  /** The next placement(s) of this unit, in one Place call, must bring at least this many slots (<= 1: no gang). */
  gang: number;
  waitingSinceMs: number;
  /** Position in the queue (priority, then submission order). */
  queueOrder: number;
  priority: number;
}

export interface HistoryEntry {
  kind: 'placed' | 'failed';
  atMs: number;
  appId: string;
  unit: string;
  nodeId: string;
  count: number;
}

export interface ClusterView {
  /** The master's view version this view is. */
  version: number;
  hosts: ReadonlyMap<string, HostInfo>;
  /** Pending requests of this scheduler's jobs, in queue order. */
  pending: readonly PendingRequest[];
  /** Recent placements applied and worker failures (the last `historyLimit`). */
  history: readonly HistoryEntry[];
}

export interface Placement {
  appId: string;
  unit: string;
  nodeId: string;
  count: number;
}

export interface Rejection {
  placement: Placement;
  /** FENCED, NOT_REGISTERED, NOT_ITS_JOB, UNKNOWN_UNIT, OUT_OF_SCOPE, HOST_UNSCHEDULABLE, OVER_CAPACITY, OVER_REQUEST, PARTIAL_GANG, INVALID, RECOVERING. */
  code: string;
  message: string;
}

/**
 * One Place call's outcome, timed (ms, `performance.now()`): `viewAtMs` when the first view it was
 * decided on arrived, `sentAtMs` when the call went out, `doneAtMs` when its answer came.
 */
export interface PlaceOutcome {
  placements: Placement[];
  applied: number;
  rejected: Rejection[];
  viewAtMs: number;
  sentAtMs: number;
  doneAtMs: number;
}

export interface ExternalSchedulerOptions {
  /** The name jobs name in their spec (`scheduler: <name>`). */
  name: string;
  style: 'queue' | 'slot';
  /** Master addresses (default `$FUXI_MASTER` or 127.0.0.1:7070); the leader is found among them. */
  masters?: string[];
  /** Scope: a testbed's hosts, or a quota group's (hosts not reserved for another group). */
  testbed?: string;
  quotaGroup?: string;
  /** History entries kept (default 1,000). */
  historyLimit?: number;
  /**
   * Mutual TLS files, or `insecure` for a plaintext cluster (default: `FUXI_TLS_CA`,
   * `FUXI_TLS_CERT`, `FUXI_TLS_KEY` or `FUXI_INSECURE=1`, as the CLI), or a ready `transport`.
   */
  tls?: TlsFiles;
  insecure?: boolean;
  transport?: Transport;
  /** A bearer token naming the scheduler's caller (a tokens-file entry), instead of its certificate's name. */
  token?: string;
  /** Diagnostics (registrations, reconnects); default silent. */
  log?: (msg: string, fields?: Record<string, unknown>) => void;
}

const now = (): number => performance.now();
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Whether `r` fits in `room`. */
export function fitsIn(r: Resource, room: Resource): boolean {
  return r.cpuMilli <= room.cpuMilli && r.memoryMb <= room.memoryMb;
}

/** How many slots of `r` fit in `room`. */
export function slotsIn(r: Resource, room: Resource): number {
  const c = r.cpuMilli > 0 ? Math.floor(room.cpuMilli / r.cpuMilli) : Infinity;
  const m = r.memoryMb > 0 ? Math.floor(room.memoryMb / r.memoryMb) : Infinity;
  const n = Math.min(c, m);
  return Number.isFinite(n) ? Math.max(0, n) : 1_000_000;
}

export abstract class ExternalScheduler {
  private readonly masters: string[];
  private readonly conn: MasterConnection;
  private readonly transport: Transport;
  private client: TypedClient<SchedulerServiceDefinition> | undefined;
  private stream: (AsyncIterable<SchedulerEvent__Output> & { cancel(): void }) | undefined;
  private stopped = false;
  private epoch = '';
  private stallMs = 10_000;
  private readonly hosts = new Map<string, HostInfo>();
  private readonly pending = new Map<string, PendingRequest>();
  private readonly history: HistoryEntry[] = [];
  private version = 0;
  /** A view arrived that was not decided on yet, and when. */
  private dirtyAt: number | undefined;
  private deciding = false;
  private lastSentAt = 0;
  private keepalive: NodeJS.Timeout | undefined;
  /** Registrations made (the first, then one per reconnect). */
  registrations = 0;

  constructor(readonly opts: ExternalSchedulerOptions) {
    this.masters = opts.masters ?? defaultMasters();
    this.transport = clientTransport({ transport: opts.transport, tls: opts.tls, insecure: opts.insecure });
    this.conn = new MasterConnection(this.masters, { retryForMs: 10_000, transport: this.transport, ...(opts.token ? { token: opts.token } : {}) });
  }

  /** Slot-based: placements for the view's pending requests (the default calls `pickNext` in queue order). */
  protected onState(view: ClusterView): Placement[] | Promise<Placement[]> {
    const out: Placement[] = [];
    const hosts = new Map([...view.hosts].map(([id, h]) => [id, { ...h, free: { ...h.free } }]));
    let queue = [...view.pending];
    while (queue.length > 0) {
      const picked = this.pickNext(queue, { ...view, hosts, pending: queue });
      if (picked === undefined || picked.length === 0) break;
      for (const p of picked) {
        const h = hosts.get(p.nodeId);
        const req = queue.find((q) => q.appId === p.appId && q.unit === p.unit);
        if (h && req) h.free = { cpuMilli: h.free.cpuMilli - req.resource.cpuMilli * p.count, memoryMb: h.free.memoryMb - req.resource.memoryMb * p.count };
      }
      out.push(...picked);
      const done = new Set(picked.map((p) => `${p.appId}/${p.unit}`));
      queue = queue.filter((q) => !done.has(`${q.appId}/${q.unit}`));
    }
    return out;
  }

  /** Queue-based: the placements of the queue's head (`queue[0]`), or undefined to stop this round. */
  protected pickNext(queue: readonly PendingRequest[], view: ClusterView): Placement[] | undefined {
    void queue;
    void view;
    return undefined;
  }

  /** Placements the master rejected, with its reasons. */
  protected onRejected(rejections: readonly Rejection[]): void {
    void rejections;
  }

  /** Every Place call's outcome (measurements). */
  protected onPlaced(outcome: PlaceOutcome): void {
    void outcome;
  }

  /** Registered with a master: `epoch` fences older registrations of the name. */
  protected onRegistered(epoch: string, masterAddress: string): void {
    void epoch;
    void masterAddress;
  }

  /** The current view (a copy of the hosts map is not made: do not change it). */
  view(): ClusterView {
    return { version: this.version, hosts: this.hosts, pending: [...this.pending.values()].sort((a, b) => a.queueOrder - b.queueOrder), history: this.history };
  }

  /** Runs until `stop()` (resolves) or until fenced by a newer registration of the name (rejects). */
  async run(): Promise<void> {
    let backoff = 100;
    while (!this.stopped) {
      try {
        await this.attachOnce();
        backoff = 100;
      } catch (e) {
        if (this.stopped) break;
        if (e instanceof RpcError && e.code === 'FAILED_PRECONDITION') {
          this.stop();
          throw e;
        }
        const leader = e instanceof RpcError ? e.leader : '';
        this.log('stream ended; registering again', { err: errorMessage(e), leader });
        if (leader) this.useMaster(leader);
        else {
          await sleep(backoff);
          backoff = Math.min(2000, backoff * 2);
        }
      }
    }
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.keepalive);
    this.stream?.cancel();
    this.client?.close();
    this.conn.close();
  }

  private log(msg: string, fields?: Record<string, unknown>): void {
    this.opts.log?.(msg, fields);
  }

  private useMaster(address: string): void {
    if (this.client?.address === address) return;
    this.client?.close();
    this.client = connect(loadFuxiProto().SchedulerService, address, { transport: this.transport, ...(this.opts.token ? { token: this.opts.token } : {}) });
  }

  /** Finds the leader, registers, and follows its stream until it ends. */
  private async attachOnce(): Promise<void> {
    if (!this.client) {
      // The leader, as MasterConnection finds it (a standby redirects).
      await this.conn.call('GetClusterStatus', {}, { retry: true, deadlineMs: 2000 });
      this.useMaster(this.conn.address);
    }
    const client = this.client!;
    const stream = client.stream.Watch({
      name: this.opts.name,
      testbed: this.opts.testbed ?? '',
      quotaGroup: this.opts.quotaGroup ?? '',
      style: this.opts.style,
    });
    this.stream = stream;
    let ended = false;
    try {
      for await (const ev of stream) {
        if (ev.registered) {
          this.epoch = String(ev.registered.epoch);
          this.stallMs = ev.registered.stallMs || 10_000;
          this.registrations++;
          this.log('registered', { epoch: this.epoch, master: client.address });
          this.onRegistered(this.epoch, client.address);
          this.startKeepalive();
        } else if (ev.view) {
          this.applyView(ev.view);
          this.dirtyAt ??= now();
          void this.decide();
        }
      }
      ended = true;
    } catch (e) {
      // A dead master, a standby's redirect, a broken stream: the next attempt finds the leader.
      if (!(e instanceof RpcError && e.leader)) {
        this.client?.close();
        this.client = undefined;
      }
      throw e;
    } finally {
      this.epoch = '';
      this.hosts.clear();
      this.pending.clear();
    }
    if (ended && !this.stopped) throw new RpcError('UNAVAILABLE', 'the scheduler stream ended', 14, {}, 'Watch');
  }

  private applyView(v: SchedulerView__Output): void {
    if (v.full) {
      this.hosts.clear();
      this.pending.clear();
    }
    this.version = Number(v.version);
    for (const h of v.hosts) {
      this.hosts.set(h.nodeId, { nodeId: h.nodeId, rack: h.rack, capacity: res(h.capacity), free: res(h.free), schedulable: h.schedulable });
    }
    for (const id of v.removedHosts) this.hosts.delete(id);
    for (const p of v.pending) {
      this.pending.set(`${p.appId}/${p.unit}`, {
        appId: p.appId,
        unit: p.unit,
        resource: res(p.resource),
        count: p.count,
        gang: p.gang,
        waitingSinceMs: Number(p.waitingSinceMs),
        queueOrder: p.queueOrder,
        priority: p.priority,
      });
    }
    for (const key of v.removedPending) this.pending.delete(key);
    for (const e of v.history) {
      this.history.push({
        kind: e.kind === 'failed' ? 'failed' : 'placed',
        atMs: Number(e.atMs),
        appId: e.appId,
        unit: e.unit,
        nodeId: e.nodeId,
        count: e.count,
      });
    }
    const limit = this.opts.historyLimit ?? 1000;
    if (this.history.length > limit) this.history.splice(0, this.history.length - limit);
  }

  /** One decision and one Place call at a time; views that arrive meanwhile are decided on next. */
  private async decide(): Promise<void> {
    if (this.deciding) return;
    this.deciding = true;
    try {
      while (this.dirtyAt !== undefined && this.epoch !== '' && !this.stopped) {
        const viewAt = this.dirtyAt;
        this.dirtyAt = undefined;
        if (this.pending.size === 0) continue;
        const placements = await this.onState(this.view());
        if (placements.length === 0) continue;
        await this.place(placements, viewAt);
      }
    } catch (e) {
      this.log('placing failed', { err: errorMessage(e) });
    } finally {
      this.deciding = false;
    }
  }

  private async place(placements: Placement[], viewAt: number): Promise<void> {
    const client = this.client;
    if (!client) return;
    const sentAt = now();
    this.lastSentAt = sentAt;
    const r = await client.Place({ name: this.opts.name, epoch: this.epoch, version: String(this.version), placements }, { deadlineMs: 5000 });
    const rejected = r.rejected.map((x) => ({ placement: placements[x.index]!, code: x.code, message: x.message }));
    // What the master applied is known now: take it off the local view until the next push says so.
    const refused = new Set(r.rejected.map((x) => x.index));
    placements.forEach((p, i) => {
      if (refused.has(i)) return;
      const key = `${p.appId}/${p.unit}`;
      const req = this.pending.get(key);
      const h = this.hosts.get(p.nodeId);
      if (req && h) h.free = { cpuMilli: h.free.cpuMilli - req.resource.cpuMilli * p.count, memoryMb: h.free.memoryMb - req.resource.memoryMb * p.count };
      if (req) {
        req.count -= p.count;
        req.gang = 1;
        if (req.count <= 0) this.pending.delete(key);
      }
    });
    this.onPlaced({ placements, applied: r.applied, rejected, viewAtMs: viewAt, sentAtMs: sentAt, doneAtMs: now() });
    if (rejected.length > 0) this.onRejected(rejected);
  }

  private startKeepalive(): void {
    clearInterval(this.keepalive);
    const every = Math.max(100, Math.floor(this.stallMs / 3));
    this.keepalive = setInterval(() => {
      const client = this.client;
      if (!client || this.epoch === '' || now() - this.lastSentAt < every) return;
      this.lastSentAt = now();
      client.Place({ name: this.opts.name, epoch: this.epoch, version: String(this.version), placements: [] }, { deadlineMs: 5000 }).catch(() => undefined);
    }, every);
    this.keepalive.unref();
  }
}

function res(r: { cpuMilli?: number; memoryMb?: number } | null | undefined): Resource {
  return { cpuMilli: r?.cpuMilli ?? 0, memoryMb: r?.memoryMb ?? 0 };
}
