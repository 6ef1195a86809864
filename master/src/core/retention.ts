/**
 * Retention of finished jobs: a finished job's record is kept `jobRetentionMs` after it ended, and
 * at most `jobRetentionCount` finished jobs are kept (the oldest ends go first); then it is deleted
 * from memory and the store (its app state went when it ended). Runs at most every
 * RETENTION_EVERY_MS, never during a failover's aggregation window. Unfinished jobs are never touched.
 */
import type { MasterState } from './master-state.js';
import { KEYS } from './store-ops.js';
import { forgetMember } from './arrays.js';
import { TERMINAL_STATES, type JobRecord } from './types.js';

export const RETENTION_EVERY_MS = 10_000;
export const DEFAULT_JOB_RETENTION_MS = 7 * 24 * 3600 * 1000;
export const DEFAULT_JOB_RETENTION_COUNT = 100_000;

/** The finished jobs to delete now, oldest end first. */
export function expiredJobs(st: MasterState): JobRecord[] {
  const maxAge = st.cfg.jobRetentionMs ?? DEFAULT_JOB_RETENTION_MS;
  const maxCount = st.cfg.jobRetentionCount ?? DEFAULT_JOB_RETENTION_COUNT;
  const finished = [...st.jobs.values()]
    .filter((j) => TERMINAL_STATES.has(j.state))
    .sort((a, b) => a.finishedAtMs - b.finishedAtMs || a.submitSeq - b.submitSeq);
  const over = Math.max(0, finished.length - maxCount);
  return finished.filter((j, i) => i < over || st.now - j.finishedAtMs > maxAge);
}

/** Deletes expired finished jobs (at most every RETENTION_EVERY_MS). */
export function tickRetention(st: MasterState): void {
  if (st.recovering || st.now - st.lastRetentionMs < RETENTION_EVERY_MS) return;
  st.lastRetentionMs = st.now;
  const expired = expiredJobs(st);
  if (expired.length === 0) return;
  for (const j of expired) {
    st.jobs.delete(j.jobId);
    forgetMember(st, j);
    st.out.push({ kind: 'store', ops: [{ type: 'del', key: KEYS.job(j.jobId) }] });
  }
  st.log.info({ deleted: expired.length, oldestEndedMs: expired[0]!.finishedAtMs }, 'finished jobs past their retention deleted');
}
