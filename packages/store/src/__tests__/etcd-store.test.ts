import { expect } from 'chai';
import { FailedPreconditionError, InvalidArgumentError, UnavailableError } from '@fuxi/common';
import { EtcdStore, FencedError, isGuardable, openStore, type Store } from '../index.js';
import { storeContract } from './contract.js';
import { etcdBinary, freePort, startEtcd, type EtcdProcess } from '../etcd-fixture.js';

let seq = 0;
const uniquePrefix = () => `/fuxi-test-${process.pid}-${++seq}/`;

describe('etcd store', function () {
  this.timeout(30_000);
  let etcd: EtcdProcess;
  before(async () => {
    etcd = await startEtcd();
  });
  after(async () => {
    await etcd?.stop();
  });

  storeContract('etcd', async () => {
    const prefix = uniquePrefix();
    const open = () => EtcdStore.open({ endpoints: [etcd.endpoint], prefix });
    const ctx = {
      store: (await open()) as Store,
      reopen: open,
      cleanup: async () => {
        await ctx.store.close().catch(() => undefined);
      },
    };
    return ctx;
  });

  describe('etcd specifics', () => {
    let store: EtcdStore;
    beforeEach(async () => {
      store = await EtcdStore.open({ endpoints: [etcd.endpoint], prefix: uniquePrefix(), listPageSize: 3 });
    });
    afterEach(async () => {
      await store.close();
    });

    it('opens through openStore and answers ping', async () => {
      const s = await openStore({ kind: 'etcd', endpoints: etcd.endpoint, prefix: uniquePrefix() });
      expect(s.kind).to.equal('etcd');
      expect(isGuardable(s)).to.equal(true);
      await (s as EtcdStore).ping();
      await s.close();
    });

    it('lists across pages, at one revision, in key order', async () => {
      const keys = Array.from({ length: 11 }, (_, i) => `p/${String.fromCharCode(107 - i)}`); // p/k .. p/a
      await store.batch(keys.map((k) => ({ type: 'put', key: k, value: k })));
      await store.put('q/x', 'outside');
      const got = await store.list('p/');
      expect(got.map((kv) => kv.key)).to.deep.equal([...keys].sort());
      expect(got.every((kv) => kv.key === kv.value)).to.equal(true);
    });

    it('keeps prefixes apart', async () => {
      const other = await EtcdStore.open({ endpoints: [etcd.endpoint], prefix: uniquePrefix() });
      try {
        await store.put('k', 'mine');
        expect(await other.get('k')).to.equal(undefined);
        expect(await other.list('')).to.deep.equal([]);
        expect(await store.list('')).to.deep.equal([{ key: 'k', value: 'mine' }]);
      } finally {
        await other.close();
      }
    });

    it('refuses a batch larger than etcd allows in one txn, applying nothing', async () => {
      const ops = Array.from({ length: 129 }, (_, i) => ({ type: 'put' as const, key: `big/${i}`, value: 'x' }));
      let err: unknown;
      await store.batch(ops).catch((e) => (err = e));
      expect(err).to.be.instanceOf(InvalidArgumentError);
      expect(await store.list('big/')).to.deep.equal([]);
    });

    it('guarded writes succeed while the guard holds and throw FencedError once it is deleted or re-created', async () => {
      await store.put('leader', 'me');
      const rec = await store.coordination().getRecord('leader');
      const guard = { key: 'leader', createRevision: rec.kv!.createRevision };
      const fenced = store.withGuard(guard);
      await fenced.put('jobs/a', '1');
      await fenced.batch([
        { type: 'put', key: 'jobs/b', value: '2' },
        { type: 'del', key: 'jobs/a' },
      ]);
      await fenced.batch([]); // an empty guarded batch checks the guard
      await store.put('leader', 'me again'); // an update keeps the create revision: still valid
      await fenced.delete('jobs/b');
      expect(await fenced.get('jobs/b')).to.equal(undefined);

      await fenced.put('jobs/c', '3');
      await store.delete('leader');
      let err: unknown;
      await fenced.put('jobs/c', 'late').catch((e) => (err = e));
      expect(err).to.be.instanceOf(FencedError);
      expect(err).to.be.instanceOf(FailedPreconditionError);
      expect((err as FencedError).actualCreateRevision).to.equal('');
      expect((err as FencedError).code).to.equal('FAILED_PRECONDITION');

      await store.put('leader', 'someone else'); // re-created: a new create revision
      const again = await store.coordination().getRecord('leader');
      expect(BigInt(again.kv!.createRevision) > BigInt(guard.createRevision)).to.equal(true);
      err = undefined;
      await fenced
        .batch([
          { type: 'put', key: 'jobs/d', value: '4' },
          { type: 'del', key: 'jobs/c' },
        ])
        .catch((e) => (err = e));
      expect(err).to.be.instanceOf(FencedError);
      expect((err as FencedError).actualCreateRevision).to.equal(again.kv!.createRevision);
      err = undefined;
      await fenced.delete('jobs/c').catch((e) => (err = e));
      expect(err).to.be.instanceOf(FencedError);
      err = undefined;
      await fenced.batch([]).catch((e) => (err = e));
      expect(err).to.be.instanceOf(FencedError);
      // nothing of the fenced writes landed
      expect(await store.get('jobs/c')).to.equal('3');
      expect(await store.get('jobs/d')).to.equal(undefined);
      // a guard on the new incarnation works
      await store.withGuard({ key: 'leader', createRevision: again.kv!.createRevision }).put('jobs/d', 'ok');
      expect(await store.get('jobs/d')).to.equal('ok');
    });

    it('rejects a malformed guard', () => {
      expect(() => store.withGuard({ key: '', createRevision: '5' })).to.throw(InvalidArgumentError);
      expect(() => store.withGuard({ key: 'k', createRevision: '0' })).to.throw(InvalidArgumentError);
    });
  });

  it('fails with UnavailableError, not a hang, when etcd is not there', async () => {
    const port = await freePort();
    const s = await EtcdStore.open({ endpoints: [`http://127.0.0.1:${port}`], prefix: uniquePrefix(), requestTimeoutMs: 1000 });
    try {
      const t0 = Date.now();
      let err: unknown;
      await s.put('k', 'v').catch((e) => (err = e));
      expect(err).to.be.instanceOf(UnavailableError);
      err = undefined;
      await s.ping().catch((e) => (err = e));
      expect(err).to.be.instanceOf(UnavailableError);
      expect(Date.now() - t0).to.be.lessThan(5000);
    } finally {
      await s.close();
    }
  });
});

describe('etcd fixture', () => {
  it('fails with a clear message when etcd is not on PATH', () => {
    const saved = { PATH: process.env.PATH, BIN: process.env.FUXI_ETCD_BIN };
    process.env.PATH = '/nonexistent';
    delete process.env.FUXI_ETCD_BIN;
    try {
      expect(() => etcdBinary()).to.throw(/etcd binary not found.*etcd-server/);
    } finally {
      process.env.PATH = saved.PATH;
      if (saved.BIN !== undefined) process.env.FUXI_ETCD_BIN = saved.BIN;
    }
  });
});
