import { expect } from 'chai';
import { AbortedError, FuxiError, InvalidArgumentError, UnavailableError } from '@fuxi/common';
import { retry, Retrier, type RetryEvent, type RetryOptions } from '../retry.js';

/** A clock that a fake sleep moves; the sleep records every wait and can hang until aborted. */
function fakeTime(opts: { hang?: boolean } = {}) {
  const t = { now: 1_000_000, slept: [] as number[] };
  const sleep = (ms: number, signal?: AbortSignal): Promise<void> => {
    t.slept.push(ms);
    if (!opts.hang) {
      t.now += ms;
      return Promise.resolve();
    }
    return new Promise((resolve) => signal?.addEventListener('abort', () => resolve(), { once: true }));
  };
  return { t, deps: { sleep, now: () => t.now, random: () => 1 - Number.EPSILON } satisfies Partial<RetryOptions> };
}

/** An operation that fails `n` times with `err` (advancing the clock by `callMs` each call), then returns 'ok'. */
function failing(n: number, err: () => unknown = () => new UnavailableError('down'), t?: { now: number }, callMs = 0) {
  const calls: number[] = [];
  const fn = async (attempt: number) => {
    calls.push(attempt);
    if (t) t.now += callMs;
    if (calls.length <= n) throw err();
    return 'ok';
  };
  return { fn, calls };
}

describe('retry', () => {
  it('retries transient failures with growing delays up to the cap, then returns', async () => {
    const { t, deps } = fakeTime();
    const { fn, calls } = failing(6);
    expect(await retry(fn, { initialMs: 100, maxMs: 1000, ...deps })).to.equal('ok');
    expect(calls).to.deep.equal([1, 2, 3, 4, 5, 6, 7]);
    expect(t.slept).to.deep.equal([100, 200, 400, 800, 1000, 1000]);
  });

  it('keeps the jitter within [step/2, step] of the injected random source', async () => {
    const { t, deps } = fakeTime();
    await retry(failing(5).fn, { initialMs: 100, maxMs: 400, ...deps, random: () => 0 });
    expect(t.slept).to.deep.equal([50, 100, 200, 200, 200]);
    const seq = [0.1, 0.9, 0.5, 0.25, 0.75];
    const { t: t2, deps: d2 } = fakeTime();
    await retry(failing(5).fn, { initialMs: 100, maxMs: 400, ...d2, random: () => seq.shift()! });
    expect(t2.slept).to.deep.equal([55, 190, 300, 250, 350]);
  });

  it('throws a failure the predicate does not retry at once', async () => {
    const { t, deps } = fakeTime();
    const { fn, calls } = failing(3, () => new InvalidArgumentError('x', 'bad'));
    await expectRejects(retry(fn, deps), (e) => e instanceof InvalidArgumentError);
    expect(calls.length).to.equal(1);
    expect(t.slept).to.deep.equal([]);
  });

  it('retries UNAVAILABLE and DEADLINE_EXCEEDED FuxiErrors by default, nothing else', async () => {
    const { deps } = fakeTime();
    expect(await retry(failing(1, () => new FuxiError('DEADLINE_EXCEEDED', 'slow')).fn, deps)).to.equal('ok');
    for (const err of [new Error('plain'), new FuxiError('INTERNAL', 'bug'), new FuxiError('FAILED_PRECONDITION', 'no')]) {
      await expectRejects(retry(failing(1, () => err).fn, deps), (e) => e === err);
    }
    expect(await retry(failing(2, () => new Error('anything')).fn, { ...deps, retryIf: () => true })).to.equal('ok');
  });

  it('stops after maxAttempts attempts, throwing the last failure', async () => {
    const { t, deps } = fakeTime();
    let n = 0;
    const { fn, calls } = failing(10, () => new UnavailableError(`down ${++n}`));
    await expectRejects(retry(fn, { ...deps, maxAttempts: 3 }), (e) => e instanceof UnavailableError && e.message === 'down 3');
    expect(calls).to.deep.equal([1, 2, 3]);
    expect(t.slept.length).to.equal(2);
  });

  it('starts no attempt after retryForMs from the first failure', async () => {
    const { t, deps } = fakeTime();
    // Each call takes 1 s: the first failure comes 1 s after the start, and counts from there.
    const { fn, calls } = failing(100, undefined, t, 1000);
    const start = t.now;
    await expectRejects(retry(fn, { initialMs: 100, maxMs: 1000, retryForMs: 2500, ...deps }), (e) => e instanceof UnavailableError);
    // failures at +1000, +2100, +3300 (after waits of 100 and 200); after a wait of 400, attempt 4
    // would start at +3700, past +1000 + 2500
    expect(calls).to.deep.equal([1, 2, 3]);
    expect(t.slept).to.deep.equal([100, 200]);
    expect(t.now - start).to.equal(3300);
  });

  it('starts no attempt after the deadline; retryForMs 0 means no retry', async () => {
    const { t, deps } = fakeTime();
    const { fn, calls } = failing(100);
    await expectRejects(retry(fn, { initialMs: 100, maxMs: 1000, deadline: t.now + 750, ...deps }), (e) => e instanceof UnavailableError);
    expect(t.slept).to.deep.equal([100, 200, 400]);
    expect(calls.length).to.equal(4);
    const once = failing(100);
    await expectRejects(retry(once.fn, { ...deps, retryForMs: 0 }), (e) => e instanceof UnavailableError);
    expect(once.calls.length).to.equal(1);
  });

  it('an abort ends the wait at once and throws the last failure; no attempt after it', async () => {
    const { t, deps } = fakeTime({ hang: true });
    const stop = new AbortController();
    const { fn, calls } = failing(100);
    const p = retry(fn, { ...deps, initialMs: 60_000, signal: stop.signal });
    await new Promise((r) => setImmediate(r));
    expect(t.slept).to.deep.equal([60_000]);
    stop.abort();
    await expectRejects(p, (e) => e instanceof UnavailableError && e.message === 'down');
    expect(calls.length).to.equal(1);
  });

  it('does not start when already aborted', async () => {
    const stop = new AbortController();
    stop.abort();
    const { fn, calls } = failing(0);
    await expectRejects(retry(fn, { signal: stop.signal }), (e) => e instanceof AbortedError && e.code === 'ABORTED');
    expect(calls.length).to.equal(0);
  });

  it('the default sleep is cut short by an abort', async () => {
    const stop = new AbortController();
    const started = Date.now();
    const p = retry(failing(100).fn, { initialMs: 600_000, signal: stop.signal });
    setImmediate(() => stop.abort());
    await expectRejects(p, (e) => e instanceof UnavailableError);
    expect(Date.now() - started).to.be.below(1000);
  });

  it('calls onRetry on the first failure and then every Nth, with the wait and time failing', async () => {
    const { deps } = fakeTime();
    const seen: RetryEvent[] = [];
    await retry(failing(25).fn, { ...deps, initialMs: 10, maxMs: 10, onRetry: (e) => seen.push(e) });
    expect(seen.map((e) => e.attempt)).to.deep.equal([1, 10, 20]);
    expect(seen[0]).to.include({ attempt: 1, delayMs: 10, elapsedMs: 0 });
    expect(seen[1]?.elapsedMs).to.equal(90);
    expect(seen[0]?.error).to.be.instanceOf(UnavailableError);
    const every: number[] = [];
    await retry(failing(3).fn, { ...deps, onRetryEvery: 1, onRetry: (e) => every.push(e.attempt) });
    expect(every).to.deep.equal([1, 2, 3]);
    const none: number[] = [];
    await expectRejects(retry(failing(3).fn, { ...deps, maxAttempts: 1, onRetry: (e) => none.push(e.attempt) }), () => true);
    expect(none).to.deep.equal([]);
  });
});

describe('Retrier', () => {
  it('reset() after progress starts the delays and the retryForMs budget again', async () => {
    const { t, deps } = fakeTime();
    const r = new Retrier({ initialMs: 100, maxMs: 1000, retryForMs: 500, ...deps });
    const err = new UnavailableError('down');
    await r.failed(err);
    await r.failed(err);
    expect(t.slept).to.deep.equal([100, 200]);
    await expectRejects(r.failed(err), (e) => e === err); // 300 + 400 > 500
    r.reset();
    t.now += 60_000;
    await r.failed(err);
    expect(r.failures).to.equal(1);
    expect(t.slept).to.deep.equal([100, 200, 100]);
  });
});

async function expectRejects(p: Promise<unknown>, check: (e: unknown) => boolean): Promise<void> {
  try {
    await p;
  } catch (e) {
    expect(check(e), `unexpected error: ${String(e)}`).to.equal(true);
    return;
  }
  expect.fail('expected a rejection');
}
