/**
 * Where failure prediction (failure-prediction.ts) meets the master's state: worker ends from an
 * agent's heartbeat go into the attempt history (with the host's load now, the nearest the master
 * has to the load at the attempt's start); a host timing out or lost is a flap; the periodic tick
 * retrains and rescores the hosts (never inside a scheduling pass); the scheduler gets the host
 * blacklist, and units of jobs with `failurePrediction: off` ignore it.
 */
import { dominantShare } from '@fuxi/common';
import type { MasterState } from './master-state.js';
import type { HostBlacklist } from './sched-types.js';
import type { WorkerEndReport } from './types.js';

/** An agent's heartbeat reported these worker ends. */
export function workerEnds(st: MasterState, nodeId: string, ends: readonly WorkerEndReport[]): void {
  const node = st.nodes.get(nodeId);
  if (node === undefined || ends.length === 0) return;
  const cap = node.info.capacity;
  const load = dominantShare(node.allocated, cap);
  const mem = cap.memoryMb > 0 ? node.allocated.memoryMb / cap.memoryMb : 0;
  for (const e of ends) {
    if (e.state !== 'succeeded' && e.state !== 'failed' && e.state !== 'killed') continue; // rejected: never ran
    st.prediction.attemptEnded(
      {
        nodeId,
        appId: e.appId,
        task: e.task,
        exitCode: e.state === 'succeeded' ? 0 : e.exitCode === 0 && e.signal === '' ? 1 : e.exitCode,
        signal: e.signal,
        durationMs: Math.max(0, e.finishedAtMs - e.startedAtMs),
        resource: e.resource,
        loadAtStart: load,
        memAtStart: mem,
        killed: e.state === 'killed',
        // Killed for memory past its grant (the agent's `OOM: used X of Y`): the task's failure, not the host's.
        ...(e.state === 'failed' && (e.message ?? '').startsWith('OOM: ') ? { taskFault: true } : {}),
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
  return v.blocked.size === 0 && v.gray.size === 0 && v.perApp.size === 0 ? undefined : v;
}
