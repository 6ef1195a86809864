import { expect } from 'chai';
import { res, seededRandom } from '@fuxi/common';
import type { AttemptEnd } from '../attempt-history.js';
import { FailurePredictor, type HostLoad } from '../failure-prediction.js';
import { DEFAULT_PREDICTION_CONFIG, parsePredictionConfig } from '../prediction-config.js';
import { schedule } from '../scheduler.js';
import { mockNodes, mockUnit } from './factories.js';

const HOSTS: HostLoad[] = ['n0', 'n1', 'n2', 'n3', 'n4', 'n5', 'n6', 'n7'].map((nodeId) => ({ nodeId, load: 0.5, mem: 0.5 }));

/** 400 attempt ends over 8 hosts; n0 fails 70 % of its attempts, the others 3 %. */
function feed(p: FailurePredictor): number {
  const rand = seededRandom(5);
  let now = 0;
  for (let i = 0; i < 400; i++) {
    now += 1000;
    const nodeId = `n${i % 8}`;
    const fails = rand() < (nodeId === 'n0' ? 0.7 : 0.03);
    const end: AttemptEnd = {
      nodeId,
      appId: `job-${i % 5}`,
      task: 'map',
      exitCode: fails ? 1 : 0,
      signal: '',
      durationMs: 500,
      resource: res(1000, 1024),
      loadAtStart: 0.5,
      memAtStart: 0.5,
    };
    p.attemptEnded(end, now);
  }
  return now;
}

describe('failure prediction', () => {
  it('learns that a failing host fails, blocks it, and the scheduler then gives it nothing', () => {
    const p = new FailurePredictor(parsePredictionConfig({ minSamples: 100, retrainAfter: 100, blockAt: 0.35 }));
    const now = feed(p);
    expect(p.maybeTrain(HOSTS, now, seededRandom(1))).to.equal(true);
    const list = p.blacklistView(now, HOSTS.length);
    expect([...list.blocked]).to.deep.equal(['n0']);
    expect(p.entries(now, HOSTS.length)[0]).to.include({ nodeId: 'n0', level: 'blocked' });
    expect(p.entries(now, HOSTS.length)[0]?.reason).to.match(/^predicted 0\.\d\d: \d+ of \d+ attempts failed, 0 flaps in 30 min$/);
    const nodes = new Map(mockNodes(8).map((n) => [n.id, n]));
    const plan = schedule({ nodes, units: [mockUnit({ requests: { '': 40 } })], groups: new Map(), groupUsage: new Map(), blacklist: list });
    expect(plan.placements.filter((x) => x.nodeId === 'n0')).to.deep.equal([]);
  });

  it('trains to the same model and list from the same inputs and seed', () => {
    const cfg = parsePredictionConfig({ minSamples: 100, retrainAfter: 100, blockAt: 0.35 });
    const a = new FailurePredictor(cfg);
    const b = new FailurePredictor(cfg);
    const now = feed(a);
    feed(b);
    a.maybeTrain(HOSTS, now, seededRandom(9));
    b.maybeTrain(HOSTS, now, seededRandom(9));
    expect(a.entries(now, 8)).to.deep.equal(b.entries(now, 8));
    expect(a.predict('n3', 'job-1', 'map', 0.5, 0.5, now)).to.equal(b.predict('n3', 'job-1', 'map', 0.5, 0.5, now));
  });

  it('never acts on a job with failurePrediction off: it always proceeds, and the scheduler lets it use blocked hosts', () => {
    const p = new FailurePredictor(parsePredictionConfig({ minSamples: 100, retrainAfter: 100, blockAt: 0.35 }));
    const now = feed(p);
    p.maybeTrain(HOSTS, now, seededRandom(1));
    const pHere = p.predict('n0', 'job-0', 'map', 0.5, 0.5, now);
    expect(p.decideAttempt(pHere, 0.01, 600, 0, false).action).to.equal('reschedule');
    expect(p.decideAttempt(pHere, 0.01, 600, 0, true).action).to.equal('proceed');
    expect(p.decideAttempt(0.99, 0.99, 6000, 100, true).action).to.equal('proceed');
    const nodes = new Map(mockNodes(8).map((n) => [n.id, n]));
    const plan = schedule({
      nodes,
      units: [mockUnit({ requests: { 'node:n0': 3 }, predictionOff: true })],
      groups: new Map(),
      groupUsage: new Map(),
      blacklist: p.blacklistView(now, 8),
    });
    expect(plan.placements).to.deep.include({ appId: 'app-1', suId: 'su-1', nodeId: 'n0', slots: 3, location: 'node:n0', localityLevel: 'node' });
  });

  it('does nothing while disabled or before its first model', () => {
    const off = new FailurePredictor({ ...DEFAULT_PREDICTION_CONFIG, enabled: false });
    const now = feed(off);
    expect(off.maybeTrain(HOSTS, now, seededRandom(1))).to.equal(false);
    expect(off.blacklistView(now, 8).blocked.size).to.equal(0);
    const cold = new FailurePredictor(DEFAULT_PREDICTION_CONFIG);
    expect(cold.decideAttempt(0.99, 0, 1000, 10, false).action).to.equal('proceed');
    expect(cold.predict('n0', 'j', 't', 0, 0, 0)).to.equal(0);
  });

  it('caps a host that fails only under memory pressure below the pressure level, and does not block it', () => {
    const p = new FailurePredictor(parsePredictionConfig({ minSamples: 100, retrainAfter: 100, blockAt: 0.35 }));
    const rand = seededRandom(7);
    let now = 0;
    for (let i = 0; i < 400; i++) {
      now += 1000;
      const nodeId = `n${i % 8}`;
      const pressured = i % 16 < 8;
      const fails = rand() < (nodeId === 'n1' && pressured ? 0.7 : 0.03);
      p.attemptEnded(
        {
          nodeId,
          appId: `job-${i}`, // one attempt per job: no job's own list
          task: 'map',
          exitCode: fails ? 1 : 0,
          signal: '',
          durationMs: 500,
          resource: res(1000, 1024),
          loadAtStart: 0.5,
          memAtStart: pressured ? 0.9 : 0.3,
        },
        now,
      );
    }
    expect(p.maybeTrain(HOSTS, now, seededRandom(1))).to.equal(true);
    const list = p.blacklistView(now, HOSTS.length);
    expect([...(list.memoryCap ?? new Map())]).to.deep.equal([['n1', 0.75]]);
    expect(list.blocked.has('n1')).to.equal(false);
    // `fuxi nodes` shows it as memory-capped, with the counts behind it.
    const n1 = p.entries(now, HOSTS.length).find((e) => e.nodeId === 'n1');
    expect(n1?.level).to.equal('memory');
    expect(n1?.reason).to.match(/^memory capped at 75 %: \d+ of \d+ attempts failed from 75 % of its memory, \d+ of \d+ below$/);
    // The scheduler fills n1 only to below 75 % of its memory (8 GiB nodes: 5 slots of 1 GiB).
    const nodes = new Map(mockNodes(8, 1, { capacity: res(8000, 8192) }).map((n) => [n.id, n]));
    const plan = schedule({ nodes, units: [mockUnit({ requests: { '': 64 } })], groups: new Map(), groupUsage: new Map(), blacklist: list });
    expect(plan.placements.filter((x) => x.nodeId === 'n1').reduce((s, x) => s + x.slots, 0)).to.equal(5);
  });
});
