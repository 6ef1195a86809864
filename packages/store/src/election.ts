/**
 * Master leader election over etcd (docs/design.md, "Failover"), the algorithm of etcd's Go
 * `concurrency.Election`, plus a local watchdog:
 *
 * - A candidate grants a lease (TTL `ttlSec`, default 5 s) and creates `election/<name>/<lease hex>`
 *   under it; the candidate whose key has the lowest create revision leads. Its key's create
 *   revision is the leader's **epoch**: it only grows from one leader to the next, so it fences
 *   (every master command carries it; `store.withGuard(leadership.guard)` fences store writes).
 * - Standbys wait for the deletion of the key just before theirs (no herd), and every instance
 *   observes the election (`leader()`, `leaderChange`) so standbys redirect callers to the leader.
 * - A leader steps down **on its own** (event `stepDown`, fired synchronously, before any cleanup)
 *   when: the lease is lost, its key is deleted (e.g. lease revoked behind its back), a watch fails,
 *   or the watchdog sees no successful keep-alive for `ttl - margin` (the etcd client itself
 *   notices a dead lease only after 2 x TTL; etcd may already have handed leadership on after 1 x TTL).
 *   It then revokes (or abandons) its lease and campaigns again, behind the new leader.
 * - While etcd is unreachable the campaign retries with capped exponential backoff, reporting every
 *   failure (`campaignError` and the logger).
 *
 * ```ts
 * const election = new LeaderElection(store.coordination(), { ttlSec: 5, log });
 * election.on('leader', (l) => master.becomeLeader(l.epoch, store.withGuard(l.guard)));
 * election.on('stepDown', (s) => master.stopLeading(s.reason));
 * election.on('leaderChange', (o) => master.setRedirect(o?.value));
 * election.campaign('10.0.0.1:7070');
 * // on shutdown:
 * await election.close();
 * ```
 */
import { backoffMs, FailedPreconditionError, InvalidArgumentError, errorMessage, nullLogger, type Logger } from '@fuxi/common';
import { systemClock, type Clock, type TimerHandle } from './clock.js';
import { WatchCompactedError, type CoordinationBackend, type KeyRecord, type LeaseHandle, type LeaseListener, type StoreGuard } from './coordination.js';

/** This instance's leadership (one term). */
export interface Leadership {
  /** The create revision of the campaign key (decimal): strictly greater for every later leader. */
  epoch: string;
  /** The campaign key, relative to the store prefix. */
  key: string;
  leaseId: string;
  /** The value campaigned with (the master's address). */
  value: string;
  /** For `store.withGuard(guard)`: writes through it fail with FencedError once this term is over. */
  guard: StoreGuard;
}

/** The leader as any instance (standby or not) sees it. */
export interface ObservedLeader {
  value: string;
  epoch: string;
  key: string;
}

export type StepDownReason = 'resigned' | 'closed' | 'lease-lost' | 'key-deleted' | 'watchdog' | 'etcd-error';

export interface StepDown {
  reason: StepDownReason;
  leadership: Leadership;
  detail?: string;
}

export interface CampaignFailure {
  /** Consecutive failures so far (1 for the first). */
  attempt: number;
  error: Error;
  /** When the next attempt starts. */
  retryInMs: number;
}

export interface ElectionEvents {
  leader: Leadership;
  stepDown: StepDown;
  leaderChange: ObservedLeader | undefined;
  campaignError: CampaignFailure;
}

export interface LeaderElectionOptions {
  /** Election name: keys live under `election/<name>/`. Default `master`. */
  name?: string;
  /** Lease TTL in whole seconds, default 5 (5-10 typical): a crashed leader is replaced after about this. */
  ttlSec?: number;
  /**
   * The leader steps down when its last successful keep-alive is older than `ttl - margin`.
   * Default 30% of the TTL (1.5 s for 5 s). Must leave more than ttl/3 (the keep-alive interval).
   */
  marginMs?: number;
  /** How often the watchdog checks, default (ttl - margin) / 10 within [20, 250] ms. */
  watchdogIntervalMs?: number;
  /** Campaign retry backoff (`backoffMs`): first step, doubling up to the cap, each delay half to all of its step. Defaults 200 / 5000 ms. */
  backoffInitialMs?: number;
  backoffMaxMs?: number;
  /** How long a step-down waits for the lease revoke before abandoning the lease (it then expires). Default 1000 ms. */
  revokeTimeoutMs?: number;
  clock?: Clock;
  random?: () => number;
  log?: Logger;
  onLeader?: (l: Leadership) => void;
  onStepDown?: (s: StepDown) => void;
  onLeaderChange?: (o: ObservedLeader | undefined) => void;
  onCampaignError?: (f: CampaignFailure) => void;
}

class TermAborted extends Error {
  constructor() {
    super('term aborted');
  }
}

/** One attempt: a lease, a campaign key, maybe a leadership. */
class Term {
  reason: StepDownReason | undefined;
  detail: string | undefined;
  lease: LeaseHandle | undefined;
  registered = false;
  leadership: Leadership | undefined;
  /** Send times of unanswered keep-alives, oldest first. */
  sent: number[] = [];
  watches: Array<{ cancel(): void }> = [];
  watchdog: TimerHandle | undefined;
  readonly aborted: Promise<void>;
  resolveAbort!: () => void;

  constructor(
    /** Time of the last keep-alive request etcd answered (or of the grant request). */
    public lastOkAt: number,
  ) {
    this.aborted = new Promise<void>((r) => (this.resolveAbort = r));
  }
}

const incr = (rev: string) => (BigInt(rev) + 1n).toString();
const decr = (rev: string) => (BigInt(rev) - 1n).toString();

export class LeaderElection {
  readonly name: string;
  readonly ttlSec: number;
  readonly marginMs: number;
  /** `election/<name>/`, relative to the store prefix. */
  readonly keyPrefix: string;
  private readonly watchdogIntervalMs: number;
  private readonly backoffInitialMs: number;
  private readonly backoffMaxMs: number;
  private readonly revokeTimeoutMs: number;
  private readonly clock: Clock;
  private readonly random: () => number;
  private readonly log: Logger;
  private readonly listeners: { [K in keyof ElectionEvents]: Set<(arg: ElectionEvents[K]) => void> } = {
    leader: new Set(),
    stepDown: new Set(),
    leaderChange: new Set(),
    campaignError: new Set(),
  };

  private running = false;
  private closed = false;
  private loop: Promise<void> | undefined;
  private term: Term | undefined;
  private current: Leadership | undefined;
  private wakeCampaign: (() => void) | undefined;
  private stopReason: 'resigned' | 'closed' = 'resigned';

  private observing = false;
  private observeLoopP: Promise<void> | undefined;
  private stopObserverWatch: (() => void) | undefined;
  private wakeObserver: (() => void) | undefined;
  private observed: ObservedLeader | undefined;
  private refreshing = false;
  private refreshAgain = false;

  constructor(
    private readonly backend: CoordinationBackend,
    opts: LeaderElectionOptions = {},
  ) {
    this.name = opts.name ?? 'master';
    if (!this.name || this.name.includes('/')) throw new InvalidArgumentError('election.name', 'must be non-empty and contain no "/"');
    this.ttlSec = opts.ttlSec ?? 5;
    if (!Number.isInteger(this.ttlSec) || this.ttlSec < 1) throw new InvalidArgumentError('election.ttlSec', 'must be a whole number of seconds >= 1');
    const ttlMs = this.ttlSec * 1000;
    this.marginMs = opts.marginMs ?? Math.round(ttlMs * 0.3);
    if (!(this.marginMs >= 0) || ttlMs - this.marginMs <= ttlMs / 3)
      throw new InvalidArgumentError(
        'election.marginMs',
        `must be >= 0 and leave more than ttl/3 (${Math.round(ttlMs / 3)} ms, the keep-alive interval) of the ${ttlMs} ms TTL`,
      );
    this.watchdogIntervalMs = opts.watchdogIntervalMs ?? Math.min(250, Math.max(20, Math.round((ttlMs - this.marginMs) / 10)));
    this.backoffInitialMs = opts.backoffInitialMs ?? 200;
    this.backoffMaxMs = Math.max(this.backoffInitialMs, opts.backoffMaxMs ?? 5000);
    this.revokeTimeoutMs = opts.revokeTimeoutMs ?? 1000;
    this.clock = opts.clock ?? systemClock;
    this.random = opts.random ?? Math.random;
    this.log = (opts.log ?? nullLogger).child({ election: this.name });
    this.keyPrefix = `election/${this.name}/`;
    if (opts.onLeader) this.on('leader', opts.onLeader);
    if (opts.onStepDown) this.on('stepDown', opts.onStepDown);
    if (opts.onLeaderChange) this.on('leaderChange', opts.onLeaderChange);
    if (opts.onCampaignError) this.on('campaignError', opts.onCampaignError);
  }

  /** Subscribes to an event; returns the unsubscribe function. Listener errors are logged, never thrown. */
  on<K extends keyof ElectionEvents>(event: K, fn: (arg: ElectionEvents[K]) => void): () => void {
    const set = this.listeners[event] as Set<(arg: ElectionEvents[K]) => void>;
    set.add(fn);
    return () => void set.delete(fn);
  }

  private emit<K extends keyof ElectionEvents>(event: K, arg: ElectionEvents[K]): void {
    for (const fn of [...(this.listeners[event] as Set<(arg: ElectionEvents[K]) => void>)]) {
      try {
        fn(arg);
      } catch (e) {
        this.log.error({ event, err: errorMessage(e) }, 'election listener threw');
      }
    }
  }

  /**
   * Our leadership now, if we lead. Checks the watchdog on the spot, so a master that was frozen
   * (SIGSTOP, a long GC pause) learns it is deposed here even before the watchdog timer has run.
   */
  leadership(): Leadership | undefined {
    const term = this.term;
    if (this.current && term?.leadership === this.current) this.checkWatchdog(term);
    return this.current;
  }

  /** Same check as leadership(). */
  isLeader(): boolean {
    return this.leadership() !== undefined;
  }

  /** The current leader's value (address) as observed, undefined if none (or not yet known). */
  leader(): string | undefined {
    return this.observed?.value;
  }

  observedLeader(): ObservedLeader | undefined {
    return this.observed;
  }

  /** Resolves with our leadership when we lead (now or later); rejects after `timeoutMs` if given. */
  waitForLeadership(timeoutMs?: number): Promise<Leadership> {
    if (this.current) return Promise.resolve(this.current);
    return new Promise((resolve, reject) => {
      let timer: TimerHandle | undefined;
      const off = this.on('leader', (l) => {
        off();
        timer?.cancel();
        resolve(l);
      });
      if (timeoutMs !== undefined)
        timer = this.clock.setTimeout(() => {
          off();
          reject(new Error(`not elected within ${timeoutMs} ms`));
        }, timeoutMs);
    });
  }

  /**
   * Starts campaigning with `value` (this master's address) in the background and observing the
   * election. Returns at once; leadership arrives as a `leader` event. Throws if already campaigning.
   */
  campaign(value: string): void {
    if (this.closed) throw new FailedPreconditionError('election is closed');
    if (this.running) throw new FailedPreconditionError('already campaigning');
    this.running = true;
    this.observe();
    this.loop = this.runLoop(value);
  }

  /** Steps down if leading (revoking the lease, so a standby takes over at once) and stops campaigning. Keeps observing. */
  async resign(): Promise<void> {
    await this.stop('resigned');
  }

  /** resign() and stop observing. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.stop('closed');
    this.observing = false;
    this.stopObserverWatch?.();
    this.wakeObserver?.();
    await this.observeLoopP;
    this.observeLoopP = undefined;
  }

  private async stop(reason: 'resigned' | 'closed'): Promise<void> {
    this.running = false;
    this.stopReason = reason;
    if (this.term) this.abortTerm(this.term, reason);
    this.wakeCampaign?.();
    const loop = this.loop;
    if (loop) await loop;
    if (this.loop === loop) this.loop = undefined;
  }

  // ---- campaigning ----

  private backoff(failures: number): number {
    return backoffMs(failures, { initialMs: this.backoffInitialMs, maxMs: this.backoffMaxMs }, this.random);
  }

  private sleepCampaign(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const h = this.clock.setTimeout(() => {
        this.wakeCampaign = undefined;
        resolve();
      }, ms);
      this.wakeCampaign = () => {
        h.cancel();
        this.wakeCampaign = undefined;
        resolve();
      };
    });
  }

  private async runLoop(value: string): Promise<void> {
    let failures = 0;
    while (this.running) {
      const term = new Term(this.clock.now());
      this.term = term;
      let error: Error | undefined;
      try {
        await this.runTerm(term, value);
      } catch (e) {
        if (!(e instanceof TermAborted)) error = e instanceof Error ? e : new Error(String(e));
      }
      // A term that ended before its key was even created counts as a failure (backoff, no hot loop).
      if (!error && this.running && !term.registered)
        error = new Error(`campaign ended early: ${term.reason ?? 'unknown'}${term.detail ? `: ${term.detail}` : ''}`);
      if (error) this.abortTerm(term, 'etcd-error', error.message);
      else this.abortTerm(term, this.running ? 'etcd-error' : this.stopReason);
      await this.cleanup(term);
      if (this.term === term) this.term = undefined;
      if (!this.running) break;
      if (error) {
        failures = term.registered ? 1 : failures + 1;
        const retryInMs = this.backoff(failures);
        this.log.warn({ attempt: failures, err: error.message, retryInMs }, 'campaign failed; retrying');
        this.emit('campaignError', { attempt: failures, error, retryInMs });
        await this.sleepCampaign(retryInMs);
      } else {
        failures = 0;
        this.log.info({ reason: term.reason, detail: term.detail }, 'campaign term ended; campaigning again');
      }
    }
  }

  /** Races `p` against the end of the term; a value that arrives too late goes to `late`. */
  private async step<T>(term: Term, p: Promise<T>, late?: (v: T) => void): Promise<T> {
    const r = await Promise.race([p.then((v) => ({ v })), term.aborted.then(() => undefined)]);
    if (!r || term.reason) {
      if (late) {
        if (r) late(r.v);
        else p.then(late, () => undefined);
      } else {
        p.catch(() => undefined);
      }
      throw new TermAborted();
    }
    return r.v;
  }

  private leaseListener(term: Term): LeaseListener {
    return {
      keepAliveSent: () => {
        term.sent.push(this.clock.now());
      },
      keepAliveOk: () => {
        const sentAt = term.sent.shift();
        if (sentAt !== undefined && sentAt > term.lastOkAt) term.lastOkAt = sentAt;
      },
      keepAliveFailed: (err) => {
        term.sent = [];
        this.log.warn({ err: err.message }, 'lease keep-alive stream failed');
      },
      streamOpened: () => {
        term.sent = [];
      },
      // Before the grant returned, a loss is the grant failing: runTerm sees that as an error.
      lost: (err) => {
        if (term.lease) this.abortTerm(term, 'lease-lost', err.message);
      },
    };
  }

  private async runTerm(term: Term, value: string): Promise<void> {
    const lease = await this.step(term, this.backend.grantLease(this.ttlSec, this.leaseListener(term)), (l) => {
      void l.revoke(this.revokeTimeoutMs).catch(() => l.release());
    });
    term.lease = lease;
    const key = `${this.keyPrefix}${BigInt(lease.id).toString(16)}`;
    const created = await this.step(term, this.backend.createWithLease(key, value, lease.id));
    const myRev = created.createRevision;
    term.registered = true;
    this.log.info({ key, createRevision: myRev, leaseId: lease.id }, 'campaigning');

    // Wait for every key created before ours to go, newest first (etcd's waitDeletes).
    for (;;) {
      const prev = await this.step(term, this.backend.findByCreateRevision(this.keyPrefix, decr(myRev)));
      if (!prev.kv) break;
      this.log.debug({ waitingFor: prev.kv.key, leader: prev.kv.value }, 'waiting for the key ahead of ours');
      await this.step(term, this.waitDeleted(term, prev.kv, incr(prev.revision)));
    }

    // Our lease may have died while we waited: confirm the key is still ours.
    const mine = await this.step(term, this.backend.getRecord(key));
    if (!mine.kv || mine.kv.createRevision !== myRev) throw new Error(`campaign key ${key} disappeared while waiting (lease expired?)`);
    if (this.clock.now() - term.lastOkAt > this.ttlSec * 1000 - this.marginMs) throw new Error('lease keep-alive too stale to take the leadership');
    this.watchUntilDeleted(term, { key, createRevision: myRev }, incr(mine.revision), {
      deleted: () => this.abortTerm(term, 'key-deleted', `campaign key ${key} deleted`),
      failed: (err) => this.abortTerm(term, 'etcd-error', `watch on own key failed: ${err.message}`),
    });

    const leadership: Leadership = { epoch: myRev, key, leaseId: lease.id, value, guard: { key, createRevision: myRev } };
    term.leadership = leadership;
    this.current = leadership;
    this.armWatchdog(term);
    this.log.info({ epoch: myRev, key }, 'elected leader');
    this.emit('leader', leadership);
    await term.aborted;
  }

  private waitDeleted(term: Term, kv: KeyRecord, fromRevision: string): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.watchUntilDeleted(term, { key: kv.key, createRevision: kv.createRevision }, fromRevision, {
        deleted: resolve,
        failed: (err) => reject(new Error(`watch on ${kv.key} failed: ${err.message}`)),
      });
    });
  }

  /**
   * Watches `key` (as created at `createRevision`) from `fromRevision` until it is deleted. When etcd
   * compacted the revision the watch resumes from (a reconnect after auto-compaction), the events
   * in between are lost: the key is read again, and if it is still the same key (same create
   * revision) it is watched from that read's revision; if not, it was deleted meanwhile.
   */
  private watchUntilDeleted(
    term: Term,
    target: { key: string; createRevision: string },
    fromRevision: string,
    on: { deleted: () => void; failed: (err: Error) => void },
  ): void {
    let done = false;
    const finish = (f: () => void) => {
      if (done) return;
      done = true;
      f();
    };
    const start = (from: string) => {
      const h = this.backend.watch(
        target.key,
        { fromRevision: from },
        {
          onEvent: (e) => {
            if (e.type !== 'delete') return;
            h.cancel();
            finish(on.deleted);
          },
          onError: (err) => {
            if (done || term.reason) return;
            if (!(err instanceof WatchCompactedError)) return finish(() => on.failed(err));
            this.log.info({ key: target.key, err: err.message }, 'watch behind a compaction: reading the key again and watching from there');
            this.backend.getRecord(target.key).then(
              (r) => {
                if (done || term.reason) return;
                if (!r.kv || r.kv.createRevision !== target.createRevision) finish(on.deleted);
                else start(incr(r.revision));
              },
              (e: unknown) => finish(() => on.failed(e instanceof Error ? e : new Error(String(e)))),
            );
          },
        },
      );
      term.watches.push(h);
    };
    start(fromRevision);
  }

  /** Steps down (returns false) if the last successful keep-alive is older than ttl - margin. */
  private checkWatchdog(term: Term): boolean {
    if (term.reason) return false;
    const limit = this.ttlSec * 1000 - this.marginMs;
    const age = this.clock.now() - term.lastOkAt;
    if (age <= limit) return true;
    this.abortTerm(term, 'watchdog', `no successful lease keep-alive for ${Math.round(age)} ms (limit ${limit} ms)`);
    return false;
  }

  private armWatchdog(term: Term): void {
    const tick = () => {
      if (this.checkWatchdog(term)) term.watchdog = this.clock.setTimeout(tick, this.watchdogIntervalMs);
    };
    term.watchdog = this.clock.setTimeout(tick, this.watchdogIntervalMs);
  }

  /** Ends a term. If it led, steps down right here, synchronously, before any cleanup. */
  private abortTerm(term: Term, reason: StepDownReason, detail?: string): void {
    if (term.reason) return;
    term.reason = reason;
    term.detail = detail;
    term.watchdog?.cancel();
    const l = term.leadership;
    if (l) {
      term.leadership = undefined;
      if (this.current === l) this.current = undefined;
      const level = reason === 'resigned' || reason === 'closed' ? 'info' : 'warn';
      this.log[level]({ epoch: l.epoch, reason, detail }, 'stepped down');
      this.emit('stepDown', { reason, leadership: l, ...(detail ? { detail } : {}) });
    }
    term.resolveAbort();
  }

  private async cleanup(term: Term): Promise<void> {
    term.watchdog?.cancel();
    for (const w of term.watches) w.cancel();
    term.watches = [];
    const lease = term.lease;
    term.lease = undefined;
    if (!lease) return;
    try {
      await lease.revoke(this.revokeTimeoutMs);
    } catch (e) {
      this.log.warn({ leaseId: lease.id, err: errorMessage(e) }, 'lease revoke failed; abandoning the lease (it expires by itself)');
      lease.release();
    }
  }

  // ---- observing ----

  /** Starts following the election's leader (`leader()`, `leaderChange`); campaign() does this too. */
  observe(): void {
    if (this.observing || this.closed) return;
    this.observing = true;
    this.observeLoopP = this.observeLoop();
  }

  private setObserved(kv: KeyRecord | undefined): void {
    const next = kv ? { value: kv.value, epoch: kv.createRevision, key: kv.key } : undefined;
    const prev = this.observed;
    if (prev?.key === next?.key && prev?.epoch === next?.epoch && prev?.value === next?.value) return;
    this.observed = next;
    this.log.debug({ leader: next?.value, epoch: next?.epoch }, 'leader changed');
    this.emit('leaderChange', next);
  }

  private async refresh(): Promise<void> {
    if (this.refreshing) {
      this.refreshAgain = true;
      return;
    }
    this.refreshing = true;
    let failures = 0;
    try {
      do {
        this.refreshAgain = false;
        try {
          const first = await this.backend.findByCreateRevision(this.keyPrefix, undefined);
          if (this.observing) this.setObserved(first.kv);
          failures = 0;
        } catch (e) {
          failures++;
          // The watch will fire again on the next change; also retry soon (200 ms, backing off to 1 s).
          const retryInMs = backoffMs(failures, { initialMs: 200, maxMs: 1000 }, this.random);
          if (failures === 1 || failures % 10 === 0)
            this.log.warn({ failures, retryInMs, err: errorMessage(e) }, 'reading the election leader failed; retrying');
          await new Promise<void>((r) => this.clock.setTimeout(r, retryInMs));
          this.refreshAgain = this.observing;
        }
      } while (this.refreshAgain && this.observing);
    } finally {
      this.refreshing = false;
    }
  }

  private async observeLoop(): Promise<void> {
    let failures = 0;
    while (this.observing) {
      try {
        const first = await this.backend.findByCreateRevision(this.keyPrefix, undefined);
        if (!this.observing) break;
        this.setObserved(first.kv);
        failures = 0;
        await new Promise<void>((resolve, reject) => {
          const h = this.backend.watch(
            this.keyPrefix,
            { prefix: true, fromRevision: incr(first.revision) },
            {
              onEvent: () => void this.refresh(),
              onReconnect: () => void this.refresh(),
              onError: reject,
            },
          );
          this.stopObserverWatch = () => {
            h.cancel();
            resolve();
          };
        });
      } catch (e) {
        if (!this.observing) break;
        if (e instanceof WatchCompactedError) {
          // Events since the watch's revision are gone: read the leader again and watch from there.
          this.log.info({ err: e.message }, 'election watch behind a compaction: reading the election again');
          continue;
        }
        failures++;
        const retryInMs = this.backoff(failures);
        this.log.warn({ err: errorMessage(e), retryInMs }, 'observing the election failed; retrying');
        await new Promise<void>((resolve) => {
          const h = this.clock.setTimeout(resolve, retryInMs);
          this.wakeObserver = () => {
            h.cancel();
            resolve();
          };
        });
      } finally {
        this.stopObserverWatch = undefined;
        this.wakeObserver = undefined;
      }
    }
  }
}
