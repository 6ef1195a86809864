/**
 * The master's push streams with real processes: agents take their grant tables on WatchGrants and
 * dedicated AMs their assignments on WatchAssignments (not a call per push), an AM host's AMs
 * theirs in the master's batches to the host (no stream per job), and the master refuses streams
 * it cannot serve with the usual status codes.
 */
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { loadFuxiProto } from '@fuxi/proto';
import { connect, RpcError, Transport } from '@fuxi/rpc';
import type { LocalCluster } from '@fuxi/deploy';
import type { FuxiClient } from '@fuxi/client';
import { job, sleep, startCluster, stopCluster, until } from '../harness.js';

async function firstError(stream: AsyncIterable<unknown>): Promise<RpcError> {
  try {
    for await (const _ of stream) {
      // The refusals under test come before any message.
    }
  } catch (e) {
    if (e instanceof RpcError) return e;
    throw e;
  }
  throw new Error('the stream ended without an error');
}

function logRecords(file: string, msg: string): Array<Record<string, unknown>> {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.includes(`"msg":"${msg}"`))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

describe('push streams (real processes)', function () {
  let cluster: LocalCluster;
  let client: FuxiClient;
  let failed = false;

  before(async () => {
    cluster = await startCluster('push-streams', { metrics: true });
    client = cluster.client();
  });
  afterEach(function () {
    if (this.currentTest?.state === 'failed') failed = true;
  });
  after(async () => {
    client?.close();
    await stopCluster(cluster, failed);
  });

  it("runs a job with every grant pushed on the agents' streams and no UpdateGrants call", async () => {
    const { jobId } = await client.submit(
      job({ name: 'streams', tasks: [{ name: 't', instances: 6, resources: { cpu: 0.2, memory: 64 }, command: 'sleep 0.3; echo ok' }] }),
    );
    let end;
    for await (const j of client.watch(jobId)) end = j;
    expect(end!.state, end!.message).to.equal('JOB_STATE_SUCCEEDED');
    // The master logs its stream counters every 5 s: all three agents hold a stream.
    const stats = await until(
      'grant stream stats',
      () => logRecords(cluster.master.logFile, 'grant stream stats').find((r) => Number(r.written) > 0),
      20_000,
      250,
    );
    expect(stats.open).to.equal(3);
    // The agents were registered before the job: no push needed a call (calls that fail log this).
    expect(logRecords(cluster.master.logFile, 'grant push failed; the next heartbeat heals it')).to.deep.equal([]);
    const agentLog = readFileSync(cluster.agents[0]!.logFile, 'utf8');
    expect(agentLog).to.not.include('grant stream failed');
  });

  it('sends a node the grants that changed, not its whole table, once the table has several', async () => {
    // Six jobs at once: each node's table holds AM and task grants of several apps, changing one by one.
    const jobs = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        client.submit(job({ name: `deltas-${i}`, tasks: [{ name: 't', instances: 3, resources: { cpu: 0.2, memory: 64 }, command: 'sleep 0.4' }] })),
      ),
    );
    for (const { jobId } of jobs) {
      let end;
      for await (const j of client.watch(jobId)) end = j;
      expect(end!.state, end!.message).to.equal('JOB_STATE_SUCCEEDED');
    }
    const sum = () => {
      const recs = logRecords(cluster.master.logFile, 'grant stream stats');
      return { written: recs.reduce((n, r) => n + Number(r.written), 0), full: recs.reduce((n, r) => n + Number(r.full ?? r.written), 0) };
    };
    // Counters are logged every 5 s: wait for the ones of this job's pushes.
    const totals = await until('grant deltas logged', () => (sum().written > sum().full ? sum() : undefined), 20_000, 250);
    expect(totals.written - totals.full).to.be.greaterThan(0);
  });

  it("gives a hosted AM its assignments in batches to its host and a dedicated AM on its stream: only the dedicated one's stream is served", async () => {
    // WatchAssignments streams the master has served to their end, by its metrics.
    const handled = async (): Promise<number> => {
      const families = parsePrometheusTextFormat(await (await fetch(cluster.master.metricsUrl!)).text());
      const samples = families.find((f) => f.name === 'fuxi_grpc_server_handled_total')?.metrics ?? [];
      return samples.filter((m) => m.labels?.method === 'WatchAssignments').reduce((n, m) => n + Number(m.value), 0);
    };
    const before = await handled();
    const spec = (name: string, am: string) =>
      job({ name, am, tasks: [{ name: 't', instances: 4, resources: { cpu: 0.2, memory: 64 }, command: 'sleep 0.2' }] });
    const jobs = await Promise.all([client.submit(spec('hosted-pushes', 'shared')), client.submit(spec('dedicated-stream', 'dedicated'))]);
    for (const { jobId } of jobs) {
      let end;
      for await (const j of client.watch(jobId)) end = j;
      expect(end!.state, `${jobId}: ${end!.message}`).to.equal('JOB_STATE_SUCCEEDED');
    }
    // A stream counts once it has ended, with its AM: the dedicated AM's, and no other after a while.
    await until('the dedicated AM stream ended', async () => (await handled()) - before >= 1, 30_000, 250);
    await sleep(2000);
    expect((await handled()) - before).to.equal(1);
    expect(logRecords(cluster.master.logFile, 'assignment push failed; the next AM heartbeat heals it')).to.deep.equal([]);
  });

  it('refuses a grant stream for a missing node id, another epoch or an unknown node', async () => {
    const master = connect(loadFuxiProto().MasterService, cluster.masterAddress, cluster.transport());
    try {
      const { epoch } = await master.GetClusterStatus({});
      // No node id is no agent's: refused before anything is looked at.
      const missing = await firstError(master.stream.WatchGrants({ nodeId: '', epoch }));
      expect(missing.code).to.equal('PERMISSION_DENIED');
      // A grant stream is an agent's: only with the certificate of the node it names.
      const notAgent = await firstError(master.stream.WatchGrants({ nodeId: cluster.agents[0]!.nodeId, epoch }));
      expect(notAgent.code).to.equal('PERMISSION_DENIED');
      const asNode = (nodeId: string) =>
        connect(loadFuxiProto().MasterService, cluster.masterAddress, Transport.from({ tls: cluster.pki!.issue(nodeId, 'agent') }));
      const node1 = asNode(cluster.agents[0]!.nodeId);
      const stranger = asNode('no-such-node');
      try {
        const stale = await firstError(node1.stream.WatchGrants({ nodeId: cluster.agents[0]!.nodeId, epoch: String(BigInt(epoch) + 1n) }));
        expect(stale.code).to.equal('FAILED_PRECONDITION');
        const unknown = await firstError(stranger.stream.WatchGrants({ nodeId: 'no-such-node', epoch }));
        expect(unknown.code).to.equal('NOT_FOUND');
      } finally {
        node1.close();
        stranger.close();
      }
      const app = await firstError(master.stream.WatchAssignments({ appId: 'no-such-app', amAttempt: 1, epoch }));
      expect(app.code).to.equal('NOT_FOUND');
    } finally {
      master.close();
    }
  });
});
