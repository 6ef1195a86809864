/**
 * Enforced resources on a local cluster (real agent, real workers): the agent reports its mode in
 * `fuxi nodes`, a task that allocates far past its memory grant fails its attempts with `OOM: used
 * X of Y`, the job fails with that message, and the node stays ready and runs the next job.
 */
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { FuxiClient } from '@fuxi/client';
import { BIN, type LocalCluster } from '@fuxi/deploy';
import { job, startCluster, stopCluster, until } from '../harness.js';

/** Allocates (and touches) 8 MB every 20 ms until killed. */
const HOG = ['node', '-e', 'const a = []; setInterval(() => a.push(Buffer.alloc(8 << 20, 1)), 20);'];
const run = promisify(execFile);

describe('enforced resources (local cluster, real workers)', function () {
  let cluster: LocalCluster;
  let client: FuxiClient;
  let failed = false;

  before(async () => {
    cluster = await startCluster('limits', { agents: 1 });
    client = cluster.client();
  });
  afterEach(function () {
    if (this.currentTest?.state === 'failed') failed = true;
  });
  after(async () => {
    client?.close();
    await stopCluster(cluster, failed);
  });

  async function finalState(jobId: string) {
    let last;
    for await (const j of client.watch(jobId)) last = j;
    return last!;
  }

  it('the agent says how it enforces grants (fuxi nodes)', async () => {
    const nodes = await until('the node', async () => {
      const ns = await client.nodes();
      return ns.length === 1 ? ns : undefined;
    });
    const mode = nodes[0]?.node?.resourceEnforcement;
    process.stderr.write(`      [limits] node-1 enforces with ${mode}\n`);
    expect(['cgroup-v2', 'cgroup-v1', 'rss']).to.include(mode);
    const out = (await run(process.execPath, [BIN.cli, '--master', cluster.masterAddress, 'nodes'], { env: { ...process.env, ...cluster.clientEnv() } }))
      .stdout;
    expect(out).to.match(/\bLIMITS\b/);
    expect(out).to.match(new RegExp(`^node-1\\s.*\\s${mode}\\s`, 'm'));
  });

  it('a task past its memory grant fails with OOM: used X of Y; the node stays ready and runs the next job', async () => {
    const { jobId } = await client.submit(
      job({ name: 'hog', tasks: [{ name: 'hog', instances: 1, maxAttempts: 2, resources: { cpu: 0.5, memory: 64 }, command: HOG }] }),
    );
    const end = await finalState(jobId);
    expect(end.state).to.equal('JOB_STATE_FAILED');
    expect(end.message).to.match(/failed after 2 attempts: .*OOM: used [\d.]+ MB of 64 MB/);
    const status = (
      await run(process.execPath, [BIN.cli, '--master', cluster.masterAddress, 'status', jobId], { env: { ...process.env, ...cluster.clientEnv() } })
    ).stdout;
    expect(status).to.match(/^message: .*OOM: used [\d.]+ MB of 64 MB/m);

    // Not a node fault: the node is ready, not timing out or blacklisted, and takes the next job.
    const [n] = await client.nodes();
    expect(n?.state || (n?.healthy ? 'ready' : 'not ready')).to.equal('ready');
    const next = await client.submit(
      job({ name: 'after', tasks: [{ name: 'ok', instances: 1, resources: { cpu: 0.5, memory: 64 }, command: ['sh', '-c', 'echo ok'] }] }),
    );
    const ok = await finalState(next.jobId);
    expect(ok.state, ok.message).to.equal('JOB_STATE_SUCCEEDED');
  });
});
