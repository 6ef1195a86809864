/**
 * What runs as whom, on a local cluster (real agent, real workers): a worker's `id -u` is the
 * agent's worker user (`nobody` under an agent that runs as root, the agent's own user otherwise),
 * its environment holds none of the agent's variables, `fuxi nodes` says who workers run as, and a
 * `cwd` that climbs out of the worker's directory is refused at submit, creating nothing.
 */
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { FuxiClient } from '@fuxi/client';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BIN, type LocalCluster } from '@fuxi/deploy';
import { isAlive, job, sleep, startCluster, stopCluster, until } from '../harness.js';

const run = promisify(execFile);
/** Set in the agents' environment: no worker may see it. */
const SECRET = 'FUXI_TEST_AGENT_SECRET';

describe('worker identity (local cluster, real workers)', function () {
  let cluster: LocalCluster;
  let client: FuxiClient;
  let failed = false;
  const root = process.getuid?.() === 0;
  const expectedUid = root ? 65534 : (process.getuid?.() ?? -1);

  before(async () => {
    process.env[SECRET] = 'do-not-leak';
    try {
      cluster = await startCluster('identity', { agents: 1 });
    } finally {
      delete process.env[SECRET];
    }
    client = cluster.client();
  });
  afterEach(function () {
    if (this.currentTest?.state === 'failed') failed = true;
  });
  after(async () => {
    client?.close();
    await stopCluster(cluster, failed);
  });

  async function output(jobId: string): Promise<string> {
    let last;
    for await (const j of client.watch(jobId)) last = j;
    expect(last?.state, last?.message).to.equal('JOB_STATE_SUCCEEDED');
    const chunks: Buffer[] = [];
    for await (const c of client.logs(jobId, 'who', 0)) chunks.push(c);
    return Buffer.concat(chunks).toString('utf8');
  }

  it('runs a worker as the configured user: its id -u, and no agent variable in its environment', async () => {
    const { jobId } = await client.submit(
      job({
        name: 'who',
        env: { DECLARED: 'yes' },
        tasks: [{ name: 'who', instances: 1, resources: { cpu: 0.1, memory: 64 }, command: ['sh', '-c', 'id -u; id -G; env'] }],
      }),
    );
    const lines = (await output(jobId)).split('\n');
    expect(Number(lines[0])).to.equal(expectedUid);
    // Supplementary groups cleared: only its own group.
    if (root) expect(lines[1]).to.equal('65534');
    const names = lines
      .slice(2)
      .filter((l) => l.includes('='))
      .map((l) => l.slice(0, l.indexOf('=')));
    expect(names).to.include.members(['PATH', 'HOME', 'LANG', 'DECLARED', 'FUXI_APP_ID', 'FUXI_OUTPUT_DIR']);
    expect(names).to.not.include(SECRET);
    // Only what the worker was given (and what sh sets itself).
    const given = names.filter((n) => !['PWD', 'SHLVL', '_', 'OLDPWD'].includes(n));
    expect(
      given.every((n) => ['PATH', 'HOME', 'LANG', 'DECLARED'].includes(n) || n.startsWith('FUXI_')),
      given.join(' '),
    ).to.equal(true);
  });

  it('fuxi nodes says who workers run as', async () => {
    const { stdout } = await run(process.execPath, [BIN.cli, '--master', cluster.masterAddress, 'nodes'], { env: { ...process.env, ...cluster.clientEnv() } });
    expect(stdout).to.match(/\bRUNS-AS\b/);
    expect(stdout).to.match(root ? /\bnobody\b/ : /same: the agent is not root/);
  });

  it('refuses a cwd of ../../etc at submit, naming the field, and creates nothing', async () => {
    const before = (await client.list()).length;
    let err: unknown;
    try {
      await client.submit(
        job({ name: 'escape', tasks: [{ name: 't', instances: 1, resources: { cpu: 0.1, memory: 64 }, command: ['pwd'], cwd: '../../etc' }] }),
      );
    } catch (e) {
      err = e;
    }
    expect(String(err)).to.match(/tasks\[0\]\.cwd: "\.\.\/\.\.\/etc" climbs out of the worker's directory/);
    await until('the list settled', async () => ((await client.list()).length === before ? true : undefined), 2000);
  });

  it('refuses an absolute cwd outside the allowed roots at the agent: the attempt fails, saying why', async () => {
    const { jobId } = await client.submit(
      job({ name: 'abs', tasks: [{ name: 't', instances: 1, maxAttempts: 1, resources: { cpu: 0.1, memory: 64 }, command: ['pwd'], cwd: '/etc' }] }),
    );
    let last;
    for await (const j of client.watch(jobId)) last = j;
    expect(last?.state).to.equal('JOB_STATE_FAILED');
    expect(last?.message).to.match(/cwd: "\/etc" resolves to \/etc, outside the worker's directory/);
  });

  it('an agent restart re-adopts a worker running as the worker user: same process, its exit code reported', async () => {
    const release = join(cluster.opts.dir, 'release-identity');
    const { jobId } = await client.submit(
      job({
        name: 'held',
        env: { RELEASE: release },
        tasks: [
          {
            name: 'who',
            instances: 1,
            resources: { cpu: 0.1, memory: 64 },
            command: ['sh', '-c', 'id -u; while [ ! -e "$RELEASE" ]; do sleep 0.1; done; echo released'],
          },
        ],
      }),
    );
    const dir = join(cluster.agents[0]!.workDir, 'apps', jobId);
    const pidFile = await until('the worker running', () => {
      const f = join(dir, 'who.0.1', 'pid');
      return existsSync(f) ? f : undefined;
    });
    const pid = Number.parseInt(readFileSync(pidFile, 'utf8'), 10); // the pid, then its start time
    const agent = cluster.agents[0]!;
    process.kill(agent.pid, 'SIGKILL');
    await until('the agent to exit', () => !isAlive(agent.pid), 10_000, 50);
    await sleep(300);
    expect(isAlive(pid), 'the worker outlives its agent').to.equal(true);
    await cluster.startAgent(0);
    writeFileSync(release, '');
    const out = await output(jobId);
    expect(out.split('\n').slice(0, 2)).to.deep.equal([String(expectedUid), 'released']);
    // The first attempt finished it: nothing was started again.
    expect(existsSync(join(dir, 'who.0.2'))).to.equal(false);
  });
});
