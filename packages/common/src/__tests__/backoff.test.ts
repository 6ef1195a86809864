import { expect } from 'chai';
import { backoffMs, backoffStepMs } from '../backoff.js';

describe('backoffMs', () => {
  const opts = { initialMs: 250, maxMs: 1000 };

  it('doubles the step from the initial delay up to the cap', () => {
    expect([1, 2, 3, 4, 5, 40, 10_000].map((a) => backoffStepMs(a, opts))).to.deep.equal([250, 500, 1000, 1000, 1000, 1000, 1000]);
    expect([1, 2, 3, 4].map((a) => backoffMs(a, opts, () => 0.999_999))).to.deep.equal([250, 500, 1000, 1000]);
  });

  it('jitters within [step/2, step] (equal jitter)', () => {
    for (let a = 1; a <= 6; a++) {
      const step = backoffStepMs(a, opts);
      expect(backoffMs(a, opts, () => 0)).to.equal(step / 2);
      expect(backoffMs(a, opts, () => 0.5)).to.equal(Math.round(step * 0.75));
      for (let i = 0; i < 200; i++) {
        const d = backoffMs(a, opts, Math.random);
        expect(d).to.be.within(step / 2, step);
      }
    }
  });

  it('is the heartbeats’ old arithmetic: min(interval, 250 * 2^(n-1)) * (0.5 + r/2)', () => {
    for (const interval of [200, 1000, 5000]) {
      for (let n = 1; n <= 12; n++) {
        for (const r of [0, 0.3, 0.77, 0.999]) {
          const old = Math.round(Math.min(interval, 250 * 2 ** Math.min(n - 1, 10)) * (0.5 + r / 2));
          expect(
            backoffMs(n, { initialMs: 250, maxMs: interval }, () => r),
            `interval ${interval} n ${n} r ${r}`,
          ).to.equal(old);
        }
      }
    }
  });

  it('waits nothing before a failure, and never more than a cap below the initial delay', () => {
    expect(backoffMs(0, opts, () => 0.5)).to.equal(0);
    expect(backoffMs(-1, opts, () => 0.5)).to.equal(0);
    expect(backoffStepMs(1, { initialMs: 250, maxMs: 100 })).to.equal(100);
    expect(backoffStepMs(3, { initialMs: 0, maxMs: 100 })).to.equal(0);
  });
});
