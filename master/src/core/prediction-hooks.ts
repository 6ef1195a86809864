/**
 * Where failure prediction (failure-prediction.ts) meets the master's state: worker ends from an
 * agent's heartbeat go into the attempt history (with the host's load when the worker was first
 * listed running, the nearest the master has to the load at its start; the load at its end for a
 * worker never listed); a host timing out or lost is a flap; the periodic tick
 * retrains and rescores the hosts (never inside a scheduling pass); the scheduler gets the host
 * blacklist, and units of jobs with `failurePrediction: off` ignore it. Running attempts, as the
 * agents list them, are weighed one by one on the tick too (attempt-verdicts.ts); the verdicts go
 * to their AMs with the next UpdateRequests answer.
 */
import { dominantShare, predictionOn } from '@fuxi/common';
import { judgeAttempts, type Verdict } from './attempt-verdicts.js';
import type { MasterState } from './master-state.js';
import type { HostBlacklist } from './sched-types.js';
import type { RunningWorkerReport, WorkerEndReport } from './types.js';

/** An agent's heartbeat reported these worker ends. */
export function workerEnds(st: MasterState, nodeId: string, ends: readonly WorkerEndReport[]): void {
  const node = st.nodes.get(nodeId);
  if (node === undefined || ends.length === 0) return;
  const cap = node.info.capacity;
  const load = dominantShare(node.allocated, cap);
  const mem = cap.memoryMb > 0 ? node.allocated.memoryMb / cap.memoryMb : 0;
  for (const e of ends) {
    const atStart = st.attempts.takeStartLoad(e.appId, e.workerId);
    if (e.state !== 'succeeded' && e.state !== 'failed' && e.state !== 'killed') continue; // rejected: never ran
    if (e.state === 'failed' && st.apps.get(e.appId)?.job.spec.scheduler !== undefined) {
      st.external.record({ kind: 'failed', atMs: st.now, appId: e.appId, unit: e.task, nodeId, count: 1 });
    }
    // How long the job's tasks take matters while it runs (its running attempts are judged by it):
    // the end of a job's last worker comes with the next heartbeat, after the job ended.
    const live = st.apps.has(e.appId);
    if (e.state !== 'killed' && live) st.attempts.attemptFinished(e.appId, e.task, Math.max(0, e.finishedAtMs - e.startedAtMs));
    st.prediction.attemptEnded(
      {
        nodeId,
        appId: e.appId,
        task: e.task,
        exitCode: e.state === 'succeeded' ? 0 : e.exitCode === 0 && e.signal === '' ? 1 : e.exitCode,
        signal: e.signal,
        durationMs: Math.max(0, e.finishedAtMs - e.startedAtMs),
        resource: e.resource,
        loadAtStart: atStart?.load ?? load,
        memAtStart: atStart?.mem ?? mem,
        killed: e.state === 'killed',
        // Killed for memory past its grant (the agent's `OOM: used X of Y`): the task's failure, not the host's.
        ...(e.state === 'failed' && (e.message ?? '').startsWith('OOM: ') ? { taskFault: true } : {}),
        ...(live ? {} : { jobEnded: true }),
      },
      st.now,
    );
  }
}

/** The node stopped answering (timing out, lost): a flap for the history. */
export function hostFlapped(st: MasterState, nodeId: string): void {
  st.prediction.hostFlapped(nodeId, st.now);
}

/** Periodic: retrain when due and rescore the hosts. Returns whether the blacklist may have changed. */
export function tickPrediction(st: MasterState): boolean {
  const hosts = [];
  for (const n of st.nodes.values()) {
    const cap = n.info.capacity;
    if (cap.memoryMb <= 0 && cap.cpuMilli <= 0) continue;
    hosts.push({ nodeId: n.info.nodeId, load: dominantShare(n.allocated, cap), mem: cap.memoryMb > 0 ? n.allocated.memoryMb / cap.memoryMb : 0 });
  }
  const trained = st.prediction.maybeTrain(hosts, st.now, st.predictionRand);
  if (trained) st.log.info({ samples: st.prediction.history.size, listed: st.prediction.entries(st.now, hosts.length).length }, 'failure model trained');
  return trained;
}

/** What the scheduler skips now; undefined when nothing is listed. */
export function blacklistOf(st: MasterState): HostBlacklist | undefined {
  const v = st.prediction.blacklistView(st.now, st.nodes.size);
  return v.blocked.size === 0 && v.gray.size === 0 && v.perApp.size === 0 && (v.memoryCap?.size ?? 0) === 0 ? undefined : v;
}

/** An agent's heartbeat listed its running task workers. */
export function runningWorkers(st: MasterState, nodeId: string, list: readonly RunningWorkerReport[]): void {
  const node = st.nodes.get(nodeId);
  if (node === undefined) return;
  const cap = node.info.capacity;
  st.attempts.reportRunning(nodeId, list, { load: dominantShare(node.allocated, cap), mem: cap.memoryMb > 0 ? node.allocated.memoryMb / cap.memoryMb : 0 });
}

/**
 * Periodic, every `decideIntervalMs` once a model exists: ATLAS+ weighs the running attempts of
 * jobs with prediction on, on healthy nodes; a move goes to a healthy host the blacklist does not
 * block. The job gets no new worker on a host it was moved off (blacklist.ts `blockForJob`).
 * Returns the verdicts issued (they wait for their AMs).
 */
export function tickVerdicts(st: MasterState): Verdict[] {
  const p = st.prediction;
  if (!p.config.enabled || !p.hasModel || st.now - st.attempts.lastJudgedMs < p.config.decideIntervalMs) return [];
  st.attempts.lastJudgedMs = st.now;
  const healthy = new Set<string>();
  for (const n of st.nodes.values()) if (n.status === 'healthy') healthy.add(n.info.nodeId);
  const blocked = p.blacklistView(st.now, st.nodes.size).blocked;
  const loads = new Map<string, { load: number; mem: number }>();
  for (const id of healthy) {
    const n = st.nodes.get(id)!;
    const cap = n.info.capacity;
    loads.set(id, { load: dominantShare(n.allocated, cap), mem: cap.memoryMb > 0 ? n.allocated.memoryMb / cap.memoryMb : 0 });
  }
  const verdicts = judgeAttempts({
    attempts: st.attempts.unjudged(healthy),
    nowMs: st.now,
    candidates: [...healthy].filter((n) => !blocked.has(n)).sort(),
    predict: (nodeId, appId, task) => {
      const l = loads.get(nodeId) ?? { load: 0, mem: 0 };
      return p.predict(nodeId, appId, task, l.load, l.mem, st.now);
    },
    expectedMs: (appId, task) => st.attempts.expectedMs(appId, task),
    predictionOff: (appId) => {
      const app = st.apps.get(appId);
      return app === undefined || !predictionOn(app.job.spec);
    },
    decide: (pHere, pElsewhere, totalS, elapsedS, off) => p.decideAttempt(pHere, pElsewhere, totalS, elapsedS, off),
  });
  if (verdicts.length === 0) return verdicts;
  st.attempts.issue(verdicts);
  for (const v of verdicts) p.blacklist.blockForJob(v.appId, v.nodeId, st.now);
  for (const v of verdicts)
    st.log.info(
      { appId: v.appId, workerId: v.workerId, nodeId: v.nodeId, action: v.action, pHere: v.pHere, pElsewhere: v.pElsewhere },
      'ATLAS+ verdict on a running attempt',
    );
  return verdicts;
}
