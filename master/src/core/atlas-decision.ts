/**
 * The per-attempt decision of ATLAS+ (seed 003, section 4.4): proceed with the attempt where it
 * is, reschedule it elsewhere, or kill it early, whichever has the least expected cost. The paper
 * learns the policy with Q-learning/SARSA over task states; here the rule is the one those learn
 * toward when the costs are known, written down, with the penalties in master config:
 *
 *   proceed    = p        x (failurePenalty + remainingS x slotSecondCost)
 *   reschedule = reschedulePenalty + elapsedS x slotSecondCost + pElsewhere x (failurePenalty + totalS x slotSecondCost)
 *   kill       = killPenalty + elapsedS x slotSecondCost
 *
 * p is the predicted failure probability of the attempt on its host, pElsewhere the best other
 * host's (failure-model.ts); elapsedS and remainingS the attempt's slot-seconds spent and still
 * expected. An attempt not started yet (elapsedS 0) is never killed (there is nothing to save by
 * it): it proceeds or goes elsewhere. Proceeding wins ties, and a job that set
 * `failurePrediction: off` always proceeds.
 * Pure.
 */

export interface DecisionConfig {
  /** What one failed attempt costs beyond its slot time (a retry used, a job nearer to failing). */
  failurePenalty: number;
  /** What moving an attempt costs (the delay of a new start, a slot held elsewhere). */
  reschedulePenalty: number;
  /** What killing an attempt costs (it counts as failed: usually failurePenalty or more). */
  killPenalty: number;
  /** What one slot-second costs, in the penalties' unit. */
  slotSecondCost: number;
}

export const DEFAULT_DECISION_CONFIG: DecisionConfig = { failurePenalty: 60, reschedulePenalty: 30, killPenalty: 90, slotSecondCost: 1 };

export type AtlasAction = 'proceed' | 'reschedule' | 'kill';

export interface AttemptOutlook {
  /** Predicted failure probability where it is (or is about to start). */
  pHere: number;
  /** Predicted failure probability on the best host it could go to instead (undefined: none). */
  pElsewhere: number | undefined;
  /** Expected slot-seconds of a whole attempt, and those it has run. */
  totalS: number;
  elapsedS: number;
  /** The job set `failurePrediction: off`. */
  predictionOff?: boolean;
}

export interface Decision {
  action: AtlasAction;
  costs: { proceed: number; reschedule: number; kill: number };
}

export function decide(o: AttemptOutlook, c: DecisionConfig = DEFAULT_DECISION_CONFIG): Decision {
  const remaining = Math.max(0, o.totalS - o.elapsedS);
  const spent = o.elapsedS * c.slotSecondCost;
  const proceed = o.pHere * (c.failurePenalty + remaining * c.slotSecondCost);
  const reschedule = o.pElsewhere === undefined ? Infinity : c.reschedulePenalty + spent + o.pElsewhere * (c.failurePenalty + o.totalS * c.slotSecondCost);
  const kill = o.elapsedS > 0 ? c.killPenalty + spent : Infinity;
  const costs = { proceed, reschedule, kill };
  if (o.predictionOff === true) return { action: 'proceed', costs };
  let action: AtlasAction = 'proceed';
  if (reschedule < proceed && reschedule <= kill) action = 'reschedule';
  else if (kill < proceed) action = 'kill';
  return { action, costs };
}
