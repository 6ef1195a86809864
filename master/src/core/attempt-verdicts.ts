/**
 * ATLAS+'s per-attempt decision in the live master (seed 003, section 4.4; atlas-decision.ts).
 * Agents list their running task workers with every heartbeat (`running_workers`, at most 1,000);
 * every `decideIntervalMs`, on the master's tick and never inside a scheduling pass, each running
 * attempt of a job with prediction on is weighed: p where it runs, p on the best other host it
 * could go to (ready, not blocked), the time it has run and the time the task's attempts take.
 * "reschedule" and "kill" go to the job's AM once, in its next UpdateRequests answer; the AM stops
 * the attempt and runs the instance elsewhere (appmaster/src/core/verdicts.ts). A job with
 * `failurePrediction: off` is never judged.
 *
 * `judgeAttempts` is the pure rule over a snapshot; `AttemptWatch` the soft state around it (what
 * runs where, what was already judged, what waits for each AM, how long tasks take). Pure.
 */
import type { Decision } from './atlas-decision.js';

/** One running task worker, as its agent's heartbeat listed it. */
export interface RunningAttempt {
  nodeId: string;
  appId: string;
  workerId: string;
  task: string;
  /** When the agent started it (ms since the epoch; 0 when not known). */
  startedAtMs: number;
}

export type VerdictAction = 'reschedule' | 'kill';

/** What an AM is told of one of its running attempts. */
export interface Verdict {
  appId: string;
  workerId: string;
  nodeId: string;
  action: VerdictAction;
  pHere: number;
  /** The best other host's probability (-1: no other host). */
  pElsewhere: number;
}

export interface JudgeInput {
  attempts: readonly RunningAttempt[];
  nowMs: number;
  /** Hosts an attempt could be moved to now (ready, not blocked). */
  candidates: readonly string[];
  /** Predicted failure probability of an attempt of `appId`/`task` on `nodeId` now. */
  predict: (nodeId: string, appId: string, task: string) => number;
  /** Mean duration of the task's finished attempts (undefined: none yet). */
  expectedMs: (appId: string, task: string) => number | undefined;
  /** The job set `failurePrediction: off` (or is not known). */
  predictionOff: (appId: string) => boolean;
  decide: (pHere: number, pElsewhere: number | undefined, totalS: number, elapsedS: number, predictionOff: boolean) => Decision;
}

/**
 * The verdicts for a snapshot of running attempts (proceed is no verdict). The best other host is
 * found once per (job, task): the two best candidates are kept, so an attempt on the best one is
 * weighed against the second. An attempt whose task has no finished attempt yet is expected to
 * run as long again as it has run.
 */
export function judgeAttempts(input: JudgeInput): Verdict[] {
  const out: Verdict[] = [];
  const best = new Map<string, Array<{ nodeId: string; p: number }>>();
  for (const a of input.attempts) {
    if (input.predictionOff(a.appId)) continue;
    const key = `${a.appId}\u0000${a.task}`;
    let top = best.get(key);
    if (top === undefined) {
      top = [];
      for (const n of input.candidates) {
        top.push({ nodeId: n, p: input.predict(n, a.appId, a.task) });
        top.sort((x, y) => x.p - y.p || (x.nodeId < y.nodeId ? -1 : 1));
        if (top.length > 2) top.pop();
      }
      best.set(key, top);
    }
    const other = top.find((c) => c.nodeId !== a.nodeId);
    const pHere = input.predict(a.nodeId, a.appId, a.task);
    const elapsedS = a.startedAtMs > 0 ? Math.max(0, input.nowMs - a.startedAtMs) / 1000 : 0;
    const expected = input.expectedMs(a.appId, a.task);
    const totalS = expected === undefined ? 2 * elapsedS : Math.max(elapsedS, expected / 1000);
    const d = input.decide(pHere, other?.p, totalS, elapsedS, false);
    if (d.action === 'proceed') continue;
    out.push({ appId: a.appId, workerId: a.workerId, nodeId: a.nodeId, action: d.action, pHere, pElsewhere: other?.p ?? -1 });
  }
  return out;
}

/** At most this many running workers are kept per node (an agent sends no more). */
export const MAX_RUNNING_PER_NODE = 1000;

/** Start loads kept at most (workers listed running whose end has not come). */
const MAX_START_LOADS = 100_000;

/** A node's load (dominant share allocated) and memory allocated (fractions) at one time. */
export interface HostLoadAt {
  load: number;
  mem: number;
}

/** The master's soft state around the decision. */
export class AttemptWatch {
  private readonly running = new Map<string, RunningAttempt[]>();
  /** Per node, the workers already judged (not judged again while they run). */
  private readonly judged = new Map<string, Set<string>>();
  private readonly outbox = new Map<string, Verdict[]>();
  /** Per job, per task: finished attempts' count and total duration. */
  private readonly durations = new Map<string, Map<string, { n: number; totalMs: number }>>();
  /** The node's load when a worker was first listed running, by app/worker id (its start's, nearly). */
  private readonly startLoads = new Map<string, HostLoadAt>();
  lastJudgedMs = -Infinity;

  /**
   * A heartbeat listed the node's running task workers (the whole set); `load`: the node's load
   * now, kept for the workers listed for the first time.
   */
  reportRunning(nodeId: string, attempts: readonly Omit<RunningAttempt, 'nodeId'>[], load?: HostLoadAt): void {
    const list = attempts.slice(0, MAX_RUNNING_PER_NODE).map((a) => ({ ...a, nodeId }));
    if (load !== undefined) {
      for (const a of list) {
        const k = `${a.appId}/${a.workerId}`;
        if (this.startLoads.has(k)) continue;
        // Ends of workers never reported (a lost node) would pile up: the oldest go first.
        if (this.startLoads.size >= MAX_START_LOADS) this.startLoads.delete(this.startLoads.keys().next().value!);
        this.startLoads.set(k, load);
      }
    }
    this.running.set(nodeId, list);
    const judged = this.judged.get(nodeId);
    if (judged === undefined) return;
    const live = new Set(list.map((a) => `${a.appId}/${a.workerId}`));
    for (const k of [...judged]) if (!live.has(k)) judged.delete(k);
    if (judged.size === 0) this.judged.delete(nodeId);
  }

  /** The load kept for the worker when it was first listed (once: it is forgotten). */
  takeStartLoad(appId: string, workerId: string): HostLoadAt | undefined {
    const k = `${appId}/${workerId}`;
    const l = this.startLoads.get(k);
    this.startLoads.delete(k);
    return l;
  }

  /** The node is gone (lost): nothing of it is judged. */
  nodeGone(nodeId: string): void {
    this.running.delete(nodeId);
    this.judged.delete(nodeId);
  }

  /** An attempt of the task finished (succeeded or failed, not killed): how long tasks take. */
  attemptFinished(appId: string, task: string, durationMs: number): void {
    let m = this.durations.get(appId);
    if (m === undefined) this.durations.set(appId, (m = new Map()));
    const d = m.get(task) ?? { n: 0, totalMs: 0 };
    d.n++;
    d.totalMs += durationMs;
    m.set(task, d);
  }

  expectedMs(appId: string, task: string): number | undefined {
    const d = this.durations.get(appId)?.get(task);
    return d === undefined || d.n === 0 ? undefined : d.totalMs / d.n;
  }

  /** Running attempts not judged yet, nodes in `nodes` only (sorted by node, then as listed). */
  unjudged(nodes: ReadonlySet<string>): RunningAttempt[] {
    const out: RunningAttempt[] = [];
    for (const nodeId of [...this.running.keys()].sort()) {
      if (!nodes.has(nodeId)) continue;
      const judged = this.judged.get(nodeId);
      for (const a of this.running.get(nodeId)!) if (!judged?.has(`${a.appId}/${a.workerId}`)) out.push(a);
    }
    return out;
  }

  /** Verdicts wait for their AM; their workers are not judged again. */
  issue(verdicts: readonly Verdict[]): void {
    for (const v of verdicts) {
      let judged = this.judged.get(v.nodeId);
      if (judged === undefined) this.judged.set(v.nodeId, (judged = new Set()));
      judged.add(`${v.appId}/${v.workerId}`);
      const box = this.outbox.get(v.appId) ?? [];
      box.push(v);
      this.outbox.set(v.appId, box);
    }
  }

  /** The verdicts waiting for the app's AM (each handed out once). */
  take(appId: string): Verdict[] {
    const box = this.outbox.get(appId);
    if (box === undefined) return [];
    this.outbox.delete(appId);
    return box;
  }

  jobEnded(appId: string): void {
    this.outbox.delete(appId);
    this.durations.delete(appId);
  }

  /** Jobs whose attempts' durations are kept (tests; metrics). */
  get jobsTimed(): number {
    return this.durations.size;
  }
}
