/**
 * Gang scheduling on a local cluster with real processes: a 3-instance gang job on a cluster with
 * room for only 2 of its instances waits with nothing of it running, and starts all 3 together
 * once another job frees room.
 */
import { expect } from 'chai';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AM_SU } from '@fuxi/common';
import { loadFuxiProto } from '@fuxi/proto';
import { connect } from '@fuxi/rpc';
import type { LocalCluster } from '@fuxi/deploy';
import type { FuxiClient } from '@fuxi/client';
import { job, sleep, startCluster, stopCluster, until } from '../harness.js';

describe('gang scheduling (real processes)', function () {
  let cluster: LocalCluster;
  let client: FuxiClient;
  let failed = false;

  before(async () => {
    // One agent of 2 cores: each job's AM takes 0.02 of them (a hosted AM).
    cluster = await startCluster('gang', { agents: 1, agentCpu: '2', agentMemory: '2Gi' });
    client = cluster.client();
  });
  afterEach(function () {
    if (this.currentTest?.state === 'failed') failed = true;
  });
  after(async () => {
    client?.close();
    await stopCluster(cluster, failed);
  });

  /** The job's task workers on every agent (not its AM), with their states. */
  async function workers(jobId: string): Promise<Array<{ task: string; state: string }>> {
    const out: Array<{ task: string; state: string }> = [];
    for (const n of await client.nodes()) {
      const agent = connect(loadFuxiProto().AgentService, n.node!.address, client.transport);
      try {
        for (const w of (await agent.ListWorkers({ appId: jobId })).workers) if (w.task !== AM_SU) out.push({ task: w.task, state: w.state });
      } finally {
        agent.close();
      }
    }
    return out;
  }

  async function finalState(jobId: string) {
    let last;
    for await (const j of client.watch(jobId)) last = j;
    return last!;
  }

  it('runs nothing of a gang that does not fit whole, then all of it together once room is freed', async () => {
    const release = join(cluster.opts.dir, 'release');
    // 0.9 cores held until the test says so: 1.06 cores stay free, room for 2 gang instances of 0.5.
    const blocker = await client.submit(
      job({
        name: 'blocker',
        tasks: [{ name: 'hold', instances: 1, resources: { cpu: 0.9, memory: 64 }, command: `while [ ! -f '${release}' ]; do sleep 0.1; done` }],
      }),
    );
    await until('the blocker running', async () => (await workers(blocker.jobId)).some((w) => w.state === 'WORKER_STATE_RUNNING') || undefined);

    const gang = await client.submit(
      job({ name: 'gang', tasks: [{ name: 'peer', instances: 3, gang: true, resources: { cpu: 0.5, memory: 64 }, command: 'sleep 3' }] }),
    );
    // Many heartbeats and scheduling passes: not one instance may start.
    await until(
      'the gang job running (its AM registered)',
      async () => ((await client.get(gang.jobId)).state === 'JOB_STATE_RUNNING' ? true : undefined),
      30_000,
    );
    for (let i = 0; i < 10; i++) {
      expect(await workers(gang.jobId), 'gang workers while it does not fit').to.deep.equal([]);
      await sleep(300);
    }

    writeFileSync(release, '');
    const running = await until(
      '3 gang workers running at once',
      async () => {
        const ws = await workers(gang.jobId);
        return ws.filter((w) => w.state === 'WORKER_STATE_RUNNING').length === 3 ? ws : undefined;
      },
      60_000,
      50,
    );
    expect(running.map((w) => w.task)).to.deep.equal(['peer', 'peer', 'peer']);
    expect((await finalState(blocker.jobId)).state).to.equal('JOB_STATE_SUCCEEDED');
    const end = await finalState(gang.jobId);
    expect(end.state, end.message).to.equal('JOB_STATE_SUCCEEDED');
  });
});
