/**
 * Job arrays (Slurm's `--array 0-999%50`): every member is a job of its own, and at most
 * `maxRunning` members of an array are active (their AM asked for or running) at once. A member
 * over the limit is held: submitted, no AM, `held` in its stored record (so a new leader holds it
 * too). When an active member ends, held members are admitted in index order (their record written
 * again). The decisions live here; jobs.ts starts the attempts.
 *
 * Each array keeps its counts as its members come and go (`ArrayMembers`): how many are active,
 * and its held members in index order. A submit, an end or an admission costs the same whether the
 * array has ten members or 100,000 (recounting every member at each one had made a 1,000-member
 * submit take 1.4 s of the master's loop once 5,000 members existed).
 *
 * An array is its first member's: the same owner, and the same `maxRunning`, for every member after
 * it. A member that differs is refused (another user's job naming the array would otherwise lift
 * its limit, or make its owner's watch of it fail on a member not theirs).
 *
 * Jobs and arrays share one name space: `fuxi status/wait/kill/list ID` take either, so a job whose
 * id is an array's, or a new array whose id is a job's, is refused (ALREADY_EXISTS). An id is free
 * again once retention has deleted the job, or every member of the array.
 */
import { AlreadyExistsError, InvalidArgumentError, PermissionDeniedError, type JobSpec } from '@fuxi/common';
import type { MasterState } from './master-state.js';
import { TERMINAL_STATES, type JobRecord } from './types.js';

/** One array's members and counts (MasterState.arrays). */
export interface ArrayMembers {
  /** Every member this master knows (ended ones until retention deletes them). */
  readonly ids: Set<string>;
  /** Members neither held nor ended. */
  active: number;
  /**
   * Held members, by index from `heldFrom` on when `heldSorted`; entries that are no longer held
   * (admitted, or ended while held) are skipped when met.
   */
  held: JobRecord[];
  heldFrom: number;
  heldSorted: boolean;
  /** The array's limit and owner: its first member's. */
  readonly maxRunning: number;
  readonly owner: string;
}

const indexOf = (j: JobRecord): number => j.spec.array?.index ?? 0;

/** A member held by its array's limit (or just submitted, before the decision). */
export function isHeld(job: JobRecord): boolean {
  return job.held === true && !TERMINAL_STATES.has(job.state);
}

/** A member neither held nor ended (its AM asked for or running). */
export function isActive(job: JobRecord): boolean {
  return job.held !== true && !TERMINAL_STATES.has(job.state);
}

/**
 * The jobs and arrays a submission is checked against: the master's own (`MasterState` is one), or
 * those with what a dry run took before it laid over them (jobs.ts `submitJobs`).
 */
export interface KnownIds {
  readonly jobs: { get(jobId: string): { readonly spec: JobSpec } | undefined };
  readonly arrays: { get(arrayId: string): Pick<ArrayMembers, 'owner' | 'maxRunning'> | undefined };
}

/**
 * Refuses, before anything changes, a new member of an existing array that is not its owner's or
 * would change its limit.
 */
export function checkMember(st: KnownIds, spec: JobSpec, owner: string): void {
  const a = spec.array;
  const arr = a ? st.arrays.get(a.id) : undefined;
  if (!a || !arr) return;
  if (arr.owner !== owner)
    throw new PermissionDeniedError(
      'SubmitJob',
      `job array ${a.id} is ${arr.owner ? `user ${arr.owner}'s` : "another submitter's"}: only its owner adds members to it`,
    );
  if (a.maxRunning !== arr.maxRunning)
    throw new InvalidArgumentError(
      'array.maxRunning',
      `job array ${a.id} runs at most ${arr.maxRunning || 'any number of'} members at once; a member cannot change that (got ${a.maxRunning})`,
    );
}

/**
 * Refuses, before anything changes, a new job that would share its id with a job array, or a new
 * array (its first member) whose id is a job's: `fuxi status/wait/kill ID` could not tell them
 * apart. A member of an array that exists already makes no new id. ALREADY_EXISTS names the id and
 * what holds it; a member with its own array's id is INVALID_ARGUMENT.
 */
export function checkIdClash(st: KnownIds, spec: JobSpec): void {
  const either = 'fuxi status, wait and kill take the id of either';
  if (st.arrays.get(spec.jobId)) throw new AlreadyExistsError('job array', spec.jobId, `(a job may not have the id of a job array: ${either})`);
  const a = spec.array;
  if (!a || st.arrays.get(a.id)) return;
  if (a.id === spec.jobId)
    throw new InvalidArgumentError('array.id', `must not be the member's own job id "${spec.jobId}": a job and a job array may not share an id`);
  const job = st.jobs.get(a.id);
  const what = job?.spec.array ? `a member of job array ${job.spec.array.id}; ` : '';
  if (job) throw new AlreadyExistsError('job', a.id, `(${what}job ${spec.jobId} may not make a job array of its id: ${either})`);
}

/** Indexes a member under its array, as it is now (on submit, before the decision; and on load). */
export function indexMember(st: MasterState, job: JobRecord): void {
  const a = job.spec.array;
  if (!a) return;
  let arr = st.arrays.get(a.id);
  if (!arr) {
    arr = { ids: new Set(), active: 0, held: [], heldFrom: 0, heldSorted: true, maxRunning: a.maxRunning, owner: job.owner ?? '' };
    st.arrays.set(a.id, arr);
  }
  if (arr.ids.has(job.jobId)) return;
  arr.ids.add(job.jobId);
  if (isHeld(job)) {
    const last = arr.held[arr.held.length - 1];
    if (last && indexOf(last) > indexOf(job)) arr.heldSorted = false;
    arr.held.push(job);
  } else if (isActive(job)) arr.active++;
}

/** An active member of an array ends (endJob, before its state changes: `wasActive` as it was). */
export function memberEnded(st: MasterState, job: JobRecord, wasActive: boolean): void {
  const arr = job.spec.array ? st.arrays.get(job.spec.array.id) : undefined;
  if (arr && wasActive && arr.ids.has(job.jobId)) arr.active = Math.max(0, arr.active - 1);
}

/** Retention deleted an ended member. */
export function forgetMember(st: MasterState, job: JobRecord): void {
  const a = job.spec.array;
  const arr = a ? st.arrays.get(a.id) : undefined;
  if (!a || !arr) return;
  arr.ids.delete(job.jobId);
  if (arr.ids.size === 0) st.arrays.delete(a.id);
}

/**
 * The held members of `arrayId` that may start now, in index order, within its maxRunning: each is
 * taken (no longer held, counted active). The caller writes their records and starts them.
 */
export function admit(st: MasterState, arrayId: string): JobRecord[] {
  const arr = st.arrays.get(arrayId);
  const room = () => arr !== undefined && (arr.maxRunning === 0 || arr.active < arr.maxRunning);
  // No room (a submit into a full array): nothing to look at, nor to sort.
  if (!arr || !room()) return [];
  if (!arr.heldSorted) {
    arr.held = arr.held.slice(arr.heldFrom).sort((x, y) => indexOf(x) - indexOf(y));
    arr.heldFrom = 0;
    arr.heldSorted = true;
  }
  const out: JobRecord[] = [];
  while (arr.heldFrom < arr.held.length && room()) {
    const j = arr.held[arr.heldFrom++] as JobRecord;
    if (!isHeld(j)) continue;
    j.held = false;
    arr.active++;
    out.push(j);
  }
  if (arr.heldFrom > 1024 && arr.heldFrom * 2 > arr.held.length) {
    arr.held = arr.held.slice(arr.heldFrom);
    arr.heldFrom = 0;
  }
  return out;
}

/** Members of `arrayId` (in no particular order). */
export function memberIds(st: MasterState, arrayId: string): ReadonlySet<string> {
  return st.arrays.get(arrayId)?.ids ?? new Set();
}

/** The message a held member shows. */
export function heldMessage(st: MasterState, job: JobRecord): string {
  const a = job.spec.array!;
  const running = st.arrays.get(a.id)?.active ?? 0;
  return `held: array ${a.id} has ${running} of at most ${a.maxRunning} members running`;
}
