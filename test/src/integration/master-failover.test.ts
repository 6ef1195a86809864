/**
 * Master HA and failover by soft-state inference, with real processes: a real etcd, three masters
 * (one leader, two standbys), four agents, real application masters and real workers.
 *
 * - kill -9 of the leader, three times in a row, while a word-count job's map instances run: a
 *   standby takes over each time, no worker is restarted (same pids, no retries), the job
 *   completes with the right counts;
 * - jobs submitted (with retries) while the leader is being killed are all there afterwards, once;
 * - a leader SIGSTOPped past its lease and then SIGCONTed issues nothing an agent accepts.
 *
 * Map instances wait for a release file before doing their work, so they run for exactly as long
 * as the test needs them to. etcd is started once for the file; the lease is short (2 s) to keep
 * the file under three minutes.
 */
import { expect } from 'chai';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FuxiClient, JobSpec } from '@fuxi/client';
import { BIN, expectedCounts, HaCluster, LogTail, wordcountResult, isAlive, waitExit, type LeaderInfo, type LogRecord, removeTree } from '@fuxi/deploy';
import type { JobInfo__Output, WorkerStatus__Output } from '@fuxi/proto';
import { startEtcd, type EtcdProcess } from '../etcd-harness.js';
import { job, sleep, until } from '../harness.js';

const exampleDir = join(BIN.master, '..', '..', '..', '..', 'deploy', 'examples', 'wordcount');
const LEASE_TTL_SEC = 2;
const MAPS = 8;
const REDUCERS = 3;

/** A running worker as the agents report it. */
interface SeenWorker {
  nodeId: string;
  appId: string;
  workerId: string;
  pid: number;
  state: string;
}

const key = (w: { nodeId: string; appId: string; workerId: string }) => `${w.nodeId}/${w.appId}/${w.workerId}`;

describe('master failover (real etcd, 1 leader + 2 standbys)', function () {
  this.timeout(180_000);
  let etcd: EtcdProcess | undefined;
  let ha: HaCluster | undefined;
  let client: FuxiClient;
  let dir: string;
  let failed = false;

  before(async function () {
    this.timeout(60_000);
    etcd = await startEtcd();
    dir = mkdtempSync(join(tmpdir(), 'fuxi-it-failover-'));
    ha = await HaCluster.start({
      dir,
      masters: 3,
      agents: 4,
      etcd: { endpoints: [etcd.endpoint], prefix: '/it-failover/' },
      leaseTtlSec: LEASE_TTL_SEC,
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
    client?.close();
    await ha?.stop({ killWorkers: true });
    await etcd?.stop();
    if (dir && !failed) removeTree(dir);
    else if (dir) process.stderr.write(`  (logs kept in ${dir})\n`);
  });

  // ------------------------------------------------------------------ helpers

  async function workers(): Promise<SeenWorker[]> {
    const out: SeenWorker[] = [];
    for (const { agent, state } of await ha!.agentStates()) {
      for (const w of state.workers as WorkerStatus__Output[])
        out.push({ nodeId: agent.nodeId, appId: w.appId, workerId: w.workerId, pid: w.pid, state: w.state });
    }
    return out;
  }

  async function running(appId: string): Promise<Map<string, number>> {
    const m = new Map<string, number>();
    for (const w of await workers()) if (w.appId === appId && w.state === 'WORKER_STATE_RUNNING') m.set(key(w), w.pid);
    return m;
  }

  /** Every worker in `before` still runs with the same pid (and its process is alive). */
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

  /**
   * kill -9 the leader; wait for a standby to take over ("became leader", higher epoch, another
   * pid) and finish recovery; start the killed master again as a standby.
   */
  async function killLeader(): Promise<{ old: LeaderInfo; next: LeaderInfo; recovery: LogRecord }> {
    const old = await ha!.waitForLeader();
    ha!.kill(old.master, 'SIGKILL');
    expect(await waitExit(old.master.child, 5000), 'killed master exited').to.equal(true);
    const next = await ha!.waitForLeader({ notPids: [old.master.pid], afterEpoch: old.epoch, timeoutMs: 30_000 });
    const recovery = await ha!.waitForRecovery(next.master, next.epoch, 30_000);
    await ha!.restartMaster(old.master.index);
    return { old, next, recovery };
  }

  async function finalState(jobId: string): Promise<JobInfo__Output> {
    let last: JobInfo__Output | undefined;
    for await (const j of client.watch(jobId)) last = j;
    return last!;
  }

  const specs = new Map<string, JobSpec>();

  /** A job whose `task` instances wait for `<out>/release`, then (for the word count) do their work. */
  function gatedWordCount(name: string, out: string) {
    const gate = 'while [ ! -e "$GATE_DIR/release" ]; do sleep 0.1; done; exec node map.mjs "$1" "$2"';
    return job({
      id: `${name}-${Date.now().toString(36)}`,
      name,
      env: { WC_INPUT: join(exampleDir, 'input', 'corpus.txt'), GATE_DIR: out, WC_REDUCERS: String(REDUCERS) },
      tasks: [
        {
          name: 'map',
          instances: MAPS,
          resources: { cpu: 0.2, memory: 64 },
          command: ['sh', '-c', gate, 'map', '${instance}', '${instances}'],
          cwd: exampleDir,
          maxAttempts: 3,
        },
        {
          name: 'reduce',
          instances: REDUCERS,
          resources: { cpu: 0.2, memory: 64 },
          command: ['node', 'reduce.mjs', '${instance}'],
          cwd: exampleDir,
          dependsOn: ['map'],
          maxAttempts: 3,
        },
      ],
    });
  }

  /** The reducers' counts, fetched from the agents that ran them, against a direct count. */
  async function expectCorrectCounts(jobId: string): Promise<void> {
    const spec = specs.get(jobId)!;
    const counts = await wordcountResult(client, jobId, spec);
    expect(Object.fromEntries(counts)).to.deep.equal(Object.fromEntries(await expectedCounts(spec)));
  }

  function expectNoRetries(info: JobInfo__Output): void {
    expect(info.amAttempt, 'the application master was never restarted').to.equal(1);
    expect(info.tasks.map((t) => [t.name, t.succeeded, t.total, t.retries])).to.deep.equal([
      ['map', MAPS, MAPS, 0],
      ['reduce', REDUCERS, REDUCERS, 0],
    ]);
  }

  /** Submits the job and waits until its AM and every map instance run; returns their pids. */
  async function startGated(name: string): Promise<{ jobId: string; out: string; pids: Map<string, number> }> {
    const out = join(dir, `${name}-out`);
    mkdirSync(out, { recursive: true });
    const spec = gatedWordCount(name, out);
    const { jobId } = await client.submit(spec);
    specs.set(jobId, spec);
    const pids = await until(
      `the AM and ${MAPS} map instances of ${name} running`,
      async () => {
        const m = await running(jobId);
        const maps = [...m.keys()].filter((k) => k.includes('/map'));
        // A worker is RUNNING a moment before its pid is known.
        return maps.length === MAPS && m.size === MAPS + 1 && [...m.values()].every((pid) => pid > 0) ? m : undefined;
      },
      60_000,
      200,
    );
    return { jobId, out, pids };
  }

  // ------------------------------------------------------------------ (a)

  it('kill -9 of the leader three times in a row: a standby takes over, no worker restarts, the job completes correctly', async () => {
    const { jobId, out, pids } = await startGated('wc-kill3');
    try {
      const epochs: string[] = [(await ha!.waitForLeader()).epoch];
      for (let round = 1; round <= 3; round++) {
        const { old, next, recovery } = await killLeader();
        expect(next.master.pid).to.not.equal(old.master.pid);
        expect(BigInt(next.epoch) > BigInt(old.epoch), `epoch ${next.epoch} > ${old.epoch}`).to.equal(true);
        expect(Number(recovery.agentsMissing ?? 0), `round ${round}: agents missing from aggregation`).to.equal(0);
        epochs.push(next.epoch);
        await expectUnchanged(pids, `after kill ${round}`);
      }
      expect(new Set(epochs).size).to.equal(4);
    } finally {
      // The job is still running under its first AM; let the maps do their work (also on failure,
      // so that they do not hold their slots through the next tests).
      writeFileSync(join(out, 'release'), '');
    }
    const end = await finalState(jobId);
    expect(end.state, end.message).to.equal('JOB_STATE_SUCCEEDED');
    await expectCorrectCounts(jobId);
    expectNoRetries(await client.get(jobId));
  });

  // ------------------------------------------------------------------ (b)

  it('jobs submitted (with retries) while the leader is killed are all there afterwards, each once', async () => {
    const N = 24;
    const submitter = ha!.client({ retryForMs: 30_000, deadlineMs: 5000 });
    const acked: string[] = [];
    let errors = 0;
    const stamp = Date.now().toString(36);
    const submitAll = (async () => {
      for (let i = 0; i < N; i++) {
        const spec = job({
          id: `burst-${stamp}-${i}`,
          name: `burst-${i}`,
          tasks: [{ name: 't', instances: 1, resources: { cpu: 0.1, memory: 32 }, command: 'true' }],
        });
        // The SDK retries across the masters; on top of that, retry the same id until acknowledged.
        for (let attempt = 0; ; attempt++) {
          try {
            const r = await submitter.submit(spec);
            expect(r.jobId).to.equal(spec.jobId);
            acked.push(r.jobId);
            break;
          } catch (e) {
            errors++;
            if (attempt > 30) throw e;
            await sleep(200);
          }
        }
        await sleep(150);
      }
    })();
    try {
      await until('a few submissions acknowledged', () => acked.length >= 4, 30_000, 20);
      const ackedAtKill = acked.length;
      await killLeader();
      expect(ackedAtKill, 'submissions went on across the failover').to.be.lessThan(N);
      await submitAll;
    } finally {
      await submitAll.catch(() => undefined);
      submitter.close();
    }
    expect(acked).to.have.length(N);
    const listed = (await client.list()).map((j) => j.jobId).filter((id) => id.startsWith(`burst-${stamp}-`));
    expect(listed.length, `duplicates in ${JSON.stringify(listed)}`).to.equal(new Set(listed).size);
    expect([...listed].sort()).to.deep.equal([...acked].sort());
    // ... and they all run to completion.
    for (const id of acked) {
      const j = await until(
        `${id} finished`,
        async () => {
          const info = await client.get(id);
          return ['JOB_STATE_SUCCEEDED', 'JOB_STATE_FAILED', 'JOB_STATE_KILLED'].includes(info.state) ? info : undefined;
        },
        60_000,
        250,
      );
      expect(j.state, `${id}: ${j.message}`).to.equal('JOB_STATE_SUCCEEDED');
    }
    if (errors > 0) process.stderr.write(`      (${errors} submit calls failed and were retried)\n`);
  });

  // ------------------------------------------------------------------ (c)

  it('a leader SIGSTOPped past its lease, then SIGCONTed, issues nothing any agent accepts', async () => {
    const { jobId, out, pids } = await startGated('wc-stop');
    const old = await ha!.waitForLeader();
    const takeoverProblems: string[] = [];
    ha!.kill(old.master, 'SIGSTOP');
    let resumed = false;
    try {
      const next = await ha!.waitForLeader({ notPids: [old.master.pid], afterEpoch: old.epoch, timeoutMs: 30_000 });
      const recovery = await ha!.waitForRecovery(next.master, next.epoch, 30_000);
      // Well past the old leader's lease by now; let the new leader settle, then look at the agents.
      await sleep(1000);
      const before = await ha!.agentStates();
      await expectUnchanged(pids, 'after the takeover');
      // A frozen leader should be as good as a dead one: the agents and the AM should have moved to
      // the new leader and reported to it. Checked at the end, so the checks of the old leader's
      // return below run either way.
      if (Number(recovery.agentsMissing) > 0 || Number(recovery.appsMissing) > 0) {
        takeoverProblems.push(
          `the new leader's aggregation missed ${String(recovery.agentsMissing)} agents and ${String(recovery.appsMissing)} apps (they kept calling the stopped leader)`,
        );
      }
      const behind = before.filter((b) => b.state.epoch !== next.epoch).map((b) => `${b.agent.nodeId} at epoch ${b.state.epoch}`);
      if (behind.length) takeoverProblems.push(`before the old leader resumed, agents had not moved to epoch ${next.epoch}: ${behind.join(', ')}`);

      const runningBefore = new Map((await workers()).filter((w) => w.state === 'WORKER_STATE_RUNNING').map((w) => [key(w), w.pid] as const));
      ha!.kill(old.master, 'SIGCONT');
      resumed = true;
      await old.master.log.waitFor((r) => r.msg === 'stepped down' && r.pid === old.master.pid, {
        what: '"stepped down" from the old leader',
        timeoutMs: 20_000,
      });
      await sleep(3000);

      const after = await ha!.agentStates();
      expect(after.map((a) => a.agent.nodeId)).to.deep.equal(before.map((a) => a.agent.nodeId));
      for (const { agent, state } of after) {
        expect(state.epoch, `${agent.nodeId} accepted only the new leader's epoch`).to.equal(next.epoch);
        const was = before.find((b) => b.agent.nodeId === agent.nodeId)!.state;
        const grants = (s: typeof state) => s.grants.map((g) => `${g.appId}/${g.suId}=${g.slots}`).sort();
        expect(grants(state), `${agent.nodeId} grants unchanged`).to.deep.equal(grants(was));
      }
      for (const w of await workers()) if (w.appId === jobId) expect(w.state, `${key(w)} was not killed`).to.not.equal('WORKER_STATE_KILLED');
      await expectUnchanged(runningBefore, 'every worker that ran before SIGCONT');
      await expectUnchanged(pids, 'after SIGCONT of the old leader');
      expect(ha!.leader()?.master.pid, 'the new leader still leads').to.equal(next.master.pid);
      // The deposed leader stays up as a standby: same process, campaigning again, no crash.
      expect(isAlive(old.master.pid), 'the deposed leader is still running').to.equal(true);
      const tail = new LogTail(old.master.logFile, ['stepped down', 'campaigning', 'unhandled rejection (a bug); exiting']);
      await tail.waitFor(
        (r) =>
          r.pid === old.master.pid &&
          r.msg === 'campaigning' &&
          r.timeMs >= (tail.last((x) => x.pid === old.master.pid && x.msg === 'stepped down')?.timeMs ?? Infinity),
        {
          what: '"campaigning" again after stepping down',
          timeoutMs: 20_000,
        },
      );
      expect(
        tail.records.filter((r) => r.pid === old.master.pid && r.msg.includes('unhandled')),
        'no unhandled error',
      ).to.deep.equal([]);
    } finally {
      if (!resumed) ha!.kill(old.master, 'SIGCONT');
      writeFileSync(join(out, 'release'), '');
    }
    const end = await finalState(jobId);
    expect(end.state, end.message).to.equal('JOB_STATE_SUCCEEDED');
    await expectCorrectCounts(jobId);
    expectNoRetries(await client.get(jobId));
    expect(takeoverProblems, 'while the old leader was stopped').to.deep.equal([]);
    // The deposed leader is a standby now: with the other masters killed, the same process leads.
    const others = ha!.masters.filter((m) => m.pid !== old.master.pid && isAlive(m.pid));
    for (const m of others) ha!.kill(m, 'SIGKILL');
    const again = await ha!.waitForLeader({ notPids: others.map((m) => m.pid), timeoutMs: 60_000 });
    expect(again.master.pid, 'the once-deposed leader takes over at the next kill').to.equal(old.master.pid);
    await ha!.waitForRecovery(again.master, again.epoch, 30_000);
  });
});
