import { expect } from 'chai';
import { SubmitRate } from '../submit-rate.js';

describe('submit rate (submit-rate.ts): a token bucket per caller', () => {
  it('lets a burst through, then refuses with the time after which the call would pass', () => {
    const r = new SubmitRate({ ratePerSec: 10, burst: 5 });
    for (let i = 0; i < 5; i++) expect(r.take('a', 1, 0)).to.deep.equal({ ok: true });
    const v = r.take('a', 1, 0);
    expect(v.ok).to.equal(false);
    if (!v.ok) {
      expect(v.retryAfterMs).to.equal(100);
      expect(v.reason).to.match(/10 jobs\/s, burst 5; submitRatePerSec, submitBurst\): retry after 100 ms/);
    }
    // 100 ms later one token is back.
    expect(r.take('a', 1, 100).ok).to.equal(true);
    expect(r.take('a', 1, 100).ok).to.equal(false);
  });

  it('keeps callers apart', () => {
    const r = new SubmitRate({ ratePerSec: 1, burst: 2 });
    expect(r.take('a', 2, 0).ok).to.equal(true);
    expect(r.take('a', 1, 0).ok).to.equal(false);
    expect(r.take('b', 2, 0).ok).to.equal(true);
  });

  it('charges a batch per job and refuses it whole (taking nothing) when too few tokens are left', () => {
    const r = new SubmitRate({ ratePerSec: 100, burst: 10 });
    expect(r.take('a', 8, 0).ok).to.equal(true);
    const v = r.take('a', 5, 0);
    expect(v.ok === false && v.retryAfterMs).to.equal(30);
    expect(r.take('a', 2, 0).ok).to.equal(true);
  });

  it('refuses a batch larger than the burst with no retry hint that could help', () => {
    const v = new SubmitRate({ ratePerSec: 100, burst: 10 }).take('a', 11, 0);
    expect(v.ok).to.equal(false);
    if (!v.ok) expect(v.reason).to.match(/more than the submit burst \(10, submitBurst\)/);
  });

  it('is off at rate 0, and forgets buckets that are full again', () => {
    expect(new SubmitRate({ ratePerSec: 0, burst: 1 }).take('a', 1000, 0).ok).to.equal(true);
    const r = new SubmitRate({ ratePerSec: 10, burst: 10 });
    r.take('a', 10, 0);
    r.take('b', 1, 0);
    r.sweep(500);
    // b is full again (1 token back in 100 ms), a is not.
    expect(r.size).to.equal(1);
    r.sweep(1000);
    expect(r.size).to.equal(0);
  });
});
