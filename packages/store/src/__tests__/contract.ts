import { expect } from 'chai';
import type { Store } from '../index.js';

export interface ContractContext {
  store: Store;
  /** Durable backends: opens the same data again (after `store.close()`). */
  reopen?: () => Promise<Store>;
  cleanup: () => Promise<void>;
}

/** One contract suite, run against every backend (docs/code-style.md, rule 5). */
export function storeContract(name: string, open: () => Promise<ContractContext>): void {
  describe(`store contract: ${name}`, () => {
    let store: Store;
    let ctx: Awaited<ReturnType<typeof open>>;
    beforeEach(async () => {
      ctx = await open();
      store = ctx.store;
    });
    afterEach(async () => {
      await ctx.cleanup();
    });

    it('gets what was put, undefined for missing keys', async () => {
      expect(await store.get('jobs/a')).to.equal(undefined);
      await store.put('jobs/a', '1');
      expect(await store.get('jobs/a')).to.equal('1');
      await store.put('jobs/a', '2');
      expect(await store.get('jobs/a')).to.equal('2');
    });

    it('lists by prefix in key order, not beyond the prefix', async () => {
      await store.put('jobs/b', 'b');
      await store.put('jobs/a', 'a');
      await store.put('jobsx', 'x');
      await store.put('apps/a', 'z');
      const got = await store.list('jobs/');
      expect(got).to.deep.equal([
        { key: 'jobs/a', value: 'a' },
        { key: 'jobs/b', value: 'b' },
      ]);
    });

    it('deletes, and deleting a missing key is fine', async () => {
      await store.put('k', 'v');
      await store.delete('k');
      await store.delete('missing');
      expect(await store.get('k')).to.equal(undefined);
    });

    it('applies a batch of puts and deletes in order', async () => {
      await store.put('x', '0');
      await store.batch([
        { type: 'put', key: 'a', value: '1' },
        { type: 'del', key: 'x' },
        { type: 'put', key: 'a', value: '2' },
      ]);
      expect(await store.get('a')).to.equal('2');
      expect(await store.get('x')).to.equal(undefined);
      await store.batch([]);
    });

    it('in a batch, the last op on a key decides (put+del, del+put)', async () => {
      await store.put('b', 'old');
      await store.batch([
        { type: 'put', key: 'a', value: '1' },
        { type: 'del', key: 'a' },
        { type: 'del', key: 'b' },
        { type: 'put', key: 'b', value: 'new' },
      ]);
      expect(await store.get('a')).to.equal(undefined);
      expect(await store.get('b')).to.equal('new');
    });

    it('applies a batch of 100 puts, and lists nothing for an unused prefix', async () => {
      const ops = Array.from({ length: 100 }, (_, i) => ({ type: 'put' as const, key: `many/${String(i).padStart(3, '0')}`, value: String(i) }));
      await store.batch(ops);
      const got = await store.list('many/');
      expect(got.length).to.equal(100);
      expect(got[0]).to.deep.equal({ key: 'many/000', value: '0' });
      expect(got[99]).to.deep.equal({ key: 'many/099', value: '99' });
      expect(await store.list('nothing/')).to.deep.equal([]);
    });

    it('keeps unicode and large values intact', async () => {
      const big = 'é'.repeat(100_000);
      await store.put('big', big);
      expect(await store.get('big')).to.equal(big);
    });

    it('keeps data across a reopen (durable backends)', async function () {
      if (!ctx.reopen) this.skip();
      await store.put('durable', 'yes');
      await store.close();
      store = await ctx.reopen!();
      ctx.store = store;
      expect(await store.get('durable')).to.equal('yes');
    });
  });
}
