/**
 * Agent timing failures (the master's Algorithm 1 notices): a node timing out keeps its slots
 * (the master reserves them) and gets nothing planned or returned. With the job's
 * `onAgentTimeout: rerun`, once a node has been timing out for `rerunAfterMs` its running instances
 * are re-run elsewhere: the old attempt is stopped (best effort; again when the node is back) but
 * keeps its slot as a shadow until it ends, and whichever attempt succeeds first wins. With `wait`
 * nothing happens. A node that recovers before the threshold loses nothing.
 */
import { byKey, setInstanceState, workerIdOf, type AmState } from './am-state.js';
import { liveWorkers, resendStops, stopWorker } from './workers.js';

/** Nodes the master reports timing out start their clock; nodes back get the stops they missed. */
export function agentsTimedOut(st: AmState, nodeIds: readonly string[], recoveredNodeIds: readonly string[], now: number): void {
  for (const n of nodeIds) {
    if (!n || st.timingOut.has(n)) continue;
    st.timingOut.set(n, now);
    const running = liveWorkers(st).filter((w) => w.nodeId === n).length;
    st.log.warn({ node: n, running, policy: st.policy, rerunAfterMs: st.rerunAfterMs }, 'agent timing out; its slots stay reserved');
  }
  for (const n of recoveredNodeIds) {
    if (!st.timingOut.delete(n)) continue;
    st.log.info({ node: n }, 'agent back from timing out');
    resendStops(st, n);
  }
}

/**
 * `rerun` policy: running instances on nodes that have been timing out for `rerunAfterMs` are
 * re-run elsewhere. The old attempt is stopped (best effort, again when the node is back) and
 * stays a shadow, holding its slot, until it ends: if it reports success first, it wins.
 */
export function checkReruns(st: AmState, now: number): void {
  if (st.policy !== 'rerun' || st.done) return;
  for (const [nodeId, since] of byKey(st.timingOut)) {
    if (now - since < st.rerunAfterMs) continue;
    for (const t of st.tasks.values()) {
      for (const inst of t.instances) {
        if (inst.state !== 'running' || inst.nodeId !== nodeId) continue;
        inst.shadows.push({ attempt: inst.attempt, nodeId, started: inst.started, adopted: inst.adopted });
        const workerId = workerIdOf(t.spec.name, inst.index, inst.attempt);
        st.log.warn(
          { task: t.spec.name, instance: inst.index, attempt: inst.attempt, node: nodeId, timingOutMs: now - since },
          'agent timing out too long; re-running the instance elsewhere',
        );
        setInstanceState(t, inst, 'pending');
        inst.nodeId = '';
        inst.started = false;
        inst.adopted = false;
        inst.reruns++;
        inst.declined = false;
        stopWorker(st, nodeId, workerId);
      }
    }
  }
}

/** Nodes reported timing out and not back yet, with when the core heard it. */
export function timingOutNodes(st: AmState): Array<{ nodeId: string; since: number }> {
  return byKey(st.timingOut).map(([nodeId, since]) => ({ nodeId, since }));
}
