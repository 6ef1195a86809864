/**
 * Who may send this agent plans and stops: the app's AM, with the token of its current attempt.
 * The agent never holds tokens, only their sha-256, which comes from the master with the app's
 * grants (`GrantEntry.amTokenHash`); the shell hashes the bearer token a call presents and asks
 * here before anything is made. The master itself sends the AM's own plan with the same token.
 * A refusal changes nothing.
 */
import { PermissionDeniedError, UnavailableError } from '@fuxi/common';
import type { CoreState } from './core-state.js';

/** The newest attempt of `appId` whose token hash this agent holds (from its grants), if any. */
export function currentAmToken(st: CoreState, appId: string): { attempt: number; hash: string } | undefined {
  let best: { attempt: number; hash: string } | undefined;
  for (const g of st.grants.values()) {
    if (g.appId !== appId || !g.amTokenHash) continue;
    const attempt = g.amAttempt ?? 0;
    if (!best || attempt > best.attempt) best = { attempt, hash: g.amTokenHash };
  }
  return best;
}

export interface PlanAuthInput {
  method: 'StartWorkers' | 'StopWorkers';
  appId: string;
  /** The attempt the request names (0 in the master's stops). */
  amAttempt: number;
  /** sha-256 (hex) of the bearer token the call presented; undefined when it presented none. */
  presentedHash: string | undefined;
  /** The call may go without a token: the master (its certificate), or a stop on an insecure cluster. */
  trustedWithoutToken: boolean;
}

/**
 * True when the check can only wait: the call presents a token and this agent holds no grant of
 * the attempt it names yet (checkPlanToken would say UNAVAILABLE). Makes no error, so a plan that
 * came before its grant can ask again at each grant update for nothing.
 */
export function planTokenWaits(st: CoreState, c: PlanAuthInput): boolean {
  if (c.presentedHash === undefined) return false;
  const cur = currentAmToken(st, c.appId);
  if (cur && c.presentedHash === cur.hash) return false;
  return !cur || (cur.attempt > 0 && c.amAttempt > cur.attempt);
}

/**
 * Throws PERMISSION_DENIED for a call with no token or a token that is not the app's current
 * attempt's; UNAVAILABLE (retry) when this agent holds no grant of that attempt yet to check it against.
 */
export function checkPlanToken(st: CoreState, c: PlanAuthInput): void {
  if (c.presentedHash === undefined) {
    if (c.trustedWithoutToken) return;
    throw new PermissionDeniedError(c.method, `no application master token: plans for ${c.appId} need its current attempt's token`);
  }
  const cur = currentAmToken(st, c.appId);
  // A grant that names no attempt (0) ties its token to none.
  if (cur && c.presentedHash === cur.hash) {
    if (cur.attempt > 0 && c.amAttempt > cur.attempt)
      throw new PermissionDeniedError(c.method, `the token is of attempt ${cur.attempt} of ${c.appId}, not ${c.amAttempt}`);
    return;
  }
  if (!cur || (cur.attempt > 0 && c.amAttempt > cur.attempt))
    throw new UnavailableError(`${c.method}: no grant of ${c.appId} attempt ${c.amAttempt} on this node yet to check its token against; retry`);
  throw new PermissionDeniedError(c.method, `the token is not the one of ${c.appId}'s current application master attempt (${cur.attempt})`);
}
