/**
 * A node's administrative state with real processes: a real etcd, two masters (a leader and a
 * standby), three agents, real AMs and workers.
 *
 * - node-1 cordoned: a job's AM and workers all go elsewhere;
 * - node-2 drained with a 1 s deadline while a job's workers run there: their slots are revoked,
 *   the instances run again on node-3 (not counted as failed attempts), an AM there moves, the job
 *   succeeds, and node-2 ends up cordoned (drained);
 * - kill -9 of the leader: the standby takes over with both nodes still cordoned, and new work
 *   avoids them; uncordon makes node-1 ready again;
 * - node-1 drained with a long deadline while a job runs there: its AM plans nothing new there,
 *   the work there finishes, and the node is drained long before the deadline, nothing run twice.
 *
 * Every worker appends "<node> <instance> <attempt>" to a file, which is where the test reads
 * where work ran.
 */
import { expect } from 'chai';
import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FuxiClient } from '@fuxi/client';
import { HaCluster, waitExit, removeTree } from '@fuxi/deploy';
import type { JobInfo__Output, NodeStatus__Output } from '@fuxi/proto';
import { startEtcd, type EtcdProcess } from '../etcd-harness.js';
import { job, until } from '../harness.js';

describe('node cordon, drain and uncordon (real etcd, leader + standby)', function () {
  this.timeout(180_000);
  let etcd: EtcdProcess | undefined;
  let ha: HaCluster | undefined;
  let client: FuxiClient;
  let dir: string;
  let failed = false;

  before(async function () {
    this.timeout(60_000);
    etcd = await startEtcd();
    dir = mkdtempSync(join(tmpdir(), 'fuxi-it-nodeops-'));
    ha = await HaCluster.start({
      dir,
      masters: 2,
      agents: 3,
      etcd: { endpoints: [etcd.endpoint], prefix: '/it-nodeops/' },
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
    await ha.waitForNodes(3);
  });
  afterEach(function () {
    if (this.currentTest?.state === 'failed') failed = true;
  });
  after(async function () {
    this.timeout(60_000);
    client?.close();
    await ha?.stop({ killWorkers: true });
    await etcd?.stop();
    if (dir && !failed) removeTree(dir);
    else if (dir) process.stderr.write(`  (logs kept in ${dir})\n`);
  });

  /** A job of `instances` workers that each record where they run, then sleep `sleepSec`. */
  function recordingJob(name: string, instances: number, sleepSec: number) {
    const out = join(dir, `${name}.starts`);
    writeFileSync(out, '');
    // The workers run as the agents' unprivileged worker user: the file is theirs to append to.
    chmodSync(out, 0o666);
    const spec = job({
      id: `${name}-${Date.now().toString(36)}`,
      name,
      env: { STARTS: out },
      tasks: [
        {
          name: 'work',
          instances,
          resources: { cpu: 0.4, memory: 64 },
          command: `echo "$FUXI_NODE_ID $FUXI_INSTANCE $FUXI_ATTEMPT" >> "$STARTS"; sleep ${sleepSec}`,
        },
      ],
    });
    const starts = (): Array<{ node: string; instance: number; attempt: number }> =>
      readFileSync(out, 'utf8')
        .split('\n')
        .filter((l) => l.trim() !== '')
        .map((l) => {
          const [node, instance, attempt] = l.split(' ');
          return { node: node!, instance: Number(instance), attempt: Number(attempt) };
        });
    return { spec, starts };
  }

  async function finalState(jobId: string): Promise<JobInfo__Output> {
    let last: JobInfo__Output | undefined;
    for await (const j of client.watch(jobId)) last = j;
    return last!;
  }

  async function node(id: string): Promise<NodeStatus__Output> {
    const n = (await client.nodes()).find((x) => x.node?.nodeId === id);
    if (!n) throw new Error(`no node ${id}`);
    return n;
  }

  it('a cordoned node gets none of a new job', async () => {
    const answer = await client.cordon('node-1', { reason: 'bad disk', by: 'it-operator' });
    expect(answer?.admin).to.deep.include({ state: 'cordoned', reason: 'bad disk', by: 'it-operator' });
    const n1 = await node('node-1');
    expect(n1.state).to.equal('cordoned');
    const { spec, starts } = recordingJob('cordoned', 6, 0.2);
    const { jobId } = await client.submit(spec);
    const end = await finalState(jobId);
    expect(end.state, end.message).to.equal('JOB_STATE_SUCCEEDED');
    expect(end.amNodeId).to.not.equal('node-1');
    const nodes = new Set(starts().map((s) => s.node));
    expect(starts()).to.have.length(6);
    expect([...nodes].sort()).to.not.include('node-1');
  });

  it('a drain at its deadline moves the running work elsewhere and the job succeeds; the node ends up drained', async () => {
    const { spec, starts } = recordingJob('drained', 4, 6);
    const { jobId } = await client.submit(spec);
    // Wait until every instance started (they all fit at once: node-1 is cordoned, so the AM and
    // half the work land on node-2), so the count on node-2 is final before the drain.
    await until('all 4 workers started, some on node-2', () => starts().length >= 4 && starts().some((s) => s.node === 'node-2'), 30_000);
    const onNode2 = starts().filter((s) => s.node === 'node-2').length;
    const amBefore = (await client.get(jobId)).amNodeId;
    const answer = await client.drain('node-2', { reason: 'kernel upgrade', by: 'it-operator', deadlineMs: 1000 });
    expect(answer?.admin).to.deep.include({ state: 'draining', reason: 'kernel upgrade', by: 'it-operator' });
    const end = await finalState(jobId);
    expect(end.state, end.message).to.equal('JOB_STATE_SUCCEEDED');
    // Every instance that ran on node-2 ran again, on node-3; nothing new went to node-2 or node-1.
    const all = starts();
    expect(all.filter((s) => s.node === 'node-2')).to.have.length(onNode2);
    expect(all.filter((s) => s.node === 'node-1')).to.have.length(0);
    expect(all).to.have.length(4 + onNode2);
    // Lost slots, not failed attempts.
    const work = end.tasks.find((t) => t.name === 'work');
    expect(work?.succeeded).to.equal(4);
    expect(work?.failed).to.equal(0);
    expect(work?.retries).to.equal(0);
    // An AM on node-2 moved (a new attempt elsewhere).
    if (amBefore === 'node-2') expect(end.amAttempt).to.be.greaterThan(1);
    if (amBefore === 'node-2') expect(end.amNodeId).to.equal('node-3');
    await until('node-2 drained', async () => (await node('node-2')).admin?.drained === true, 30_000);
    const n2 = await node('node-2');
    expect(n2.state).to.equal('cordoned');
    expect(n2.admin).to.deep.include({ state: 'cordoned', reason: 'kernel upgrade', by: 'it-operator', drained: true });
  });

  it('cordons survive kill -9 of the leader; uncordon makes the node ready again', async () => {
    const old = await ha!.waitForLeader();
    ha!.kill(old.master, 'SIGKILL');
    expect(await waitExit(old.master.child, 5000), 'killed master exited').to.equal(true);
    const next = await ha!.waitForLeader({ notPids: [old.master.pid], afterEpoch: old.epoch, timeoutMs: 30_000 });
    await ha!.waitForRecovery(next.master, next.epoch, 30_000);
    const n1 = await node('node-1');
    expect(n1.state).to.equal('cordoned');
    expect(n1.admin).to.deep.include({ state: 'cordoned', reason: 'bad disk', by: 'it-operator' });
    expect((await node('node-2')).admin).to.deep.include({ state: 'cordoned', drained: true });
    // New work avoids both.
    const { spec, starts } = recordingJob('after-failover', 3, 0.2);
    const { jobId } = await client.submit(spec);
    const end = await finalState(jobId);
    expect(end.state, end.message).to.equal('JOB_STATE_SUCCEEDED');
    expect(end.amNodeId).to.equal('node-3');
    expect(new Set(starts().map((s) => s.node))).to.deep.equal(new Set(['node-3']));
    // Uncordon: ready again, and durable (the new leader's answer came after the write).
    const back = await client.uncordon('node-1', { by: 'it-operator' });
    expect(back?.state).to.equal('ready');
    expect(back?.admin ?? null).to.equal(null);
    expect((await node('node-1')).state).to.equal('ready');
    await ha!.restartMaster(old.master.index);
  });

  it('a drain whose work finishes before the deadline ends then, with nothing run twice', async () => {
    // node-2 is still cordoned: the work goes to node-1 and node-3, more of it than fits at once.
    const { spec, starts } = recordingJob('finishing', 10, 2);
    const { jobId } = await client.submit(spec);
    await until('a worker running on node-1', () => starts().some((s) => s.node === 'node-1'), 30_000);
    const t0 = Date.now();
    await client.drain('node-1', { reason: 'reboot', by: 'it-operator', deadlineMs: 120_000 });
    const end = await finalState(jobId);
    expect(end.state, end.message).to.equal('JOB_STATE_SUCCEEDED');
    await until('node-1 drained', async () => (await node('node-1')).admin?.drained === true, 60_000);
    // Drained by its work ending (and its slots coming back), long before the deadline.
    expect(Date.now() - t0).to.be.lessThan(60_000);
    // Nothing was revoked: every instance ran once.
    expect(starts().map((s) => s.attempt)).to.deep.equal(new Array(10).fill(1));
    expect(end.tasks.find((t) => t.name === 'work')).to.include({ succeeded: 10, failed: 0, retries: 0 });
  });
});
