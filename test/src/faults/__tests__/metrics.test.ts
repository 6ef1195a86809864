import { expect } from 'chai';
import { allowedReschedules, rescheduledInstances, restartedHealthyWorkers, workerKey, type WorkerRef } from '../metrics.js';
import { SCENARIOS, selectedScenarios } from '../scenarios.js';

function w(nodeId: string, task: string, instance: number, pid: number, over: Partial<WorkerRef> = {}): WorkerRef {
  return {
    nodeId,
    appId: 'app',
    workerId: `${task}.${instance}.1`,
    suId: task,
    task,
    instance,
    attempt: 1,
    amAttempt: 1,
    pid,
    state: 'WORKER_STATE_RUNNING',
    ...over,
  };
}
const alive = (ws: WorkerRef[], up = true) => new Map(ws.map((x) => [workerKey(x), up] as const));
const done = (x: WorkerRef): WorkerRef => ({ ...x, state: 'WORKER_STATE_SUCCEEDED' });

describe('fault matrix metrics', () => {
  const before = [w('n1', 'a', 0, 101), w('n2', 'b', 0, 201), w('n1', '__am__', 0, 300, { suId: '__am__', workerId: 'am.1' })];

  it('counts nothing when every worker ran on as the same process and succeeded', () => {
    const restarted = restartedHealthyWorkers({ before, afterRecovery: before, final: before.map(done), aliveAtCheck: alive(before) });
    expect(restarted).to.deep.equal([]);
    expect(rescheduledInstances([{ appId: 'app', tasks: [{ name: 'a', retries: 0 }] }], before, [...before, ...before.map(done)]).byRuns).to.equal(0);
  });

  it('ignores the AM: a new AM attempt is recovery, not a restarted worker', () => {
    const am2 = w('n2', '__am__', 0, 400, { suId: '__am__', workerId: 'am.2', attempt: 2 });
    const after = [before[0]!, before[1]!, am2];
    expect(restartedHealthyWorkers({ before, afterRecovery: after, final: after.map(done), aliveAtCheck: alive(before) })).to.deep.equal([]);
  });

  it('flags a worker with a new pid, a dead process, a killed end, or missing from its agent', () => {
    const after = [{ ...before[0]!, pid: 999 }];
    const final = [{ ...before[0]!, pid: 999, state: 'WORKER_STATE_KILLED' }];
    const r = restartedHealthyWorkers({ before, afterRecovery: after, final, aliveAtCheck: new Map([[workerKey(before[0]!), false]]) });
    expect(r.map((x) => x.worker)).to.deep.equal(['n1/app/a.0.1', 'n2/app/b.0.1']);
    expect(r[0]!.why).to.contain('pid 101 -> 999').and.contain('is gone').and.contain('ended killed');
    expect(r[1]!.why).to.contain('no longer lists it');
  });

  it('catches an instance started again elsewhere under the same attempt number (and its original killed)', () => {
    const dup = w('n1', 'b', 0, 777); // same worker id, attempt 1, other node
    const after = [before[0]!, before[1]!, dup];
    const final = [done(before[0]!), { ...before[1]!, state: 'WORKER_STATE_KILLED' }, done(dup)];
    const r = restartedHealthyWorkers({ before, afterRecovery: after, final, aliveAtCheck: alive(before) });
    expect(r).to.have.length(1);
    expect(r[0]!.why).to.contain('instance ran again as n1/b.0.1:777 (attempt 1)');
    const s = rescheduledInstances([{ appId: 'app', tasks: [{ name: 'b', retries: 0 }] }], before, [...after, ...final]);
    expect(s).to.deep.equal({ byRetries: 0, byRuns: 1, instances: ['app/b/0'] });
  });

  it('allows re-runs only on dead nodes and past a rerun job threshold', () => {
    const policies = new Map([['app', { policy: 'rerun', rerunAfterMs: 5000 }]]);
    expect(allowedReschedules({ before, deadNodes: new Set(), timingNodes: new Map([['n2', 3000]]), policies })).to.equal(0);
    expect(allowedReschedules({ before, deadNodes: new Set(), timingNodes: new Map([['n2', 6000]]), policies })).to.equal(1);
    expect(allowedReschedules({ before, deadNodes: new Set(['n1']), timingNodes: new Map(), policies })).to.equal(1);
    const wait = new Map([['app', { policy: 'wait', rerunAfterMs: 0 }]]);
    expect(allowedReschedules({ before, deadNodes: new Set(), timingNodes: new Map([['n2', 60_000]]), policies: wait })).to.equal(0);
  });

  it('has the 13 rows of Table 3 and the AM host rows; FUXI_FAULT_ROWS selects some', () => {
    expect(SCENARIOS.map((s) => s.no)).to.deep.equal([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]);
    expect(SCENARIOS.filter((s) => s.amHost).map((s) => [s.no, s.amHost, s.fsm])).to.deep.equal([
      [14, 'crash', 'S2'],
      [15, 'timing', 'S2'],
    ]);
    expect(selectedScenarios('').length).to.equal(15);
    expect(selectedScenarios('1, 8-10').map((s) => s.no)).to.deep.equal([1, 8, 9, 10]);
    expect(() => selectedScenarios('x')).to.throw(/FUXI_FAULT_ROWS/);
  });
});
