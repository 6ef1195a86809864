/**
 * SchedulerService on the master: external schedulers' Watch streams and Place calls. A Watch
 * registers (core `registerScheduler`), answers with the registration's epoch, then sends a full
 * view and, after every input the master handles (`poke`, coalesced to one push per turn of the
 * event loop), what changed since the last view sent: hosts in scope, pending requests of its jobs,
 * history. A stream whose client does not keep up is not written to until it drains (its next view
 * is the delta from the last one it got), so the buffer per stream stays bounded. A stream ends when
 * its registration is no longer current (fenced by a newer one, stalled), when the master stops
 * leading (`reset`: the scheduler re-registers with the new leader), or when the client goes: then
 * the registration ends (core `detachScheduler`) and its jobs wait or fall back.
 */
import type * as grpc from '@grpc/grpc-js';
import { errorMessage, FailedPreconditionError, UnavailableError, type Logger } from '@fuxi/common';
import type {
  PlaceRequest__Output,
  PlaceResponse,
  RegisterSchedulerRequest__Output,
  SchedulerEvent,
  SchedulerServiceDefinition,
  SchedulerView,
} from '@fuxi/proto';
import type { ServiceImpl } from '@fuxi/rpc';
import type { HistoryEntry } from '../core/external-registry.js';
import { diffViews, type HostView, type PendingView, type SchedulerViewState } from '../core/external-view.js';
import { authorizeScheduler, type CallerIdentity } from '../core/authz.js';
import type { MasterCore } from '../core/master-core.js';
import type { Effect } from '../core/types.js';

const SAFETY_PUSH_MS = 1000;

interface Watcher {
  name: string;
  epoch: string;
  call: grpc.ServerWritableStream<RegisterSchedulerRequest__Output, SchedulerEvent>;
  /** The last view sent (undefined: none yet, the next is full). */
  sent: SchedulerViewState | undefined;
  historySeq: number;
  version: number;
  /** Written past its buffer: waits for 'drain'. */
  blocked: boolean;
  end(err?: Error): void;
}

export interface SchedulerStreamsContext {
  /** The core while this process leads; otherwise throws the redirect. */
  readonly core: MasterCore;
  run(effects: Effect[]): Promise<void>;
  /** Stall time, told to schedulers at registration. */
  readonly stallMs: number;
  /** The caller of a call, and whether the cluster is insecure (auth.ts, authz.ts). */
  callerOf(call: object, method: string): { caller: CallerIdentity; insecure: boolean };
}

const hostToWire = (h: HostView) => ({ nodeId: h.nodeId, rack: h.rack, capacity: h.capacity, free: h.free, schedulable: h.schedulable });
const pendingToWire = (p: PendingView) => ({
  appId: p.appId,
  unit: p.unit,
  resource: p.resource,
  count: p.count,
  gang: p.gang,
  waitingSinceMs: String(p.waitingSinceMs),
  queueOrder: p.queueOrder,
  priority: p.priority,
});
const historyToWire = (e: HistoryEntry) => ({ kind: e.kind, atMs: String(e.atMs), appId: e.appId, unit: e.unit, nodeId: e.nodeId, count: e.count });

export class SchedulerStreams {
  private readonly watchers = new Set<Watcher>();
  /** Who registered each scheduler name: only that caller (or an admin) places under it. */
  private readonly registeredBy = new Map<string, string>();
  private scheduled = false;
  /** A push at least this often while streams are open: changes no input flagged (a node timing out) get out too. */
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly ctx: SchedulerStreamsContext,
    private readonly log: Logger,
  ) {}

  get size(): number {
    return this.watchers.size;
  }

  handlers(): ServiceImpl<SchedulerServiceDefinition> {
    return {
      Watch: (req, call) => this.watch(req, call),
      Place: (req, call) => {
        const { caller, insecure } = this.ctx.callerOf(call, 'Place');
        const owner = this.registeredBy.get(req.name ?? '');
        if (owner !== undefined && owner !== caller.name) authorizeScheduler('Place', caller, insecure, undefined);
        return this.place(req);
      },
    };
  }

  private async watch(req: RegisterSchedulerRequest__Output, call: grpc.ServerWritableStream<RegisterSchedulerRequest__Output, SchedulerEvent>): Promise<void> {
    const core = this.ctx.core;
    const { caller, insecure } = this.ctx.callerOf(call, 'Watch');
    const group = req.testbed ? core.listTestbeds(Date.now()).find((t) => t.name === req.testbed)?.group : req.quotaGroup || 'default';
    authorizeScheduler('Watch', caller, insecure, group);
    const { registration, effects } = core.registerScheduler(
      { name: req.name ?? '', testbed: req.testbed ?? '', quotaGroup: req.quotaGroup ?? '', style: req.style ?? '' },
      Date.now(),
    );
    await this.ctx.run(effects);
    this.registeredBy.set(registration.name, caller.name);
    // Older streams of the name are fenced: they end now, and their schedulers do not come back.
    for (const w of [...this.watchers]) {
      if (w.name === registration.name)
        w.end(new FailedPreconditionError(`fenced: ${w.name} registered again with epoch ${registration.epoch}`, { fenced: w.epoch }));
    }
    call.write({ registered: { epoch: registration.epoch, masterEpoch: core.epoch, stallMs: this.ctx.stallMs } });
    await new Promise<void>((resolve, reject) => {
      let ended = false;
      const w: Watcher = {
        name: registration.name,
        epoch: registration.epoch,
        call,
        sent: undefined,
        historySeq: 0,
        version: 0,
        blocked: false,
        end: (err) => {
          if (ended) return;
          ended = true;
          this.watchers.delete(w);
          if (err) reject(err);
          else {
            call.end();
            resolve();
          }
        },
      };
      this.watchers.add(w);
      if (!this.timer) {
        this.timer = setInterval(() => this.poke(), SAFETY_PUSH_MS);
        this.timer.unref();
      }
      const gone = () => {
        if (ended) return;
        w.end();
        this.detach(w);
      };
      call.on('cancelled', gone);
      call.on('close', gone);
      call.on('error', gone);
      call.on('drain', () => {
        w.blocked = false;
        this.poke();
      });
      this.pushOne(w, Date.now());
    });
  }

  private detach(w: Watcher): void {
    let core: MasterCore;
    try {
      core = this.ctx.core;
    } catch {
      return; // not leading any more: the registration went with the term
    }
    const effects = core.detachScheduler(w.name, w.epoch, Date.now());
    this.ctx.run(effects).catch((e: unknown) => this.log.warn({ err: errorMessage(e) }, 'detaching an external scheduler failed'));
  }

  private async place(req: PlaceRequest__Output): Promise<PlaceResponse> {
    const core = this.ctx.core;
    const r = core.placeExternal(
      {
        name: req.name ?? '',
        epoch: String(req.epoch ?? '0'),
        placements: (req.placements ?? []).map((p) => ({ appId: p.appId ?? '', unit: p.unit ?? '', nodeId: p.nodeId ?? '', count: p.count ?? 0 })),
      },
      Date.now(),
    );
    await this.ctx.run(r.effects);
    if (r.rejected.length > 0)
      this.log.info({ scheduler: req.name, rejected: r.rejected.slice(0, 5), count: r.rejected.length }, 'external placements rejected');
    return { applied: r.applied, rejected: r.rejected.map((x) => ({ index: x.index, code: x.code, message: x.message })) };
  }

  /** The master's state may have changed: each stream gets what changed, once per turn of the event loop. */
  poke(): void {
    if (this.scheduled || this.watchers.size === 0) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      const now = Date.now();
      for (const w of [...this.watchers]) this.pushOne(w, now);
    });
  }

  private pushOne(w: Watcher, now: number): void {
    if (w.blocked) return;
    let core: MasterCore;
    try {
      core = this.ctx.core;
    } catch (e) {
      w.end(e instanceof Error ? e : new UnavailableError('not the leader', ''));
      return;
    }
    const sv = core.schedulerView(w.name, w.epoch, w.historySeq, now);
    if (sv === undefined) {
      this.log.info({ scheduler: w.name, epoch: w.epoch }, 'external scheduler registration ended (stalled or detached): stream ended');
      w.end(new UnavailableError(`the registration of ${w.name} ended (stalled): register again`, ''));
      return;
    }
    let view: SchedulerView;
    if (w.sent === undefined) {
      view = {
        version: String(++w.version),
        full: true,
        hosts: [...sv.view.hosts.values()].map(hostToWire),
        pending: [...sv.view.pending.values()].map(pendingToWire),
        history: sv.history.map(historyToWire),
      };
    } else {
      const d = diffViews(w.sent, sv.view);
      if (d === undefined && sv.history.length === 0) return;
      view = {
        version: String(++w.version),
        full: false,
        hosts: (d?.hosts ?? []).map(hostToWire),
        pending: (d?.pending ?? []).map(pendingToWire),
        removedHosts: d?.removedHosts ?? [],
        removedPending: d?.removedPending ?? [],
        history: sv.history.map(historyToWire),
      };
    }
    w.sent = sv.view;
    w.historySeq = sv.historySeq;
    if (!w.call.write({ view })) w.blocked = true;
  }

  /** The term ended: every stream ends with UNAVAILABLE (the schedulers re-register with the new leader). */
  reset(): void {
    for (const w of [...this.watchers]) w.end(new UnavailableError('the master stopped leading: register with the new leader', ''));
    clearInterval(this.timer);
    this.timer = undefined;
  }
}
