/**
 * The AM host with real processes (a master, two agents, their `fuxi-amhost` processes, real
 * workers): jobs' AMs run hosted by default; an exception inside one hosted AM ends that AM alone
 * (a new attempt recovers its job; its neighbour in the same host is untouched); kill -9 of a host
 * ends every AM it held and each comes back as a new attempt without any worker restarted; an agent
 * restart re-adopts its host and the AMs in it keep running; `am: dedicated` runs a process of its own.
 *
 * Recovery times are measured and printed (and written to bench-results/am-host-recovery.json),
 * not asserted: the machine is shared.
 */
import { expect } from 'chai';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AmHostConnection, readHostRecord } from '@fuxi/agent';
import type { FuxiClient } from '@fuxi/client';
import { LogTail, type LocalCluster } from '@fuxi/deploy';
import type { WorkerStatus__Output } from '@fuxi/proto';
import { isAlive, job, sleep, startCluster, stopCluster, until } from '../harness.js';

const REPO = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const OUT = join(REPO, 'bench-results', 'am-host-recovery.json');
const HOLD = 'while [ ! -e "$RELEASE" ]; do sleep 0.2; done';
const say = (s: string) => process.stderr.write(`      [am-host] ${s}\n`);

interface Worker {
  nodeId: string;
  appId: string;
  workerId: string;
  suId: string;
  pid: number;
  state: string;
  amAttempt: number;
}

describe('AM host (real processes)', function () {
  this.timeout(180_000);
  let cluster: LocalCluster;
  let client: FuxiClient;
  let failed = false;
  let masterLog: LogTail;
  const results: Record<string, unknown> = {};

  before(async () => {
    cluster = await startCluster('amhost', { agents: 2, logLevel: 'info' });
    client = cluster.client();
    masterLog = new LogTail(cluster.master.logFile);
  });
  afterEach(function () {
    if (this.currentTest?.state === 'failed') failed = true;
  });
  after(async () => {
    client?.close();
    await stopCluster(cluster, failed);
    if (Object.keys(results).length > 0) {
      mkdirSync(dirname(OUT), { recursive: true });
      writeFileSync(OUT, JSON.stringify({ generatedAt: new Date().toISOString(), ...results }, null, 2) + '\n');
    }
  });

  async function workers(): Promise<Worker[]> {
    const { loadFuxiProto } = await import('@fuxi/proto');
    const { connect } = await import('@fuxi/rpc');
    const out: Worker[] = [];
    for (const a of cluster.agents) {
      const c = connect(loadFuxiProto().AgentService, a.address, cluster.transport());
      try {
        const st = await c.GetAgentState({}, { deadlineMs: 3000 });
        for (const w of st.workers as WorkerStatus__Output[])
          out.push({ nodeId: a.nodeId, appId: w.appId, workerId: w.workerId, suId: w.suId, pid: w.pid, state: w.state, amAttempt: w.amAttempt });
      } finally {
        c.close();
      }
    }
    return out;
  }

  /** Submits `n` jobs whose 2 workers each hold until `release` exists; waits until all of them and their AMs run. */
  async function heldJobs(name: string, n: number, release: string, extra: Record<string, unknown> = {}): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      const spec = job({
        name: `${name}-${i}`,
        env: { RELEASE: release },
        tasks: [{ name: 'hold', instances: 2, resources: { cpu: 0.1, memory: 32 }, command: HOLD }],
        ...extra,
      });
      ids.push((await client.submit(spec)).jobId);
    }
    await until(
      `${n} jobs with their AM and 2 workers running`,
      async () => {
        const ws = (await workers()).filter((w) => ids.includes(w.appId) && w.state === 'WORKER_STATE_RUNNING' && w.pid > 0);
        return ids.every((id) => ws.filter((w) => w.appId === id && w.suId !== '__am__').length === 2 && ws.some((w) => w.appId === id && w.suId === '__am__'));
      },
      60_000,
      200,
    );
    return ids;
  }

  /** Task worker pids by `${appId}/${workerId}`. */
  async function taskPids(ids: readonly string[]): Promise<Map<string, number>> {
    return new Map(
      (await workers())
        .filter((w) => ids.includes(w.appId) && w.suId !== '__am__' && w.state === 'WORKER_STATE_RUNNING')
        .map((w) => [`${w.appId}/${w.workerId}`, w.pid] as const),
    );
  }

  async function amWorker(appId: string): Promise<Worker> {
    const job = await client.get(appId);
    const w = (await workers()).find((x) => x.appId === appId && x.suId === '__am__' && x.workerId === `am.${job.amAttempt}`);
    if (!w) throw new Error(`no AM worker of ${appId} attempt ${job.amAttempt}`);
    return w;
  }

  async function finish(ids: readonly string[], release: string, before: Map<string, number>): Promise<void> {
    // Nothing restarted before the release: the same pids still run.
    const now = await taskPids(ids);
    for (const [k, pid] of before) {
      expect(now.get(k), `worker ${k} restarted`).to.equal(pid);
      expect(isAlive(pid)).to.equal(true);
    }
    writeFileSync(release, '');
    for (const id of ids) {
      const j = await until(`job ${id} to end`, async () => {
        const x = await client.get(id);
        return ['JOB_STATE_SUCCEEDED', 'JOB_STATE_FAILED', 'JOB_STATE_KILLED'].includes(x.state) ? x : undefined;
      });
      expect(j.state, `${id}: ${j.message}`).to.equal('JOB_STATE_SUCCEEDED');
      expect(
        j.tasks.map((t) => [t.succeeded, t.retries]),
        id,
      ).to.deep.equal([[2, 0]]);
    }
  }

  /** When the master logged attempt `attempt` of `appId` registered (waits for it). */
  async function registered(appId: string, attempt: number): Promise<number> {
    const r = await masterLog.waitFor((x) => x.msg === 'application master registered' && x.appId === appId && Number(x.attempt) === attempt, {
      what: `attempt ${attempt} of ${appId} registered`,
      timeoutMs: 60_000,
    });
    return r.timeMs;
  }

  it('runs AMs in the AM host by default and `am: dedicated` in a process of its own', async () => {
    const release = join(cluster.opts.dir, 'release-modes');
    const [shared] = await heldJobs('mode-shared', 1, release);
    const [dedicated] = await heldJobs('mode-dedicated', 1, release, { am: 'dedicated' });
    const before = await taskPids([shared!, dedicated!]);
    const s = await amWorker(shared!);
    const d = await amWorker(dedicated!);
    const agentOf = (w: Worker) => cluster.agents.find((a) => a.nodeId === w.nodeId)!;
    expect(s.pid, 'the shared AM runs as the AM host').to.equal(readHostRecord(agentOf(s).workDir)?.pid);
    const cmdline = readFileSync(`/proc/${d.pid}/cmdline`, 'utf8').split('\0');
    expect(
      cmdline.some((a) => /appmaster\/dist\/(fuxi-appmaster\.cjs|shell\/main\.js)$/.test(a)),
      cmdline.join(' '),
    ).to.equal(true);
    expect(d.pid).to.not.equal(readHostRecord(agentOf(d).workDir)?.pid);
    const spec = (await client.get(dedicated!)).spec;
    expect(spec?.amMode).to.equal('dedicated');
    expect(spec?.amResource).to.deep.equal({ cpuMilli: 100, memoryMb: 256 });
    expect((await client.get(shared!)).spec?.amResource).to.deep.equal({ cpuMilli: 20, memoryMb: 32 });
    // The hosted AM logs where a dedicated one's stdout goes.
    const log = readFileSync(join(agentOf(s).workDir, 'apps', shared!, s.workerId, 'stdout'), 'utf8');
    expect(log).to.include('"registered with the master"');
    await finish([shared!, dedicated!], release, before);
  });

  it('an exception inside one hosted AM ends it alone: a new attempt recovers its job, its neighbour in the host runs on', async () => {
    const release = join(cluster.opts.dir, 'release-isolation');
    const ids = await heldJobs('iso', 3, release);
    const before = await taskPids(ids);
    const ams = await Promise.all(ids.map((id) => amWorker(id)));
    // Three AMs on two nodes: two share a host.
    const pair = ams.flatMap((a, i) =>
      ams
        .slice(i + 1)
        .filter((b) => b.nodeId === a.nodeId)
        .map((b) => [a, b] as const),
    )[0];
    if (!pair) throw new Error(`no two AMs share a node: ${ams.map((a) => a.nodeId).join(', ')}`);
    const [thrower, neighbour] = pair;
    const agent = cluster.agents.find((a) => a.nodeId === thrower.nodeId)!;
    const rec = readHostRecord(agent.workDir)!;
    expect(thrower.pid).to.equal(rec.pid);
    expect(neighbour.pid).to.equal(rec.pid);
    const conn = await AmHostConnection.open(rec.socket, { timeoutMs: 5000 });
    try {
      await conn.request({ op: 'hello', role: 'control' });
      const t0 = Date.now();
      await conn.request({ op: 'fault', key: `${thrower.appId}/${thrower.workerId}`, fault: 'throw' });
      const back = await registered(thrower.appId, thrower.amAttempt + 1);
      say(`AM of ${thrower.appId} threw; attempt ${thrower.amAttempt + 1} registered ${back - t0} ms later`);
      results.exception = { recoveredMs: back - t0 };
      const listed = (await conn.request({ op: 'list' })).ams!.map((a) => a.key);
      expect(listed).to.include(`${neighbour.appId}/${neighbour.workerId}`);
      expect(listed).to.include(`${thrower.appId}/am.${thrower.amAttempt + 1}`);
    } finally {
      conn.close();
    }
    expect(isAlive(rec.pid), 'the host runs on').to.equal(true);
    expect((await client.get(neighbour.appId)).amAttempt, 'the neighbour keeps its attempt').to.equal(neighbour.amAttempt);
    const hostLog = readFileSync(join(agent.workDir, 'amhost', 'host.log'), 'utf8');
    expect(hostLog).to.match(/uncaught error in a hosted application master: it alone is ended/);
    await finish(ids, release, before);
    expect((await client.get(thrower.appId)).amAttempt).to.equal(thrower.amAttempt + 1);
  });

  it('kill -9 of an AM host: every AM it held comes back as a new attempt, no worker restarts, every job completes', async () => {
    const release = join(cluster.opts.dir, 'release-crash');
    const ids = await heldJobs('crash', 4, release);
    const before = await taskPids(ids);
    const ams = await Promise.all(ids.map((id) => amWorker(id)));
    const byNode = new Map<string, Worker[]>();
    for (const a of ams) byNode.set(a.nodeId, [...(byNode.get(a.nodeId) ?? []), a]);
    const [nodeId, held] = [...byNode].sort((x, y) => y[1].length - x[1].length)[0]!;
    const agent = cluster.agents.find((a) => a.nodeId === nodeId)!;
    const rec = readHostRecord(agent.workDir)!;
    const t0 = Date.now();
    process.kill(-rec.pid, 'SIGKILL');
    const backMs: Record<string, number> = {};
    for (const a of held) backMs[a.appId] = (await registered(a.appId, a.amAttempt + 1)) - t0;
    say(`kill -9 of the AM host of ${nodeId} (${held.length} AMs): each back (new attempt registered) after ${Object.values(backMs).join(', ')} ms`);
    results.hostCrash = { ams: held.length, recoveredMs: backMs, maxMs: Math.max(...Object.values(backMs)) };
    const next = readHostRecord(agent.workDir);
    expect(next?.pid, 'a new host').to.be.a('number').and.not.equal(rec.pid);
    for (const id of ids.filter((x) => !held.some((a) => a.appId === x))) expect((await client.get(id)).amAttempt, `${id} untouched`).to.equal(1);
    await finish(ids, release, before);
  });

  it('an agent restart re-adopts its AM host: the AMs in it keep running (same attempt, same process)', async () => {
    const release = join(cluster.opts.dir, 'release-agent');
    const ids = await heldJobs('adopt', 3, release);
    const before = await taskPids(ids);
    const ams = await Promise.all(ids.map((id) => amWorker(id)));
    const i = cluster.agents.findIndex((a) => ams.some((x) => x.nodeId === a.nodeId));
    const agent = cluster.agents[i]!;
    const mine = ams.filter((a) => a.nodeId === agent.nodeId);
    const rec = readHostRecord(agent.workDir)!;
    process.kill(agent.pid, 'SIGKILL');
    await until('the agent to exit', () => !isAlive(agent.pid), 10_000, 50);
    await sleep(500);
    const restarted = await cluster.startAgent(i);
    const log = new LogTail(restarted.logFile);
    const adopted = await log.waitFor((r) => r.pid === restarted.pid && r.msg === 'AM host of the earlier agent run adopted', {
      what: 'the host adopted',
      child: restarted.child,
    });
    expect(adopted.pid).to.equal(restarted.pid);
    const restore = await log.waitFor((r) => r.pid === restarted.pid && r.msg === 'restarted from the local checkpoint', {
      what: 'the restore',
      child: restarted.child,
    });
    expect(Number(restore.adopted)).to.be.at.least(mine.length);
    await until('the restarted agent to answer', async () => (await workers()).some((w) => w.nodeId === agent.nodeId), 30_000, 200);
    for (const a of mine) {
      const now = await amWorker(a.appId);
      expect([now.workerId, now.pid, now.state]).to.deep.equal([a.workerId, rec.pid, 'WORKER_STATE_RUNNING']);
    }
    expect(isAlive(rec.pid)).to.equal(true);
    await finish(ids, release, before);
    for (const id of ids) expect((await client.get(id)).amAttempt, id).to.equal(1);
  });
});
