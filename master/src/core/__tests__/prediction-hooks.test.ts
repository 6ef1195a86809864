import { expect } from 'chai';
import { res, seededRandom } from '@fuxi/common';
import { ENDED_JOB_KEEP_MS } from '../attempt-history.js';
import { parsePredictionConfig } from '../prediction-config.js';
import type { WorkerEndReport } from '../types.js';
import { Harness, mockSpec } from './core-factories.js';

const NODES = ['n0', 'n1', 'n2', 'n3'].map((nodeId) => ({ nodeId }));

function ends(nodeId: string, count: number, failRate: number, rand: () => number, now: number, oom = false): WorkerEndReport[] {
  return Array.from({ length: count }, (_, i) => {
    const failed = rand() < failRate;
    return {
      ...(failed && oom ? { message: 'OOM: used 1024 MB of 1024 MB' } : {}),
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

/** A master whose agents reported 240 attempt ends, n0 failing 80 % of its, then ticked: n0 is blocked. */
function trained(oom = false): Harness {
  const config = {
    failurePrediction: parsePredictionConfig({ minSamples: 100, retrainAfter: 100, trainIntervalMs: 1000, blockAt: 0.35, maxBlockedFraction: 0.5 }),
  };
  const h = new Harness({ nodes: NODES, config });
  const rand = seededRandom(3);
  for (let round = 0; round < 4; round++) {
    h.advance(1000);
    for (const { nodeId } of NODES) h.heartbeat(nodeId, { workerEnds: ends(nodeId, 15, nodeId === 'n0' ? 0.8 : 0.02, rand, h.now, oom && nodeId === 'n0') });
  }
  h.tick();
  return h;
}

function slotsOn(h: Harness, appId: string, nodeId: string): number {
  let n = 0;
  for (const [k, v] of h.ams.get(appId)?.slots ?? []) if (k.endsWith(`@${nodeId}`)) n += v;
  return n;
}

describe('failure prediction in the master', () => {
  it('learns from the attempt ends agents report, and places no new worker on the host it blocks', () => {
    const h = trained();
    h.start();
    h.ask('job-1', 12);
    expect(slotsOn(h, 'job-1', 'n0')).to.equal(0);
    expect(['n1', 'n2', 'n3'].reduce((s, n) => s + slotsOn(h, 'job-1', n), 0)).to.equal(12);
    expect(h.core.getJob('job-1').amNodeId).to.not.equal('n0');
  });

  it('lists the blocked host with its reason for `fuxi nodes`', () => {
    const h = trained();
    const n0 = h.core.listNodes().find((n) => n.info.nodeId === 'n0');
    expect(n0?.prediction?.level).to.equal('blocked');
    expect(n0?.prediction?.reason).to.match(/^predicted 0\.\d\d: \d+ of 60 attempts failed, 0 flaps in 30 min$/);
    // n1 failed a few attempts: at most blocked for the jobs that failed twice there, not for the cluster.
    expect(h.core.listNodes().find((n) => n.info.nodeId === 'n1')?.prediction?.level ?? 'job').to.equal('job');
  });

  it('does not hold workers killed for memory past their grant (OOM) against their host', () => {
    const h = trained(true);
    expect(h.core.listNodes().find((n) => n.info.nodeId === 'n0')?.prediction?.level).to.not.equal('blocked');
  });

  it('never acts on a job with failurePrediction off: its workers may go to the blocked host', () => {
    const h = trained();
    h.start(mockSpec({ failurePrediction: 'off' }));
    h.ask('job-1', 31);
    expect(slotsOn(h, 'job-1', 'n0')).to.be.greaterThan(0);
  });

  it('with failurePrediction off in the master config, lists nothing', () => {
    const h = new Harness({ nodes: NODES, config: { failurePrediction: parsePredictionConfig(false) } });
    const rand = seededRandom(3);
    for (let round = 0; round < 4; round++) {
      h.advance(1000);
      for (const { nodeId } of NODES) h.heartbeat(nodeId, { workerEnds: ends(nodeId, 15, nodeId === 'n0' ? 0.8 : 0.02, rand, h.now) });
    }
    h.tick();
    h.start();
    h.ask('job-1', 31);
    expect(slotsOn(h, 'job-1', 'n0')).to.be.greaterThan(0);
  });

  it("keeps a job's task windows and attempt durations only while they are of use, with prediction off too", () => {
    const h = new Harness({ nodes: NODES, config: { failurePrediction: parsePredictionConfig(false) } });
    const tracked = (): number => h.core.predictionSizes().jobsTracked;
    const report = (appId: string): WorkerEndReport => ({
      appId,
      workerId: `${appId}.w`,
      task: 'map',
      state: 'succeeded',
      exitCode: 0,
      signal: '',
      resource: res(1000, 1024),
      startedAtMs: h.now - 10,
      finishedAtMs: h.now,
    });
    // A one-task job: the AM finishes it, the agent's next heartbeat tells of its worker's end.
    h.start();
    h.ask('job-1', 1);
    h.finish('job-1', true);
    h.heartbeat('n1', { workerEnds: [report('job-1')] });
    expect(tracked()).to.equal(0);
    expect(h.core.predictionSizes()).to.deep.equal({ samples: 1, jobsTracked: 0, jobsTimed: 0 });
    // A job whose worker's end came while it ran: its window goes a minute after its end.
    h.start(mockSpec({ id: 'job-2' }));
    h.heartbeat('n1', { workerEnds: [report('job-2')] });
    expect(h.core.predictionSizes()).to.deep.equal({ samples: 2, jobsTracked: 1, jobsTimed: 1 });
    h.finish('job-2', true);
    expect(h.core.predictionSizes().jobsTimed).to.equal(0);
    h.advance(ENDED_JOB_KEEP_MS);
    h.tick();
    expect(tracked()).to.equal(0);
  });
});
