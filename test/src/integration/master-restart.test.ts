/**
 * The embedded master (one master, LevelDB) restarted in place mid-job: it rebuilds its soft state
 * from the agents and the AM, and no worker is touched.
 */
import { expect } from 'chai';
import { loadFuxiProto } from '@fuxi/proto';
import { connect } from '@fuxi/rpc';
import type { LocalCluster } from '@fuxi/deploy';
import type { FuxiClient } from '@fuxi/client';
import { isAlive, job, startCluster, stopCluster, until, waitForLog } from '../harness.js';

async function runningWorkers(client: FuxiClient, jobId: string): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const n of await client.nodes()) {
    const agent = connect(loadFuxiProto().AgentService, n.node!.address, client.transport);
    try {
      for (const w of (await agent.ListWorkers({ appId: jobId })).workers) {
        if (w.state === 'WORKER_STATE_RUNNING' && w.pid > 0) out.set(`${n.node!.nodeId}/${w.workerId}`, w.pid);
      }
    } finally {
      agent.close();
    }
  }
  return out;
}

describe('embedded master restart in place (real processes)', function () {
  let cluster: LocalCluster;
  let client: FuxiClient;
  let failed = false;

  before(async () => {
    cluster = await startCluster('restart', { agents: 3 });
    client = cluster.client();
  });
  afterEach(function () {
    if (this.currentTest?.state === 'failed') failed = true;
  });
  after(async () => {
    client?.close();
    await stopCluster(cluster, failed);
  });

  it('kill -9 of the master mid-job: it recovers from agents and the AM, no worker restarted, the job completes', async () => {
    const spec = job({
      name: 'long',
      tasks: [
        { name: 'work', instances: 6, resources: { cpu: 0.3, memory: 64 }, command: 'sleep 8; echo done ${instance}' },
        { name: 'after', instances: 2, resources: { cpu: 0.3, memory: 64 }, command: 'echo after ${instance}', dependsOn: ['work'] },
      ],
    });
    const { jobId } = await client.submit(spec);
    const before = await until('6 running workers', async () => {
      const w = await runningWorkers(client, jobId);
      return [...w.keys()].filter((k) => k.includes('/work.')).length === 6 ? w : undefined;
    });
    const oldPid = cluster.master.pid;
    cluster.signal(cluster.master, 'SIGKILL');
    await until('old master gone', () => !isAlive(oldPid));
    const restarted = await cluster.startMaster();
    const rec = await waitForLog(restarted, 'recovery complete', 30_000);
    expect(rec.agentsMissing).to.equal(0);
    expect(rec.appsMissing).to.equal(0);
    // Every worker that was running still runs with the same pid (or finished on its own).
    const after = await runningWorkers(client, jobId);
    for (const [k, pid] of before) {
      if (after.has(k)) expect(after.get(k), k).to.equal(pid);
      else expect(isAlive(pid), `${k} pid ${pid} vanished while still alive?`).to.equal(false);
    }
    let last;
    for await (const j of client.watch(jobId)) last = j;
    expect(last?.state, last?.message).to.equal('JOB_STATE_SUCCEEDED');
    const info = await client.get(jobId);
    expect(info.tasks.map((t) => [t.name, t.succeeded, t.retries])).to.deep.equal([
      ['work', 6, 0],
      ['after', 2, 0],
    ]);
  });

  it('jobs submitted before the restart are all there afterwards, none duplicated', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++)
      ids.push(
        (
          await client.submit(
            job({ id: `keep-${i}`, name: 'keep', tasks: [{ name: 't', instances: 1, resources: { cpu: 0.1, memory: 32 }, command: 'true' }] }),
          )
        ).jobId,
      );
    cluster.signal(cluster.master, 'SIGKILL');
    await until('old master gone', () => !isAlive(cluster.master.pid));
    await cluster.startMaster();
    const all = (await client.list()).map((j) => j.jobId);
    for (const id of ids)
      expect(
        all.filter((x) => x === id),
        id,
      ).to.have.length(1);
    for (const id of ids) {
      let last;
      for await (const j of client.watch(id)) last = j;
      expect(last?.state, `${id}: ${last?.message}`).to.equal('JOB_STATE_SUCCEEDED');
    }
  });
});
