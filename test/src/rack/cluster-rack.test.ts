/**
 * A job's life on the rack: etcd, three masters and three agents, each on a host of its own (its
 * own network namespace and address), started from the multi-host config files an operator uses
 * (`deploy/config/cluster/`). The test process, and the `fuxi` CLI it runs, stay outside on the
 * rack's bridge, like a client machine.
 *
 * - the demo word count end to end, through the CLI: maps on several hosts, reducers fetching map
 *   output from the hosts that wrote it, the result fetched from the reducers' hosts, correct counts;
 *   the AM serves on its own host's address, never loopback;
 * - kill -9 of the leader during a running job: a standby on another host takes over, every worker
 *   keeps its pid, the job completes correctly;
 * - kill -9 of an agent and its restart: its workers are re-adopted (same pids), the job completes.
 *
 * Workers of a gated job wait for a TCP port on the test process's address to open (a release
 * over the network: nothing is shared between hosts but the wire).
 */
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync } from 'node:fs';
import type { Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { FuxiClient, JobSpec } from '@fuxi/client';
import { BIN, expectedCounts, isAlive, waitExit, wordcountResult, wordcountSpec, WORDCOUNT_DIR, removeTree } from '@fuxi/deploy';
import type { WorkerStatus__Output } from '@fuxi/proto';
import { until } from '../harness.js';
import { gatedWordCount as gatedWordCountOn, gatePortBase, openGate } from './gate.js';
import { RackCluster } from './rack-cluster.js';

const run = promisify(execFile);

describe('a cluster on the rack: each daemon on its own host, configured as the README says', function () {
  this.timeout(300_000);
  let rc: RackCluster | undefined;
  let client: FuxiClient;
  let dir = '';
  let failed = false;
  let gatePort = gatePortBase(0);

  before(async function () {
    this.timeout(180_000);
    dir = mkdtempSync(join(tmpdir(), 'fuxi-rack-'));
    chmodSync(dir, 0o711); // the agents' unprivileged worker user passes through to its directories
    rc = await RackCluster.start({
      dir,
      agents: 3,
      leaseTtlSec: 3,
      heartbeatIntervalMs: 300,
      agentTimeoutMs: 30_000,
      amTimeoutMs: 30_000,
      agentCpu: '2',
      agentMemory: '2Gi',
      logLevel: 'debug',
    });
    client = rc.ha.client({ retryForMs: 60_000 });
  });
  afterEach(function () {
    if (this.currentTest?.state === 'failed') failed = true;
  });
  after(async function () {
    this.timeout(120_000);
    client?.close();
    await rc?.stop();
    if (dir && !failed) removeTree(dir);
    else if (dir) process.stderr.write(`  (rack logs kept in ${dir})\n`);
  });

  // ------------------------------------------------------------------ helpers

  const key = (w: { nodeId: string; appId: string; workerId: string }) => `${w.nodeId}/${w.appId}/${w.workerId}`;

  async function workers(): Promise<Array<WorkerStatus__Output & { nodeId: string; address: string }>> {
    const out: Array<WorkerStatus__Output & { nodeId: string; address: string }> = [];
    for (const { agent, state } of await rc!.ha.agentStates()) for (const w of state.workers) out.push({ ...w, nodeId: agent.nodeId, address: agent.address });
    return out;
  }

  async function running(appId: string): Promise<Map<string, number>> {
    const m = new Map<string, number>();
    for (const w of await workers()) if (w.appId === appId && w.state === 'WORKER_STATE_RUNNING' && w.pid > 0) m.set(key(w), w.pid);
    return m;
  }

  async function expectUnchanged(before: Map<string, number>, when: string): Promise<void> {
    const now = new Map((await workers()).map((w) => [key(w), w] as const));
    for (const [k, pid] of before) {
      const w = now.get(k);
      expect(w, `${when}: worker ${k} is gone`).to.not.equal(undefined);
      expect(w!.state, `${when}: worker ${k}`).to.equal('WORKER_STATE_RUNNING');
      expect(w!.pid, `${when}: worker ${k} has a new pid`).to.equal(pid);
      expect(isAlive(pid), `${when}: process ${pid} of ${k} is alive`).to.equal(true);
    }
  }

  /** The `fuxi` CLI, run here (outside the rack's hosts) against the masters' addresses. */
  async function fuxi(...args: string[]): Promise<string> {
    const { stdout } = await run(process.execPath, [BIN.cli, '--master', rc!.ha.masterAddresses.join(','), ...args], {
      env: { ...process.env, ...rc!.ha.clientEnv() },
      timeout: 240_000,
      maxBuffer: 16 << 20,
    });
    return stdout;
  }

  async function finalState(jobId: string) {
    let last;
    for await (const j of client.watch(jobId)) last = j;
    return last!;
  }

  const gatedWordCount = (name: string, port: number): JobSpec => gatedWordCountOn(name, rc!.rack.bridgeIp, port);
  const release = (port: number): Promise<Server> => openGate(rc!.rack.bridgeIp, port);

  async function startGated(name: string): Promise<{ jobId: string; spec: JobSpec; port: number; pids: Map<string, number> }> {
    const port = gatePort++;
    const spec = gatedWordCount(name, port);
    const { jobId } = await client.submit(spec);
    const pids = await until(
      `the AM and 12 map instances of ${name} running`,
      async () => {
        const m = await running(jobId);
        return [...m.keys()].filter((k) => k.includes('/map.')).length === 12 && m.size === 13 ? m : undefined;
      },
      120_000,
      250,
    );
    return { jobId, spec, port, pids };
  }

  async function expectCorrect(jobId: string, spec: JobSpec): Promise<void> {
    const end = await finalState(jobId);
    expect(end.state, end.message).to.equal('JOB_STATE_SUCCEEDED');
    const counts = await wordcountResult(client, jobId, spec);
    expect(Object.fromEntries(counts)).to.deep.equal(Object.fromEntries(await expectedCounts(spec)));
  }

  // ------------------------------------------------------------------ tests

  it('runs the demo word count across hosts through the CLI, with the correct counts', async () => {
    const file = join(WORDCOUNT_DIR, 'job.yaml');
    const submitted = await fuxi('submit', file, '--wait', '-o', 'json');
    const jobId = String((JSON.parse(submitted) as { jobId?: string }).jobId ?? '');
    expect(jobId, `fuxi submit printed ${submitted}`).to.not.equal('');
    const info = await client.get(jobId);
    expect(info.state, info.message).to.equal('JOB_STATE_SUCCEEDED');
    // The reducers' results, fetched by the CLI from the hosts that ran them.
    const counts = new Map<string, number>();
    for (let r = 0; r < 4; r++) {
      for (const [w, c] of Object.entries(JSON.parse(await fuxi('fetch', jobId, 'reduce', String(r), 'counts.json')) as Record<string, number>))
        counts.set(w, (counts.get(w) ?? 0) + c);
    }
    expect(Object.fromEntries(counts)).to.deep.equal(Object.fromEntries(await expectedCounts(wordcountSpec())));
    // Logs, read by the CLI from the agent hosts that ran the workers.
    expect(await fuxi('logs', jobId, 'map', '3')).to.match(/^map 3\/20: \d+ words into 4 partitions/);
    expect(await fuxi('logs', jobId, 'reduce', '1')).to.match(/^reduce 1: \d+ distinct words from 20 maps/);
    // Work really crossed hosts: maps ran on more than one agent host, and the AM advertised the
    // address of the host it ran on.
    const mine = (await workers()).filter((w) => w.appId === jobId);
    expect(new Set(mine.filter((w) => w.task === 'map').map((w) => w.nodeId)).size, 'hosts that ran maps').to.be.greaterThan(1);
    const am = mine.find((w) => w.task === '__am__');
    // host:port on the rack, with the AM's route on its AM host's server (host:port#route).
    expect(info.amAddress, 'the AM address').to.match(/^10\.213\.0\.\d+:\d+(#\S+)?$/);
    if (am) expect(info.amAddress.split(':')[0], 'the AM advertises its own host').to.equal(am.address.split(':')[0]);
  });

  it('kill -9 of the leader during a running job: a standby takes over, every worker keeps its pid, the job is correct', async () => {
    const { jobId, spec, port, pids } = await startGated('rack-leader-kill');
    let gate: Server | undefined;
    try {
      const ha = rc!.ha;
      const old = await ha.waitForLeader();
      ha.kill(old.master, 'SIGKILL');
      expect(await waitExit(old.master.child, 5000), 'the killed leader exited').to.equal(true);
      const next = await ha.waitForLeader({ notPids: [old.master.pid], afterEpoch: old.epoch, timeoutMs: 60_000 });
      expect(next.master.address, 'the new leader is on another host').to.not.equal(old.master.address);
      const recovery = await ha.waitForRecovery(next.master, next.epoch, 60_000);
      expect(Number(recovery.agentsMissing ?? 0), 'agents missing from aggregation').to.equal(0);
      await expectUnchanged(pids, 'after the leader was killed');
      await ha.restartMaster(old.master.index);
      gate = await release(port);
      await expectCorrect(jobId, spec);
      const info = await client.get(jobId);
      expect(info.amAttempt, 'the AM was never restarted').to.equal(1);
      expect(
        info.tasks.map((t) => [t.name, t.retries]),
        'no instance re-ran',
      ).to.deep.equal([
        ['map', 0],
        ['reduce', 0],
      ]);
    } finally {
      gate ??= await release(port).catch(() => undefined);
      gate?.close();
    }
  });

  it('kill -9 of an agent and its restart: its workers are re-adopted with the same pids', async () => {
    const { jobId, spec, port, pids } = await startGated('rack-agent-kill');
    let gate: Server | undefined;
    try {
      const ha = rc!.ha;
      // The agent with the most of this job's maps.
      const byNode = new Map<string, number>();
      for (const k of pids.keys()) if (k.includes('/map.')) byNode.set(k.split('/')[0]!, (byNode.get(k.split('/')[0]!) ?? 0) + 1);
      const [nodeId, maps] = [...byNode].sort((a, b) => b[1] - a[1])[0]!;
      const i = ha.agents.findIndex((a) => a.nodeId === nodeId);
      const victim = ha.agents[i]!;
      const theirs = new Map([...pids].filter(([k]) => k.startsWith(`${nodeId}/`)));
      process.kill(victim.pid, 'SIGKILL');
      expect(await waitExit(victim.child, 5000), 'the killed agent exited').to.equal(true);
      for (const pid of theirs.values()) expect(isAlive(pid), `worker ${pid} outlives its agent`).to.equal(true);
      const again = await ha.startAgent(i);
      expect(again.address, 'the agent is back at its address').to.equal(victim.address);
      const rec = await until(
        'the restarted agent to report its re-adopted workers',
        async () => (await ha.agentStates()).find((s) => s.agent.nodeId === nodeId),
        30_000,
      );
      expect(
        rec.state.workers.filter((w) => w.appId === jobId && w.state === 'WORKER_STATE_RUNNING').length,
        `${maps} maps and maybe the AM re-adopted`,
      ).to.be.at.least(maps);
      await expectUnchanged(pids, 'after the agent restarted');
      gate = await release(port);
      await expectCorrect(jobId, spec);
      const info = await client.get(jobId);
      expect(
        info.tasks.map((t) => [t.name, t.retries]),
        'no instance re-ran',
      ).to.deep.equal([
        ['map', 0],
        ['reduce', 0],
      ]);
    } finally {
      gate ??= await release(port).catch(() => undefined);
      gate?.close();
    }
  });
});
