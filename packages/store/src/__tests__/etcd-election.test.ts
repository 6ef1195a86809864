import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import {
  EtcdStore,
  FakeClock,
  FencedError,
  LeaderElection,
  type CampaignFailure,
  type Leadership,
  type LeaderElectionOptions,
  type StepDown,
} from '../index.js';
import { prepareEtcd, startEtcd, type EtcdProcess } from '../etcd-fixture.js';

const TTL = 2; // seconds; watchdog limit = 2000 - 600 = 1400 ms

let seq = 0;
const uniquePrefix = () => `/fuxi-el-${process.pid}-${++seq}/`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until<T>(what: string, fn: () => T | undefined | false | Promise<T | undefined | false>, timeoutMs = 15_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

interface Candidate {
  value: string;
  store: EtcdStore;
  election: LeaderElection;
  leaders: Leadership[];
  stepDowns: StepDown[];
  failures: CampaignFailure[];
  /** performance.now() of the latest leader event. */
  electedAt: number;
  steppedDownAt: number;
}

/** Timings for the report, printed after the suite. */
const measured: Record<string, string> = {};

describe('leader election on etcd', function () {
  this.timeout(60_000);
  let etcd: EtcdProcess;
  const candidates: Candidate[] = [];
  const extraEtcds: EtcdProcess[] = [];
  const children: ChildProcess[] = [];

  async function candidate(value: string, prefix: string, endpoint = etcd.endpoint, opts: LeaderElectionOptions = {}): Promise<Candidate> {
    const store = await EtcdStore.open({ endpoints: [endpoint], prefix, requestTimeoutMs: 1000 });
    const election = new LeaderElection(store.coordination(), { ttlSec: TTL, ...opts });
    const c: Candidate = { value, store, election, leaders: [], stepDowns: [], failures: [], electedAt: 0, steppedDownAt: 0 };
    election.on('leader', (l) => {
      c.leaders.push(l);
      c.electedAt = performance.now();
    });
    election.on('stepDown', (s) => {
      c.stepDowns.push(s);
      c.steppedDownAt = performance.now();
    });
    election.on('campaignError', (f) => c.failures.push(f));
    candidates.push(c);
    return c;
  }

  before(async () => {
    etcd = await startEtcd();
  });
  afterEach(async () => {
    for (const c of candidates.splice(0)) {
      await c.election.close();
      await c.store.close();
    }
    for (const p of children.splice(0)) {
      if (p.pid !== undefined && p.exitCode === null && p.signalCode === null) {
        try {
          process.kill(p.pid, 'SIGKILL');
        } catch {}
      }
    }
    for (const e of extraEtcds.splice(0)) await e.stop();
  });
  after(async () => {
    await etcd?.stop();
    if (Object.keys(measured).length) process.stdout.write(`      measured: ${JSON.stringify(measured)}\n`);
  });

  it('elects one of two candidates; epoch = its key create revision; the other observes its value', async () => {
    const prefix = uniquePrefix();
    const a = await candidate('10.0.0.1:7070', prefix);
    const b = await candidate('10.0.0.2:7070', prefix);
    a.election.campaign(a.value);
    b.election.campaign(b.value);
    const winner = await until('a leader', () => [a, b].find((c) => c.election.isLeader()));
    const loser = winner === a ? b : a;
    await sleep(300);
    expect(loser.election.isLeader()).to.equal(false);
    expect(winner.leaders.length).to.equal(1);
    const l = winner.leaders[0]!;
    expect(l.key.startsWith('election/master/')).to.equal(true);
    const rec = await winner.store.coordination().getRecord(l.key);
    expect(rec.kv?.createRevision).to.equal(l.epoch);
    expect(rec.kv?.value).to.equal(winner.value);
    expect(l.guard).to.deep.equal({ key: l.key, createRevision: l.epoch });
    await until('the loser observes the leader', () => loser.election.leader() === winner.value);
    expect(loser.election.observedLeader()?.epoch).to.equal(l.epoch);
    expect(winner.election.leader()).to.equal(winner.value);
    // the guard fences writes to this term
    await winner.store.withGuard(l.guard).put('jobs/x', '1');
  });

  it('after resign, the other candidate wins with a larger epoch', async () => {
    const prefix = uniquePrefix();
    const a = await candidate('a:1', prefix);
    const b = await candidate('b:1', prefix);
    a.election.campaign(a.value);
    await a.election.waitForLeadership(10_000);
    b.election.campaign(b.value);
    await until('b is registered and sees a', () => b.election.leader() === 'a:1');
    await sleep(200);
    const first = a.leaders[0]!;
    const t0 = performance.now();
    await a.election.resign();
    expect(a.stepDowns.map((s) => s.reason)).to.deep.equal(['resigned']);
    expect(a.election.isLeader()).to.equal(false);
    const lb = await b.election.waitForLeadership(10_000);
    measured.takeoverAfterResignMs = (b.electedAt - t0).toFixed(1);
    expect(BigInt(lb.epoch) > BigInt(first.epoch)).to.equal(true);
    await until('a observes b', () => a.election.leader() === 'b:1');
    // a resigned: it does not campaign again
    await sleep(300);
    expect(a.leaders.length).to.equal(1);
    let err: unknown;
    await a.store
      .withGuard(first.guard)
      .put('k', 'v')
      .catch((e) => (err = e));
    expect(err).to.be.instanceOf(FencedError);
  });

  it('a leader whose lease is revoked behind its back steps down; a standby takes over with a higher epoch', async () => {
    const prefix = uniquePrefix();
    const a = await candidate('a:1', prefix);
    const b = await candidate('b:1', prefix);
    const admin = await EtcdStore.open({ endpoints: [etcd.endpoint], prefix });
    // an observer that never campaigns (a CLI, a standby's redirect logic)
    const watcher = new LeaderElection(admin.coordination(), { ttlSec: TTL });
    let observerSawB = 0;
    watcher.on('leaderChange', (o) => {
      if (o?.value === 'b:1') observerSawB = performance.now();
    });
    watcher.observe();
    try {
      a.election.campaign(a.value);
      const la = await a.election.waitForLeadership(10_000);
      b.election.campaign(b.value);
      await until('b observes a', () => b.election.leader() === 'a:1');
      await sleep(200);
      const fenced = a.store.withGuard(la.guard);
      await fenced.put('jobs/j', 'from a');
      const t0 = performance.now();
      await admin.revokeLease(la.leaseId);
      await until('a steps down', () => a.stepDowns.length > 0);
      const lb = await b.election.waitForLeadership(10_000);
      measured.stepDownAfterRevokeMs = (a.steppedDownAt - t0).toFixed(1);
      measured.takeoverAfterRevokeMs = (b.electedAt - t0).toFixed(1);
      await until('the observer sees b', () => observerSawB > 0);
      measured.observerSeesNewLeaderAfterRevokeMs = (observerSawB - t0).toFixed(1);
      expect(watcher.leader()).to.equal('b:1');
      expect(watcher.observedLeader()?.epoch).to.equal(lb.epoch);
      expect(['key-deleted', 'lease-lost']).to.include(a.stepDowns[0]!.reason);
      expect(a.election.isLeader()).to.equal(false);
      expect(BigInt(lb.epoch) > BigInt(la.epoch)).to.equal(true);
      let err: unknown;
      await fenced.put('jobs/j', 'late write from a').catch((e) => (err = e));
      expect(err).to.be.instanceOf(FencedError);
      expect(await admin.get('jobs/j')).to.equal('from a');
      // a campaigns again, behind b, and follows b
      await until('a observes b', () => a.election.leader() === 'b:1');
      await sleep(500);
      expect(a.election.isLeader()).to.equal(false);
      expect(b.election.isLeader()).to.equal(true);
    } finally {
      await watcher.close();
      await admin.close();
    }
  });

  it('a SIGKILLed leader is replaced after about one TTL', async () => {
    const prefix = uniquePrefix();
    const script = fileURLToPath(new URL('./election-candidate.js', import.meta.url));
    const child = spawn(process.execPath, [script, etcd.endpoint, prefix, 'child:1', String(TTL)], { stdio: ['ignore', 'pipe', 'inherit'] });
    children.push(child);
    const lines: Array<{ event: string; epoch?: string }> = [];
    createInterface({ input: child.stdout! }).on('line', (line) => lines.push(JSON.parse(line) as { event: string; epoch?: string }));
    const childLeader = await until('the child leads', () => lines.find((l) => l.event === 'leader'));
    const b = await candidate('b:1', prefix);
    b.election.campaign(b.value);
    await until('b observes the child', () => b.election.leader() === 'child:1');
    await sleep(300);
    const t0 = performance.now();
    process.kill(child.pid!, 'SIGKILL');
    const lb = await b.election.waitForLeadership(3 * TTL * 1000);
    const ms = b.electedAt - t0;
    measured.takeoverAfterLeaderSigkillMs = ms.toFixed(0);
    expect(ms).to.be.lessThan(TTL * 1000 + 1500);
    expect(BigInt(lb.epoch) > BigInt(childLeader.epoch!)).to.equal(true);
  });

  it('the watchdog steps a leader down within the TTL when etcd freezes (SIGSTOP), and it leads again after SIGCONT', async () => {
    const own = await startEtcd();
    extraEtcds.push(own);
    const a = await candidate('a:1', uniquePrefix(), own.endpoint, { backoffInitialMs: 100, backoffMaxMs: 500 });
    a.election.campaign(a.value);
    const first = await a.election.waitForLeadership(10_000);
    await sleep(1000); // a few keep-alives
    const t0 = performance.now();
    own.pause();
    try {
      await until('a steps down', () => a.stepDowns.length > 0, TTL * 1000 + 500);
      const ms = a.steppedDownAt - t0;
      measured.watchdogStepDownAfterSigstopMs = ms.toFixed(0);
      expect(a.stepDowns[0]!.reason).to.equal('watchdog');
      expect(ms).to.be.lessThan(TTL * 1000);
      expect(a.election.isLeader()).to.equal(false);
    } finally {
      own.resume();
    }
    const second = await until('a leads again', () => (a.leaders.length > 1 ? a.leaders[1] : undefined), 20_000);
    expect(BigInt(second.epoch) > BigInt(first.epoch)).to.equal(true);
  });

  it('the watchdog runs on the injected clock: no keep-alive for ttl - margin of clock time -> step down', async () => {
    const clock = new FakeClock();
    const a = await candidate('a:1', uniquePrefix(), etcd.endpoint, { clock });
    a.election.campaign(a.value);
    const first = await a.election.waitForLeadership();
    clock.advance(1000); // under the 1400 ms limit
    expect(a.election.isLeader()).to.equal(true);
    clock.advance(600); // the watchdog ticks every 140 ms: the tick at 1540 ms sees the 1400 ms limit passed
    expect(a.stepDowns.map((s) => s.reason)).to.deep.equal(['watchdog']);
    expect(a.election.isLeader()).to.equal(false);
    // it revokes its lease and campaigns again (no backoff after a step-down)
    const second = await until('a leads again', () => (a.leaders.length > 1 ? a.leaders[1] : undefined), 10_000);
    expect(BigInt(second.epoch) > BigInt(first.epoch)).to.equal(true);
  });

  it('isLeader() applies the watchdog on the spot, before the timer runs (a master frozen past the limit)', async () => {
    // A clock whose timers never fire: only the on-the-spot check can notice.
    let now = 0;
    const clock = { now: () => now, setTimeout: () => ({ cancel() {} }) };
    const a = await candidate('a:1', uniquePrefix(), etcd.endpoint, { clock });
    a.election.campaign(a.value);
    await a.election.waitForLeadership();
    now += 1400;
    expect(a.election.isLeader()).to.equal(true);
    now += 1;
    expect(a.election.leadership()).to.equal(undefined);
    expect(a.stepDowns.map((s) => s.reason)).to.deep.equal(['watchdog']);
  });

  it('keeps campaigning while etcd is down at start, reporting each failure, and wins once it is up', async () => {
    const later = await prepareEtcd();
    extraEtcds.push(later);
    const a = await candidate('a:1', uniquePrefix(), later.endpoint, { backoffInitialMs: 100, backoffMaxMs: 400 });
    a.election.campaign(a.value);
    await until('two failures', () => a.failures.length >= 2, 5000);
    expect(a.failures[0]!.attempt).to.equal(1);
    expect(a.failures[1]!.attempt).to.equal(2);
    expect(a.failures.every((f) => f.retryInMs <= 400)).to.equal(true);
    expect(a.election.isLeader()).to.equal(false);
    await later.start();
    const t0 = performance.now();
    await a.election.waitForLeadership(15_000);
    measured.electedAfterEtcdStartMs = (a.electedAt - t0).toFixed(0);
    expect(a.electedAt - t0).to.be.lessThan(5000);
  });

  it('rejects bad options', () => {
    const backend = { grantLease: () => Promise.reject(new Error('x')) } as never;
    expect(() => new LeaderElection(backend, { ttlSec: 0 })).to.throw(/ttlSec/);
    expect(() => new LeaderElection(backend, { ttlSec: 3, marginMs: 2500 })).to.throw(/marginMs/);
    expect(() => new LeaderElection(backend, { name: 'a/b' })).to.throw(/name/);
  });
});
