/**
 * ATLAS+'s verdicts from the master (verdicts.ts): `reschedule` re-runs the instance elsewhere,
 * uncounted; `kill` fails the attempt early, counted; a job with failurePrediction off is left alone.
 */
import { expect } from 'chai';
import type { AmEffect, JobSpec, TaskSpec } from '../types.js';
import type { AttemptVerdict } from '../verdicts.js';
import { asg, deltasOf, ev, finishOf, Harness, mockJob, mockTask, planIds, returnsOf } from './factories.js';

const stopsOn = (effects: AmEffect[], nodeId: string): string[] => effects.flatMap((e) => (e.kind === 'stop' && e.nodeId === nodeId ? e.workerIds : []));

function verdict(action: string, workerId = 'map.0.1', nodeId = 'n1'): AttemptVerdict {
  return { workerId, nodeId, action, pHere: 0.8, pElsewhere: 0.1 };
}

/** map x2 running on n1 and n2 (started). */
function running(job: Partial<JobSpec> = {}, task: Partial<TaskSpec> = {}): Harness {
  const h = new Harness({ returnSettleMs: 1e12 });
  h.start(mockJob([mockTask({ instances: 2, ...task })], job));
  expect(planIds(h.assign(asg('map', 'n1', 1), asg('map', 'n2', 1)))).to.deep.equal(['map.0.1', 'map.1.1']);
  h.events('n1', ev('map.0.1', 'running'));
  h.events('n2', ev('map.1.1', 'running'));
  return h;
}

describe('DagAppMaster: failure prediction verdicts', () => {
  it('reschedule: stops the attempt, runs the instance on another node, and does not count it as failed', () => {
    const h = running({}, { maxAttempts: 1 });
    const r = h.am.attemptVerdicts([verdict('reschedule')], h.now);
    expect(r.outcomes).to.deep.equal(['rescheduled']);
    expect(stopsOn(r.effects, 'n1')).to.deep.equal(['map.0.1']);
    expect(h.progressOf('map')).to.deep.include({ pending: 1, running: 1, retries: 0 });
    // The stopped attempt holds its slot until it ends; then the slot goes back (the instance
    // avoids n1) and a fresh one is asked for.
    const fx = h.events('n1', ev('map.0.1', 'killed'));
    expect(returnsOf(fx)).to.deep.equal([{ suId: 'map', nodeId: 'n1', slots: 1 }]);
    expect(deltasOf(fx)).to.deep.equal([{ suId: 'map', location: '', delta: 1 }]);
    // A slot on n1 again (asked by locality, say) is not taken, not even as the last resort.
    expect(planIds(h.assign(asg('map', 'n1', 1)))).to.deep.equal([]);
    expect(planIds(h.assign(asg('map', 'n1', 1)))).to.deep.equal([]);
    // Elsewhere it runs, with maxAttempts 1 still allowing it (the move was not a failure).
    expect(planIds(h.assign(asg('map', 'n3', 1)))).to.deep.equal(['map.0.2']);
    h.events('n3', ev('map.0.2', 'running'));
    h.succeed('n3', 'map.0.2');
    expect(finishOf(h.succeed('n2', 'map.1.1'))).to.deep.include({ succeeded: true });
  });

  it('kill: stops the attempt as failed; it counts against maxAttempts and the instance retries elsewhere', () => {
    const h = running({}, { maxAttempts: 3 });
    const r = h.am.attemptVerdicts([verdict('kill')], h.now);
    expect(r.outcomes).to.deep.equal(['killed']);
    expect(stopsOn(r.effects, 'n1')).to.deep.equal(['map.0.1']);
    expect(h.progressOf('map')).to.deep.include({ pending: 1, running: 1, retries: 1 });
    expect(planIds(h.assign(asg('map', 'n3', 1)))).to.deep.equal(['map.0.2']);
  });

  it('kill on the last attempt fails the job, naming the prediction', () => {
    const h = running({}, { maxAttempts: 1 });
    const r = h.am.attemptVerdicts([verdict('kill')], h.now);
    const fin = finishOf(r.effects);
    expect(fin).to.deep.include({ succeeded: false });
    expect(fin?.message).to.match(/predicted to fail/);
  });

  it('leaves a job with failurePrediction off alone', () => {
    const h = running({ failurePrediction: 'off' });
    const r = h.am.attemptVerdicts([verdict('reschedule'), verdict('kill', 'map.1.1', 'n2')], h.now);
    expect(r.outcomes).to.deep.equal(['prediction off', 'prediction off']);
    expect(r.effects).to.deep.equal([]);
    expect(h.progressOf('map')).to.deep.include({ running: 2, retries: 0 });
  });

  it('ignores a verdict for an attempt that is no longer the running one, or on another node, or an unknown action', () => {
    const h = running();
    h.succeed('n2', 'map.1.1');
    const r = h.am.attemptVerdicts([verdict('reschedule', 'map.1.1', 'n2'), verdict('reschedule', 'map.0.1', 'n2'), verdict('pause')], h.now);
    expect(r.outcomes).to.deep.equal(['not running', 'not running', 'unknown action']);
    expect(r.effects).to.deep.equal([]);
  });

  it('lists the hosts it moved attempts off for a new master (ReportAppState), while their task runs', () => {
    const h = running();
    expect(h.am.predictedBadHosts()).to.deep.equal([]);
    h.am.attemptVerdicts([verdict('reschedule'), verdict('kill', 'map.1.1', 'n2')], h.now);
    expect(h.am.predictedBadHosts()).to.deep.equal(['n1', 'n2']);
    // Each instance runs again in the slot the other left (a host it was not moved off).
    const fx = [...h.events('n1', ev('map.0.1', 'killed')), ...h.events('n2', ev('map.1.1', 'killed'))];
    const again = fx.flatMap((e) => (e.kind === 'plan' ? e.plans.map((p) => [e.nodeId, p.workerId] as const) : []));
    expect(again.map(([n]) => n).sort()).to.deep.equal(['n1', 'n2']);
    for (const [n, id] of again) h.events(n, ev(id, 'running'));
    expect(h.am.predictedBadHosts()).to.deep.equal(['n1', 'n2']);
    for (const [n, id] of again) h.succeed(n, id);
    // The task is done: its hosts no longer bound anything.
    expect(h.am.predictedBadHosts()).to.deep.equal([]);
  });
});
