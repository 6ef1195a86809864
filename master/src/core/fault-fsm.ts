/**
 * The fault-handling layer (paper section 4.2.4, Fuxi-FT): an *event sensor* (the master shell
 * and core: heartbeat gaps, process exits, health checks, election changes) posts typed fault
 * events on a *bulletin board*; a *dispatcher* routes each to the hot-pluggable *handlers*
 * registered for its kind; the *system FSM* (paper Fig. 5) follows the combination of open faults,
 * and that combination selects the row of the paper's Table 3: which soft-state sources each
 * recovery may consult, and when.
 *
 * Pure and deterministic (docs/code-style.md, rules 1-3): no clock, no I/O; time comes in as `now`, ids are
 * `${idPrefix}${counter}`.
 *
 * ```ts
 * const board = new FaultBoard({ log, idPrefix: 'fault-' });
 * board.on('AGENT_TIMING', (e, { state, row }) => reserveAndNotifyAms(e.subject, row));
 * board.post('FM_CRASH', '', now, 'took over at epoch 8');       // S0 -> S1 (Table 3 row 1)
 * board.post('AGENT_TIMING', 'n3', now, 'no report in window');  // S1 -> S5 (row 10)
 * board.sources();  // [{ source: 'AMFullResReq', timing: 'now' }, { source: 'AMFullAsgnedRes', timing: 'now' }]
 * board.resolve('AGENT_TIMING', 'n3', later);                    // S5 -> S1
 * ```
 */
import { FSM_STATE_NAMES, FSM_STATES, fsmStateLabel, InvalidArgumentError, nullLogger, type FsmState, type Logger } from '@fuxi/common';

/**
 * The paper's five kinds, and `AGENT_PARTITIONED`: an agent the master cannot hear while peers that
 * the master hears still reach it (a partition between the master and the agent, not a dead
 * agent). For the FSM and Table 3 it is an agent timing failure (S3, row 3: the master keeps the
 * node's grants, FMFullCap, and the agent reconciles with them after reconnect); unlike
 * AGENT_TIMING its AMs are not told (fault-handlers.ts).
 */
export type FaultKind = 'FM_CRASH' | 'AM_CRASH' | 'AM_TIMING' | 'AGENT_CRASH' | 'AGENT_TIMING' | 'AGENT_PARTITIONED';
export const FAULT_KINDS: readonly FaultKind[] = ['FM_CRASH', 'AM_CRASH', 'AM_TIMING', 'AGENT_CRASH', 'AGENT_TIMING', 'AGENT_PARTITIONED'];

export { FSM_STATE_NAMES, FSM_STATES, fsmStateLabel, type FsmState };

export type FaultState = 'open' | 'recovering' | 'resolved';

export interface FaultEvent {
  id: string;
  kind: FaultKind;
  /** The node id (agent faults), app id (AM faults), or '' for the master. */
  subject: string;
  sinceMs: number;
  state: FaultState;
  detail: string;
  /** Set on resolved events only (in `history()`). */
  resolvedAtMs?: number;
}

/**
 * The soft-state sources of Table 3 (names as in the paper's Table 1):
 * - `FMFullAsgnedRes`: the master's assignments to an AM (FMFullAsgnedResToAM);
 * - `FMFullCap`: the master's grants to an agent (FMFullResCapToFA);
 * - `FAFullCap`: the agent's grants from the master (FAgentFullCapFromFM);
 * - `AMFullResReq`: the AM's outstanding requests (AMFullReqResFromFM);
 * - `AMFullAsgnedRes`: the AM's assignments (AMFullAsgnedResFromFM).
 */
export type SoftStateSource = 'FMFullAsgnedRes' | 'FMFullCap' | 'FAFullCap' | 'AMFullResReq' | 'AMFullAsgnedRes';
export const SOFT_STATE_SOURCES: readonly SoftStateSource[] = ['FMFullAsgnedRes', 'FMFullCap', 'FAFullCap', 'AMFullResReq', 'AMFullAsgnedRes'];

/** Table 3 cells: √ = `now`, AR (after reconnect) = `after-reconnect`, FC (from checkpoint) = `from-checkpoint`. */
export type SourceTiming = 'now' | 'after-reconnect' | 'from-checkpoint';

export interface Table3Row {
  /** 1..13, the paper's numbering. */
  row: number;
  /** The paper's "Failure Combinations" cell. */
  name: string;
  state: FsmState;
  /** The used cells, in the table's column order; the cells marked '-' are absent. */
  sources: Array<{ source: SoftStateSource; timing: SourceTiming }>;
}

const NOW = 'now' as const;
const AR = 'after-reconnect' as const;
const FC = 'from-checkpoint' as const;

/**
 * The paper's Table 3, row for row. Three cells are empty in the table as extracted (neither a
 * mark nor '-'); the text says they are used, so they are filled in here:
 * - row 1, FAFullCap: section 4.1.1: a new master infers its soft state from the agents' granted
 *   resources (FAgentFullCapFromFM) and the AMs' requests.
 * - row 3, FMFullCap: section 4.1.2: for an agent's timing failure the master keeps holding the
 *   node's allocated resources (its FMFullCap) and the agent reconciles with them when its
 *   heartbeats come back: after reconnect.
 * - row 7, FAFullCap: section 4.2.2 / Algorithm 2 line 8: the restarting master synthesizes the
 *   MockSUs of apps whose AM has not reported from the granted resources the agents report.
 * Row 12's "√ (FC)" is `from-checkpoint` (section 4.2.1: the crashed agent restores its grants
 * from its local Δc checkpoint because the master cannot provide them).
 */
export const TABLE_3: readonly Table3Row[] = deepFreeze([
  {
    row: 1,
    name: 'FM Crash',
    state: 'S1',
    sources: [
      { source: 'FAFullCap', timing: NOW },
      { source: 'AMFullResReq', timing: NOW },
    ],
  },
  { row: 2, name: 'FAgent Crash', state: 'S3', sources: [{ source: 'FMFullCap', timing: NOW }] },
  { row: 3, name: 'FAgent Timing', state: 'S3', sources: [{ source: 'FMFullCap', timing: AR }] },
  { row: 4, name: 'AM Crash', state: 'S2', sources: [{ source: 'FMFullAsgnedRes', timing: NOW }] },
  { row: 5, name: 'AM Timing', state: 'S2', sources: [{ source: 'FMFullAsgnedRes', timing: NOW }] },
  {
    row: 6,
    name: 'AMCrash/Timing+FAgentCrash/Timing',
    state: 'S2S3',
    sources: [
      { source: 'FMFullAsgnedRes', timing: NOW },
      { source: 'FMFullCap', timing: NOW },
    ],
  },
  {
    row: 7,
    name: 'FM Crash+AM Crash',
    state: 'S4',
    sources: [
      { source: 'FAFullCap', timing: NOW },
      { source: 'AMFullResReq', timing: NOW },
    ],
  },
  {
    row: 8,
    name: 'FM Crash+AM Timing',
    state: 'S4',
    sources: [
      { source: 'FAFullCap', timing: NOW },
      { source: 'AMFullResReq', timing: AR },
    ],
  },
  {
    row: 9,
    name: 'FM Crash+FAgent Crash',
    state: 'S5',
    sources: [
      { source: 'AMFullResReq', timing: NOW },
      { source: 'AMFullAsgnedRes', timing: NOW },
    ],
  },
  {
    row: 10,
    name: 'FM Crash+FAgent Timing',
    state: 'S5',
    sources: [
      { source: 'AMFullResReq', timing: NOW },
      { source: 'AMFullAsgnedRes', timing: NOW },
    ],
  },
  {
    row: 11,
    name: 'FM Crash+AM Timing+FAgent Timing',
    state: 'S6',
    sources: [
      { source: 'FAFullCap', timing: AR },
      { source: 'AMFullResReq', timing: AR },
    ],
  },
  {
    row: 12,
    name: 'FM Crash+AM Timing+FAgent Crash',
    state: 'S6',
    sources: [
      { source: 'FAFullCap', timing: FC },
      { source: 'AMFullResReq', timing: AR },
    ],
  },
  {
    row: 13,
    name: 'FM Crash+AM Crash+FAgent Timing',
    state: 'S6',
    sources: [
      { source: 'AMFullResReq', timing: NOW },
      { source: 'AMFullAsgnedRes', timing: NOW },
    ],
  },
]);

type ClassFault = 'crash' | 'timing' | undefined;

/**
 * The combination of open faults per component class. When the same class has both a crashed
 * and a timing-out member (AM x crashed, AM y late), the crash decides the row: a crashed
 * component has lost its in-memory soft state and must rebuild it from the row's sources, while a
 * late one still holds its state and reconciles on reconnect whichever row applies.
 */
function combination(kinds: Iterable<FaultKind>): { fm: boolean; am: ClassFault; agent: ClassFault } {
  let fm = false;
  let am: ClassFault;
  let agent: ClassFault;
  for (const k of kinds) {
    switch (k) {
      case 'FM_CRASH':
        fm = true;
        break;
      case 'AM_CRASH':
        am = 'crash';
        break;
      case 'AM_TIMING':
        am ??= 'timing';
        break;
      case 'AGENT_CRASH':
        agent = 'crash';
        break;
      case 'AGENT_TIMING':
      case 'AGENT_PARTITIONED':
        agent ??= 'timing';
        break;
    }
  }
  return { fm, am, agent };
}

function rowNumber(c: { fm: boolean; am: ClassFault; agent: ClassFault }): number | undefined {
  const { fm, am, agent } = c;
  if (!fm) {
    if (am && agent) return 6;
    if (am) return am === 'crash' ? 4 : 5;
    if (agent) return agent === 'crash' ? 2 : 3;
    return undefined;
  }
  if (!am && !agent) return 1;
  if (!agent) return am === 'crash' ? 7 : 8;
  if (!am) return agent === 'crash' ? 9 : 10;
  if (am === 'timing') return agent === 'timing' ? 11 : 12;
  // FM crash + AM crash + agent timing is row 13. FM crash + AM crash + agent *crash* has no row
  // of its own: the extracted table leaves "FM Crash+AM Crash+FAgent Crash (S6)" as a stray line
  // right after row 13 (a second line of that cell), and section 4.2.3's first case ("FAgent
  // failing (crash or timing failure) during which (1) AppMaster crashes") treats both alike: the
  // AM rebuilds its assignments from its workers. So it uses row 13 too.
  return 13;
}

/** The Table 3 row for the combination of open fault kinds; undefined when nothing is open (S0). */
export function table3Row(open: ReadonlyArray<Pick<FaultEvent, 'kind'>>): Table3Row | undefined {
  const n = rowNumber(combination(open.map((e) => e.kind)));
  return n === undefined ? undefined : TABLE_3[n - 1];
}

/** The FSM state (paper Fig. 5) for a set of open fault kinds. */
export function fsmStateOf(kinds: ReadonlySet<FaultKind>): FsmState {
  const { fm, am, agent } = combination(kinds);
  if (fm) return am && agent ? 'S6' : am ? 'S4' : agent ? 'S5' : 'S1';
  if (am && agent) return 'S2S3';
  return am ? 'S2' : agent ? 'S3' : 'S0';
}

/**
 * A handler gets a copy of the event and the FSM state and Table 3 row that its posting produced
 * (not those of later posts that were queued behind it).
 */
export type FaultHandler = (e: FaultEvent, ctx: { state: FsmState; row: Table3Row | undefined }) => void;

export interface FsmTransition {
  from: FsmState;
  to: FsmState;
  atMs: number;
  /** What caused it: `post AGENT_CRASH n1 (fault-3)` or `resolve AGENT_CRASH n1 (fault-3)`. */
  event: string;
}

export interface FaultBoardOptions {
  log?: Logger;
  /** Event ids are `${idPrefix}${counter}` (counter from 1); default `fault-`. */
  idPrefix?: string;
  /** Resolved events kept for `history()`; default 200. */
  historyLimit?: number;
  /** Entries kept in `transitions()`; default 200. */
  transitionLimit?: number;
}

interface Entry {
  seq: number;
  ev: FaultEvent;
  /** When its recovery started (`recovering`), if it did. */
  recoveringAtMs?: number;
}

/**
 * How long a resolved fault took, for the master's metrics (`takeResolved`): from posted to
 * recovery started (`detectMs`, when `recovering` was called), from then to resolved
 * (`recoverMs`), and from posted to resolved (`totalMs`).
 */
export interface ResolvedFault {
  kind: FaultKind;
  detectMs?: number;
  recoverMs?: number;
  totalMs: number;
}

/** Resolved faults not taken yet are kept up to this many (the oldest are dropped). */
export const MAX_UNTAKEN_RESOLVED = 10_000;

interface Subscription {
  kind: FaultKind | '*';
  handler: FaultHandler;
  active: boolean;
}

interface Dispatch {
  ev: FaultEvent;
  state: FsmState;
  row: Table3Row | undefined;
}

/** Event sensor -> bulletin board -> dispatcher -> pluggable handlers, and the system FSM. */
export class FaultBoard {
  private readonly log: Logger;
  private readonly idPrefix: string;
  private readonly historyLimit: number;
  private readonly transitionLimit: number;
  private counter = 0;
  /** Open and recovering events by `${kind}\u0000${subject}`. */
  private readonly openByKey = new Map<string, Entry>();
  /** Recently resolved, oldest first, at most `historyLimit`. */
  private readonly resolved: Entry[] = [];
  private readonly log_: FsmTransition[] = [];
  /** Resolved since the last `takeResolved`. */
  private untaken: ResolvedFault[] = [];
  private readonly subs: Subscription[] = [];
  private readonly queue: Dispatch[] = [];
  private dispatching = false;
  private current: FsmState = 'S0';

  constructor(opts: FaultBoardOptions = {}) {
    this.log = opts.log ?? nullLogger;
    this.idPrefix = opts.idPrefix ?? 'fault-';
    this.historyLimit = Math.max(0, opts.historyLimit ?? 200);
    this.transitionLimit = Math.max(0, opts.transitionLimit ?? 200);
  }

  /**
   * The event sensor posts a fault: the board records it, the FSM transitions, and the dispatcher
   * calls the handlers registered for its kind and for '*' (one list, in registration order).
   * Posting a (kind, subject) that is already open or recovering is idempotent: it returns (a copy
   * of) the existing event and dispatches nothing. A handler that posts or resolves runs that
   * after the current event's handlers have all run (a queue, not recursion); a handler that
   * throws is logged and the others still run.
   */
  post(kind: FaultKind, subject: string, now: number, detail = ''): FaultEvent {
    checkKind(kind);
    checkTime(now);
    const key = keyOf(kind, subject);
    const existing = this.openByKey.get(key);
    if (existing) return { ...existing.ev };
    const seq = ++this.counter;
    const ev: FaultEvent = { id: `${this.idPrefix}${seq}`, kind, subject, sinceMs: now, state: 'open', detail };
    this.openByKey.set(key, { seq, ev });
    this.log.info({ id: ev.id, kind, subject, detail }, 'fault posted');
    this.transition(now, `post ${describe(ev)}`);
    this.queue.push({ ev: { ...ev }, state: this.current, row: this.row() });
    this.drain();
    return { ...ev };
  }

  /** Recovery of that fault has started (no FSM change: the fault is still open). Unknown faults are ignored. */
  recovering(kind: FaultKind, subject: string, now: number): void {
    checkKind(kind);
    checkTime(now);
    const e = this.openByKey.get(keyOf(kind, subject));
    if (!e) {
      this.log.debug({ kind, subject }, 'recovering: no such open fault');
      return;
    }
    if (e.ev.state === 'recovering') return;
    e.ev.state = 'recovering';
    e.recoveringAtMs = now;
    this.log.info({ id: e.ev.id, kind, subject }, 'fault recovering');
  }

  /**
   * Recovery of that fault finished: it leaves the open set (the FSM transitions back) and joins
   * the history; `detail`, when given, is appended to the event's detail. Idempotent: resolving a
   * fault that is not open does nothing.
   */
  resolve(kind: FaultKind, subject: string, now: number, detail = ''): void {
    checkKind(kind);
    checkTime(now);
    const key = keyOf(kind, subject);
    const e = this.openByKey.get(key);
    if (!e) {
      this.log.debug({ kind, subject }, 'resolve: no such open fault');
      return;
    }
    this.openByKey.delete(key);
    e.ev.state = 'resolved';
    e.ev.resolvedAtMs = now;
    if (detail) e.ev.detail = e.ev.detail ? `${e.ev.detail}; ${detail}` : detail;
    this.resolved.push(e);
    if (this.resolved.length > this.historyLimit) this.resolved.splice(0, this.resolved.length - this.historyLimit);
    const took: ResolvedFault = { kind, totalMs: now - e.ev.sinceMs };
    if (e.recoveringAtMs !== undefined) Object.assign(took, { detectMs: e.recoveringAtMs - e.ev.sinceMs, recoverMs: now - e.recoveringAtMs });
    this.untaken.push(took);
    if (this.untaken.length > MAX_UNTAKEN_RESOLVED) this.untaken.splice(0, this.untaken.length - MAX_UNTAKEN_RESOLVED);
    this.log.info({ id: e.ev.id, kind, subject, openForMs: now - e.ev.sinceMs, detail }, 'fault resolved');
    this.transition(now, `resolve ${describe(e.ev)}`);
  }

  /**
   * Registers a handler for one kind or for every kind ('*'); returns its unsubscribe function.
   * A handler registered while an event is being dispatched is not called for that event; one
   * unsubscribed meanwhile is not called any more, even for that event.
   */
  on(kind: FaultKind | '*', handler: FaultHandler): () => void {
    if (kind !== '*') checkKind(kind);
    const sub: Subscription = { kind, handler, active: true };
    this.subs.push(sub);
    return () => {
      if (!sub.active) return;
      sub.active = false;
      const i = this.subs.indexOf(sub);
      if (i >= 0) this.subs.splice(i, 1);
    };
  }

  get state(): FsmState {
    return this.current;
  }

  /** Whether a fault of that kind and subject is open or recovering. */
  isOpen(kind: FaultKind, subject: string): boolean {
    return this.openByKey.has(keyOf(kind, subject));
  }

  /** The faults resolved since the last call, with how long each phase took (empties the list). */
  takeResolved(): ResolvedFault[] {
    const out = this.untaken;
    this.untaken = [];
    return out;
  }

  /** Open and recovering events, oldest first (copies). */
  open(): FaultEvent[] {
    return this.openEntries().map((e) => ({ ...e.ev }));
  }

  /** Open, recovering and recently resolved events (at most `historyLimit` resolved), oldest first; the last `limit` of them. */
  history(limit?: number): FaultEvent[] {
    const all = [...this.resolved, ...this.openByKey.values()].sort((a, b) => a.seq - b.seq).map((e) => ({ ...e.ev }));
    if (limit === undefined) return all;
    return limit <= 0 ? [] : all.slice(-limit);
  }

  /** The Table 3 row of the current combination of open faults; undefined in S0. */
  row(): Table3Row | undefined {
    return table3Row(this.openEntries().map((e) => e.ev));
  }

  /** The soft-state sources the current combination may use (Table 3); empty in S0. */
  sources(): Table3Row['sources'] {
    return (this.row()?.sources ?? []).map((s) => ({ ...s }));
  }

  /** FSM state changes (not posts that leave the state as it was), oldest first, at most `transitionLimit`. */
  transitions(): FsmTransition[] {
    return this.log_.map((t) => ({ ...t }));
  }

  private openEntries(): Entry[] {
    return [...this.openByKey.values()].sort((a, b) => a.seq - b.seq);
  }

  private transition(now: number, event: string): void {
    const to = fsmStateOf(new Set(this.openEntries().map((e) => e.ev.kind)));
    const from = this.current;
    if (to === from) return;
    this.current = to;
    this.log_.push({ from, to, atMs: now, event });
    if (this.log_.length > this.transitionLimit) this.log_.splice(0, this.log_.length - this.transitionLimit);
    this.log.info({ from, to, event }, `fault FSM ${from} -> ${to}`);
  }

  private drain(): void {
    if (this.dispatching) return;
    this.dispatching = true;
    try {
      for (let d = this.queue.shift(); d; d = this.queue.shift()) {
        for (const sub of this.subs.filter((s) => s.kind === '*' || s.kind === d.ev.kind)) {
          if (!sub.active) continue;
          try {
            sub.handler({ ...d.ev }, { state: d.state, row: d.row });
          } catch (err) {
            this.log.error({ err, id: d.ev.id, kind: d.ev.kind, subject: d.ev.subject }, 'fault handler threw');
          }
        }
      }
    } finally {
      this.dispatching = false;
    }
  }
}

function keyOf(kind: FaultKind, subject: string): string {
  return `${kind}\u0000${subject}`;
}

function describe(e: FaultEvent): string {
  return `${e.kind}${e.subject ? ` ${e.subject}` : ''} (${e.id})`;
}

function checkKind(kind: string): void {
  if (!(FAULT_KINDS as readonly string[]).includes(kind)) {
    throw new InvalidArgumentError('kind', `unknown fault kind ${JSON.stringify(kind)} (known: ${FAULT_KINDS.join(', ')})`);
  }
}

function checkTime(now: number): void {
  if (!Number.isFinite(now)) throw new InvalidArgumentError('now', `must be a finite number of milliseconds, got ${now}`);
}

function deepFreeze(rows: Table3Row[]): readonly Table3Row[] {
  for (const row of rows) {
    for (const s of row.sources) Object.freeze(s);
    Object.freeze(row.sources);
    Object.freeze(row);
  }
  return Object.freeze(rows);
}
