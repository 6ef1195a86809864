/**
 * Job arrays (Slurm's `--array 0-999%50`): every member is a job of its own, and at most
 * `maxRunning` members of an array are active (their AM asked for or running) at once. A member
 * over the limit is held: submitted, no AM, `held` in its stored record (so a new leader holds it
 * too). When an active member ends, held members are admitted in index order (their record written
 * again). The decisions live here; jobs.ts starts the attempts.
 */
import type { MasterState } from './master-state.js';
import { TERMINAL_STATES, type JobRecord } from './types.js';

/** Indexes a member under its array (on submit and on load). */
export function indexMember(st: MasterState, job: JobRecord): void {
  const a = job.spec.array;
  if (!a) return;
  let set = st.arrays.get(a.id);
  if (!set) st.arrays.set(a.id, (set = new Set()));
  set.add(job.jobId);
}

/** A member held by its array's limit (or just submitted, before the decision). */
export function isHeld(job: JobRecord): boolean {
  return job.held === true && !TERMINAL_STATES.has(job.state);
}

function active(job: JobRecord): boolean {
  return job.held !== true && !TERMINAL_STATES.has(job.state);
}

/** Members of `arrayId`, in index order. */
export function members(st: MasterState, arrayId: string): JobRecord[] {
  const ids = st.arrays.get(arrayId) ?? new Set<string>();
  return [...ids]
    .map((id) => st.jobs.get(id))
    .filter((j): j is JobRecord => j !== undefined)
    .sort((a, b) => (a.spec.array?.index ?? 0) - (b.spec.array?.index ?? 0));
}

/** The held members of `arrayId` that may start now (in index order), within its maxRunning. */
export function admissible(st: MasterState, arrayId: string): JobRecord[] {
  const all = members(st, arrayId);
  const waiting = all.filter(isHeld);
  const limit = Math.max(0, ...all.map((j) => j.spec.array?.maxRunning ?? 0));
  if (limit === 0) return waiting;
  const room = limit - all.filter(active).length;
  return room > 0 ? waiting.slice(0, room) : [];
}

/** The message a held member shows. */
export function heldMessage(st: MasterState, job: JobRecord): string {
  const a = job.spec.array!;
  const running = members(st, a.id).filter(active).length;
  return `held: array ${a.id} has ${running} of at most ${a.maxRunning} members running`;
}
