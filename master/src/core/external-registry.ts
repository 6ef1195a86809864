/**
 * External schedulers as the master knows them (soft state: a new leader starts empty and each
 * scheduler registers again): who is registered under which name, with which epoch and scope,
 * when each was last heard from, and whether a job that names a scheduler is held for it or
 * falls back to the built-in scheduler. Also the recent history the schedulers are shown
 * (placements applied, workers failed), in a bounded buffer.
 *
 * A job with `scheduler: X` has its task slots held for X (the built-in scheduler skips them) while
 * X is registered and not stalled (heard from within `externalSchedulerStallMs`), and also while X
 * is absent, unless `externalSchedulerFallbackMs` is set and X has been absent that long: then the
 * built-in scheduler places them, until X registers again. The AM's own slot is always the master's.
 */
import type { MasterState, AppState } from './master-state.js';

export type SchedulingStyle = 'queue' | 'slot';

export interface Registration {
  name: string;
  /** Decimal int64: a newer registration of the name has a larger one; older ones are fenced. */
  epoch: string;
  /** A testbed's name, or '' (then `quotaGroup` decides the scope). */
  testbed: string;
  quotaGroup: string;
  style: SchedulingStyle;
  registeredMs: number;
  lastHeardMs: number;
}

export interface HistoryEntry {
  seq: number;
  kind: 'placed' | 'failed';
  atMs: number;
  appId: string;
  unit: string;
  nodeId: string;
  count: number;
}

/** Entries of history kept (the oldest go first). */
export const HISTORY_LIMIT = 1000;
/** Default `externalSchedulerStallMs`. */
export const DEFAULT_STALL_MS = 10_000;

export class ExternalRegistry {
  readonly regs = new Map<string, Registration>();
  /** Since when each name was without a registration (set when one ends, or first asked about). */
  readonly absentSince = new Map<string, number>();
  /** Names whose jobs fell back to the built-in scheduler (their fallback time passed). */
  readonly fellBack = new Set<string>();
  private counter = 0;
  /**
   * Something the schedulers' views show may have changed since the shell last looked (requests,
   * returns, placements, node status: every input that owes or runs a scheduling pass sets it).
   */
  changed = false;
  readonly history: HistoryEntry[] = [];
  private seq = 0;

  nextEpoch(masterEpoch: string): string {
    this.counter++;
    let base = 0n;
    try {
      base = BigInt(masterEpoch);
    } catch {
      base = 0n;
    }
    return String(base * 1_000_000n + BigInt(this.counter));
  }

  record(e: Omit<HistoryEntry, 'seq'>): void {
    this.history.push({ ...e, seq: ++this.seq });
    if (this.history.length > HISTORY_LIMIT) this.history.splice(0, this.history.length - HISTORY_LIMIT);
  }

  /** History after `seq` (at most HISTORY_LIMIT entries), and the last seq. */
  historySince(seq: number): { entries: HistoryEntry[]; last: number } {
    const first = this.history.findIndex((h) => h.seq > seq);
    return { entries: first < 0 ? [] : this.history.slice(first), last: this.seq };
  }
}

function stallMs(st: MasterState): number {
  return st.cfg.externalSchedulerStallMs ?? DEFAULT_STALL_MS;
}

/** The name's registration, when it is live (not stalled). */
export function liveRegistration(st: MasterState, name: string): Registration | undefined {
  const r = st.external.regs.get(name);
  return r !== undefined && st.now - r.lastHeardMs <= stallMs(st) ? r : undefined;
}

/**
 * The job's task slots wait for (or are placed by) its external scheduler, not the built-in one.
 * A scheduling pass (`mark`) notes when a name was first found absent: its fallback time runs from
 * then; a read (a job's message) changes nothing.
 */
export function externalHolds(st: MasterState, app: AppState, mark = true): boolean {
  const name = app.job.spec.scheduler;
  if (name === undefined || name === '') return false;
  if (liveRegistration(st, name) !== undefined) return true;
  const fallback = st.cfg.externalSchedulerFallbackMs;
  if (fallback === undefined) return true;
  const reg = st.external;
  if (mark && !reg.absentSince.has(name)) reg.absentSince.set(name, st.now);
  return st.now - (reg.absentSince.get(name) ?? st.now) < fallback;
}

/** Why a job waits, when it waits for its external scheduler: shown as its message. */
export function externalWaitingMessage(st: MasterState, app: AppState): string | undefined {
  const name = app.job.spec.scheduler;
  if (name === undefined || name === '' || liveRegistration(st, name) !== undefined || !externalHolds(st, app, false)) return undefined;
  for (const su of app.sus.values()) if (su.requests.size > 0) return `waiting for external scheduler ${name}`;
  return undefined;
}

/**
 * Periodic: registrations silent past the stall time end (their placements are refused until they
 * register again), and names whose fallback time passed are noted. True when a scheduling pass is
 * owed: jobs moved from an external scheduler to the built-in one.
 */
export function tickExternal(st: MasterState): boolean {
  const reg = st.external;
  for (const r of [...reg.regs.values()]) {
    if (st.now - r.lastHeardMs > stallMs(st)) {
      reg.regs.delete(r.name);
      reg.absentSince.set(r.name, r.lastHeardMs + stallMs(st));
      st.log.warn({ scheduler: r.name, epoch: r.epoch, silentMs: st.now - r.lastHeardMs }, 'external scheduler stalled');
    }
  }
  const fallback = st.cfg.externalSchedulerFallbackMs;
  if (fallback === undefined) return false;
  let owed = false;
  for (const [name, since] of reg.absentSince) {
    if (reg.regs.has(name) || reg.fellBack.has(name) || st.now - since < fallback) continue;
    reg.fellBack.add(name);
    st.log.warn({ scheduler: name, absentMs: st.now - since }, 'external scheduler absent past the fallback time: its jobs go to the built-in scheduler');
    owed = true;
  }
  return owed;
}
