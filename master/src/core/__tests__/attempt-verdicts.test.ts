import { expect } from 'chai';
import { res, seededRandom } from '@fuxi/common';
import { decide, type Decision } from '../atlas-decision.js';
import { AttemptWatch, judgeAttempts, type JudgeInput, type RunningAttempt } from '../attempt-verdicts.js';
import { parsePredictionConfig } from '../prediction-config.js';
import type { WorkerEndReport } from '../types.js';
import { Harness, mockSpec } from './core-factories.js';

const NOW = 100_000;

function attempt(over: Partial<RunningAttempt> = {}): RunningAttempt {
  return { nodeId: 'bad', appId: 'job-1', workerId: 'map.0.1', task: 'map', startedAtMs: NOW - 10_000, ...over };
}

/** A snapshot: `bad` fails 90 % of attempts, `ok1`/`ok2` 5 %; tasks take 60 s. */
function input(attempts: RunningAttempt[], over: Partial<JudgeInput> = {}): JudgeInput {
  const p: Record<string, number> = { bad: 0.9, ok1: 0.05, ok2: 0.08 };
  return {
    attempts,
    nowMs: NOW,
    candidates: ['ok1', 'ok2'],
    predict: (nodeId) => p[nodeId] ?? 0.5,
    expectedMs: () => 60_000,
    predictionOff: () => false,
    decide: (pHere, pElsewhere, totalS, elapsedS, off): Decision => decide({ pHere, pElsewhere, totalS, elapsedS, predictionOff: off }),
    ...over,
  };
}

describe('ATLAS+ verdicts on running attempts (attempt-verdicts.ts)', () => {
  it('moves an attempt off a host likely to fail it, to the best other host', () => {
    const v = judgeAttempts(input([attempt()]));
    expect(v).to.deep.equal([{ appId: 'job-1', workerId: 'map.0.1', nodeId: 'bad', action: 'reschedule', pHere: 0.9, pElsewhere: 0.05 }]);
  });

  it('lets attempts on good hosts proceed, and weighs one on the best host against the second best', () => {
    const v = judgeAttempts(input([attempt({ nodeId: 'ok1' }), attempt({ nodeId: 'ok2', workerId: 'map.1.1' })]));
    expect(v).to.deep.equal([]);
  });

  it('kills an attempt that is likely to fail anywhere once moving costs more than giving up', () => {
    // Every host fails it: moving costs a restart and the same risk; killing saves the rest of its run.
    const v = judgeAttempts(input([attempt({ startedAtMs: NOW - 5_000 })], { predict: () => 0.95, expectedMs: () => 600_000 }));
    expect(v.map((x) => x.action)).to.deep.equal(['kill']);
  });

  it('never judges the attempts of a job with prediction off (nor of a job it does not know)', () => {
    const off = new Set(['job-off']);
    const v = judgeAttempts(input([attempt({ appId: 'job-off' }), attempt({ appId: 'job-1', workerId: 'map.3.1' })], { predictionOff: (a) => off.has(a) }));
    expect(v.map((x) => x.appId)).to.deep.equal(['job-1']);
  });

  it('without another host to go to, an attempt is not moved', () => {
    const v = judgeAttempts(input([attempt({ startedAtMs: NOW })], { candidates: [] }));
    expect(v).to.deep.equal([]);
  });

  it('expects a task with no finished attempt to run as long again as it has run', () => {
    const seen: number[] = [];
    judgeAttempts(
      input([attempt({ startedAtMs: NOW - 8_000 })], {
        expectedMs: () => undefined,
        decide: (pHere, pElsewhere, totalS, elapsedS) => {
          seen.push(totalS, elapsedS);
          return decide({ pHere, pElsewhere, totalS, elapsedS });
        },
      }),
    );
    expect(seen).to.deep.equal([16, 8]);
  });

  it('AttemptWatch: judges a worker once, hands each verdict out once, forgets ended workers and lost nodes', () => {
    const w = new AttemptWatch();
    w.reportRunning('bad', [attempt(), attempt({ workerId: 'map.1.1' })]);
    w.reportRunning('ok1', [attempt({ nodeId: 'x', workerId: 'map.2.1' })]);
    expect(w.unjudged(new Set(['bad', 'ok1'])).map((a) => `${a.workerId}@${a.nodeId}`)).to.deep.equal(['map.0.1@bad', 'map.1.1@bad', 'map.2.1@ok1']);
    expect(w.unjudged(new Set(['ok1'])).map((a) => a.workerId)).to.deep.equal(['map.2.1']);
    w.issue([{ appId: 'job-1', workerId: 'map.0.1', nodeId: 'bad', action: 'reschedule', pHere: 0.9, pElsewhere: 0.1 }]);
    expect(w.unjudged(new Set(['bad'])).map((a) => a.workerId)).to.deep.equal(['map.1.1']);
    expect(w.take('job-1').map((v) => v.workerId)).to.deep.equal(['map.0.1']);
    expect(w.take('job-1')).to.deep.equal([]);
    // map.0.1 ended; a new map.0.1 (another job's) would be judged again.
    w.reportRunning('bad', [attempt({ workerId: 'map.1.1' })]);
    w.reportRunning('bad', [attempt({ workerId: 'map.1.1' }), attempt()]);
    expect(w.unjudged(new Set(['bad'])).map((a) => a.workerId)).to.deep.equal(['map.1.1', 'map.0.1']);
    w.nodeGone('bad');
    expect(w.unjudged(new Set(['bad']))).to.deep.equal([]);
    w.attemptFinished('job-1', 'map', 1000);
    w.attemptFinished('job-1', 'map', 3000);
    expect(w.expectedMs('job-1', 'map')).to.equal(2000);
    w.jobEnded('job-1');
    expect(w.expectedMs('job-1', 'map')).to.equal(undefined);
  });
});

const NODES = ['n0', 'n1', 'n2', 'n3'].map((nodeId) => ({ nodeId }));

function ends(nodeId: string, count: number, failRate: number, rand: () => number, now: number): WorkerEndReport[] {
  return Array.from({ length: count }, (_, i) => {
    const failed = rand() < failRate;
    return {
      appId: `old-${i % 3}`,
      workerId: `${nodeId}.${now}.${i}`,
      task: 'map',
      state: failed ? 'failed' : 'succeeded',
      exitCode: failed ? 1 : 0,
      signal: '',
      resource: res(1000, 1024),
      startedAtMs: now - 100,
      finishedAtMs: now,
    };
  });
}

describe('ATLAS+ verdicts in the master', () => {
  /** n0 fails 80 % of the attempts the agents report; the model is trained on the tick. Moving costs 10 (default 30): these attempts are short. */
  function trained(extra: Record<string, unknown> = {}): Harness {
    const config = {
      failurePrediction: parsePredictionConfig({
        minSamples: 100,
        retrainAfter: 100,
        trainIntervalMs: 1000,
        decideIntervalMs: 5000,
        reschedulePenalty: 10,
        maxBlockedFraction: 0.5,
        ...extra,
      }),
    };
    const h = new Harness({ nodes: NODES, config });
    const rand = seededRandom(3);
    for (let round = 0; round < 4; round++) {
      h.advance(1000);
      for (const { nodeId } of NODES) h.heartbeat(nodeId, { workerEnds: ends(nodeId, 15, nodeId === 'n0' ? 0.8 : 0.02, rand, h.now) });
    }
    h.tick();
    return h;
  }

  const running = (h: Harness, appId: string, workerId: string) => ({ appId, workerId, task: 'map', startedAtMs: h.now - 2000 });

  it('tells the AM, in its next UpdateRequests answer, to move its attempt off the failing host; once', () => {
    const h = trained();
    h.start();
    h.start(mockSpec({ id: 'job-off', failurePrediction: 'off' }));
    h.heartbeat('n0', { runningWorkers: [running(h, 'job-1', 'map.0.1'), running(h, 'job-off', 'map.0.1')] });
    h.heartbeat('n1', { runningWorkers: [running(h, 'job-1', 'map.1.1')] });
    h.advance(5000);
    h.heartbeatAll(['n1', 'n2', 'n3']);
    h.heartbeat('n0', { runningWorkers: [running(h, 'job-1', 'map.0.1'), running(h, 'job-off', 'map.0.1')] });
    h.tick();
    const r = h.request('job-1', []);
    expect(r.verdicts?.map((v) => [v.workerId, v.nodeId, v.action])).to.deep.equal([['map.0.1', 'n0', 'reschedule']]);
    expect(r.verdicts?.[0]?.pHere).to.be.greaterThan(r.verdicts?.[0]?.pElsewhere ?? 1);
    expect(h.request('job-off', []).verdicts).to.equal(undefined);
    // job-1 gets no new worker on n0 (it may ask for it by locality), job-off may.
    expect(h.core.listNodes().find((n) => n.info.nodeId === 'n0')?.prediction?.jobs).to.include('job-1');
    expect(h.core.listNodes().find((n) => n.info.nodeId === 'n0')?.prediction?.jobs).to.not.include('job-off');
    // Still listed running: not judged again.
    h.advance(5000);
    h.heartbeatAll(['n1', 'n2', 'n3']);
    h.heartbeat('n0', { runningWorkers: [running(h, 'job-1', 'map.0.1'), running(h, 'job-off', 'map.0.1')] });
    h.tick();
    expect(h.request('job-1', []).verdicts).to.equal(undefined);
  });

  it('weighs running attempts every decideIntervalMs only, and not at all with prediction off in the master', () => {
    const h = trained({ decideIntervalMs: 60_000 });
    h.start();
    h.tick(); // judged now: nothing runs yet
    const beat = (m: Harness): void => {
      m.heartbeatAll(['n1', 'n2', 'n3']);
      m.heartbeat('n0', { runningWorkers: [running(m, 'job-1', 'map.0.1')] });
    };
    for (let t = 0; t < 29; t++) {
      h.advance(1000);
      beat(h);
      h.tick();
    }
    expect(h.request('job-1', []).verdicts).to.equal(undefined);
    for (let t = 0; t < 31; t++) {
      h.advance(1000);
      beat(h);
      h.tick();
    }
    expect(h.request('job-1', []).verdicts?.length).to.equal(1);

    const off = new Harness({ nodes: NODES, config: { failurePrediction: parsePredictionConfig(false) } });
    off.start();
    for (let t = 0; t < 60; t++) {
      off.advance(1000);
      beat(off);
      off.tick();
    }
    expect(off.request('job-1', []).verdicts).to.equal(undefined);
  });
});
