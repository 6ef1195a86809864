import { expect } from 'chai';
import type { StoreOp } from '../../core/store-ops.js';
import { DELETE_CHUNK, GroupCommit, type GroupCommitStore } from '../group-commit.js';

/** A store whose batches are held until released, recording each. */
class HeldStore implements GroupCommitStore<object> {
  readonly batches: StoreOp[][] = [];
  readonly data = new Map<string, string>();
  private gates: Array<() => void> = [];
  hold = false;
  failNext: Error | undefined;

  async write(_group: object, ops: StoreOp[]): Promise<void> {
    this.batches.push(ops);
    if (this.hold) await new Promise<void>((r) => this.gates.push(r));
    if (this.failNext) {
      const e = this.failNext;
      this.failNext = undefined;
      throw e;
    }
    for (const op of ops) {
      if (op.type === 'put') this.data.set(op.key, op.value);
      else this.data.delete(op.key);
    }
  }

  async list(_group: object, prefix: string): Promise<string[]> {
    return [...this.data.keys()].filter((k) => k.startsWith(prefix)).sort();
  }

  release(): void {
    this.hold = false;
    for (const g of this.gates.splice(0)) g();
  }
}

const put = (key: string, value = 'v'): StoreOp => ({ type: 'put', key, value });
const tick = () => new Promise((r) => setImmediate(r));

describe('GroupCommit (master shell: group commit of hard-state writes)', () => {
  const g = {};

  it('writes what is queued in one turn as one batch, and what is queued meanwhile as the next', async () => {
    const store = new HeldStore();
    const gc = new GroupCommit(store);
    store.hold = true;
    const a = gc.write(g, [put('a')]);
    const b = gc.write(g, [put('b')]);
    await tick();
    expect(store.batches).to.deep.equal([[put('a'), put('b')]]);
    const c = gc.write(g, [put('c')]);
    const d = gc.write(g, [put('d')]);
    let cDone = false;
    void c.then(() => (cDone = true));
    await tick();
    expect(store.batches).to.have.length(1); // c and d wait for the batch under way
    store.release();
    await Promise.all([a, b]);
    expect(cDone).to.equal(false);
    await tick();
    expect(store.batches[1]).to.deep.equal([put('c'), put('d')]);
    store.release();
    await Promise.all([c, d]);
    expect(gc.stats).to.deep.equal({ writes: 4, batches: 2 });
    expect([...store.data.keys()]).to.deep.equal(['a', 'b', 'c', 'd']);
  });

  it('never splits one write, and keeps batches within the limits', async () => {
    const store = new HeldStore();
    const gc = new GroupCommit(store, { maxOps: 3, maxBytes: 1 << 20 });
    const big = [put('x1'), put('x2'), put('x3'), put('x4')];
    await Promise.all([gc.write(g, [put('a')]), gc.write(g, [put('b')]), gc.write(g, big), gc.write(g, [put('c')]), gc.write(g, [put('d')])]);
    expect(store.batches.map((b) => b.map((op) => op.key))).to.deep.equal([
      ['a', 'b'],
      ['x1', 'x2', 'x3', 'x4'],
      ['c', 'd'],
    ]);
  });

  it('merges writes only within one group (a term), in order', async () => {
    const store = new HeldStore();
    const gc = new GroupCommit(store);
    const t1 = {};
    const t2 = {};
    await Promise.all([gc.write(t1, [put('a')]), gc.write(t2, [put('b')]), gc.write(t2, [put('c')]), gc.write(t1, [put('d')])]);
    expect(store.batches.map((b) => b.map((op) => op.key))).to.deep.equal([['a'], ['b', 'c'], ['d']]);
  });

  it('fails every write of a failed batch, and goes on with the next', async () => {
    const store = new HeldStore();
    const gc = new GroupCommit(store);
    store.hold = true;
    const first = gc.write(g, [put('a')]);
    await tick();
    const b = gc.write(g, [put('b')]);
    const c = gc.write(g, [put('c')]);
    store.failNext = undefined;
    store.release();
    await first;
    store.failNext = new Error('disk full');
    const results = await Promise.allSettled([b, c]);
    expect(results.map((r) => r.status)).to.deep.equal(['rejected', 'rejected']);
    // The failed group (a term) writes nothing more; the next one goes on.
    const sent = store.batches.length;
    const late = await gc.write(g, [put('late')]).catch((e: Error) => e.message);
    expect(late).to.equal('disk full');
    expect(store.batches).to.have.length(sent);
    expect(await gc.write({}, [put('d')]).then(() => 'ok')).to.equal('ok');
    expect([...store.data.keys()]).to.deep.equal(['a', 'd']);
  });

  it('writes nothing after a failed batch of the same group, even within the same drain (order kept)', async () => {
    const store = new HeldStore();
    const gc = new GroupCommit(store, { maxOps: 1, maxBytes: 1 << 20 });
    store.failNext = new Error('lost quorum');
    // One turn, two batches (one op each): the first fails, so the second must not land without it.
    const results = await Promise.allSettled([gc.write(g, [put('end')]), gc.write(g, [put('admit')]), gc.write(g, [put('more')])]);
    expect(results.map((r) => r.status)).to.deep.equal(['rejected', 'rejected', 'rejected']);
    expect(results.map((r) => (r as PromiseRejectedResult).reason.message)).to.deep.equal(['lost quorum', 'lost quorum', 'lost quorum']);
    expect(store.batches).to.deep.equal([[put('end')]]);
    expect([...store.data.keys()]).to.deep.equal([]);
  });

  it('settled() waits for everything queued so far', async () => {
    const store = new HeldStore();
    const gc = new GroupCommit(store);
    store.hold = true;
    void gc.write(g, [put('a')]);
    void gc.deletePrefix(g, 'nothing/');
    let settled = false;
    void gc.settled().then(() => (settled = true));
    await tick();
    expect(settled).to.equal(false); // a deletion with nothing to delete does not overtake the write before it
    store.release();
    await gc.settled();
    expect(settled).to.equal(true);
  });

  it('barrier(): undefined while nothing is queued or under way; else resolves (never rejects) once everything queued so far has settled', async () => {
    const store = new HeldStore();
    const gc = new GroupCommit(store);
    expect(gc.barrier()).to.equal(undefined);
    store.hold = true;
    store.failNext = new Error('refused');
    const a = gc.write(g, [put('a')]);
    a.catch(() => undefined);
    const b1 = gc.barrier();
    expect(b1).to.not.equal(undefined);
    let done = false;
    void b1!.then(() => (done = true));
    await tick();
    expect(done, 'resolved before the write settled').to.equal(false);
    store.release();
    await b1;
    expect(done).to.equal(true);
    expect(gc.barrier(), 'idle again after a failed write').to.equal(undefined);
    await gc.write({}, [put('b')]); // the next term
    expect(gc.barrier()).to.equal(undefined);
  });

  it('deletes a prefix in the batch of the writes around it: what was stored and what the batch put before it, not what it puts after', async () => {
    const store = new HeldStore();
    const gc = new GroupCommit(store);
    await gc.write(g, [put('apps/j/topology'), put('apps/j/log/1'), put('apps/k/log/1')]);
    await Promise.all([gc.write(g, [put('apps/j/log/2'), put('jobs/j', 'done')]), gc.deletePrefix(g, 'apps/j/'), gc.write(g, [put('apps/j/after')])]);
    expect(store.batches).to.have.length(2);
    expect([...store.data.keys()].sort()).to.deep.equal(['apps/j/after', 'apps/k/log/1', 'jobs/j']);
  });

  it('skips a deletion whose prefix cannot be listed, says so, and goes on', async () => {
    const store = new HeldStore();
    const failed: string[] = [];
    const gc = new GroupCommit(
      {
        write: (group, ops) => store.write(group, ops),
        list: () => Promise.reject(new Error('store unavailable')),
      },
      undefined,
      (prefix) => failed.push(prefix),
    );
    await Promise.all([gc.write(g, [put('apps/j/log/1')]), gc.deletePrefix(g, 'apps/j/'), gc.write(g, [put('jobs/j')])]);
    expect(failed).to.deep.equal(['apps/j/']);
    expect([...store.data.keys()].sort()).to.deep.equal(['apps/j/log/1', 'jobs/j']);
  });

  it('deletes a large prefix in chunks', async () => {
    const store = new HeldStore();
    const gc = new GroupCommit(store, { maxOps: 128, maxBytes: 1 << 20 });
    const n = DELETE_CHUNK * 2 + 5;
    await gc.write(
      g,
      Array.from({ length: n }, (_, i) => put(`apps/j/log/${String(i).padStart(4, '0')}`)),
    );
    await gc.deletePrefix(g, 'apps/j/');
    expect(store.data.size).to.equal(0);
    expect(store.batches.slice(1).every((b) => b.length <= 128)).to.equal(true);
  });
});
