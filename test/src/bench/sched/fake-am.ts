/**
 * The application-master side of the scheduler benchmark: a minimal AM that speaks the AM half of
 * the protocol (RegisterApp, UpdateRequests, ReturnSlots; serves UpdateAssignments) and runs no
 * workers. It keeps a number of slots requested, counts the slots the master assigns (a grant),
 * records each one's request-to-grant latency and, depending on its mode, holds the slots (running
 * workers) or returns them at once so capacity recycles.
 *
 * Latency: every UpdateRequests delta of +n queues n request times (FIFO); when the master's count
 * for a (SU, node) rises by k, the k oldest request times are taken, and `now - t` is one sample per
 * slot. Assignment messages are applied in sequence order (a delta only when its seq is one past
 * the applied one, a full table when not older), like the real AM; the master heals gaps with a full
 * table in the next UpdateRequests answer.
 */
import { performance } from 'node:perf_hooks';
import type { Resource } from '@fuxi/common';
import {
  loadFuxiProto,
  type AppMasterServiceDefinition,
  type Assignment__Output,
  type MasterServiceDefinition,
  type ReturnSlotsRequest,
  type UpdateRequestsRequest,
} from '@fuxi/proto';
import { RawGrpcServer, type RawGrpcClient } from './raw-grpc.js';

/** The one schedule unit every benchmark app asks slots for. */
export const BENCH_SU = 'work';

/**
 * What the AM does with slots: `hold` keeps `target` slots (running workers); `churn` keeps
 * `window` slots requested and returns every new slot at once (on top of what it holds); `drain`
 * cancels what it asked for and returns everything.
 */
export type AmMode = { kind: 'idle' } | { kind: 'hold'; target: number } | { kind: 'churn'; window: number } | { kind: 'drain' };

/** Where grant samples go (shared by every AM of a run). */
export interface GrantSink {
  /** k slots granted at `now` (performance.now() ms); `requestedAt` their request times (ms), may be shorter than k. */
  granted(k: number, now: number, requestedAt: readonly number[]): void;
}

interface Hold {
  /** Slots the AM holds and has not returned. */
  held: number;
  /** Slots returned whose drop the master has not shown yet. */
  returning: number;
}

const RETRY_MS = 50;

let services: { am: AppMasterServiceDefinition; master: MasterServiceDefinition } | undefined;
function defs(): { am: AppMasterServiceDefinition; master: MasterServiceDefinition } {
  if (!services) {
    const p = loadFuxiProto();
    services = { am: p.AppMasterService.service, master: p.MasterService.service };
  }
  return services;
}
const CALL_DEADLINE_MS = 30_000;

export class FakeAm {
  address = '';
  registered = false;
  private server: RawGrpcServer | undefined;
  private epoch = '0';
  private appliedSeq = 0;
  private reqSeq = 0;
  private retSeq = 0;
  private declared = false;
  private mode: AmMode = { kind: 'idle' };
  private readonly holds = new Map<string, Hold>();
  /** Request times (ms) of slots asked for and not yet granted, oldest first (from `qHead`). */
  private queue: number[] = [];
  private qHead = 0;
  /** A call to the master is in flight. Like the real AM, one at a time, in order (see applyTable). */
  private busy = false;
  private lastRequestAt = 0;
  private readonly toReturn = new Map<string, number>();
  private heartbeat: NodeJS.Timeout | undefined;
  private stopped = false;
  private cancelWatch: (() => void) | undefined;

  /** Totals (for the benchmark's counters and for waiting on a state). */
  heldTotal = 0;
  returningTotal = 0;
  granted = 0;
  revoked = 0;
  assignmentMessages = 0;
  assignmentMessagesIgnored = 0;
  fullTablesInAnswers = 0;
  requestCalls = 0;
  returnCalls = 0;
  errors = 0;
  /** WatchAssignments streams the master ended while the app ran. */
  streamsEnded = 0;

  constructor(
    readonly appId: string,
    readonly attempt: number,
    private readonly master: RawGrpcClient,
    private readonly slot: Resource,
    private readonly sink: GrantSink,
    private readonly heartbeatMs: number,
    /** Take assignment pushes on a WatchAssignments stream (as the real AM does) instead of calls. */
    private readonly useStream = true,
    /** The attempt's token (FUXI_AM_TOKEN of its launch): the bearer token of its master calls. */
    private readonly token = '',
  ) {}

  /** Slots asked for and not granted yet. */
  get outstanding(): number {
    return this.queue.length - this.qHead;
  }

  /** True when nothing is held, asked for, returning or in flight. */
  get quiet(): boolean {
    return this.heldTotal === 0 && this.returningTotal === 0 && this.outstanding === 0 && !this.busy && this.toReturn.size === 0;
  }

  async start(): Promise<void> {
    const am = defs().am;
    const server = new RawGrpcServer()
      .handle(am.UpdateAssignments, (r) => {
        this.assignmentMessages++;
        this.applyTable(r.epoch, Number(r.seq), r.full, r.assignments);
        queueMicrotask(() => this.pump());
        return { appliedSeq: String(this.appliedSeq) };
      })
      .handle(am.WorkerEvents, () => ({}))
      .handle(am.AgentsTimedOut, () => ({}))
      .handle(am.GetAppState, () => ({ appId: this.appId, amAttempt: this.attempt, assignments: [], progress: [], workers: [] }));
    const port = await server.listen('127.0.0.1', 0);
    this.server = server;
    this.address = `127.0.0.1:${port}`;
    for (let i = 0; ; i++) {
      try {
        const res = await this.master.call(
          defs().master.RegisterApp,
          { appId: this.appId, amAttempt: this.attempt, address: this.address },
          CALL_DEADLINE_MS,
          this.token,
        );
        this.epoch = res.epoch;
        this.applyTable(res.epoch, Number(res.assignmentSeq), true, res.assignments);
        break;
      } catch (e) {
        if (i >= 20 || this.stopped) throw e;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    this.registered = true;
    if (this.useStream) {
      this.cancelWatch = this.master.stream(
        defs().master.WatchAssignments,
        { appId: this.appId, amAttempt: this.attempt, epoch: this.epoch },
        (m) => {
          this.assignmentMessages++;
          this.applyTable(m.epoch, Number(m.seq), m.full, m.assignments);
          queueMicrotask(() => this.pump());
        },
        (status) => {
          this.cancelWatch = undefined;
          if (!this.stopped && status !== 1) this.streamsEnded++;
        },
        this.token,
      );
    }
    this.lastRequestAt = performance.now();
    this.heartbeat = setInterval(
      () => {
        if (!this.busy && performance.now() - this.lastRequestAt >= this.heartbeatMs) this.sendRequest(0);
      },
      Math.max(50, Math.floor(this.heartbeatMs / 4)),
    );
  }

  /** One line of state, for error messages. */
  describe(): string {
    return `${this.appId}: mode ${this.mode.kind} held ${this.heldTotal} returning ${this.returningTotal} outstanding ${this.outstanding} toReturn ${this.toReturn.size} busy ${this.busy} appliedSeq ${this.appliedSeq} errors ${this.errors} ignored ${this.assignmentMessagesIgnored}`;
  }

  setMode(mode: AmMode): void {
    this.mode = mode;
    if (mode.kind === 'drain') {
      for (const [nodeId, h] of this.holds) {
        if (h.held > 0) this.giveBack(nodeId, h, h.held);
      }
    }
    this.pump();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.heartbeat);
    this.cancelWatch?.();
    await this.server?.close();
  }

  // ---------------------------------------------------------------- requests and returns

  /** Sends what the mode asks for: returns first, then more requests; one call at a time. */
  private pump(): void {
    if (this.stopped || !this.registered || this.busy) return;
    if (this.toReturn.size > 0) {
      this.sendReturns();
      return;
    }
    const m = this.mode;
    let delta = 0;
    if (m.kind === 'churn') delta = Math.max(0, m.window - this.outstanding);
    else if (m.kind === 'hold') delta = Math.max(0, m.target - this.heldTotal - this.outstanding);
    else delta = -this.outstanding;
    if (delta !== 0) this.sendRequest(delta);
  }

  private sendRequest(delta: number): void {
    const now = performance.now();
    if (delta > 0) for (let i = 0; i < delta; i++) this.queue.push(now);
    else if (delta < 0) this.queue.length = Math.max(this.qHead, this.queue.length + delta); // cancel the newest
    const body: UpdateRequestsRequest = {
      appId: this.appId,
      amAttempt: this.attempt,
      seq: String(++this.reqSeq),
      units: this.declared ? [] : [{ suId: BENCH_SU, resource: this.slot, priority: 1 }],
      deltas: delta !== 0 ? [{ suId: BENCH_SU, location: '', delta }] : [],
      assignmentSeq: String(this.appliedSeq),
      progress: [],
    };
    this.declared = true;
    this.lastRequestAt = now;
    this.busy = true;
    this.requestCalls++;
    const attempt = (): void => {
      body.assignmentSeq = String(this.appliedSeq);
      this.master.call(defs().master.UpdateRequests, body, CALL_DEADLINE_MS, this.token).then(
        (res) => {
          if (res.fullAssignments) {
            this.fullTablesInAnswers++;
            // Every return we sent went before this request (one call at a time): all are in it.
            this.applyTable(res.epoch, Number(res.assignmentSeq), true, res.assignments, true);
          }
          this.busy = false;
          this.pump();
        },
        () => {
          // Same seq again: the master applies it at most once.
          this.errors++;
          if (this.stopped) return;
          setTimeout(attempt, RETRY_MS);
        },
      );
    };
    attempt();
  }

  private sendReturns(): void {
    const body: ReturnSlotsRequest = {
      appId: this.appId,
      amAttempt: this.attempt,
      seq: String(++this.retSeq),
      returns: [...this.toReturn].map(([nodeId, slots]) => ({ suId: BENCH_SU, nodeId, slots })),
    };
    this.toReturn.clear();
    this.busy = true;
    this.returnCalls++;
    const attempt = (): void => {
      this.master.call(defs().master.ReturnSlots, body, CALL_DEADLINE_MS, this.token).then(
        () => {
          this.busy = false;
          this.pump();
        },
        () => {
          this.errors++;
          if (this.stopped) return;
          setTimeout(attempt, RETRY_MS);
        },
      );
    };
    attempt();
  }

  private giveBack(nodeId: string, h: Hold, n: number): void {
    h.held -= n;
    h.returning += n;
    this.heldTotal -= n;
    this.returningTotal += n;
    this.toReturn.set(nodeId, (this.toReturn.get(nodeId) ?? 0) + n);
  }

  // ---------------------------------------------------------------- assignments

  /**
   * Applies an assignment message in sequence order. Pushes come one per master operation, in
   * order, so a returned slot's drop always shows before the slot can come back. A full table in an
   * answer (`returnsReflected`) may show both at once: it holds every return sent before the request,
   * so those stop counting as returning first, and only what is left is a new grant.
   */
  private applyTable(epoch: string, seq: number, full: boolean, entries: readonly Assignment__Output[], returnsReflected = false): void {
    if (epoch && epoch !== '0' && epoch !== this.epoch) {
      // One master per run: a new epoch would be a bug in the benchmark setup.
      this.epoch = epoch;
      this.appliedSeq = 0;
    }
    if (full ? seq < this.appliedSeq : seq !== this.appliedSeq + 1) {
      this.assignmentMessagesIgnored++;
      return;
    }
    this.appliedSeq = seq;
    if (returnsReflected) {
      for (const [nodeId, h] of this.holds) {
        const reflected = h.returning - (this.toReturn.get(nodeId) ?? 0);
        if (reflected <= 0) continue;
        h.returning -= reflected;
        this.returningTotal -= reflected;
      }
    }
    const now = performance.now();
    const seen = full ? new Set<string>() : undefined;
    for (const a of entries) {
      if (a.suId !== BENCH_SU) continue;
      seen?.add(a.nodeId);
      this.setCount(a.nodeId, a.slots, now);
    }
    if (seen) for (const nodeId of [...this.holds.keys()]) if (!seen.has(nodeId)) this.setCount(nodeId, 0, now);
  }

  /** The master's absolute count for our SU on `nodeId`. */
  private setCount(nodeId: string, count: number, now: number): void {
    let h = this.holds.get(nodeId);
    if (!h) {
      if (count === 0) return;
      h = { held: 0, returning: 0 };
      this.holds.set(nodeId, h);
    }
    const d = count - (h.held + h.returning);
    if (d > 0) {
      this.granted += d;
      const take = Math.min(d, this.outstanding);
      const times = this.queue.slice(this.qHead, this.qHead + take);
      this.qHead += take;
      if (this.qHead > 4096 && this.qHead * 2 > this.queue.length) {
        this.queue = this.queue.slice(this.qHead);
        this.qHead = 0;
      }
      this.sink.granted(d, now, times);
      h.held += d;
      this.heldTotal += d;
      const m = this.mode;
      const keep = m.kind === 'hold' ? Math.max(0, Math.min(d, m.target - (this.heldTotal - d))) : 0;
      if (d - keep > 0) this.giveBack(nodeId, h, d - keep);
    } else if (d < 0) {
      const settled = Math.min(-d, h.returning);
      h.returning -= settled;
      this.returningTotal -= settled;
      const lost = -d - settled;
      if (lost > 0) {
        // Taken away by the master (never happens in this benchmark unless a node is lost).
        const n = Math.min(lost, h.held);
        h.held -= n;
        this.heldTotal -= n;
        this.revoked += n;
      }
    }
    if (h.held === 0 && h.returning === 0) this.holds.delete(nodeId);
  }
}
