/**
 * Store faults on a real etcd: out of space (a small `--quota-backend-bytes`, filled until etcd
 * raises its NOSPACE alarm) is a typed RESOURCE_EXHAUSTED error and writes work again once space
 * is freed and the alarm disarmed; a listing whose revision is compacted away reads again; the
 * election outlives watches that resume behind a compaction.
 */
import { expect } from 'chai';
import { ResourceExhaustedError, type Logger } from '@fuxi/common';
import { EtcdStore, LeaderElection, StoreOutOfSpaceError, type CampaignFailure, type CoordinationBackend, type StepDown } from '../index.js';
import { startEtcd, type EtcdProcess } from '../etcd-fixture.js';

let seq = 0;
const uniquePrefix = () => `/fuxi-faults-${process.pid}-${++seq}/`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until<T>(what: string, fn: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs = 15_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

/** A logger that keeps the messages it is given (every level). */
function recordingLogger(msgs: string[]): Logger {
  const log = (_o: unknown, msg?: string) => void msgs.push(msg ?? '');
  const l = { debug: log, info: log, warn: log, error: log, child: () => l } as unknown as Logger;
  return l;
}

async function rejection(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (e) {
    return e as Error;
  }
  throw new Error('expected a rejection');
}

/** Puts 100 KiB values under `fill/` until etcd refuses one for space; returns that error. */
async function fillUntilFull(store: EtcdStore): Promise<Error> {
  const blob = 'x'.repeat(100 * 1024);
  for (let i = 0; i < 1000; i++) {
    try {
      await store.put(`fill/${i}`, blob);
    } catch (e) {
      return e as Error;
    }
  }
  throw new Error('etcd never ran out of space');
}

describe('etcd store faults', function () {
  this.timeout(60_000);

  describe('out of space (--quota-backend-bytes 2 MiB)', () => {
    let etcd: EtcdProcess;
    before(async () => {
      etcd = await startEtcd({ extraArgs: ['--quota-backend-bytes', String(2 * 1024 * 1024)] });
    });
    after(async () => {
      await etcd?.stop();
    });

    it('refuses writes with StoreOutOfSpaceError (RESOURCE_EXHAUSTED) saying what to do; reads and deletes work; writes work again after compact, defrag and disarm', async () => {
      const store = await EtcdStore.open({ endpoints: [etcd.endpoint], prefix: uniquePrefix() });
      try {
        await store.put('jobs/kept', 'v1');
        expect(await store.outOfSpace()).to.equal(false);
        const err = await fillUntilFull(store);
        expect(err).to.be.instanceOf(StoreOutOfSpaceError);
        expect(err).to.be.instanceOf(ResourceExhaustedError);
        expect((err as ResourceExhaustedError).code).to.equal('RESOURCE_EXHAUSTED');
        expect(err.message).to.match(/etcd put: etcd is out of space \(etcdserver: mvcc: database space exceeded\)\. Free space: /);
        expect(err.message).to.include('etcdctl alarm disarm');
        expect(await store.outOfSpace()).to.equal(true);

        // Every write is refused now, small ones and guarded ones too; nothing is applied.
        expect(await rejection(store.put('jobs/small', 'x'))).to.be.instanceOf(StoreOutOfSpaceError);
        const guard = { key: 'jobs/kept', createRevision: '1' };
        expect(await rejection(store.withGuard(guard).batch([{ type: 'put', key: 'jobs/g', value: 'x' }]))).to.be.instanceOf(ResourceExhaustedError);
        expect(await store.get('jobs/small')).to.equal(undefined);
        expect(await store.get('jobs/kept')).to.equal('v1');

        // Free space: delete, compact, defragment; still refused until the alarm is disarmed.
        for (const kv of await store.list('fill/')) await store.delete(kv.key);
        await store.compact();
        await store.defragment();
        expect(await rejection(store.put('jobs/small', 'x'))).to.be.instanceOf(StoreOutOfSpaceError);
        await store.disarmNoSpace();
        expect(await store.outOfSpace()).to.equal(false);
        await store.put('jobs/small', 'x');
        expect(await store.get('jobs/small')).to.equal('x');
      } finally {
        await store.close();
      }
    });
  });

  describe('compaction', () => {
    let etcd: EtcdProcess;
    before(async () => {
      etcd = await startEtcd();
    });
    after(async () => {
      await etcd?.stop();
    });

    it('lists a page larger than 4 MiB (six job specs of 1 MiB, the largest maxJobSpecBytes allows by default)', async () => {
      const store = await EtcdStore.open({ endpoints: [etcd.endpoint], prefix: uniquePrefix() });
      try {
        const big = 'j'.repeat(1024 * 1024);
        for (let i = 0; i < 6; i++) await store.put(`jobs/${i}`, big);
        const got = await store.list('jobs/');
        expect(got.map((kv) => kv.value.length)).to.deep.equal(Array(6).fill(big.length));
      } finally {
        await store.close();
      }
    });

    it('a listing whose revision is compacted between two pages reads again at the current revision', async () => {
      const msgs: string[] = [];
      const prefix = uniquePrefix();
      const store = await EtcdStore.open({ endpoints: [etcd.endpoint], prefix, listPageSize: 1, log: recordingLogger(msgs) });
      const writer = await EtcdStore.open({ endpoints: [etcd.endpoint], prefix });
      const keys = Array.from({ length: 40 }, (_, i) => `jobs/${String(i).padStart(3, '0')}`);
      await writer.batch(keys.map((key) => ({ type: 'put' as const, key, value: key })));
      // Another writer moves the revision on and compacts up to it every 100 ms while we list (a
      // listing of 40 pages takes some tens of ms: some are cut by a compaction, their retry is not).
      let compacting = true;
      const compactor = (async () => {
        for (let i = 0; compacting; i++) {
          await writer.put('other/tick', String(i));
          await writer.compact();
          await sleep(100);
        }
      })();
      try {
        const restarted = () => msgs.some((m) => m.includes('etcd compacted the revision being read'));
        for (let attempt = 0; attempt < 200 && !restarted(); attempt++) {
          const got = await store.list('jobs/');
          expect(got.map((kv) => kv.key)).to.deep.equal(keys);
        }
        expect(restarted(), 'a compaction landed between two pages at least once').to.equal(true);
      } finally {
        compacting = false;
        await compactor;
        await store.close();
        await writer.close();
      }
    });

    it('the election outlives watches that start behind a compaction: the leader keeps leading, the standby keeps its place and takes over', async () => {
      const prefix = uniquePrefix();
      const stores: EtcdStore[] = [];
      const elections: LeaderElection[] = [];
      const open = async () => {
        const s = await EtcdStore.open({ endpoints: [etcd.endpoint], prefix, requestTimeoutMs: 2000 });
        stores.push(s);
        return s;
      };
      // The first watch of each key starts at revision 2, which the compaction below removed: what
      // a watch resuming after auto-compaction meets. Later watches start where they are asked to.
      const compacted: string[] = [];
      const behind = (b: CoordinationBackend): CoordinationBackend => {
        const forced = new Set<string>();
        return {
          ...b,
          watch: (key, opts, cb) => {
            const first = !forced.has(key);
            forced.add(key);
            return b.watch(key, first ? { ...opts, fromRevision: '2' } : opts, {
              ...cb,
              onError: (err) => {
                compacted.push(err.name);
                cb.onError(err);
              },
            });
          },
        };
      };
      try {
        const admin = await open();
        for (let i = 0; i < 5; i++) await admin.put('other/x', String(i));
        await admin.compact();
        const stepDowns: StepDown[] = [];
        const failures: CampaignFailure[] = [];
        const a = new LeaderElection(behind((await open()).coordination()), { ttlSec: 5 });
        const b = new LeaderElection(behind((await open()).coordination()), { ttlSec: 5 });
        elections.push(a, b);
        for (const e of [a, b]) {
          e.on('stepDown', (s) => stepDowns.push(s));
          e.on('campaignError', (f) => failures.push(f));
        }
        a.campaign('a:1');
        const la = await a.waitForLeadership(30_000);
        b.campaign('b:1');
        await until('b observes a as the leader', () => b.leader() === 'a:1');
        // Each kind of watch met the compaction: the observers', a's own key, b's wait for a's key.
        await until('three compacted watches', () => compacted.filter((n) => n === 'WatchCompactedError').length >= 3);
        await sleep(500);
        expect(a.isLeader()).to.equal(true);
        expect(b.isLeader()).to.equal(false);
        expect(stepDowns, 'no step-down').to.deep.equal([]);
        expect(
          failures.map((f) => f.error.message),
          'no campaign failure',
        ).to.deep.equal([]);
        // b still waits on a's key: when a resigns, b takes over without campaigning again.
        await a.resign();
        const lb = await b.waitForLeadership(30_000);
        expect(BigInt(lb.epoch) > BigInt(la.epoch)).to.equal(true);
        expect(failures).to.deep.equal([]);
      } finally {
        for (const e of elections) await e.close();
        for (const s of stores) await s.close();
      }
    });
  });
});
