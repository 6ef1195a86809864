/**
 * Grant and assignment pushes: the open WatchGrants / WatchAssignments streams, and the unary
 * UpdateGrants / UpdateAssignments calls for agents and AMs that have none open. An AM host's
 * inline AMs open none: a stream per job cost the master and the host about a millisecond of CPU
 * per job, and their pushes go instead in one `Calls` batch per host and turn (`Peers.assignAm`,
 * one batch out per host at a time, so each AM's pushes stay in order).
 *
 * Pushes made during one event-loop turn go out at its end (`queue` then `flush`), grants first.
 * The core makes full (absolute) grant tables and only the newest per node is sent: a slot
 * returned and placed again on the same node in one turn (the common case under load) costs one
 * message, not two. Assignment messages all go, in order: an AM must see a returned slot's drop
 * before the same slot comes back, or it cannot tell the two apart.
 *
 * On a grant stream a table goes as a delta against the table written before it on the same
 * stream (`base_seq`; the entries that are new or changed, and the revoked ones with 0 slots), so a
 * push costs what changed, not the size of the node's table (with 50 AMs on a node, a one-task
 * job had cost about 90 grant entries encoded, decoded and compared). A stream is ordered and
 * reliable, so the agent has that base when the delta arrives, unless it applied a table that came
 * by another road in between (a heartbeat's answer): then it ignores the delta, and the next
 * message on the stream is the full table (`tableAnswered`). A heartbeat whose table is one the
 * stream carried (`onChain`: behind only by what is in flight) gets no full table, so under load
 * the stream's chain is not broken twice a second. The first message of a stream, and a delta no
 * smaller than the table, go full.
 *
 * Nothing goes out before the store has what it shows: each turn's pushes (and the commands
 * `whenDurable` is given: AM launches, worker stops, job watchers' news) wait until every hard-state
 * write queued before them is durable, in the order they were made. Memory runs ahead of the store
 * by the writes under way; a job killed in memory whose write then fails (etcd out of space, a lost
 * quorum) must not have had its slots revoked and its workers stopped, since the master rebuilt
 * from the store still runs it. A push still waiting when the session ends (`reset`) is dropped.
 */
import type { ServerWritableStream } from '@grpc/grpc-js';
import { errorMessage, type Logger } from '@fuxi/common';
import { endExhausted } from '@fuxi/rpc';
import type { AssignmentUpdate, GrantUpdate, WatchAssignmentsRequest__Output, WatchGrantsRequest__Output } from '@fuxi/proto';
import { grantKey } from '../core/master-state.js';
import type { Effect, GrantEntry } from '../core/types.js';
import type { Peers } from './peers.js';

type GrantsEffect = Extract<Effect, { kind: 'grants' }>;
type AssignmentsEffect = Extract<Effect, { kind: 'assignments' }>;

/** Messages queued on an assignment stream beyond which its AM is taken for not reading. */
const ASSIGNMENT_STREAM_MAX_QUEUED = 1000;
/** Grant tables written to one stream and not yet taken by the transport, at most. */
const GRANT_STREAM_IN_FLIGHT = 8;

/** An AM attempt's open WatchAssignments stream (messages are ordered deltas: none is dropped). */
interface AssignmentWatch {
  call: ServerWritableStream<WatchAssignmentsRequest__Output, AssignmentUpdate>;
}

/** An agent's open WatchGrants stream, with a few messages in flight and at most one waiting. */
interface GrantWatch {
  nodeId: string;
  call: ServerWritableStream<WatchGrantsRequest__Output, GrantUpdate>;
  /** Messages written and not yet taken by the transport. */
  inFlight: number;
  /** Since when the stream has had messages in flight (0 = none). */
  oldestSince: number;
  /** The newest table, when more than the in-flight limit are out (written once one is taken). */
  waiting: GrantTable | undefined;
  /** The last table written (what a delta is made against); undefined: the next one goes full. */
  sent: { epoch: string; seq: number; byKey: Map<string, GrantEntry> } | undefined;
  /**
   * The seqs of the tables written since the last full one (the newest CHAIN_SEQS): an agent whose
   * table is one of them is on the stream's chain and gets the rest of it in order.
   */
  chain: Set<number>;
}

/** Seqs remembered per grant stream: an agent further behind than this many messages is given the full table. */
const CHAIN_SEQS = 256;

/** A node's whole grant table under its seq (a core `grants` effect's content). */
interface GrantTable {
  epoch: string;
  seq: number;
  grants: GrantEntry[];
}

/**
 * `table` as the message for a stream whose last written table is `sent`: full when there is none
 * (or it is of another master), else the entries that differ (the core replaces an entry when it
 * changes it, so one it did not touch is the same object) and the revoked ones with 0 slots; full
 * again when that is no smaller.
 */
export function grantMessage(table: GrantTable, sent: GrantWatch['sent']): GrantUpdate {
  const full: GrantUpdate = { epoch: table.epoch, seq: String(table.seq), full: true, grants: table.grants };
  if (!sent || sent.epoch !== table.epoch || sent.seq >= table.seq) return full;
  const changed: GrantEntry[] = [];
  const present = new Set<string>();
  for (const g of table.grants) {
    const k = grantKey(g.appId, g.suId);
    present.add(k);
    if (sent.byKey.get(k) !== g) changed.push(g);
  }
  for (const [k, g] of sent.byKey) if (!present.has(k)) changed.push({ ...g, slots: 0 });
  if (changed.length >= table.grants.length) return full;
  return { epoch: table.epoch, seq: String(table.seq), full: false, grants: changed, baseSeq: String(sent.seq) };
}

/**
 * Holds `watch` as the open push stream of `key` (ending the one it replaces) until its call ends
 * in any way; then forgets it, unless a newer one took its place.
 */
function holdStream<W extends { call: ServerWritableStream<object, object> }>(streams: Map<string, W>, key: string, watch: W): Promise<void> {
  endStream(streams, key);
  streams.set(key, watch);
  return new Promise<void>((resolve) => {
    const done = () => {
      if (streams.get(key) === watch) streams.delete(key);
      resolve();
    };
    for (const ev of ['cancelled', 'close', 'finish', 'error']) watch.call.on(ev, done);
  });
}

/** Ends and forgets the open push stream of `key`, if any. */
function endStream<W extends { call: ServerWritableStream<object, object> }>(streams: Map<string, W>, key: string): void {
  const w = streams.get(key);
  if (!w) return;
  streams.delete(key);
  w.call.end();
}

export class PushStreams {
  /**
   * Open WatchGrants streams by node id: a grant push is one message on the node's stream (a unary
   * UpdateGrants costs several times the CPU on both ends); nodes without one get the call.
   */
  private readonly grantStreams = new Map<string, GrantWatch>();
  /** Open WatchAssignments streams by app id (the current attempt's only). */
  private readonly assignmentStreams = new Map<string, AssignmentWatch>();
  private readonly pendingGrants = new Map<string, GrantsEffect>();
  private readonly pendingAssignments: AssignmentsEffect[] = [];
  private flushQueued = false;
  private readonly stats = { written: 0, superseded: 0, full: 0, entries: 0 };
  /** The last send waiting for the store (sends go out in order), while any does. */
  private waiting: Promise<void> | undefined;
  /** Bumped by `reset`: a send of an ended session is dropped. */
  private session = 0;

  constructor(
    private readonly peers: Peers,
    /** False once this process stopped leading: nothing held is sent any more. */
    private readonly leading: () => boolean,
    private readonly log: Logger,
    /** Undefined when every store write queued so far is durable; else settles once they are (GroupCommit `barrier`). */
    private readonly durable: () => Promise<void> | undefined,
    /**
     * Whether the app still runs with its AM at `address`: a push that failed because that AM has
     * ended since (its job over, a new attempt elsewhere) is nothing to warn about.
     */
    private readonly amCurrent: (appId: string, address: string) => boolean = () => true,
  ) {}

  /** Serves an agent's WatchGrants until the call ends (or a newer one of the node replaces it). */
  holdGrants(nodeId: string, call: GrantWatch['call']): Promise<void> {
    return holdStream(this.grantStreams, nodeId, { nodeId, call, inFlight: 0, oldestSince: 0, waiting: undefined, sent: undefined, chain: new Set<number>() });
  }

  /** Serves an AM attempt's WatchAssignments until the call ends (or a newer one replaces it). */
  holdAssignments(appId: string, call: AssignmentWatch['call']): Promise<void> {
    return holdStream(this.assignmentStreams, appId, { call });
  }

  /** A registration starts a new session: pushes go by call until the agent watches again. */
  endGrants(nodeId: string): void {
    endStream(this.grantStreams, nodeId);
  }

  /**
   * Whether the table the agent of `nodeId` reports having (`seq`, in this master's numbering) was
   * written on its open stream since the stream's last full table: then the agent gets every table
   * after it on that stream, in order, and needs no full table by another road (a heartbeat whose
   * seq lags only because tables are in flight).
   */
  onChain(nodeId: string, seq: number): boolean {
    return this.grantStreams.get(nodeId)?.chain.has(seq) ?? false;
  }

  /**
   * The agent is being given its full table by another road (a heartbeat's answer): the next table
   * on its stream goes full, since the agent may apply that one over the stream's last.
   */
  tableAnswered(nodeId: string): void {
    const watch = this.grantStreams.get(nodeId);
    if (watch) watch.sent = undefined;
  }

  endAssignments(appId: string): void {
    endStream(this.assignmentStreams, appId);
  }

  /** A push effect, held for the end of this turn (a delta of grants goes at once, in order). */
  push(e: GrantsEffect | AssignmentsEffect): void {
    if (e.kind === 'grants' && !e.full) {
      this.flush();
      this.afterDurable(() => this.sendGrants(e));
      return;
    }
    if (e.kind === 'grants') this.pendingGrants.set(e.nodeId, e);
    else if (e.address) this.pendingAssignments.push(e);
    else return;
    if (this.flushQueued) return;
    this.flushQueued = true;
    setImmediate(() => {
      this.flushQueued = false;
      this.flush();
    });
  }

  /** Sends the pushes held for the end of this turn: grants first, then assignments. */
  flush(): void {
    if (this.pendingGrants.size === 0 && this.pendingAssignments.length === 0) return;
    const grants = [...this.pendingGrants.values()];
    const assignments = this.pendingAssignments.splice(0);
    this.pendingGrants.clear();
    // A deposed leader issues nothing (they were checked when made; this is a turn later).
    if (!this.leading()) return;
    this.afterDurable(() => {
      for (const e of grants) this.sendGrants(e);
      for (const e of assignments) this.sendAssignments(e);
    });
  }

  /**
   * Runs `send` once every store write queued so far is durable, after this turn's pushes and
   * every send given before it (a command that must follow its grants: an AM's launch, a stop of
   * workers). Dropped if the session ends first.
   */
  whenDurable(send: () => void): void {
    this.flush();
    this.afterDurable(send);
  }

  private afterDurable(send: () => void): void {
    const barrier = this.durable();
    if (!barrier && !this.waiting) {
      send();
      return;
    }
    const session = this.session;
    const p = (this.waiting ?? Promise.resolve())
      .then(() => barrier)
      .then(() => {
        if (session !== this.session || !this.leading()) return;
        try {
          send();
        } catch (err) {
          this.log.error({ err: errorMessage(err) }, 'a push failed');
        }
      });
    this.waiting = p;
    void p.then(() => {
      if (this.waiting === p) this.waiting = undefined;
    });
  }

  /** Drops what is held and ends every stream (agents and AMs open new ones to the next leader). */
  reset(): void {
    this.session++;
    this.waiting = undefined;
    this.pendingGrants.clear();
    this.pendingAssignments.length = 0;
    for (const key of [...this.grantStreams.keys()]) endStream(this.grantStreams, key);
    for (const key of [...this.assignmentStreams.keys()]) endStream(this.assignmentStreams, key);
  }

  /** Stream figures since the last call (for the periodic stats line); undefined when idle. */
  takeStats(
    now: number,
  ): { open: number; written: number; full: number; entries: number; superseded: number; waitingOnAgent: number; oldestWaitMs: number } | undefined {
    let busy = 0;
    let oldest = 0;
    for (const w of this.grantStreams.values()) {
      if (w.inFlight === 0) continue;
      busy++;
      oldest = Math.max(oldest, now - w.oldestSince);
    }
    const s = this.stats;
    if (s.written === 0 && busy === 0) return undefined;
    const out = {
      open: this.grantStreams.size,
      written: s.written,
      full: s.full,
      entries: s.entries,
      superseded: s.superseded,
      waitingOnAgent: busy,
      oldestWaitMs: oldest,
    };
    s.written = 0;
    s.full = 0;
    s.entries = 0;
    s.superseded = 0;
    return out;
  }

  private sendGrants(e: GrantsEffect): void {
    const msg = { epoch: e.epoch, seq: String(e.seq), full: e.full, grants: e.grants };
    const watch = this.grantStreams.get(e.nodeId);
    if (watch && e.full) {
      this.writeGrants(watch, { epoch: e.epoch, seq: e.seq, grants: e.grants });
      return;
    }
    if (watch) {
      // A delta the core made itself: written as it is (the stream's base is then unknown).
      watch.sent = undefined;
      watch.chain.clear();
      watch.call.write(msg);
      return;
    }
    this.peers
      .agent(e.address)
      .UpdateGrants(msg, { deadlineMs: 5000 })
      .catch((err: unknown) => this.log.warn({ nodeId: e.nodeId, err: errorMessage(err) }, 'grant push failed; the next heartbeat heals it'));
  }

  private sendAssignments(e: AssignmentsEffect): void {
    const msg = { epoch: e.epoch, seq: String(e.seq), full: e.full, assignments: e.assignments };
    const watch = this.assignmentStreams.get(e.appId);
    if (watch) {
      if (watch.call.writableLength < ASSIGNMENT_STREAM_MAX_QUEUED) {
        watch.call.write(msg);
        return;
      }
      // Its next UpdateRequests answer brings the full table; calls until it watches again.
      this.log.warn({ appId: e.appId, queued: watch.call.writableLength }, 'assignment stream not read; ended');
      this.assignmentStreams.delete(e.appId);
      endExhausted(watch.call, 'WatchAssignments', ASSIGNMENT_STREAM_MAX_QUEUED);
    }
    this.peers.assignAm(e.address, msg, { deadlineMs: 5000 }).catch((err: unknown) => {
      // A job's last pushes (after its slots were returned) can reach its host after the AM ended.
      if (!this.amCurrent(e.appId, e.address))
        this.log.debug({ appId: e.appId, err: errorMessage(err) }, 'assignment push to an AM that has ended since; dropped');
      else this.log.warn({ appId: e.appId, err: errorMessage(err) }, 'assignment push failed; the next AM heartbeat heals it');
    });
  }

  /**
   * At most GRANT_STREAM_IN_FLIGHT messages in flight per stream: beyond that a newer table
   * replaces the one waiting (a whole table, so the newest says everything; it becomes a delta
   * against the stream's last table when it is written), so an agent that reads slowly or not at
   * all (paused) costs the master a few tables, not a backlog.
   */
  private writeGrants(watch: GrantWatch, table: GrantTable): void {
    if (watch.inFlight >= GRANT_STREAM_IN_FLIGHT) {
      if (watch.waiting) this.stats.superseded++;
      watch.waiting = table;
      return;
    }
    if (watch.inFlight === 0) watch.oldestSince = Date.now();
    watch.inFlight++;
    const msg = grantMessage(table, watch.sent);
    watch.sent = { epoch: table.epoch, seq: table.seq, byKey: new Map(table.grants.map((g) => [grantKey(g.appId, g.suId), g])) };
    if (msg.full) watch.chain.clear();
    watch.chain.add(table.seq);
    if (watch.chain.size > CHAIN_SEQS) watch.chain.delete(watch.chain.values().next().value!);
    this.stats.written++;
    if (msg.full) this.stats.full++;
    this.stats.entries += msg.grants?.length ?? 0;
    watch.call.write(msg, () => {
      watch.inFlight--;
      watch.oldestSince = watch.inFlight > 0 ? Date.now() : 0;
      const next = watch.waiting;
      watch.waiting = undefined;
      if (next && this.grantStreams.get(watch.nodeId) === watch) this.writeGrants(watch, next);
    });
  }
}
