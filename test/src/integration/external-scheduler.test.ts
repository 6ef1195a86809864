/**
 * External schedulers with real processes: the example first-fit-decreasing scheduler
 * (deploy/examples/ffd-scheduler, `fuxi-ffd-scheduler`) places the tasks of jobs with
 * `scheduler: ffd` on a local cluster.
 *
 * - a mix of jobs and a gang job run to completion through it;
 * - a placement that over-commits a host, or names a host outside the scope, is rejected with its
 *   reason and nothing is granted;
 * - the scheduler killed with kill -9 mid-run: its jobs wait (no grants, the job says why), and
 *   proceed once it is started again; with `--external-scheduler-fallback-ms` they proceed through
 *   the built-in scheduler instead;
 * - master failover (real etcd, kill -9 of the leader) with the scheduler attached: it registers
 *   with the new leader, every granted worker keeps running with the same pid, the jobs succeed.
 */
import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FuxiClient } from '@fuxi/client';
import { AM_SU } from '@fuxi/common';
import { BIN, HaCluster, waitExit, type LocalCluster, removeTree } from '@fuxi/deploy';
import { loadFuxiProto, type JobInfo__Output, type SchedulerEvent__Output } from '@fuxi/proto';
import { connect } from '@fuxi/rpc';
import { startEtcd, type EtcdProcess } from '../etcd-harness.js';
import { isAlive, job, sleep, startCluster, stopCluster, until } from '../harness.js';

const FFD = join(BIN.master, '..', '..', '..', '..', 'deploy', 'examples', 'ffd-scheduler', 'main.mjs');

/** The example scheduler as a child process, its stderr (JSON lines) in `logFile`. */
function startFfd(masters: string[], logFile: string, clientEnv: Record<string, string>, name = 'ffd'): ChildProcess {
  const out = openSync(logFile, 'a');
  return spawn(process.execPath, [FFD, '--name', name], { env: { ...process.env, ...clientEnv, FUXI_MASTER: masters.join(',') }, stdio: ['ignore', out, out] });
}

function logLines(logFile: string): Array<Record<string, unknown>> {
  let text = '';
  try {
    text = readFileSync(logFile, 'utf8');
  } catch {
    return [];
  }
  return text
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

async function kill9(child: ChildProcess | undefined): Promise<void> {
  if (!child?.pid || child.exitCode !== null || child.signalCode !== null) return;
  process.kill(child.pid, 'SIGKILL');
  await waitExit(child, 5000);
}

async function finalState(client: FuxiClient, jobId: string): Promise<JobInfo__Output> {
  let last: JobInfo__Output | undefined;
  for await (const j of client.watch(jobId)) last = j;
  return last!;
}

const taskCounts = (j: JobInfo__Output) =>
  j.tasks.reduce((s, t) => ({ running: s.running + t.running, succeeded: s.succeeded + t.succeeded, retries: s.retries + t.retries }), {
    running: 0,
    succeeded: 0,
    retries: 0,
  });

describe('external scheduler (real processes)', function () {
  this.timeout(120_000);
  let cluster: LocalCluster;
  let client: FuxiClient;
  let ffd: ChildProcess | undefined;
  let ffdLog: string;
  let failed = false;

  before(async () => {
    cluster = await startCluster('extsched', { agents: 3, agentCpu: '2', agentMemory: '2Gi' });
    client = cluster.client();
    ffdLog = join(cluster.opts.dir, 'ffd.log');
  });
  afterEach(function () {
    if (this.currentTest?.state === 'failed') failed = true;
  });
  after(async () => {
    await kill9(ffd);
    client?.close();
    await stopCluster(cluster, failed);
  });

  /** Starts ffd unless it runs, and waits for its registration. */
  async function ensureFfd(): Promise<void> {
    if (ffd && ffd.exitCode === null && ffd.signalCode === null) return;
    const before = logLines(ffdLog).filter((l) => l.msg === 'registered').length;
    ffd = startFfd([cluster.masterAddress], ffdLog, cluster.clientEnv());
    await until('ffd registered', () => logLines(ffdLog).filter((l) => l.msg === 'registered').length > before || undefined, 30_000);
  }

  it('runs a mix of jobs and a gang job through the example scheduler', async () => {
    await ensureFfd();
    const jobs = await Promise.all(
      [
        { name: 'small', tasks: [{ name: 't', instances: 6, resources: { cpu: 0.25, memory: 64 }, command: 'sleep 0.3' }] },
        { name: 'large', tasks: [{ name: 't', instances: 3, resources: { cpu: 1, memory: 128 }, command: 'sleep 0.3' }] },
        {
          name: 'two-stage',
          tasks: [
            { name: 'a', instances: 2, resources: { cpu: 0.5, memory: 64 }, command: 'true' },
            { name: 'b', instances: 2, resources: { cpu: 0.5, memory: 64 }, command: 'true', dependsOn: ['a'] },
          ],
        },
        { name: 'gang', tasks: [{ name: 'peer', instances: 4, gang: true, resources: { cpu: 0.5, memory: 64 }, command: 'sleep 0.5' }] },
      ].map((j) => client.submit(job({ ...j, scheduler: 'ffd' }))),
    );
    for (const { jobId } of jobs) {
      const end = await finalState(client, jobId);
      expect(end.state, `${end.name}: ${end.message}`).to.equal('JOB_STATE_SUCCEEDED');
    }
    const placed = logLines(ffdLog).filter((l) => l.msg === 'placed');
    expect(placed.length, 'placements by ffd').to.be.greaterThan(0);
    // An AM reuses a slot whose instance ended for the next pending instance and cancels a request
    // of that unit; ffd may place for it from the view before the cancellation, and the master
    // refuses that one (OVER_REQUEST). Any other refusal is ffd placing against its own view.
    expect(logLines(ffdLog).filter((l) => l.msg === 'rejected' && l.code !== 'OVER_REQUEST')).to.deep.equal([]);
  });

  it('rejects an over-committing placement and one outside the scope, and grants nothing of them', async () => {
    const sched = connect(loadFuxiProto().SchedulerService, cluster.masterAddress, cluster.transport());
    const stream = sched.stream.Watch({ name: 'probe', testbed: '', quotaGroup: '', style: 'slot' });
    const it = stream[Symbol.asyncIterator]();
    try {
      const first = (await it.next()).value as SchedulerEvent__Output;
      const epoch = String(first.registered!.epoch);
      const { jobId } = await client.submit(
        job({ name: 'probed', scheduler: 'probe', tasks: [{ name: 't', instances: 3, resources: { cpu: 1, memory: 64 }, command: 'true' }] }),
      );
      const host = await until(
        'the job pending in the view',
        async () => {
          const ev = (await it.next()).value as SchedulerEvent__Output;
          const pending = ev.view?.pending.find((p) => p.appId === jobId);
          return pending ? cluster.agents[0]!.nodeId : undefined;
        },
        30_000,
        0,
      );
      const r = await sched.Place({
        name: 'probe',
        epoch,
        version: '0',
        placements: [
          { appId: jobId, unit: 't', nodeId: host, count: 3 },
          { appId: jobId, unit: 't', nodeId: 'no-such-host', count: 1 },
        ],
      });
      expect(r.applied).to.equal(0);
      expect(r.rejected.map((x) => x.code)).to.deep.equal(['OVER_CAPACITY', 'OUT_OF_SCOPE']);
      expect(r.rejected[0]!.message).to.match(/^host \S+ has \d+m CPU and \d+ MiB free; 3 slots of .*\/t need 3000m and 192 MiB$/);
      await sleep(1000);
      const j = await client.get(jobId);
      expect(taskCounts(j).running + taskCounts(j).succeeded, 'nothing granted').to.equal(0);
      const units = (await client.get(jobId)).state;
      expect(units).to.equal('JOB_STATE_RUNNING');
      await client.kill(jobId, 'test over');
    } finally {
      stream.cancel();
      sched.close();
    }
  });

  it('kill -9 of the scheduler mid-run: its jobs wait with no grants, and proceed once it is started again', async () => {
    await ensureFfd();
    // Task b starts after task a: its slots are asked for once a is done, and ffd is gone by then.
    const { jobId } = await client.submit(
      job({
        name: 'stages',
        scheduler: 'ffd',
        tasks: [
          { name: 'a', instances: 2, resources: { cpu: 0.5, memory: 64 }, command: 'sleep 1' },
          { name: 'b', instances: 3, resources: { cpu: 0.5, memory: 64 }, command: 'true', dependsOn: ['a'] },
        ],
      }),
    );
    await until('task a running', async () => taskCounts(await client.get(jobId)).running > 0 || undefined, 30_000, 50);
    await kill9(ffd);
    const waiting = await until(
      'the job waiting for ffd',
      async () => {
        const j = await client.get(jobId);
        return taskCounts(j).running === 0 && j.message === 'waiting for external scheduler ffd' ? j : undefined;
      },
      30_000,
    );
    expect(taskCounts(waiting).succeeded, 'task a done, b waiting').to.equal(2);
    await sleep(2000);
    const still = await client.get(jobId);
    expect(taskCounts(still), 'no grant while ffd is gone').to.deep.include({ running: 0, succeeded: 2 });
    expect(still.state).to.equal('JOB_STATE_RUNNING');
    await ensureFfd();
    const end = await finalState(client, jobId);
    expect(end.state, end.message).to.equal('JOB_STATE_SUCCEEDED');
    expect(taskCounts(end).succeeded).to.equal(5);
  });
});

describe('external scheduler fallback (real processes)', function () {
  this.timeout(90_000);
  let cluster: LocalCluster;
  let client: FuxiClient;
  let failed = false;

  before(async () => {
    cluster = await startCluster('extsched-fallback', { agents: 2, masterArgs: ['--external-scheduler-fallback-ms', '2000'] });
    client = cluster.client();
  });
  afterEach(function () {
    if (this.currentTest?.state === 'failed') failed = true;
  });
  after(async () => {
    client?.close();
    await stopCluster(cluster, failed);
  });

  it('places the jobs of an absent scheduler with the built-in one after the fallback time', async () => {
    const t0 = Date.now();
    const { jobId } = await client.submit(
      job({ name: 'orphan', scheduler: 'ffd', tasks: [{ name: 't', instances: 3, resources: { cpu: 0.5, memory: 64 }, command: 'true' }] }),
    );
    const end = await finalState(client, jobId);
    expect(end.state, end.message).to.equal('JOB_STATE_SUCCEEDED');
    expect(Date.now() - t0, 'not before the fallback time').to.be.greaterThan(2000);
  });
});

describe('external scheduler across master failover (real etcd, 1 leader + 2 standbys)', function () {
  this.timeout(150_000);
  let etcd: EtcdProcess | undefined;
  let ha: HaCluster | undefined;
  let client: FuxiClient;
  let dir: string;
  let ffd: ChildProcess | undefined;
  let failed = false;

  before(async function () {
    this.timeout(60_000);
    etcd = await startEtcd();
    dir = mkdtempSync(join(tmpdir(), 'fuxi-it-extsched-ha-'));
    ha = await HaCluster.start({
      dir,
      masters: 3,
      agents: 2,
      etcd: { endpoints: [etcd.endpoint], prefix: '/it-extsched/' },
      leaseTtlSec: 2,
      recoveryDeadlineMs: 3000,
      amTimeoutMs: 30_000,
      heartbeatIntervalMs: 300,
      agentTimeoutMs: 10_000,
      agentCpu: '2',
      agentMemory: '2Gi',
      logLevel: 'debug',
    });
    client = ha.client({ retryForMs: 60_000 });
  });
  afterEach(function () {
    if (this.currentTest?.state === 'failed') failed = true;
  });
  after(async function () {
    this.timeout(60_000);
    await kill9(ffd);
    client?.close();
    await ha?.stop({ killWorkers: true });
    await etcd?.stop();
    if (dir && !failed) removeTree(dir);
    else if (dir) process.stderr.write(`  (logs kept in ${dir})\n`);
  });

  /** Running task workers of `appId` by agent/worker id, with their pids. */
  async function running(appId: string): Promise<Map<string, number>> {
    const m = new Map<string, number>();
    for (const { agent, state } of await ha!.agentStates()) {
      for (const w of state.workers)
        if (w.appId === appId && w.task !== AM_SU && w.state === 'WORKER_STATE_RUNNING') m.set(`${agent.nodeId}/${w.workerId}`, w.pid);
    }
    return m;
  }

  it('re-registers with the new leader; no applied placement is lost', async () => {
    const log = join(dir, 'ffd.log');
    ffd = startFfd(ha!.masterAddresses, log, ha!.clientEnv());
    await until('ffd registered', () => logLines(log).some((l) => l.msg === 'registered') || undefined, 30_000);
    const release = join(dir, 'release');
    const { jobId } = await client.submit(
      job({
        name: 'held',
        scheduler: 'ffd',
        tasks: [{ name: 't', instances: 3, resources: { cpu: 0.5, memory: 64 }, command: `while [ ! -e '${release}' ]; do sleep 0.1; done` }],
      }),
    );
    // Spawned, with their pids (a worker being spawned is listed as running with pid 0).
    const before = await until(
      '3 workers running',
      async () => {
        const m = await running(jobId);
        return m.size === 3 && [...m.values()].every((pid) => pid > 0) ? m : undefined;
      },
      30_000,
    );

    const old = await ha!.waitForLeader();
    ha!.kill(old.master, 'SIGKILL');
    expect(await waitExit(old.master.child, 5000)).to.equal(true);
    const next = await ha!.waitForLeader({ notPids: [old.master.pid], afterEpoch: old.epoch, timeoutMs: 30_000 });
    await ha!.waitForRecovery(next.master, next.epoch, 30_000);
    await until('ffd registered with the new leader', () => logLines(log).filter((l) => l.msg === 'registered').length >= 2 || undefined, 30_000);

    const after = await running(jobId);
    expect([...after.entries()]).to.deep.equal([...before.entries()]);
    for (const pid of after.values()) expect(isAlive(pid)).to.equal(true);

    // The new leader's placements go through the re-registered scheduler too.
    const { jobId: second } = await client.submit(
      job({ name: 'after', scheduler: 'ffd', tasks: [{ name: 't', instances: 2, resources: { cpu: 0.25, memory: 64 }, command: 'true' }] }),
    );
    writeFileSync(release, '');
    for (const id of [jobId, second]) {
      const end = await finalState(client, id);
      expect(end.state, `${end.name}: ${end.message}`).to.equal('JOB_STATE_SUCCEEDED');
      expect(taskCounts(end).retries, `${end.name}: no instance re-run`).to.equal(0);
    }
  });
});
