/**
 * Failure prediction in one place (ATLAS+, seed 003): attempt ends go into the history
 * (attempt-history.ts); every `retrainAfter` new ends, at most every `trainIntervalMs`, the model
 * is trained again from the history (failure-model.ts) with the generator passed in, off the
 * scheduling path; then every host is scored with it and the blacklist (blacklist.ts) updated.
 * The scheduler reads `blacklistView`; the per-attempt decision (atlas-decision.ts) is `decideAttempt`.
 *
 * Pure: time and randomness come in. The master's shell calls `maybeTrain` on a timer; the
 * prediction bench calls it from its simulated clock.
 */
import { decide, type Decision } from './atlas-decision.js';
import { AttemptHistory, type AttemptEnd } from './attempt-history.js';
import { Blacklist, type BlacklistEntry } from './blacklist.js';
import { predictFailure, trainModel, type FailureModel } from './failure-model.js';
import type { PredictionConfig } from './prediction-config.js';
import type { HostBlacklist } from './sched-types.js';

/** What the predictor needs of a host to score it. */
export interface HostLoad {
  nodeId: string;
  /** Dominant share allocated, and memory allocated (fractions). */
  load: number;
  mem: number;
}

/**
 * A host is scored for a typical attempt: a task with no history (the smoothing prior), the host as
 * loaded as attempts were on average in the training set. The pressure it is under now is weighed
 * per attempt (`predict`, the decision), so a host is not listed for being full once.
 */
const TYPICAL_TASK_RATE = 0.1;

const EMPTY: HostBlacklist = { blocked: new Set(), gray: new Set(), perApp: new Map() };

export class FailurePredictor {
  readonly history: AttemptHistory;
  readonly blacklist: Blacklist;
  private model: FailureModel | undefined;
  private pending = 0;
  private lastTrainMs = -Infinity;
  private trainings = 0;

  constructor(readonly config: PredictionConfig) {
    this.history = new AttemptHistory(config.history);
    this.blacklist = new Blacklist(config.blacklist);
  }

  /** An attempt ended (any job: jobs with prediction off still teach the model). */
  attemptEnded(end: AttemptEnd, nowMs: number): void {
    const sample = this.history.recordEnd(end, nowMs);
    // A failure of the task's own (it fails everywhere) does not list the host, not even for its job.
    if (sample?.hostFault === true) this.blacklist.recordJobFailure(end.appId, end.nodeId, nowMs);
  }

  /** A host timed out or was lost (and came back, or not). */
  hostFlapped(nodeId: string, nowMs: number): void {
    this.history.recordFlap(nodeId, nowMs);
  }

  /** The job ended: its per-job listings go now, its task windows a little later (late ends). */
  jobEnded(appId: string, nowMs: number): void {
    this.blacklist.forgetJob(appId);
    this.history.forgetJob(appId, nowMs);
  }

  /**
   * Retrains when enough ends came in and the interval passed, then scores `hosts`. Returns whether
   * it trained. `rand`: a seeded generator (the training's sample order).
   */
  maybeTrain(hosts: readonly HostLoad[], nowMs: number, rand: () => number): boolean {
    // Ended jobs' task windows go whether or not prediction is on: ends are recorded either way.
    this.history.sweepEnded(nowMs);
    if (!this.config.enabled) return false;
    this.pending += this.history.takeNewCount();
    if (this.pending < this.config.retrainAfter || nowMs - this.lastTrainMs < this.config.trainIntervalMs) return false;
    this.pending = 0;
    this.lastTrainMs = nowMs;
    this.history.prune(nowMs);
    const m = trainModel(this.history.trainingSet(), rand, this.config.train);
    if (m !== undefined) {
      this.model = m;
      this.trainings++;
    }
    this.scoreHosts(hosts, nowMs);
    return m !== undefined;
  }

  /**
   * Scores every host with the current model (also between trainings, as loads change). A host
   * that fails under memory pressure and not otherwise is memory-capped (blacklist.ts) and scored
   * as it does below its cap.
   */
  scoreHosts(hosts: readonly HostLoad[], nowMs: number): void {
    const m = this.model;
    if (m === undefined) return;
    const caps = new Map<string, { cap: number; reason: string }>();
    for (const h of hosts) {
      const x = this.history.features(h.nodeId, '', '', m.mean[3] ?? 0.5, m.mean[4] ?? 0.5, nowMs);
      x[5] = TYPICAL_TASK_RATE;
      const pc = this.history.hostPressure(h.nodeId, nowMs);
      const pressuredRate = (pc.pressuredFailed + 0.1) / (pc.pressured + 1);
      const calmRate = (pc.calmFailed + 0.1) / (pc.calm + 1);
      if (pc.pressuredFailed >= 2 && pressuredRate >= this.config.blacklist.pressureCapAt && pressuredRate >= 2 * calmRate) {
        const at = Math.round(this.config.history.pressureAt * 100);
        const reason = `memory capped at ${at} %: ${pc.pressuredFailed} of ${pc.pressured} attempts failed from ${at} % of its memory, ${pc.calmFailed} of ${pc.calm} below`;
        caps.set(h.nodeId, { cap: this.config.history.pressureAt, reason });
        x[0] = calmRate;
        x[1] = calmRate;
        x[4] = Math.min(x[4] ?? 0, this.config.history.pressureAt);
      }
      const p = predictFailure(m, x);
      const f = this.history.hostFailures(h.nodeId, nowMs);
      const mins = Math.round(this.config.history.windowMs / 60_000);
      this.blacklist.observeHost(
        h.nodeId,
        p,
        `predicted ${p.toFixed(2)}: ${f.failed} of ${f.attempts} attempts failed, ${f.flaps} flaps in ${mins} min`,
        nowMs,
      );
    }
    this.blacklist.setMemoryCaps(caps);
  }

  /** The predicted failure probability of an attempt of `appId`/`task` starting on the host now (0 without a model). */
  predict(nodeId: string, appId: string, task: string, load: number, mem: number, nowMs: number): number {
    if (this.model === undefined) return 0;
    return predictFailure(this.model, this.history.features(nodeId, appId, task, load, mem, nowMs));
  }

  /** What the scheduler skips (nothing while disabled or before the first model). */
  blacklistView(nowMs: number, hostCount: number): HostBlacklist {
    if (!this.config.enabled) return EMPTY;
    return this.blacklist.view(nowMs, hostCount);
  }

  /** For `fuxi nodes`. */
  entries(nowMs: number, hostCount: number): BlacklistEntry[] {
    return this.config.enabled ? this.blacklist.entries(nowMs, hostCount) : [];
  }

  /** ATLAS+'s choice for an attempt (always proceed while disabled, before a model, or for a job with prediction off). */
  decideAttempt(pHere: number, pElsewhere: number | undefined, totalS: number, elapsedS: number, predictionOff: boolean): Decision {
    const off = predictionOff || !this.config.enabled || this.model === undefined;
    return decide({ pHere, pElsewhere, totalS, elapsedS, predictionOff: off }, this.config.decision);
  }

  get hasModel(): boolean {
    return this.model !== undefined;
  }

  get trainedTimes(): number {
    return this.trainings;
  }
}
