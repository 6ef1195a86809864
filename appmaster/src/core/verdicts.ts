/**
 * ATLAS+'s verdicts on running attempts (the master's failure prediction, seed 003; master
 * attempt-verdicts.ts), as they come with an UpdateRequests answer:
 *
 * - `reschedule`: the attempt is stopped and the instance runs again on another node, as a re-run
 *   off a timing-out node does (timing-out.ts): not counted against maxAttempts (the attempt did
 *   not fail), the old attempt a shadow holding its slot until it ends (if it succeeds first, it
 *   wins), its node avoided by the next attempt.
 * - `kill`: the attempt is stopped as failed (it was predicted to fail): it counts against
 *   maxAttempts like a failure on that node, and the instance retries elsewhere or, out of
 *   attempts, fails the job.
 *
 * A verdict for an attempt that is no longer the instance's running one (it ended, or moved) is
 * ignored, and so is every verdict for a job with `failurePrediction: off` (the master sends none).
 */
import { predictionOn } from '@fuxi/common';
import { setInstanceState, workerIdOf, type AmState, type Instance, type Task } from './am-state.js';
import { failAttempt } from './dag.js';
import { stopWorker } from './workers.js';

export interface AttemptVerdict {
  workerId: string;
  nodeId: string;
  action: string;
  pHere: number;
  pElsewhere: number;
}

/** What happened to each verdict: the instance it moved or killed, or why it was ignored. */
export type VerdictOutcome = 'rescheduled' | 'killed' | 'not running' | 'prediction off' | 'unknown action';

export function applyVerdicts(st: AmState, verdicts: readonly AttemptVerdict[]): VerdictOutcome[] {
  if (verdicts.length === 0) return [];
  const running = runningAttempts(st);
  return verdicts.map((v) => applyVerdict(st, running, v));
}

function applyVerdict(st: AmState, running: ReadonlyMap<string, [Task, Instance]>, v: AttemptVerdict): VerdictOutcome {
  if (st.spec === undefined || !predictionOn(st.spec)) return 'prediction off';
  if (v.action !== 'reschedule' && v.action !== 'kill') return 'unknown action';
  const found = running.get(v.workerId);
  if (found === undefined || found[1].state !== 'running' || found[1].nodeId !== v.nodeId) return 'not running';
  const [t, inst] = found;
  const log = { task: t.spec.name, instance: inst.index, attempt: inst.attempt, node: v.nodeId, pHere: v.pHere, pElsewhere: v.pElsewhere };
  inst.shadows.push({ attempt: inst.attempt, nodeId: v.nodeId, started: inst.started, adopted: inst.adopted });
  inst.avoidNodes.add(v.nodeId);
  inst.predictedBad.add(v.nodeId);
  inst.nodeId = '';
  inst.started = false;
  inst.adopted = false;
  inst.declined = false;
  stopWorker(st, v.nodeId, v.workerId);
  if (v.action === 'reschedule') {
    st.log.warn(log, 'failure prediction moves the attempt: re-running the instance elsewhere (not counted as failed)');
    setInstanceState(t, inst, 'pending');
    inst.reruns++;
    return 'rescheduled';
  }
  st.log.warn(log, 'failure prediction kills the attempt early (counted as failed)');
  failAttempt(st, t, inst, v.nodeId, `killed early on ${v.nodeId}: predicted to fail (p=${v.pHere.toFixed(2)})`);
  return 'killed';
}

/** Running attempts by worker id, with their task and instance. */
function runningAttempts(st: AmState): Map<string, [Task, Instance]> {
  const out = new Map<string, [Task, Instance]>();
  for (const t of st.tasks.values())
    for (const inst of t.instances) if (inst.state === 'running') out.set(workerIdOf(t.spec.name, inst.index, inst.attempt), [t, inst]);
  return out;
}
