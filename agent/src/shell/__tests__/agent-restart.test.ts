/**
 * Agent failover with real processes: the agent binary (`node dist/shell/main.js`) is killed with
 * kill -9 and started again on the same work dir. Its workers keep running meanwhile (own process
 * groups); the restarted agent re-adopts the live ones with the same pids, reports the real exit
 * code of one that ended while it was down (to GetAgentState and to the AM), never adopts a reused
 * pid, and follows the master's grant table when it is reachable or its checkpoint when not.
 */
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { res } from '@fuxi/common';
import { loadFuxiProto, type Grant, type WorkerPlan, type WorkerStatus__Output } from '@fuxi/proto';
import { connect, RpcError } from '@fuxi/rpc';
import { removeAgentGroups } from '../cgroups.js';
import { Agent } from '../agent.js';
import { LevelCheckpoint, MemoryCheckpoint } from '../checkpoint.js';
import { resolveConfig } from '../config.js';
import { readBootId, readStartTime, workerDir } from '../process-driver.js';
import type { WorkerEntry } from '../../core/agent-core.js';
import { emptyDelta } from '../../core/state-delta.js';
import { AgentProcess, FakeAm, FakeMaster, waitFor } from './restart-fakes.js';
import { alive, AM_TOKEN, AM_TOKEN_HASH, removeWorkDir } from './helpers.js';

const proto = loadFuxiProto();
const SLOT = { cpuMilli: 500, memoryMb: 256 };

function plan(workerId: string, argv: string[], instance = 0): WorkerPlan {
  return { workerId, suId: 'map', task: 'map', instance, attempt: 1, command: { argv }, resource: SLOT };
}

const byId = (ws: WorkerStatus__Output[]) => Object.fromEntries(ws.map((w) => [w.workerId, w]));

describe('Agent restart after kill -9 (agent binary as a child process, real workers)', function () {
  this.timeout(60_000);
  let master: FakeMaster;
  let am: FakeAm;
  let workDir: string;
  const agents: AgentProcess[] = [];
  /** Every worker / helper process group started, killed in afterEach. */
  const pids: number[] = [];

  function startAgent(extra: string[] = []): Promise<AgentProcess> {
    const a = new AgentProcess([
      '--master',
      master.address,
      '--node-id',
      'node-r',
      '--cpu',
      '4',
      '--memory',
      '4Gi',
      '--listen',
      '127.0.0.1:0',
      '--work-dir',
      workDir,
      '--stop-grace-ms',
      '300',
      '--log-level',
      'info',
      // The fake master and AM of this test serve plaintext.
      '--insecure',
      ...extra,
    ]);
    agents.push(a);
    return a.ready();
  }

  /** Sets the master's table and pushes it to the agent as the master would (UpdateGrants). */
  async function grant(a: AgentProcess, seq: string, grants: Grant[]): Promise<void> {
    master.seq = seq;
    master.grants = grants;
    const c = connect(proto.AgentService, a.address, { token: AM_TOKEN });
    try {
      // A push is taken only under an epoch the master's answer confirmed: wait for the registration.
      for (let t0 = Date.now(); (await c.GetAgentState({})).epoch !== master.epoch;) {
        if (Date.now() - t0 > 10_000) throw new Error('timed out waiting for the registration answer');
        await new Promise((r) => setTimeout(r, 50));
      }
      const r = await c.UpdateGrants({ epoch: master.epoch, seq, full: true, grants });
      expect(r.appliedSeq).to.equal(seq);
    } finally {
      c.close();
    }
  }

  async function startWorkers(a: AgentProcess, plans: WorkerPlan[], amAttempt = 1): Promise<WorkerStatus__Output[]> {
    const c = connect(proto.AgentService, a.address, { token: AM_TOKEN });
    try {
      const r = await c.StartWorkers({ appId: 'app1', amAttempt, amAddress: am.address, plans });
      for (const w of r.workers) if (w.pid > 0) pids.push(w.pid);
      return r.workers;
    } finally {
      c.close();
    }
  }

  async function state(a: AgentProcess) {
    const c = connect(proto.AgentService, a.address, { token: AM_TOKEN });
    try {
      return await c.GetAgentState({});
    } finally {
      c.close();
    }
  }

  beforeEach(async () => {
    workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'fuxi-agent-restart-'));
    master = await new FakeMaster('3').start();
    am = await new FakeAm().start();
  });

  afterEach(async () => {
    for (const a of agents.splice(0)) await a.crash().catch(() => {});
    for (const pid of pids.splice(0)) {
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
    await master.stop();
    await am.stop();
    // The worker cgroups of this agent (every process is gone by now).
    await removeAgentGroups('node-r', workDir);
    removeWorkDir(workDir);
  });

  it('re-adopts the live workers with the same pids and reports the exit code 7 of the one that ended while it was down', async () => {
    const a1 = await startAgent();
    await waitFor(() => master.heartbeats.length >= 1, 10_000, 'heartbeats');
    await grant(a1, '1', [{ appId: 'app1', suId: 'map', slots: 3, resource: SLOT, amAttempt: 1, amTokenHash: AM_TOKEN_HASH }]);
    const started = await startWorkers(a1, [
      plan('long-0', ['sleep', '30'], 0),
      plan('long-1', ['sleep', '30'], 1),
      plan('exit-7', ['sh', '-c', 'sleep 1; exit 7'], 2),
    ]);
    expect(started.map((w) => [w.workerId, w.state])).to.deep.equal([
      ['long-0', 'WORKER_STATE_RUNNING'],
      ['long-1', 'WORKER_STATE_RUNNING'],
      ['exit-7', 'WORKER_STATE_RUNNING'],
    ]);
    const pid = Object.fromEntries(started.map((w) => [w.workerId, w.pid]));

    await a1.crash();
    // The worker ends while no agent runs; its wrapper records the exit code.
    const exitFile = path.join(workerDir(workDir, 'app1', 'exit-7'), 'exit');
    await waitFor(() => fs.existsSync(exitFile), 5000, 'the exit file of exit-7');
    expect(fs.readFileSync(exitFile, 'utf8').trim()).to.equal('7');
    // The wrapper exits just after writing the file.
    await waitFor(() => !alive(pid['exit-7']!), 5000, 'the exit-7 wrapper gone');
    expect([alive(pid['long-0']!), alive(pid['long-1']!)]).to.deep.equal([true, true]);

    const t0 = Date.now();
    const eventsBefore = am.events.length;
    // Before the crash a heartbeat may have crossed the first grants (under load): only the restart counts.
    const fullTablesBefore = master.fullTablesSent;
    const a2 = await startAgent();
    await waitFor(() => master.heartbeatsSince(t0).length >= 1, 10_000, 'the first heartbeat after the restart');
    const firstHb = master.heartbeatsSince(t0)[0]!;
    const restored = a2.log('agent ready')?.restored as { adopted: number; ended: number; ms: number } | undefined;
    expect(restored).to.include({ adopted: 2, ended: 1 });
    const timing = { readyMs: a2.readyAt - t0, firstHeartbeatMs: firstHb.at - t0, restoreMs: restored?.ms };
    console.log(`      restart-to-ready (spawn of the agent binary -> workers re-adopted / first heartbeat): ${JSON.stringify(timing)}`);
    expect(timing.firstHeartbeatMs).to.be.lessThan(5000);

    // The agent comes back where it was: epoch 3, grant seq 1, 2 slots in use.
    const reg = master.registrations[master.registrations.length - 1]!;
    expect(reg.at).to.be.at.least(t0);
    expect(reg.req.epochSeen).to.equal('3');
    expect([firstHb.req.epoch, firstHb.req.grantSeq, firstHb.req.used?.cpuMilli, firstHb.req.workers?.running]).to.deep.equal(['3', '1', 1000, 2]);
    expect(master.fullTablesSent - fullTablesBefore).to.equal(0); // the master accepted our (epoch, seq)

    const s = await state(a2);
    expect([s.epoch, s.grantSeq]).to.deep.equal(['3', '1']);
    expect(s.grants.map((g) => [g.appId, g.suId, g.slots, g.amAttempt])).to.deep.equal([['app1', 'map', 3, 1]]);
    const ws = byId(s.workers);
    expect([ws['long-0']?.state, ws['long-0']?.pid]).to.deep.equal(['WORKER_STATE_RUNNING', pid['long-0']]);
    expect([ws['long-1']?.state, ws['long-1']?.pid]).to.deep.equal(['WORKER_STATE_RUNNING', pid['long-1']]);
    expect([ws['exit-7']?.state, ws['exit-7']?.exitCode]).to.deep.equal(['WORKER_STATE_FAILED', 7]);
    expect(ws['exit-7']?.message).to.match(/exit code 7 \(ended while the agent was down\)/);
    expect(s.used).to.deep.equal({ cpuMilli: 1000, memoryMb: 512 });

    // The AM hears of it: exit code 7, and that the other two still run.
    await waitFor(() => am.events.length >= eventsBefore + 3, 5000, 'worker events after the restart');
    const after = am.events.slice(eventsBefore).map((e) => e.event);
    const ev7 = after.find((e) => e.workerId === 'exit-7');
    expect([ev7?.state, ev7?.exitCode, ev7?.nodeId]).to.deep.equal(['WORKER_STATE_FAILED', 7, 'node-r']);
    expect(
      after
        .filter((e) => e.workerId.startsWith('long-'))
        .map((e) => [e.workerId, e.state, e.pid])
        .sort(),
    ).to.deep.equal([
      ['long-0', 'WORKER_STATE_RUNNING', pid['long-0']],
      ['long-1', 'WORKER_STATE_RUNNING', pid['long-1']],
    ]);

    // The re-adopted workers are the agent's again: a stop kills the group, the end is noticed
    // (the agent is not their parent: it polls) and reported.
    const c = connect(proto.AgentService, a2.address, { token: AM_TOKEN });
    await c.StopWorkers({ appId: 'app1', workerIds: ['long-1'], amAttempt: 1, reason: 'test stop' });
    c.close();
    await waitFor(() => !alive(pid['long-1']!), 5000, 'long-1 to be killed');
    await waitFor(() => am.eventsOf('long-1').some((e) => e.state === 'WORKER_STATE_KILLED'), 5000, 'the KILLED event');
    expect(byId((await state(a2)).workers)['long-1']?.state).to.equal('WORKER_STATE_KILLED');
    // Its slot is free again: a new plan starts at once.
    const more = await startWorkers(a2, [plan('long-2', ['sleep', '30'], 3)]);
    expect(more[0]?.state).to.equal('WORKER_STATE_RUNNING');
    expect(alive(pid['long-0']!)).to.equal(true);
  });

  it('re-adopted workers that exit after the restart are reported with their real exit code', async () => {
    const a1 = await startAgent();
    await grant(a1, '1', [{ appId: 'app1', suId: 'map', slots: 2, resource: SLOT, amAttempt: 1, amTokenHash: AM_TOKEN_HASH }]);
    const [w] = await startWorkers(a1, [plan('late-5', ['sh', '-c', 'sleep 2; exit 5'])]);
    await a1.crash();
    const a2 = await startAgent();
    expect(byId((await state(a2)).workers)['late-5']).to.include({ state: 'WORKER_STATE_RUNNING', pid: w!.pid });
    await waitFor(() => am.eventsOf('late-5').some((e) => e.state === 'WORKER_STATE_FAILED'), 10_000, 'the FAILED event of late-5');
    expect(am.eventsOf('late-5').find((e) => e.state === 'WORKER_STATE_FAILED')?.exitCode).to.equal(5);
    expect(byId((await state(a2)).workers)['late-5']).to.include({ state: 'WORKER_STATE_FAILED', exitCode: 5 });
  });

  it('never adopts a reused pid: a live process whose start time differs is left alone and the worker is FAILED', async () => {
    // A live process that happens to have the pid the registry names (as after pid reuse).
    const stranger = spawn('sleep', ['30'], { detached: true, stdio: 'ignore' });
    const spid = stranger.pid!;
    pids.push(spid);
    await waitFor(() => readStartTime(spid) !== '', 2000, 'the stranger to run');
    const realStart = readStartTime(spid);
    // The registry of an agent that ran two workers under that pid with another start time; one of
    // them was being stopped (a kill would hit the stranger if the pid were trusted).
    const cp = await LevelCheckpoint.open(path.join(workDir, 'checkpoint'));
    const entry = (workerId: string, order: number, stopReason = ''): WorkerEntry => ({
      workerId,
      appId: 'app1',
      suId: 'map',
      task: 'map',
      instance: order,
      attempt: 1,
      amAttempt: 1,
      amAddress: am.address,
      nodeId: 'node-r',
      command: { argv: ['sleep', '30'], env: {}, cwd: '' },
      resource: res(500, 256),
      state: 'RUNNING',
      pid: spid,
      startTime: String(Number(realStart) - 100),
      bootId: readBootId(),
      exitCode: null,
      signal: null,
      message: stopReason,
      acceptedAtMs: Date.now() - 60_000,
      startedAtMs: Date.now() - 60_000,
      finishedAtMs: 0,
      stopReason,
      order,
      startOrder: order,
    });
    await cp.write({
      ...emptyDelta(),
      meta: { nodeId: 'node-r', epoch: '3', grantEpoch: '3', grantSeq: '1' },
      putGrants: [{ appId: 'app1', suId: 'map', slots: 2, resource: res(500, 256), amAttempt: 1, amTokenHash: AM_TOKEN_HASH }],
      putApps: [{ appId: 'app1', amAttempt: 1, amAddress: am.address }],
      putWorkers: [entry('reused', 1), entry('reused-stopping', 2, 'speculation lost')],
    });
    await cp.close();
    master.seq = '1';
    master.grants = [{ appId: 'app1', suId: 'map', slots: 2, resource: SLOT, amAttempt: 1, amTokenHash: AM_TOKEN_HASH }];

    const a = await startAgent();
    expect(a.log('agent ready')?.restored).to.include({ adopted: 0, ended: 2 });
    const ws = byId((await state(a)).workers);
    expect(ws.reused).to.include({ state: 'WORKER_STATE_FAILED', exitCode: -1 });
    expect(ws.reused?.message).to.match(/ended while the agent was down/);
    expect(ws['reused-stopping']).to.include({ state: 'WORKER_STATE_KILLED' });
    await waitFor(() => am.eventsOf('reused').length > 0, 5000, 'the FAILED event');
    expect(am.eventsOf('reused')[0]?.state).to.equal('WORKER_STATE_FAILED');
    await new Promise((r) => setTimeout(r, 700)); // a poll period or more: nothing watches or kills it
    expect(alive(spid)).to.equal(true);
    expect(readStartTime(spid)).to.equal(realStart);
    // Both slots are free: nothing is accounted for the stranger.
    expect((await state(a)).used).to.deep.equal({ cpuMilli: 0, memoryMb: 0 });
  });

  it("follows the master's grant table when it changed while the agent was down, and keeps the AM attempt bar", async () => {
    const a1 = await startAgent();
    await grant(a1, '1', [
      { appId: 'app1', suId: 'map', slots: 2, resource: SLOT, amAttempt: 2, amTokenHash: AM_TOKEN_HASH },
      { appId: 'app2', suId: 'x', slots: 1, resource: SLOT, amAttempt: 1, amTokenHash: AM_TOKEN_HASH },
    ]);
    const [w] = await startWorkers(a1, [plan('keep', ['sleep', '30'])], 2);
    await a1.crash();
    // Meanwhile the master revoked app2's grant (seq 2).
    master.seq = '2';
    master.grants = [{ appId: 'app1', suId: 'map', slots: 2, resource: SLOT, amAttempt: 2, amTokenHash: AM_TOKEN_HASH }];
    const a2 = await startAgent();
    await waitFor(() => master.fullTablesSent >= 1, 10_000, 'the full table');
    await waitFor(() => master.heartbeats.some((h) => h.req.grantSeq === '2'), 10_000, 'a heartbeat with the new seq');
    const s = await state(a2);
    expect(s.grantSeq).to.equal('2');
    expect(s.grants.map((g) => g.appId)).to.deep.equal(['app1']);
    expect(byId(s.workers).keep).to.include({ state: 'WORKER_STATE_RUNNING', pid: w!.pid });
    // AM attempt 1 was fenced before the crash (grant am_attempt 2) and still is.
    let err: unknown;
    try {
      await startWorkers(a2, [plan('stale', ['sleep', '1'])], 1);
    } catch (e) {
      err = e;
    }
    expect(err).to.be.instanceOf(RpcError);
    expect((err as RpcError).code).to.equal('FAILED_PRECONDITION');
    expect((err as Error).message).to.match(/am attempt/);
    expect(a2.log('grant table confirmed by the master')).to.not.equal(undefined);
  });

  it("runs from the checkpoint's grants when the master cannot be reached (Table 3 row 12: From Checkpoint)", async () => {
    const a1 = await startAgent();
    await grant(a1, '1', [{ appId: 'app1', suId: 'map', slots: 2, resource: SLOT, amAttempt: 1, amTokenHash: AM_TOKEN_HASH }]);
    const [w] = await startWorkers(a1, [plan('one', ['sleep', '30'])]);
    await a1.crash();
    master.down = true; // failing over too: no leader
    const t0 = Date.now();
    const a2 = await startAgent(['--restore-grant-wait-ms', '600']);
    expect(byId((await state(a2)).workers).one).to.include({ state: 'WORKER_STATE_RUNNING', pid: w!.pid });
    // New plans wait for the grant table to be confirmed, then run on the checkpoint's grant.
    const r = await startWorkers(a2, [plan('two', ['sleep', '30'], 1), plan('three', ['sleep', '30'], 2)]);
    expect(r.map((x) => x.state)).to.deep.equal(['WORKER_STATE_PENDING', 'WORKER_STATE_PENDING']);
    await waitFor(() => byId(am.events.map((e) => e.event)).two?.state === 'WORKER_STATE_RUNNING', 10_000, 'two to start from the checkpoint grant');
    expect(Date.now() - t0).to.be.at.least(600);
    const s = await state(a2);
    const ws = byId(s.workers);
    expect(ws.two?.state).to.equal('WORKER_STATE_RUNNING');
    pids.push(ws.two!.pid);
    expect(ws.three?.state).to.equal('WORKER_STATE_PENDING'); // 2 slots: one and two
    expect(a2.lines.some((l) => l.line.msg === 'the master did not confirm the grant table in time: running from the checkpoint grants')).to.equal(true);
    // The master comes back: heartbeats carry the checkpoint's (epoch, seq), and it agrees.
    master.down = false;
    await waitFor(() => master.heartbeats.length > 0 && master.heartbeats[master.heartbeats.length - 1]!.at > t0, 10_000, 'heartbeats once the master is back');
    const hb = master.heartbeats[master.heartbeats.length - 1]!.req;
    expect([hb.epoch, hb.grantSeq]).to.deep.equal(['3', '1']);
  });
});

describe('Agent checkpoint writes (in-process agent, in-memory checkpoint, real workers)', function () {
  this.timeout(30_000);
  let master: FakeMaster;
  let am: FakeAm;
  let workDir: string;
  let agent: Agent | undefined;
  const pids: number[] = [];

  function newAgent(cp: MemoryCheckpoint): Agent {
    const cfg = resolveConfig({ master: master.address, nodeId: 'node-m', cpu: '2', memory: '1Gi', workDir, stopGraceMs: 300, restoreGrantWaitMs: 5000 }, {});
    agent = new Agent(cfg, { checkpoint: cp, tickMs: 100 });
    return agent;
  }

  /** A started agent on `cp`, registered, holding `slots` map slots of app1 (AM attempt 1), and an AM's client of it. */
  async function grantedAgent(cp: MemoryCheckpoint, slots: number) {
    const a = newAgent(cp);
    await a.start();
    await waitFor(() => a.core.epochSeen === '5', 10_000, 'the registration answer');
    const c = connect(proto.AgentService, a.address, { token: AM_TOKEN });
    await c.UpdateGrants({
      epoch: '5',
      seq: '1',
      full: true,
      grants: [{ appId: 'app1', suId: 'map', slots, resource: SLOT, amAttempt: 1, amTokenHash: AM_TOKEN_HASH }],
    });
    return { a, c };
  }

  beforeEach(async () => {
    workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'fuxi-agent-cpw-'));
    master = await new FakeMaster('5').start();
    am = await new FakeAm().start();
  });

  afterEach(async () => {
    await agent?.stop();
    agent = undefined;
    for (const pid of pids.splice(0)) {
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
    await master.stop();
    await am.stop();
    // The worker cgroups of this agent (every process is gone by now).
    await removeAgentGroups('node-m', workDir);
    removeWorkDir(workDir);
  });

  it('a started worker is in the registry (pid, start time, boot id) before StartWorkers answers; grants with their (epoch, seq) before UpdateGrants does', async () => {
    const cp = new MemoryCheckpoint();
    const a = newAgent(cp);
    await a.start();
    await waitFor(() => a.core.epochSeen === '5', 10_000, 'the registration answer');
    const c = connect(proto.AgentService, a.address, { token: AM_TOKEN });
    const g = await c.UpdateGrants({
      epoch: '5',
      seq: '4',
      full: true,
      grants: [{ appId: 'app1', suId: 'map', slots: 1, resource: SLOT, amAttempt: 3, amTokenHash: AM_TOKEN_HASH }],
    });
    expect(g.appliedSeq).to.equal('4');
    let saved = await cp.reopen().load();
    expect(saved.meta).to.deep.equal({ nodeId: 'node-m', epoch: '5', grantEpoch: '5', grantSeq: '4' });
    expect(saved.grants).to.deep.equal([{ appId: 'app1', suId: 'map', slots: 1, resource: SLOT, amAttempt: 3, amTokenHash: AM_TOKEN_HASH }]);
    expect(saved.apps).to.deep.equal([{ appId: 'app1', amAttempt: 3, amAddress: '' }]);
    const r = await c.StartWorkers({ appId: 'app1', amAttempt: 3, amAddress: am.address, plans: [plan('w1', ['sleep', '30'])] });
    c.close();
    pids.push(r.workers[0]!.pid);
    saved = await cp.reopen().load();
    const w = saved.workers[0]!;
    expect([w.workerId, w.state, w.pid, w.startTime, w.bootId, w.amAttempt, w.amAddress]).to.deep.equal([
      'w1',
      'RUNNING',
      r.workers[0]!.pid,
      readStartTime(r.workers[0]!.pid),
      readBootId(),
      3,
      am.address,
    ]);
    expect(w.command.argv).to.deep.equal(['sleep', '30']);
    expect(saved.apps).to.deep.equal([{ appId: 'app1', amAttempt: 3, amAddress: am.address }]);
  });

  it('never spawns a worker it could not register: the write fails -> UNAVAILABLE, the plan REJECTED, no process; later writes carry it', async () => {
    const cp = new MemoryCheckpoint();
    const { a, c } = await grantedAgent(cp, 2);
    const writes = cp.writes;
    cp.failWrites = 1;
    let err: unknown;
    try {
      await c.StartWorkers({ appId: 'app1', amAttempt: 1, amAddress: am.address, plans: [plan('w1', ['sleep', '30'])] });
    } catch (e) {
      err = e;
    }
    expect((err as RpcError).code).to.equal('UNAVAILABLE');
    expect((err as Error).message).to.match(/local checkpoint/);
    const w1 = a.core.worker('app1', 'w1')!;
    expect([w1.state, w1.pid]).to.deep.equal(['REJECTED', 0]);
    expect(w1.message).to.match(/checkpoint could not be written/);
    expect(fs.existsSync(workerDir(workDir, 'app1', 'w1'))).to.equal(false);
    // The AM re-plans (a new attempt): it runs, and the checkpoint holds both outcomes.
    const r = await c.StartWorkers({ appId: 'app1', amAttempt: 1, amAddress: am.address, plans: [plan('w1b', ['sleep', '30'])] });
    c.close();
    pids.push(r.workers[0]!.pid);
    expect(r.workers[0]?.state).to.equal('WORKER_STATE_RUNNING');
    expect(cp.writes).to.be.greaterThan(writes);
    const saved = await cp.reopen().load();
    expect(saved.workers.map((x) => [x.workerId, x.state, x.pid])).to.deep.equal([
      ['w1', 'REJECTED', 0],
      ['w1b', 'RUNNING', r.workers[0]!.pid],
    ]);
  });

  it('group commit: changes made while a write is in flight go out together, each call answered once its own are durable', async () => {
    /** A checkpoint whose writes take 100 ms (a slow disk). */
    class SlowCheckpoint extends MemoryCheckpoint {
      override async write(delta: Parameters<MemoryCheckpoint['write']>[0]): Promise<void> {
        await new Promise((r) => setTimeout(r, 100));
        return super.write(delta);
      }
    }
    const cp = new SlowCheckpoint();
    const { c } = await grantedAgent(cp, 3);
    const writes = cp.writes;
    const ids = ['g1', 'g2', 'g3']; // what the node's 2 cores and 1 GiB hold
    const answers = await Promise.all(
      ids.map((id, i) => c.StartWorkers({ appId: 'app1', amAttempt: 1, amAddress: am.address, plans: [plan(id, ['sleep', '30'], i)] })),
    );
    c.close();
    for (const r of answers) pids.push(r.workers[0]!.pid);
    expect(answers.map((r) => r.workers[0]?.state)).to.deep.equal(ids.map(() => 'WORKER_STATE_RUNNING'));
    // Three calls, each a registration and a start to write: fewer batches than the 6 writes one per change would take.
    expect(cp.writes - writes).to.be.below(6);
    const saved = await cp.reopen().load();
    expect(saved.workers.map((w) => w.workerId).sort()).to.deep.equal(ids);
  });

  it('restarts in-process from the same checkpoint: the worker is re-adopted and its end is reported', async () => {
    const cp = new MemoryCheckpoint();
    const a1 = newAgent(cp);
    await a1.start();
    await waitFor(() => a1.core.epochSeen === '5', 10_000, 'the registration answer');
    const c = connect(proto.AgentService, a1.address, { token: AM_TOKEN });
    master.seq = '1';
    master.grants = [{ appId: 'app1', suId: 'map', slots: 1, resource: SLOT, amAttempt: 1, amTokenHash: AM_TOKEN_HASH }];
    await c.UpdateGrants({ epoch: '5', seq: '1', full: true, grants: master.grants });
    const r = await c.StartWorkers({ appId: 'app1', amAttempt: 1, amAddress: am.address, plans: [plan('w1', ['sh', '-c', 'sleep 1.5; exit 3'])] });
    c.close();
    const pid = r.workers[0]!.pid;
    pids.push(pid);
    await a1.stop(); // like a crash, for the registry: the worker keeps running
    const a2 = newAgent(cp.reopen());
    await a2.start();
    expect(a2.restored).to.include({ adopted: 1, ended: 0, grants: 1 });
    expect(a2.core.worker('app1', 'w1')).to.include({ state: 'RUNNING', pid });
    await waitFor(() => a2.core.worker('app1', 'w1')?.state === 'FAILED', 10_000, 'the re-adopted worker to end');
    expect(a2.core.worker('app1', 'w1')?.exitCode).to.equal(3);
    await waitFor(() => am.eventsOf('w1').some((e) => e.state === 'WORKER_STATE_FAILED' && e.exitCode === 3), 5000, 'the FAILED event');
    await waitFor(() => a2.msToFirstHeartbeat > 0, 5000, 'a heartbeat');
    expect(a2.core.startsHeld).to.equal(false);
  });
});
