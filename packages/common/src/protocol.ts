/**
 * Protocol definitions every component shares: the application master's schedule unit, a worker's
 * states, and the rule by which agents (grant tables) and AMs (assignment tables) accept a table
 * message from the master. One definition here; the cores and shells import it.
 */
import { cmpInt64, type Int64 } from './epoch.js';

/**
 * The schedule unit of application-master processes (and the task name reserved for them): the
 * master grants and launches it, an agent accepts plans for it only from the master.
 */
export const AM_SU = '__am__';

/**
 * The environment variable in which an AM process gets its attempt's token from the master (the
 * bearer token of its calls). Only the AM's own process has it: never its workers, never a file
 * other workers could read, never a log.
 */
export const AM_TOKEN_ENV = 'FUXI_AM_TOKEN';

/** `env` with the AM token's value hidden, for what is written beside a worker (its `cmd.json`). */
export function redactedEnv(env: Readonly<Record<string, string>>): Record<string, string> {
  return AM_TOKEN_ENV in env ? { ...env, [AM_TOKEN_ENV]: '(redacted)' } : { ...env };
}

/** A worker's state as agents report it (proto `WorkerState`). */
export type WorkerState = 'PENDING' | 'STARTING' | 'RUNNING' | 'SUCCEEDED' | 'FAILED' | 'KILLED' | 'REJECTED';

const TERMINAL: ReadonlySet<WorkerState> = new Set(['SUCCEEDED', 'FAILED', 'KILLED', 'REJECTED']);
const ACTIVE: ReadonlySet<WorkerState> = new Set(['STARTING', 'RUNNING']);

/** The worker has ended (and will not run again). */
export function isWorkerTerminal(s: WorkerState): boolean {
  return TERMINAL.has(s);
}

/** Occupies a slot of its grant (and node capacity): spawning or running. */
export function isWorkerActive(s: WorkerState): boolean {
  return ACTIVE.has(s);
}

/** What a receiver has applied: the table of master `epoch`, up to its message `seq`. */
export interface AppliedTable {
  epoch: Int64;
  seq: bigint;
}

/** A table message from the master: a delta numbered `seq`, or the whole table (`full`). */
export interface TableMessage {
  epoch: Int64;
  seq: bigint;
  full: boolean;
  /** A delta's base: the table of the same master it changes (absent: `seq` - 1). */
  base?: bigint;
}

export type TableVerdict =
  /** From an older master than the applied table's: the sender is deposed (StaleEpochError). */
  | { kind: 'stale' }
  /** A delta that is not exactly the next one: ignored; the master heals it with a full table. */
  | { kind: 'out-of-order'; base: bigint }
  /** A full table overtaken by a newer message of the same master: applying it would shrink live slots. */
  | { kind: 'older-full'; base: bigint }
  /** Apply it. `newerMaster`: it is the first message of a newer master than the applied table's. */
  | { kind: 'apply'; newerMaster: boolean };

/**
 * The acceptance rule for grant and assignment tables. Messages are ordered by (epoch, seq)
 * lexicographically; every master numbers its own messages, so from a master newer than the one
 * whose table is applied, the applied seq counts as 0. A delta applies only on its base, the
 * applied table itself (`base`, or else its seq is exactly one past the applied seq): the master
 * may skip numbers between two messages of one stream, and a delta from any other table would
 * leave the entries that changed between the two as they were; a full table replaces the table
 * unless it is older than the applied one from the same master (seq below); a full table from a
 * newer master always applies.
 */
export function acceptTable(applied: AppliedTable, msg: TableMessage): TableVerdict {
  const order = cmpInt64(msg.epoch, applied.epoch);
  if (order < 0) return { kind: 'stale' };
  const base = order > 0 ? 0n : applied.seq;
  if (!msg.full && ((msg.base ?? msg.seq - 1n) !== base || msg.seq <= base)) return { kind: 'out-of-order', base };
  if (msg.full && order === 0 && msg.seq < base) return { kind: 'older-full', base };
  return { kind: 'apply', newerMaster: order > 0 };
}
