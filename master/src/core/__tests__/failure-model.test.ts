import { expect } from 'chai';
import { seededRandom } from '@fuxi/common';
import { predictFailure, scoreModel, trainModel, type Labeled } from '../failure-model.js';

/** Failures driven by the host's failure rate (feature 0) and pressure failures under memory (1, 4). */
function samples(n: number, seed: number): Labeled[] {
  const rand = seededRandom(seed);
  const out: Labeled[] = [];
  for (let i = 0; i < n; i++) {
    const x = [rand() * 0.6, rand() * 0.6, Math.floor(rand() * 3), rand(), rand(), rand() * 0.2, 0];
    const p = 0.03 + 0.8 * x[0]! + 0.8 * x[1]! * (x[4]! > 0.7 ? 1 : 0);
    out.push({ x, y: rand() < p ? 1 : 0 });
  }
  return out;
}

describe('failure model', () => {
  const train = samples(3000, 7);

  it('trains to the same weights from the same samples and seed', () => {
    const a = trainModel(train, seededRandom(42));
    const b = trainModel(train, seededRandom(42));
    expect(a).to.not.equal(undefined);
    expect(a).to.deep.equal(b);
    const c = trainModel(train, seededRandom(43));
    expect(c?.weights).to.not.deep.equal(a?.weights);
  });

  it('scores better than the base rate on samples it did not see, and ranks a failing host above a sound one', () => {
    const m = trainModel(train, seededRandom(1));
    if (m === undefined) throw new Error('no model');
    const test = samples(2000, 99);
    const base = m.baseRate;
    const baseLoss = -test.reduce((s, t) => s + (t.y === 1 ? Math.log(base) : Math.log(1 - base)), 0) / test.length;
    expect(scoreModel(m, test).logLoss).to.be.lessThan(baseLoss * 0.9);
    expect(predictFailure(m, [0.55, 0.1, 0, 0.5, 0.5, 0.05, 0])).to.be.greaterThan(predictFailure(m, [0.05, 0.05, 0, 0.5, 0.5, 0.05, 0]) + 0.2);
    expect(predictFailure(m, [0.1, 0.5, 0, 0.5, 0.95, 0.05, 0])).to.be.greaterThan(predictFailure(m, [0.1, 0.5, 0, 0.5, 0.1, 0.05, 0]));
  });

  it('does not blow up a feature that never varied in training', () => {
    const flat = train.map((s) => ({ ...s, x: [0.1, ...s.x.slice(1)] }));
    const m = trainModel(flat, seededRandom(1));
    if (m === undefined) throw new Error('no model');
    const p = predictFailure(m, [0.9, 0.1, 0, 0.5, 0.5, 0.05, 0]);
    expect(p).to.be.within(0.01, 0.99);
  });

  it('gives no model with too few samples or a single class', () => {
    expect(trainModel(train.slice(0, 10), seededRandom(1))).to.equal(undefined);
    expect(
      trainModel(
        train.map((s) => ({ ...s, y: 0 })),
        seededRandom(1),
      ),
    ).to.equal(undefined);
  });
});
