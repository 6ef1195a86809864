/**
 * Delivers worker events to application masters (`AppMasterService.WorkerEvents`).
 *
 * One queue per app: batched, retried with capped, jittered exponential backoff (`backoffMs`) until
 * delivered, retargeted when a newer AM attempt's address arrives, and dropped after `dropAfterMs`
 * of failures (the AM then learns worker states with ListWorkers when it comes back). Only the
 * latest status of each worker is kept while undelivered, and the latest record of each data path
 * the node's data service served (`pushPaths`; dropped with the events, they are soft state).
 *
 * An end (succeeded, failed, killed, rejected) goes out at once. A worker that only started waits up
 * to `holdStartsMs` (20 ms) for company: most short tasks end within it, and their start and end
 * then reach the AM as one call with the end alone (the newest status of each worker is what is
 * sent), not two.
 */
import { loadFuxiProto, type AppMasterServiceDefinition, type PathRecord, type WorkerEventsRequest, type WorkerStatus } from '@fuxi/proto';
import { callBatched, connect, WORKER_EVENTS_BATCHED, type TypedClient } from '@fuxi/rpc';
import { backoffMs, errorMessage, nullLogger, type Logger } from '@fuxi/common';
import { isWireEnd } from './wire.js';

export type SendFn = (address: string, req: WorkerEventsRequest) => Promise<void>;

export interface EventSenderOptions {
  nodeId: string;
  log?: Logger;
  /** Replaces the gRPC call (tests). */
  send?: SendFn;
  /** Give up on an AM after this long of failed deliveries (default 2 min). */
  dropAfterMs?: number;
  maxBatch?: number;
  /** Retry backoff: the first step (default 100 ms), doubling up to the cap (default 5 s), jittered. */
  initialBackoffMs?: number;
  maxBackoffMs?: number;
  deadlineMs?: number;
  /** How long the channel to an AM stays open once nothing is queued for it (default 30 s). */
  lingerMs?: number;
  /** How long a status that is not an end waits for more before it is sent (default 20 ms; 0: at once). */
  holdStartsMs?: number;
}

interface Queue {
  appId: string;
  address: string;
  items: Map<string, WorkerStatus>;
  /** Data paths served, by reader worker and source worker. */
  paths: Map<string, PathRecord>;
  sending: boolean;
  /** The retry back-off after a failed delivery. */
  timer: NodeJS.Timeout | undefined;
  /** A start waiting for company (`holdStartsMs`). */
  hold: NodeJS.Timeout | undefined;
  /** Consecutive failed deliveries. */
  failures: number;
  failingSinceMs: number;
}

export class EventSender {
  private readonly queues = new Map<string, Queue>();
  private readonly clients = new Map<string, TypedClient<AppMasterServiceDefinition>>();
  /**
   * Channels with nothing queued, closed when their timer fires: a worker's next event (the next
   * job of an AM host, the end of the worker that just started) goes out on the open connection,
   * not on a new TCP connection and HTTP/2 session each.
   */
  private readonly lingering = new Map<string, NodeJS.Timeout>();
  private readonly log: Logger;
  private readonly send: SendFn;
  private closed = false;

  constructor(private readonly opts: EventSenderOptions) {
    this.log = opts.log ?? nullLogger;
    this.send = opts.send ?? ((address, req) => this.grpcSend(address, req));
  }

  /** Queues `status` for the AM of `appId` at `amAddress`. */
  push(appId: string, amAddress: string, status: WorkerStatus): void {
    const q = this.queueOf(appId, amAddress, status.workerId ?? '');
    if (!q) return;
    const id = status.workerId ?? '';
    q.items.delete(id); // keep arrival order of the newest status
    q.items.set(id, status);
    const holdMs = this.opts.holdStartsMs ?? 20;
    if (holdMs <= 0 || isWireEnd(status.state)) {
      this.flush(q);
      return;
    }
    // Goes out with the call in flight's successor, the retry, or the held start already waiting.
    if (q.sending || q.timer || q.hold) return;
    q.hold = setTimeout(() => {
      q.hold = undefined;
      this.flush(q);
    }, holdMs);
    q.hold.unref();
  }

  /** Queues records of data paths this node served to workers of `appId` (sent with its events). */
  pushPaths(appId: string, amAddress: string, paths: readonly PathRecord[]): void {
    if (paths.length === 0) return;
    const q = this.queueOf(appId, amAddress, 'paths');
    if (!q) return;
    for (const p of paths) q.paths.set(`${p.readerWorker ?? ''}|${p.srcWorker ?? ''}`, p);
    this.flush(q);
  }

  private queueOf(appId: string, amAddress: string, what: string): Queue | undefined {
    if (this.closed) return undefined;
    if (!amAddress) {
      this.log.debug({ appId, what }, 'no AM address for worker event; dropped');
      return undefined;
    }
    let q = this.queues.get(appId);
    if (!q) {
      q = { appId, address: amAddress, items: new Map(), paths: new Map(), sending: false, timer: undefined, hold: undefined, failures: 0, failingSinceMs: 0 };
      this.queues.set(appId, q);
    }
    if (q.address !== amAddress) {
      this.log.info({ appId, from: q.address, to: amAddress }, 'AM address replaced; worker events retargeted');
      const old = q.address;
      q.address = amAddress;
      q.failures = 0;
      q.failingSinceMs = 0;
      if (q.timer) {
        clearTimeout(q.timer);
        q.timer = undefined;
      }
      this.releaseClient(old);
    }
    return q;
  }

  /** Undelivered events (of one app, or all). */
  pending(appId?: string): number {
    if (appId !== undefined) return this.queues.get(appId)?.items.size ?? 0;
    let n = 0;
    for (const q of this.queues.values()) n += q.items.size;
    return n;
  }

  close(): void {
    this.closed = true;
    for (const q of this.queues.values()) {
      if (q.timer) clearTimeout(q.timer);
      if (q.hold) clearTimeout(q.hold);
    }
    this.queues.clear();
    for (const t of this.lingering.values()) clearTimeout(t);
    this.lingering.clear();
    for (const c of this.clients.values()) c.close();
    this.clients.clear();
  }

  /** Channels open to AMs (tests). */
  get openClients(): number {
    return this.clients.size;
  }

  private flush(q: Queue): void {
    if (this.closed || q.sending || q.timer || (q.items.size === 0 && q.paths.size === 0)) return;
    if (q.hold) {
      clearTimeout(q.hold);
      q.hold = undefined;
    }
    q.sending = true;
    const batch = [...q.items.values()].slice(0, this.opts.maxBatch ?? 100);
    const paths = [...q.paths.entries()].slice(0, 4 * (this.opts.maxBatch ?? 100));
    const address = q.address;
    this.send(address, { nodeId: this.opts.nodeId, events: batch, paths: paths.map(([, p]) => p) }).then(
      () => {
        q.sending = false;
        for (const s of batch) {
          const id = s.workerId ?? '';
          if (q.items.get(id) === s) q.items.delete(id);
        }
        for (const [k, p] of paths) if (q.paths.get(k) === p) q.paths.delete(k);
        q.failures = 0;
        q.failingSinceMs = 0;
        if (q.items.size > 0 || q.paths.size > 0) this.flush(q);
        else this.forget(q);
      },
      (e: unknown) => {
        q.sending = false;
        if (this.closed) return;
        if (q.address !== address) {
          this.flush(q); // retargeted while sending: try the new AM at once
          return;
        }
        const now = Date.now();
        if (!q.failingSinceMs) q.failingSinceMs = now;
        const dropAfter = this.opts.dropAfterMs ?? 120_000;
        if (now - q.failingSinceMs >= dropAfter) {
          this.log.warn({ appId: q.appId, address, dropped: q.items.size, err: errorMessage(e) }, 'AM unreachable for too long; worker events dropped');
          q.items.clear();
          q.paths.clear();
          this.forget(q);
          return;
        }
        q.failures++;
        const retryInMs = backoffMs(q.failures, { initialMs: this.opts.initialBackoffMs ?? 100, maxMs: this.opts.maxBackoffMs ?? 5000 }, Math.random);
        this.log.debug({ appId: q.appId, address, retryInMs, err: errorMessage(e) }, 'worker event delivery failed; retrying');
        q.timer = setTimeout(() => {
          q.timer = undefined;
          this.flush(q);
        }, retryInMs);
        q.timer.unref();
      },
    );
  }

  private forget(q: Queue): void {
    if (q.items.size > 0 || q.paths.size > 0 || q.sending || q.timer || q.hold) return;
    if (this.queues.get(q.appId) === q) this.queues.delete(q.appId);
    this.releaseClient(q.address);
  }

  private releaseClient(address: string): void {
    for (const q of this.queues.values()) if (q.address === address) return;
    if (!this.clients.has(address) || this.lingering.has(address)) return;
    const t = setTimeout(() => {
      this.lingering.delete(address);
      for (const q of this.queues.values()) if (q.address === address) return;
      this.clients.get(address)?.close();
      this.clients.delete(address);
    }, this.opts.lingerMs ?? 30_000);
    t.unref();
    this.lingering.set(address, t);
  }

  private async grpcSend(address: string, req: WorkerEventsRequest): Promise<void> {
    const linger = this.lingering.get(address);
    if (linger) {
      clearTimeout(linger);
      this.lingering.delete(address);
    }
    let c = this.clients.get(address);
    if (!c) {
      c = connect(loadFuxiProto().AppMasterService, address);
      this.clients.set(address, c);
    }
    // With the events for other AMs of the same server (an AM host) made meanwhile, in one call.
    await callBatched(c, loadFuxiProto().AppMasterService.service, WORKER_EVENTS_BATCHED, 'WorkerEvents', req, { deadlineMs: this.opts.deadlineMs ?? 5000 });
  }
}
