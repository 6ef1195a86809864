import { expect } from 'chai';
import { CallGate } from '../call-gate.js';

/** A promise with its resolve and reject outside. */
function deferred<T = void>() {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

const turn = () => new Promise<void>((r) => setImmediate(r));

describe('CallGate', () => {
  it('runs at most `limit` calls at once, the others in the order they came', async () => {
    const gate = new CallGate(2);
    const started: number[] = [];
    const ends = [0, 1, 2, 3, 4].map(() => deferred<number>());
    const results = ends.map((d, i) =>
      gate.run(() => {
        started.push(i);
        return d.promise;
      }),
    );
    await turn();
    expect(started).to.deep.equal([0, 1]);
    expect(gate.inFlight).to.equal(2);
    expect(gate.queued).to.equal(3);
    ends[1]!.resolve(1);
    await turn();
    expect(started).to.deep.equal([0, 1, 2]);
    ends[0]!.reject(new Error('boom'));
    await turn();
    expect(started, 'a failed call frees its slot too').to.deep.equal([0, 1, 2, 3]);
    for (const i of [2, 3]) ends[i]!.resolve(i);
    await turn();
    expect(started).to.deep.equal([0, 1, 2, 3, 4]);
    ends[4]!.resolve(4);
    const settled = await Promise.allSettled(results);
    expect(settled.map((s) => s.status)).to.deep.equal(['rejected', 'fulfilled', 'fulfilled', 'fulfilled', 'fulfilled']);
    expect(gate.inFlight).to.equal(0);
    expect(gate.queued).to.equal(0);
  });

  it('a call that throws at once frees its slot', async () => {
    const gate = new CallGate(1);
    await gate
      .run(() => {
        throw new Error('sync');
      })
      .catch(() => undefined);
    expect(gate.inFlight).to.equal(0);
    expect(await gate.run(() => Promise.resolve('next'))).to.equal('next');
  });

  it('refuses a limit below 1', () => {
    expect(() => new CallGate(0)).to.throw(/at least 1/);
  });
});
