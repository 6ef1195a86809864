/**
 * A bounded history of attempt ends, the training data of failure prediction (ATLAS+, seed 003,
 * section 4.1: identification, execution and environment attributes of past tasks). Each end is
 * kept with the features its host and task showed when it started, so the model learns what could
 * be seen before the outcome, never the outcome's own cause.
 *
 * Features (all observable by the master; none is a host's hidden proneness):
 *  0. the host's failure rate over its recent attempts (smoothed),
 *  1. the host's failure rate over its recent attempts that ran under memory pressure (smoothed),
 *  2. the host's flaps (timing out or lost, then back) in the window,
 *  3. the host's load (dominant share allocated) when the attempt started,
 *  4. the host's memory allocated (fraction) when the attempt started,
 *  5. the task's failure rate over its recent attempts, on every host (smoothed),
 *  6. the host's failures in the window of attempts that ended by a signal (crash-like).
 *
 * A failure counts for its host only when it is the host's: not an OOM past the task's grant, and
 * not a task that fails on every host (it failed on at least two other hosts, on at least
 * `taskFaultRate` of four or more attempts there): that is the job's own bug, and listing hosts for it would
 * only take capacity from every job.
 *
 * Pure: time comes in as `nowMs`; nothing here reads clocks.
 */
import type { Resource } from '@fuxi/common';

/** How an attempt ended, as the master learns it (an agent's heartbeat, an AM's report, a simulator). */
export interface AttemptEnd {
  nodeId: string;
  /** The job (app) id. */
  appId: string;
  /** The task's name (its schedule unit). */
  task: string;
  exitCode: number;
  /** '' when it exited by itself. */
  signal: string;
  durationMs: number;
  resource: Resource;
  /** The host's load (dominant share allocated) and memory allocated (fraction) when it started. */
  loadAtStart: number;
  memAtStart: number;
  /** Killed by the master or its AM (preempted, rescheduled): not a failure of the host or task. */
  killed?: boolean;
  /**
   * The task's own failure (killed for memory past its grant, `OOM: used X of Y`): counted for the
   * task, not for the host.
   */
  taskFault?: boolean;
  /**
   * The job had already ended when this end was reported (an agent reports a worker's end with its
   * next heartbeat, after the AM finished the job): the job's task windows are added to while they
   * are still kept (`forgetJob`), never made again.
   */
  jobEnded?: boolean;
}

export const FEATURE_NAMES = ['hostFailRate', 'hostPressureFailRate', 'hostFlaps', 'load', 'memAllocated', 'taskFailRate', 'hostSignalFails'] as const;

export const FEATURE_COUNT = FEATURE_NAMES.length;

export interface HistoryConfig {
  /** Attempts kept for training (oldest dropped first). */
  capacity: number;
  /** A task failing on this fraction of its attempts on other hosts (two at least) fails by itself. */
  taskFaultRate: number;
  /** How far back host and task rates look. */
  windowMs: number;
  /** Memory allocated (fraction) from which an attempt counts as run under pressure. */
  pressureAt: number;
}

export const DEFAULT_HISTORY_CONFIG: HistoryConfig = { capacity: 20_000, taskFaultRate: 0.3, windowMs: 30 * 60_000, pressureAt: 0.75 };

export interface Sample {
  /** The attempt as reported (host, task, exit, signal, duration, resources, load at start). */
  end: AttemptEnd;
  x: number[];
  /** 1: the attempt failed. */
  y: number;
  /** It failed, and the failure counts for its host (not the task's own). */
  hostFault: boolean;
  endMs: number;
}

interface Event {
  atMs: number;
  nodeId: string;
  failed: boolean;
  pressure: boolean;
  signal: boolean;
}

/** A host's attempts in the window, started under memory pressure and not (`hostPressure`). */
export interface PressureCounts {
  pressured: number;
  pressuredFailed: number;
  calm: number;
  calmFailed: number;
}

/** Events of one host or task in the window, oldest first (bounded by the window and a cap). */
class Recent {
  readonly events: Event[] = [];
  constructor(private readonly cap: number) {}

  push(e: Event): void {
    this.events.push(e);
    if (this.events.length > this.cap) this.events.shift();
  }

  prune(fromMs: number): void {
    let i = 0;
    while (i < this.events.length && this.events[i]!.atMs < fromMs) i++;
    if (i > 0) this.events.splice(0, i);
  }
}

const PER_KEY_CAP = 256;

/**
 * How long an ended job's task windows are kept (`forgetJob`): its last attempts' ends come with
 * the agents' next heartbeats, after the job ended, and are weighed against the attempts before
 * them. Then nothing of the job runs again, and a master that serves thousands of short jobs a
 * minute does not keep a window for each of them (with prediction off nothing pruned them at all).
 */
export const ENDED_JOB_KEEP_MS = 60_000;

export class AttemptHistory {
  private readonly samples: Sample[] = [];
  private readonly hosts = new Map<string, Recent>();
  /** Per job, per task: the job's windows, dropped `ENDED_JOB_KEEP_MS` after its end. */
  private readonly tasks = new Map<string, Map<string, Recent>>();
  /** Ended jobs in order of their end, to drop (`sweepEnded`). */
  private readonly ended: Array<{ appId: string; atMs: number }> = [];
  private endedHead = 0;
  private readonly flaps = new Map<string, number[]>();
  /** Attempt ends recorded since the last `takeNewCount`. */
  private fresh = 0;

  constructor(readonly config: HistoryConfig = DEFAULT_HISTORY_CONFIG) {}

  /** The features an attempt of `task` (of `appId`) starting on `nodeId` now would have. */
  features(nodeId: string, appId: string, task: string, loadAtStart: number, memAtStart: number, nowMs: number): number[] {
    const from = nowMs - this.config.windowMs;
    const host = this.window(this.hosts, nodeId, from, nowMs);
    const t = this.window(this.tasks.get(appId), task, from, nowMs);
    let fails = 0;
    let pressured = 0;
    let pressuredFails = 0;
    let signalFails = 0;
    for (const e of host) {
      if (e.failed) fails++;
      if (e.pressure) pressured++;
      if (e.pressure && e.failed) pressuredFails++;
      if (e.failed && e.signal) signalFails++;
    }
    let taskFails = 0;
    for (const e of t) if (e.failed) taskFails++;
    return [
      smoothed(fails, host.length),
      smoothed(pressuredFails, pressured),
      this.flapCount(nodeId, from, nowMs),
      clamp01(loadAtStart),
      clamp01(memAtStart),
      smoothed(taskFails, t.length),
      Math.min(signalFails, 20),
    ];
  }

  /** Records an attempt's end: a training sample (features as at its start), then its host's and task's counts. */
  recordEnd(end: AttemptEnd, nowMs: number): Sample | undefined {
    if (end.killed === true) return undefined;
    const startMs = nowMs - Math.max(0, end.durationMs);
    const x = this.features(end.nodeId, end.appId, end.task, end.loadAtStart, end.memAtStart, startMs);
    const failed = end.exitCode !== 0 || end.signal !== '';
    const hostFault = failed && end.taskFault !== true && !this.failsEverywhere(end, nowMs);
    const sample: Sample = { end, x, y: failed ? 1 : 0, hostFault, endMs: nowMs };
    this.samples.push(sample);
    if (this.samples.length > this.config.capacity) this.samples.shift();
    const e: Event = { atMs: nowMs, nodeId: end.nodeId, failed, pressure: end.memAtStart >= this.config.pressureAt, signal: end.signal !== '' };
    if (!failed || hostFault) this.recent(this.hosts, end.nodeId).push(e);
    let job = this.tasks.get(end.appId);
    if (job === undefined && end.jobEnded !== true) this.tasks.set(end.appId, (job = new Map()));
    if (job !== undefined) this.recent(job, end.task).push(e);
    this.fresh++;
    return sample;
  }

  /** The host's attempts in the window, under memory pressure at their start and not. */
  hostPressure(nodeId: string, nowMs: number): PressureCounts {
    const out: PressureCounts = { pressured: 0, pressuredFailed: 0, calm: 0, calmFailed: 0 };
    for (const e of this.window(this.hosts, nodeId, nowMs - this.config.windowMs)) {
      if (e.pressure) {
        out.pressured++;
        if (e.failed) out.pressuredFailed++;
      } else {
        out.calm++;
        if (e.failed) out.calmFailed++;
      }
    }
    return out;
  }

  /** The task (of its job) failed on two other hosts at least, on `taskFaultRate` of its attempts there. */
  private failsEverywhere(end: AttemptEnd, nowMs: number): boolean {
    let attempts = 0;
    let fails = 0;
    const failedOn = new Set<string>();
    for (const e of this.window(this.tasks.get(end.appId), end.task, nowMs - this.config.windowMs)) {
      if (e.nodeId === end.nodeId) continue;
      attempts++;
      if (e.failed) {
        fails++;
        failedOn.add(e.nodeId);
      }
    }
    return failedOn.size >= 2 && attempts >= 4 && fails >= this.config.taskFaultRate * attempts;
  }

  /** A host timed out or was lost, then came back (or was declared lost). */
  recordFlap(nodeId: string, nowMs: number): void {
    let f = this.flaps.get(nodeId);
    if (f === undefined) this.flaps.set(nodeId, (f = []));
    f.push(nowMs);
    if (f.length > PER_KEY_CAP) f.shift();
  }

  /** Drops hosts and tasks with nothing in the window (keeps the maps bounded by what is active). */
  prune(nowMs: number): void {
    const from = nowMs - this.config.windowMs;
    const pruneMap = (m: Map<string, Recent>): void => {
      for (const [k, r] of m) {
        r.prune(from);
        if (r.events.length === 0) m.delete(k);
      }
    };
    pruneMap(this.hosts);
    for (const [appId, job] of this.tasks) {
      pruneMap(job);
      if (job.size === 0) this.tasks.delete(appId);
    }
    for (const [k, f] of this.flaps) {
      while (f.length > 0 && f[0]! < from) f.shift();
      if (f.length === 0) this.flaps.delete(k);
    }
  }

  /** The job ended: its task windows go `ENDED_JOB_KEEP_MS` later (`sweepEnded`). */
  forgetJob(appId: string, nowMs: number): void {
    if (this.tasks.has(appId)) this.ended.push({ appId, atMs: nowMs });
  }

  /** Drops the task windows of jobs that ended `ENDED_JOB_KEEP_MS` ago or more. */
  sweepEnded(nowMs: number): void {
    while (this.endedHead < this.ended.length && this.ended[this.endedHead]!.atMs <= nowMs - ENDED_JOB_KEEP_MS) {
      this.tasks.delete(this.ended[this.endedHead]!.appId);
      this.endedHead++;
    }
    if (this.endedHead > 1024 && this.endedHead * 2 > this.ended.length) {
      this.ended.splice(0, this.endedHead);
      this.endedHead = 0;
    }
  }

  /** Jobs whose task windows are kept (tests; metrics). */
  get jobsTracked(): number {
    return this.tasks.size;
  }

  /** The training set, oldest first. */
  trainingSet(): readonly Sample[] {
    return this.samples;
  }

  get size(): number {
    return this.samples.length;
  }

  /** How many ends came in since the last call (the trainer retrains when enough did). */
  takeNewCount(): number {
    const n = this.fresh;
    this.fresh = 0;
    return n;
  }

  /** Failures of `nodeId` in the window (for the reason `fuxi nodes` shows). */
  hostFailures(nodeId: string, nowMs: number): { failed: number; attempts: number; flaps: number } {
    const from = nowMs - this.config.windowMs;
    const h = this.window(this.hosts, nodeId, from);
    return { failed: h.filter((e) => e.failed).length, attempts: h.length, flaps: this.flapCount(nodeId, from) };
  }

  private flapCount(nodeId: string, fromMs: number, toMs = Infinity): number {
    const f = this.flaps.get(nodeId);
    if (f === undefined) return 0;
    let n = 0;
    for (const t of f) if (t >= fromMs && t <= toMs) n++;
    return Math.min(n, 20);
  }

  /** Events in [fromMs, toMs]. */
  private window(m: Map<string, Recent> | undefined, key: string, fromMs: number, toMs = Infinity): readonly Event[] {
    const r = m?.get(key);
    if (r === undefined) return [];
    return r.events.filter((e) => e.atMs >= fromMs && e.atMs <= toMs);
  }

  private recent(m: Map<string, Recent>, key: string): Recent {
    let r = m.get(key);
    if (r === undefined) m.set(key, (r = new Recent(PER_KEY_CAP)));
    return r;
  }
}

/** Failures over attempts with one imagined success and a prior of 0.1 (a host seen once is not condemned). */
function smoothed(failed: number, total: number): number {
  return (failed + 0.1) / (total + 1);
}

function clamp01(v: number): number {
  return v < 0 ? 0 : v > 1 ? 1 : v;
}
