/**
 * Testbeds with real processes: a real etcd, two masters (a leader and a standby), three agents.
 * A testbed reserves one agent for quota group `research`: a `default` job never runs there (its
 * AM neither), while a `research` job that names the testbed runs only there; after kill -9 of the
 * leader the standby takes over with the testbed loaded from etcd, and it is still enforced; once it
 * is deleted, a default job uses that host again.
 */
import { expect } from 'chai';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AM_SU } from '@fuxi/common';
import type { FuxiClient } from '@fuxi/client';
import { HaCluster, waitExit, removeTree } from '@fuxi/deploy';
import type { JobInfo__Output } from '@fuxi/proto';
import { startEtcd, type EtcdProcess } from '../etcd-harness.js';
import { job, sleep, until } from '../harness.js';

describe('testbeds (real etcd, 1 leader + 1 standby, 3 agents)', function () {
  this.timeout(180_000);
  let etcd: EtcdProcess | undefined;
  let ha: HaCluster | undefined;
  let client: FuxiClient;
  let dir: string;
  let failed = false;
  /** The agent the testbed holds, and the other two. */
  let reserved: string;
  let others: string[];
  /** appId -> the nodes its task workers were seen running on. */
  const seen = new Map<string, Set<string>>();
  let watching = true;
  let watcher: Promise<void> | undefined;

  before(async function () {
    this.timeout(60_000);
    etcd = await startEtcd();
    dir = mkdtempSync(join(tmpdir(), 'fuxi-it-testbeds-'));
    const config = join(dir, 'master.yaml');
    writeFileSync(config, 'quotaGroups:\n  - { name: default, weight: 1 }\n  - { name: research, weight: 1 }\n');
    ha = await HaCluster.start({
      dir,
      masters: 2,
      agents: 3,
      etcd: { endpoints: [etcd.endpoint], prefix: '/it-testbeds/' },
      leaseTtlSec: 2,
      recoveryDeadlineMs: 3000,
      heartbeatIntervalMs: 300,
      agentCpu: '2',
      agentMemory: '2Gi',
      masterArgs: ['--config', config],
    });
    client = ha.client({ retryForMs: 60_000 });
    const ids = (await client.nodes()).map((n) => n.node!.nodeId).sort();
    reserved = ids[ids.length - 1]!;
    others = ids.slice(0, -1);
    // Where every job's task workers run, sampled all along.
    watcher = (async () => {
      while (watching) {
        for (const { agent, state } of await ha!.agentStates().catch(() => [])) {
          for (const w of state.workers) {
            if (w.task === AM_SU || w.state !== 'WORKER_STATE_RUNNING') continue;
            const s = seen.get(w.appId) ?? new Set<string>();
            s.add(agent.nodeId);
            seen.set(w.appId, s);
          }
        }
        await sleep(100);
      }
    })();
  });
  afterEach(function () {
    if (this.currentTest?.state === 'failed') failed = true;
  });
  after(async function () {
    this.timeout(60_000);
    watching = false;
    await watcher;
    client?.close();
    await ha?.stop({ killWorkers: true });
    await etcd?.stop();
    if (dir && !failed) removeTree(dir);
    else if (dir) process.stderr.write(`  (logs kept in ${dir})\n`);
  });

  async function finalState(jobId: string): Promise<JobInfo__Output> {
    let last: JobInfo__Output | undefined;
    for await (const j of client.watch(jobId)) last = j;
    return last!;
  }

  /** A job of `group` whose instances each hold 0.4 cores for a while; optionally confined to a testbed. */
  function sleeper(name: string, group: string, instances: number, testbed?: string) {
    return job({
      id: `${name}-${Date.now().toString(36)}`,
      name,
      quotaGroup: group,
      network: 'independent',
      ...(testbed ? { testbed } : {}),
      tasks: [{ name: 'work', instances, resources: { cpu: 0.4, memory: 64 }, command: 'sleep 1.5' }],
    });
  }

  /** Runs a default job and a research job confined to `lab` side by side; checks where each ran. */
  async function checkEnforced(round: string): Promise<void> {
    // The default job would put some of its 6 instances on the empty reserved agent if it could.
    const open = await client.submit(sleeper(`open-${round}`, 'default', 6));
    const lab = await client.submit(sleeper(`lab-${round}`, 'research', 3, 'lab'));
    const [o, l] = await Promise.all([finalState(open.jobId), finalState(lab.jobId)]);
    expect(o.state, o.message).to.equal('JOB_STATE_SUCCEEDED');
    expect(l.state, l.message).to.equal('JOB_STATE_SUCCEEDED');
    expect(others, `${round}: the default job's AM`).to.include(o.amNodeId);
    expect([...(seen.get(open.jobId) ?? [])].sort(), `${round}: hosts of the default job`).to.satisfy(
      (hs: string[]) => hs.length > 0 && !hs.includes(reserved),
    );
    expect(l.amNodeId, `${round}: the lab job's AM`).to.equal(reserved);
    expect([...(seen.get(lab.jobId) ?? [])], `${round}: hosts of the lab job`).to.deep.equal([reserved]);
  }

  it('keeps other groups off the testbed and confines the jobs that name it', async () => {
    const res = await client.createTestbed({ name: 'lab', group: 'research', hosts: [reserved], by: 'it' });
    expect(res.testbed).to.deep.include({ name: 'lab', quotaGroup: 'research', hosts: [reserved], active: true });
    expect((await client.nodes()).find((n) => n.node!.nodeId === reserved)?.testbed).to.equal('lab');
    await checkEnforced('before');
  });

  it('survives kill -9 of the leader: the standby loads it from etcd and enforces it', async () => {
    const old = await ha!.waitForLeader();
    ha!.kill(old.master, 'SIGKILL');
    expect(await waitExit(old.master.child, 5000), 'killed master exited').to.equal(true);
    const next = await ha!.waitForLeader({ notPids: [old.master.pid], afterEpoch: old.epoch, timeoutMs: 30_000 });
    await ha!.waitForRecovery(next.master, next.epoch, 30_000);
    const list = await client.testbeds();
    expect(list.map((t) => [t.name, t.quotaGroup, t.hosts])).to.deep.equal([['lab', 'research', [reserved]]]);
    await until('the new leader shows the testbed on its node', async () =>
      (await client.nodes()).find((n) => n.node!.nodeId === reserved)?.testbed === 'lab' ? true : undefined,
    );
    await checkEnforced('after');
    await client.deleteTestbed('lab');
    expect(await client.testbeds()).to.deep.equal([]);
    // The control: without the testbed, a default job does use that host (the least loaded).
    const free = await client.submit(sleeper('open-free', 'default', 6));
    expect((await finalState(free.jobId)).state).to.equal('JOB_STATE_SUCCEEDED');
    expect([...(seen.get(free.jobId) ?? [])], 'hosts of a default job once the testbed is deleted').to.include(reserved);
  });
});
