/**
 * Peer probing (CASPR's connectivity daemon, seed 000, sections III-IV): which of the peers the
 * master gave this agent to probe answer its pings, and what to tell the master about it. Pure:
 * the shell (shell/prober.ts) sends the pings this returns, feeds back the answers and the
 * period's ticks, each with `now`.
 *
 * - **Rounds.** Every `periodMs` (200 ms) a tick starts a round: one ping, numbered by the round,
 *   to every target. A target is **unreachable** once `misses` (3) rounds in a row went out to it
 *   unanswered and `misses` periods passed since its last answer (or since it became a target);
 *   counting rounds as well as time means a stall of this agent's own loop (no pings sent) never
 *   makes its peers look unreachable. It is **reachable** again at its first answer to a ping sent
 *   after that. Answers to rounds not yet sent, from peers that are not targets, or older than
 *   the peer's newest answer are ignored.
 * - **Targets** come from the master with a version (`setTargets`); a kept target keeps its state,
 *   a new one starts reachable, a dropped one leaves the unreachable set.
 * - **Reports.** Every change of the unreachable set bumps `seq` (1 is the empty set at start).
 *   `report()` gives what changed on top of the set the master acknowledged (`acked(seq)`), or the
 *   whole set with base 0 before any acknowledgement and after the master asks for it
 *   (`connectivity_resync`, or `resync()` when the agent registers again).
 *
 * ```ts
 * const p = new ProbeCore({ periodMs: 200, misses: 3 });
 * p.setTargets(7, [{ nodeId: 'a2', address: '10.0.0.2:7071' }], now);
 * const { pings } = p.tick(now);           // [{ nodeId: 'a2', address: '10.0.0.2:7071', seq: 1 }]
 * p.answer('a2', 1, now + 1);              // the pong of round 1
 * const r = p.report();                    // { seq: 1, baseSeq: 0, unreachable: [], reachable: [] }
 * p.acked(r.seq, false);                   // the heartbeat answer's connectivity_seq
 * ```
 */

export const DEFAULT_PROBE_PERIOD_MS = 200;
export const DEFAULT_PROBE_MISSES = 3;

export interface ProbeCoreConfig {
  /** One round of pings every this many milliseconds. */
  periodMs: number;
  /** Unanswered rounds (and periods) before a peer is unreachable. */
  misses: number;
}

/** A peer to probe: its node id and the host:port of its probe responder. */
export interface ProbeTarget {
  nodeId: string;
  address: string;
}

/** One ping to send: round `seq` to `nodeId` at `address`. */
export interface Ping extends ProbeTarget {
  seq: number;
}

/** A peer that became unreachable or reachable again (for the log). */
export interface ProbeChange {
  nodeId: string;
  reachable: boolean;
  /** Milliseconds since the peer's last answer (or since it became a target). */
  silentMs: number;
}

/** What goes into a heartbeat (ConnectivityDelta). */
export interface ConnectivityReport {
  /** The sequence after these changes. */
  seq: number;
  /** The acknowledged sequence they apply to; 0: `unreachable` is the whole set. */
  baseSeq: number;
  unreachable: string[];
  reachable: string[];
}

interface PeerState {
  address: string;
  /** The first round sent to it (it became a target just before). */
  firstRound: number;
  /** Its newest answered round (firstRound - 1: none yet). */
  answeredRound: number;
  /** When it last answered, or became a target. */
  lastAnswerMs: number;
  unreachable: boolean;
  /** While unreachable: only an answer to this round or a later one makes it reachable again. */
  backFromRound: number;
}

/** Reports in flight are remembered up to this many (a heartbeat is answered or dropped well before). */
const SENT_KEPT = 16;

export class ProbeCore {
  private readonly periodMs: number;
  private readonly misses: number;
  private readonly peers = new Map<string, PeerState>();
  private version = 0;
  private round = 0;
  private lastRoundMs = Number.NEGATIVE_INFINITY;
  /** The unreachable set's sequence: bumped on every change. */
  private seq = 1;
  /** The sequence the master acknowledged (0: none), and the set it stands for. */
  private ackedSeq = 0;
  private ackedSet = new Set<string>();
  /** The next report carries the whole set (base 0). */
  private full = true;
  /** The set each report in flight stood for, by its seq. */
  private readonly sent = new Map<number, string[]>();

  constructor(cfg: ProbeCoreConfig) {
    if (!(cfg.periodMs > 0) || !Number.isInteger(cfg.misses) || cfg.misses < 1) throw new RangeError(`bad probe config ${JSON.stringify(cfg)}`);
    this.periodMs = cfg.periodMs;
    this.misses = cfg.misses;
  }

  /** The version of the targets held (0: none yet); heartbeats carry it. */
  get targetsVersion(): number {
    return this.version;
  }

  /** The peers probed, by node id. */
  targets(): ProbeTarget[] {
    return [...this.peers].map(([nodeId, p]) => ({ nodeId, address: p.address })).sort((a, b) => (a.nodeId < b.nodeId ? -1 : 1));
  }

  /** Where `nodeId`'s responder is, when it is a target. */
  addressOf(nodeId: string): string | undefined {
    return this.peers.get(nodeId)?.address;
  }

  /** The peers unreachable now, sorted. */
  unreachable(): string[] {
    return [...this.peers]
      .filter(([, p]) => p.unreachable)
      .map(([id]) => id)
      .sort();
  }

  /** The unreachable set's current sequence. */
  get currentSeq(): number {
    return this.seq;
  }

  /**
   * The master's probe targets (version `version`). Kept targets (same node, same address) keep
   * their state; new ones start reachable; dropped ones leave the unreachable set (a change).
   */
  setTargets(version: number, targets: readonly ProbeTarget[], now: number): ProbeChange[] {
    this.version = version;
    const next = new Map(targets.map((t) => [t.nodeId, t.address]));
    const changes: ProbeChange[] = [];
    for (const [id, p] of [...this.peers]) {
      if (next.get(id) === p.address) continue;
      this.peers.delete(id);
      if (p.unreachable) {
        this.seq++;
        changes.push({ nodeId: id, reachable: true, silentMs: now - p.lastAnswerMs });
      }
    }
    for (const [id, address] of next) {
      if (this.peers.has(id)) continue;
      this.peers.set(id, { address, firstRound: this.round + 1, answeredRound: this.round, lastAnswerMs: now, unreachable: false, backFromRound: 0 });
    }
    return changes;
  }

  /**
   * The period's tick: marks the peers that missed too many rounds unreachable, then starts the
   * next round (nothing when called again within half a period).
   */
  tick(now: number): { pings: Ping[]; changes: ProbeChange[] } {
    if (now - this.lastRoundMs < this.periodMs / 2) return { pings: [], changes: [] };
    const changes: ProbeChange[] = [];
    for (const [id, p] of this.peers) {
      if (p.unreachable) continue;
      const missed = this.round - p.answeredRound;
      const silentMs = now - p.lastAnswerMs;
      if (missed >= this.misses && silentMs >= this.misses * this.periodMs) {
        p.unreachable = true;
        p.backFromRound = this.round + 1;
        this.seq++;
        changes.push({ nodeId: id, reachable: false, silentMs });
      }
    }
    this.round++;
    this.lastRoundMs = now;
    const pings = [...this.peers].map(([nodeId, p]) => ({ nodeId, address: p.address, seq: this.round }));
    return { pings, changes };
  }

  /** `nodeId` answered round `seq`. Returns the change when it was unreachable. */
  answer(nodeId: string, seq: number, now: number): ProbeChange | undefined {
    const p = this.peers.get(nodeId);
    if (!p || !Number.isInteger(seq) || seq > this.round || seq < p.firstRound || seq <= p.answeredRound) return undefined;
    const silentMs = now - p.lastAnswerMs;
    p.answeredRound = seq;
    p.lastAnswerMs = now;
    if (!p.unreachable || seq < p.backFromRound) return undefined;
    p.unreachable = false;
    this.seq++;
    return { nodeId, reachable: true, silentMs };
  }

  /** What the next heartbeat carries: the changes on top of the acknowledged set, or the whole set. */
  report(): ConnectivityReport {
    const cur = this.unreachable();
    this.sent.set(this.seq, cur);
    for (const s of this.sent.keys()) if (this.sent.size > SENT_KEPT) this.sent.delete(s);
    if (this.full) return { seq: this.seq, baseSeq: 0, unreachable: cur, reachable: [] };
    const now = new Set(cur);
    return {
      seq: this.seq,
      baseSeq: this.ackedSeq,
      unreachable: cur.filter((id) => !this.ackedSet.has(id)),
      reachable: [...this.ackedSet].filter((id) => !now.has(id)).sort(),
    };
  }

  /**
   * The master's answer: it holds `seq` now, or (`resync`) it lacks the base of our changes and
   * wants the whole set. `seq` 0 without resync: the master did not take the report (ignored).
   */
  acked(seq: number, resync: boolean): void {
    if (resync) {
      this.full = true;
      return;
    }
    if (seq <= 0) return;
    const set = this.sent.get(seq);
    if (!set) {
      // Not a set we reported (or one long gone): start again from the whole set.
      this.full = true;
      return;
    }
    this.ackedSeq = seq;
    this.ackedSet = new Set(set);
    this.full = false;
    for (const s of [...this.sent.keys()]) if (s < seq) this.sent.delete(s);
  }

  /** A new session with the master (a registration): the next report carries the whole set. */
  resync(): void {
    this.full = true;
  }
}
