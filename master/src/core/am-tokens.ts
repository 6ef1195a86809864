/**
 * AM attempt tokens: each attempt of an application master gets its own random token (hard state,
 * written with the job record, so a new leader accepts the live AM); the app's calls must carry
 * the current attempt's token (authz.ts), and agents accept plans only with it (they get its hash
 * with the app's grants). The core never makes randomness: `MasterCoreConfig.mintAmToken` does.
 * A token is never logged, shown to clients, or put in a worker's environment.
 */
import type { MasterState } from './master-state.js';
import type { JobRecord } from './types.js';

/** A token and its sha-256 (hex), the form agents compare with. */
export interface AmToken {
  token: string;
  hash: string;
}

/** Retired attempts' hashes kept per job (their tokens are refused as old, not unknown). */
const RETIRED_KEPT = 16;

/** Gives the job's current attempt a fresh token (none when the master mints none: simulators, unit tests). */
export function mintAttemptToken(st: MasterState, job: JobRecord): void {
  const mint = st.cfg.mintAmToken;
  if (!mint) return;
  if (job.amTokenHash) job.retiredAmTokenHashes = [...(job.retiredAmTokenHashes ?? []), job.amTokenHash].slice(-RETIRED_KEPT);
  const t = mint();
  job.amToken = t.token;
  job.amTokenHash = t.hash;
}

/**
 * Which attempt of `appId` a token (given as its hash) belongs to: the current one, an older one
 * (`attempt` below the current), or none.
 */
export function amTokenAttempt(job: JobRecord | undefined, hash: string): number | undefined {
  if (!job || !hash) return undefined;
  if (job.amTokenHash === hash) return job.amAttempt;
  const retired = job.retiredAmTokenHashes ?? [];
  const i = retired.lastIndexOf(hash);
  // Older than every attempt still current; the exact number matters only in the message.
  return i < 0 ? undefined : job.amAttempt - (retired.length - i);
}
