/**
 * etcd faults under real master processes (two masters on a real etcd, one agent):
 *
 * - etcd stalled (SIGSTOP for 15 s, then SIGCONT): calls during the stall get UNAVAILABLE before
 *   their deadline, never a hang or a crash; the leader that cannot renew its lease steps down and
 *   stays up; after SIGCONT a leader is elected among the same processes (no restart), the agent is
 *   back, and a submission cut by the stall exists exactly once after the client's retry;
 * - etcd down (killed for 8 s, then started again on its data): the same, without the hang;
 * - etcd restarted after compacting the revisions the masters' watches resume from: every watch
 *   meets the compaction, and the masters read again and go on (same processes, a leader, jobs run).
 *
 * (etcd out of space: master/src/shell/__tests__/store-space.test.ts.)
 */
import { expect } from 'chai';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FuxiClient } from '@fuxi/client';
import { HaCluster, isAlive, LogTail, type MasterProcess, removeTree } from '@fuxi/deploy';
import { loadFuxiProto } from '@fuxi/proto';
import { connect, jobSpecToProto, RpcError, type Transport } from '@fuxi/rpc';
import { EtcdStore } from '@fuxi/store';
import { startEtcd, type EtcdProcess } from '../etcd-harness.js';
import { job, sleep, until } from '../harness.js';

const LEASE_TTL_SEC = 3;
const STALL_MS = 15_000;

const quick = (id: string) => job({ id, name: id, tasks: [{ name: 't', instances: 1, resources: { cpu: 0.1, memory: 64 }, command: 'echo ok' }] });

/** Calls `fn` on master `m` directly (no redirects, no retries) with `deadlineMs`; its error code and how long it took. */
async function directCall(m: MasterProcess, deadlineMs: number, fn: (c: ReturnType<typeof master>) => Promise<unknown>): Promise<{ code: string; ms: number }> {
  const c = master(m);
  const t0 = Date.now();
  try {
    await fn(c);
    return { code: 'OK', ms: Date.now() - t0 };
  } catch (e) {
    return { code: e instanceof RpcError ? e.code : String(e), ms: Date.now() - t0 };
  } finally {
    c.close();
  }
}

/** The cluster's admin transport (set once it started). */
let adminTransport: Transport | undefined;

function master(m: MasterProcess) {
  return connect(loadFuxiProto().MasterService, m.address, adminTransport);
}

describe('etcd faults under real masters (stall, outage, compaction)', function () {
  this.timeout(180_000);
  let etcd: EtcdProcess | undefined;
  let ha: HaCluster | undefined;
  let client: FuxiClient;
  let dir: string;
  let failed = false;

  before(async function () {
    this.timeout(60_000);
    etcd = await startEtcd();
    dir = mkdtempSync(join(tmpdir(), 'fuxi-it-store-faults-'));
    ha = await HaCluster.start({
      dir,
      masters: 2,
      agents: 1,
      etcd: { endpoints: [etcd.endpoint], prefix: '/it-store-faults/' },
      leaseTtlSec: LEASE_TTL_SEC,
      recoveryDeadlineMs: 3000,
      heartbeatIntervalMs: 300,
      agentTimeoutMs: 60_000,
      agentCpu: '2',
      agentMemory: '2Gi',
    });
    client = ha.client({ retryForMs: 60_000 });
    adminTransport = ha.transport();
  });
  afterEach(function () {
    if (this.currentTest?.state === 'failed') failed = true;
  });
  after(async function () {
    this.timeout(60_000);
    client?.close();
    await ha?.stop({ killWorkers: true });
    if (etcd?.pid !== undefined) etcd.resume();
    await etcd?.stop();
    if (dir && !failed) removeTree(dir);
    else if (dir) process.stderr.write(`  (logs kept in ${dir})\n`);
  });

  /** The masters' pids now: they must never change (no master restarts in this file). */
  const pids = () => ha!.masters.map((m) => m.pid);

  async function jobSucceeds(id: string): Promise<void> {
    const { jobId } = await client.submit(quick(id));
    const end = await client.waitFor(jobId);
    expect(end.state, `job ${id}`).to.equal('JOB_STATE_SUCCEEDED');
  }

  it('etcd stalled 15 s: calls get UNAVAILABLE within their deadline, the leader steps down and stays up, service resumes after SIGCONT without restarts', async () => {
    const before = await ha!.waitForLeader();
    await ha!.waitForRecovery(before.master, before.epoch);
    await jobSucceeds('before-stall');
    const started = pids();
    const standby = ha!.masters.find((m) => m !== before.master)!;

    etcd!.pause();
    const t0 = Date.now();
    try {
      // A submission that reaches the leader: its write cannot be made; the answer comes well
      // before the call's deadline.
      const spec = jobSpecToProto(quick('during-stall'));
      const submit = await directCall(before.master, 12_000, (c) => c.SubmitJob({ spec }, { deadlineMs: 12_000 }));
      expect(submit.code, 'SubmitJob during the stall').to.equal('UNAVAILABLE');
      expect(submit.ms).to.be.lessThan(12_000);
      // The leader cannot renew its lease: it steps down (its watchdog), and stays up.
      await before.master.log.waitFor((r) => r.msg === 'stepped down' && r.pid === before.master.pid, {
        what: 'the leader stepping down',
        timeoutMs: STALL_MS - 2000,
        child: before.master.child,
      });
      expect(Date.now() - t0, 'stepped down while etcd was still stopped').to.be.lessThan(STALL_MS);
      for (const m of [before.master, standby]) {
        const r = await directCall(m, 8000, (c) => c.ListJobs({ states: [] }, { deadlineMs: 8000 }));
        expect(r.code, `ListJobs on ${m.name} during the stall`).to.equal('UNAVAILABLE');
        expect(r.ms).to.be.lessThan(8000);
      }
      expect(pids().every(isAlive), 'every master is up').to.equal(true);
      await sleep(Math.max(0, STALL_MS - (Date.now() - t0)));
    } finally {
      etcd!.resume();
    }

    // Service resumes without restarts: a leader among the same processes, under a new epoch.
    const after = await ha!.waitForLeader({ afterEpoch: before.epoch, timeoutMs: 60_000 });
    await ha!.waitForRecovery(after.master, after.epoch, 60_000);
    expect(pids()).to.deep.equal(started);
    expect(started.every(isAlive)).to.equal(true);
    await ha!.waitForNodes(1, 30_000);
    // The cut submission: the client's retry finds it (if the write landed after all) or creates it.
    await client.submit(quick('during-stall'));
    const ids = (await client.list()).map((j) => j.jobId);
    expect(ids.filter((id) => id === 'during-stall')).to.have.length(1);
    expect(ids).to.include('before-stall');
    expect((await client.waitFor('during-stall')).state).to.equal('JOB_STATE_SUCCEEDED');
  });

  it('etcd down (killed) for 8 s: calls get UNAVAILABLE, the leader steps down and stays up, service resumes once etcd is back', async () => {
    const before = await ha!.waitForLeader({ timeoutMs: 60_000 });
    await ha!.waitForRecovery(before.master, before.epoch, 60_000);
    const started = pids();
    const t0 = Date.now();
    await etcd!.kill();
    try {
      const spec = jobSpecToProto(quick('during-outage'));
      const submit = await directCall(before.master, 12_000, (c) => c.SubmitJob({ spec }, { deadlineMs: 12_000 }));
      expect(submit.code, 'SubmitJob while etcd is down').to.equal('UNAVAILABLE');
      expect(submit.ms).to.be.lessThan(12_000);
      await before.master.log.waitFor((r) => r.msg === 'stepped down' && r.pid === before.master.pid && r.timeMs >= t0, {
        what: 'the leader stepping down',
        timeoutMs: 8000,
        child: before.master.child,
      });
      expect(started.every(isAlive), 'every master is up').to.equal(true);
      await sleep(Math.max(0, 8000 - (Date.now() - t0)));
    } finally {
      await etcd!.start();
    }
    const after = await ha!.waitForLeader({ afterEpoch: before.epoch, timeoutMs: 60_000 });
    await ha!.waitForRecovery(after.master, after.epoch, 60_000);
    expect(pids()).to.deep.equal(started);
    await ha!.waitForNodes(1, 30_000);
    await client.submit(quick('during-outage'));
    expect((await client.list()).filter((j) => j.jobId === 'during-outage')).to.have.length(1);
    expect((await client.waitFor('during-outage')).state).to.equal('JOB_STATE_SUCCEEDED');
  });

  it('etcd restarted after compacting the revisions the watches resume from: the masters read again and go on', async () => {
    const before = await ha!.waitForLeader({ timeoutMs: 60_000 });
    await ha!.waitForRecovery(before.master, before.epoch, 60_000);
    const started = pids();
    const tails = ha!.masters.map(
      (m) =>
        new LogTail(m.logFile, [
          'watch behind a compaction: reading the key again and watching from there',
          'election watch behind a compaction: reading the election again',
        ]),
    );
    for (const t of tails) t.poll(); // only what is logged from now on counts
    const seen = tails.map((t) => t.records.length);

    // Move the revision well past every watch's, compact up to it, and make every watch reconnect.
    const admin = await EtcdStore.open({ endpoints: [etcd!.endpoint], prefix: '/it-store-faults-admin/' });
    try {
      for (let i = 0; i < 50; i++) await admin.put('churn', String(i));
      await admin.compact();
    } finally {
      await admin.close();
    }
    await etcd!.kill();
    await etcd!.start();

    // Both masters' watches (the leader's own key, the standby's wait for it, both observers) meet the compaction.
    await until('both masters re-reading after the compaction', () => tails.every((t, i) => (t.poll(), t.records.length > seen[i]!)), 30_000);
    const leader = await ha!.waitForLeader({ timeoutMs: 60_000 });
    expect(BigInt(leader.epoch) >= BigInt(before.epoch)).to.equal(true);
    expect(pids()).to.deep.equal(started);
    expect(started.every(isAlive)).to.equal(true);
    await ha!.waitForNodes(1, 30_000);
    await jobSucceeds('after-compaction');
  });
});
