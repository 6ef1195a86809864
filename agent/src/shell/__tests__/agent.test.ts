import { expect } from 'chai';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { nullLogger } from '@fuxi/common';
import {
  loadFuxiProto,
  type HeartbeatRequest__Output,
  type HeartbeatResponse,
  type RegisterAgentRequest__Output,
  type WorkerEventsRequest__Output,
  type WorkerStatus__Output,
} from '@fuxi/proto';
import { connect, RpcError, type RunningServer } from '@fuxi/rpc';
import { removeAgentGroups } from '../cgroups.js';
import { Agent } from '../agent.js';
import { resolveConfig } from '../config.js';
import { alive, AM_TOKEN, AM_TOKEN_HASH, startFake, waitFor, removeWorkDir } from './helpers.js';

describe('Agent shell (in-process, fake master and AM)', function () {
  this.timeout(30_000);
  const proto = loadFuxiProto();
  let workDir: string;
  let master: RunningServer;
  let am: RunningServer;
  let agent: Agent;
  const registrations: RegisterAgentRequest__Output[] = [];
  const heartbeats: HeartbeatRequest__Output[] = [];
  const amEvents: WorkerStatus__Output[] = [];
  let nextHeartbeatReply: HeartbeatResponse | undefined;
  const pids: number[] = [];
  const slot = { cpuMilli: 100, memoryMb: 64 };

  const agentClient = () => connect(proto.AgentService, agent.address, { token: AM_TOKEN });
  const lastEvent = (workerId: string) => [...amEvents].reverse().find((e) => e.workerId === workerId);

  before(async () => {
    workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'fuxi-agent-shell-'));
    master = await startFake(proto, 'MasterService', {
      RegisterAgent: (req: RegisterAgentRequest__Output) => {
        registrations.push(req);
        return { epoch: '3', heartbeatIntervalMs: 100 };
      },
      Heartbeat: (req: HeartbeatRequest__Output): HeartbeatResponse => {
        heartbeats.push(req);
        const r = nextHeartbeatReply ?? { epoch: '3' };
        nextHeartbeatReply = undefined;
        return r;
      },
    });
    am = await startFake(proto, 'AppMasterService', {
      WorkerEvents: (req: WorkerEventsRequest__Output) => {
        amEvents.push(...req.events);
        return {};
      },
    });
    const cfg = resolveConfig({ master: master.address, nodeId: 'node-a', cpu: '2', memory: '1Gi', workDir, stopGraceMs: 500, pendingTimeoutMs: 20_000 }, {});
    agent = new Agent(cfg, { log: nullLogger, tickMs: 100 });
    await agent.start();
  });

  after(async () => {
    await agent?.stop();
    await master?.shutdown(100);
    await am?.shutdown(100);
    for (const pid of pids) {
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
    // The worker cgroups of this agent (every process is gone by now).
    await removeAgentGroups('node-a', workDir);
    removeWorkDir(workDir);
  });

  it('registers with the master and heartbeats', async () => {
    await waitFor(() => agent.registered && heartbeats.length >= 2);
    const reg = registrations[0];
    expect(reg?.node?.nodeId).to.equal('node-a');
    expect(reg?.node?.address).to.equal(agent.address);
    // 2 cores and 1 GiB, less what the AM host's own base holds back (50m, 96 MB).
    expect(reg?.node?.capacity).to.deep.equal({ cpuMilli: 1950, memoryMb: 928 });
    expect(reg?.node?.rack).to.equal('default');
    expect(reg?.node?.bootId).to.match(/^[0-9a-f-]{36}$/);
    const hb = heartbeats[heartbeats.length - 1];
    expect(hb?.nodeId).to.equal('node-a');
    expect(hb?.epoch).to.equal('3');
    expect(hb?.workers).to.deep.equal({ running: 0, pending: 0, finished: 0 });
  });

  it('starts a worker once both the plan and the grant are there, and pushes its events to the AM', async () => {
    const c = agentClient();
    const plan = (appId: string) => ({
      appId,
      amAttempt: 1,
      amAddress: am.address,
      plans: [{ workerId: `${appId}-w`, suId: 'map', task: 'map', instance: 0, attempt: 1, command: { argv: ['true'] }, resource: slot }],
    });
    // No grant of the app here at all: its AM token cannot be checked; after waiting 2 s for the
    // grant, UNAVAILABLE, and the AM retries.
    const t0 = Date.now();
    const early = await c.StartWorkers(plan('app0')).then(
      () => undefined,
      (e: unknown) => e as RpcError,
    );
    expect(early?.code).to.equal('UNAVAILABLE');
    expect(Date.now() - t0).to.be.at.least(1900);
    // A plan that comes just before its grant (the master sends both at once) waits for it.
    const before = c.StartWorkers(plan('app9'));
    await new Promise((r) => setTimeout(r, 200));
    await c.UpdateGrants({ epoch: '3', seq: '1', full: false, grants: [{ appId: 'app9', suId: 'map', slots: 1, resource: slot, amTokenHash: AM_TOKEN_HASH }] });
    expect((await before).workers.map((w) => w.workerId)).to.deep.equal(['app9-w']);
    await waitFor(() => lastEvent('app9-w')?.state === 'WORKER_STATE_SUCCEEDED');
    // The agent holds a grant of the app (another unit): a plan with its token waits for its own grant.
    await c.UpdateGrants({
      epoch: '3',
      seq: '2',
      full: false,
      grants: [{ appId: 'app1', suId: 'reduce', slots: 1, resource: slot, amTokenHash: AM_TOKEN_HASH }],
    });
    const start = await c.StartWorkers({
      appId: 'app1',
      amAttempt: 1,
      amAddress: am.address,
      plans: [
        {
          workerId: 'app1-map-0-1',
          suId: 'map',
          task: 'map',
          instance: 0,
          attempt: 1,
          command: { argv: ['sh', '-c', 'echo hello-${instance}-$FUXI_NODE_ID'] },
          resource: slot,
        },
      ],
    });
    expect(start.workers[0]?.state).to.equal('WORKER_STATE_PENDING');
    const g = await c.UpdateGrants({
      epoch: '3',
      seq: '3',
      full: false,
      grants: [{ appId: 'app1', suId: 'map', slots: 1, resource: slot, amTokenHash: AM_TOKEN_HASH }],
    });
    expect(g.appliedSeq).to.equal('3');
    await waitFor(() => lastEvent('app1-map-0-1')?.state === 'WORKER_STATE_SUCCEEDED');
    const ev = lastEvent('app1-map-0-1');
    expect(ev?.nodeId).to.equal('node-a');
    expect(ev?.exitCode).to.equal(0);
    expect(Number(ev?.finishedAtMs)).to.be.greaterThan(0);
    let text = '';
    for await (const chunk of c.stream.ReadLog({ appId: 'app1', task: 'map', instance: 0 })) text += Buffer.from(chunk.data).toString();
    expect(text).to.equal('hello-0-node-a\n');
    const list = await c.ListWorkers({ appId: 'app1' });
    expect(list.workers.map((w) => w.state)).to.deep.equal(['WORKER_STATE_SUCCEEDED']);
    c.close();
  });

  it('answers ReadLog for an unknown instance with NOT_FOUND', async () => {
    const c = agentClient();
    let err: unknown;
    try {
      for await (const _ of c.stream.ReadLog({ appId: 'app1', task: 'map', instance: 99 })) void _;
    } catch (e) {
      err = e;
    }
    expect(err).to.be.instanceOf(RpcError);
    expect((err as RpcError).code).to.equal('NOT_FOUND');
    c.close();
  });

  it('rejects a stale master epoch with FAILED_PRECONDITION and a seq gap with the applied seq', async () => {
    const c = agentClient();
    let err: unknown;
    try {
      await c.UpdateGrants({ epoch: '2', seq: '2', full: true, grants: [] });
    } catch (e) {
      err = e;
    }
    expect((err as RpcError).code).to.equal('FAILED_PRECONDITION');
    const gap = await c.UpdateGrants({ epoch: '3', seq: '9', full: false, grants: [] });
    expect(gap.appliedSeq).to.equal('3');
    c.close();
  });

  it('applies the full grant table from a heartbeat reply', async () => {
    nextHeartbeatReply = {
      epoch: '3',
      fullGrants: true,
      grantSeq: '7',
      grants: [{ appId: 'app1', suId: 'map', slots: 2, resource: slot, amTokenHash: AM_TOKEN_HASH }],
    };
    await waitFor(() => agent.core.appliedGrantSeq === '7');
    await waitFor(() => heartbeats[heartbeats.length - 1]?.grantSeq === '7');
    const c = agentClient();
    const s = await c.GetAgentState({});
    expect(s.grantSeq).to.equal('7');
    expect(s.epoch).to.equal('3');
    expect(s.grants.map((g) => g.slots)).to.deep.equal([2]);
    expect(s.node?.nodeId).to.equal('node-a');
    c.close();
  });

  it('follows a log until the worker ends; StopWorkers kills it and the AM hears KILLED', async () => {
    const c = agentClient();
    const start = await c.StartWorkers({
      appId: 'app1',
      amAttempt: 1,
      amAddress: am.address,
      plans: [
        {
          workerId: 'app1-map-1-1',
          suId: 'map',
          task: 'map',
          instance: 1,
          attempt: 1,
          command: { argv: ['sh', '-c', 'echo tick; exec sleep 60'] },
          resource: slot,
        },
      ],
    });
    expect(start.workers[0]?.state).to.equal('WORKER_STATE_RUNNING');
    const pid = start.workers[0]?.pid ?? 0;
    expect(pid).to.be.greaterThan(0);
    pids.push(pid);
    let text = '';
    const reading = (async () => {
      for await (const chunk of c.stream.ReadLog({ appId: 'app1', task: 'map', instance: 1, follow: true })) text += Buffer.from(chunk.data).toString();
    })();
    await waitFor(() => text === 'tick\n');
    const stop = await c.StopWorkers({ appId: 'app1', workerIds: ['app1-map-1-1'], amAttempt: 1, reason: 'not needed' });
    expect(stop.workers).to.have.length(1);
    await reading; // ends when the worker ends
    await waitFor(() => lastEvent('app1-map-1-1')?.state === 'WORKER_STATE_KILLED');
    expect(lastEvent('app1-map-1-1')?.message).to.equal('not needed');
    expect(alive(pid)).to.equal(false);
    c.close();
  });

  it('runs an AM process from the master and reports it in heartbeats, not as events', async () => {
    const c = agentClient();
    await c.UpdateGrants({
      epoch: '3',
      seq: '8',
      full: false,
      grants: [{ appId: 'app2', suId: '__am__', slots: 1, resource: slot, amTokenHash: AM_TOKEN_HASH }],
    });
    const r = await c.StartWorkers({
      appId: 'app2',
      amAttempt: 1,
      epoch: '3',
      plans: [{ workerId: 'app2-am-1', suId: '__am__', task: '__am__', command: { argv: ['sh', '-c', 'exit 4'] }, resource: slot }],
    });
    pids.push(r.workers[0]?.pid ?? 0);
    await waitFor(() => heartbeats.some((h) => h.amWorkers.some((w) => w.workerId === 'app2-am-1' && w.state === 'WORKER_STATE_FAILED' && w.exitCode === 4)));
    expect(amEvents.some((e) => e.appId === 'app2')).to.equal(false);
    c.close();
  });

  it('takes StartWorkers several in one Calls batch, each checked against its own token: a wrong one is refused alone', async () => {
    const c = agentClient();
    await c.UpdateGrants({
      epoch: '3',
      seq: '9',
      full: false,
      grants: [{ appId: 'app3', suId: 'map', slots: 2, resource: slot, amTokenHash: AM_TOKEN_HASH }],
    });
    const def = proto.AgentService.service;
    const entry = (workerId: string, token: string) => ({
      method: 'StartWorkers',
      token,
      route: '',
      request: def.StartWorkers.requestSerialize({
        appId: 'app3',
        amAttempt: 1,
        amAddress: am.address,
        plans: [{ workerId, suId: 'map', task: 'map', instance: 0, attempt: 1, command: { argv: ['true'] }, resource: slot }],
      }),
    });
    const res = await c.Calls({ calls: [entry('app3-w0', AM_TOKEN), entry('app3-w1', 'not-the-am-token')] });
    expect(res.results).to.have.length(2);
    expect(res.results[0]?.code).to.equal('');
    const started = def.StartWorkers.responseDeserialize(Buffer.from(res.results[0]!.response));
    expect(started.workers.map((w) => w.workerId)).to.deep.equal(['app3-w0']);
    expect(res.results[1]?.code).to.equal('PERMISSION_DENIED');
    expect(res.results[1]?.message).to.match(/current application master attempt/);
    await waitFor(() => lastEvent('app3-w0')?.state === 'WORKER_STATE_SUCCEEDED');
    expect((await c.ListWorkers({ appId: 'app3' })).workers.map((w) => w.workerId)).to.deep.equal(['app3-w0']);
    c.close();
  });

  it('leaves workers running when it stops', async () => {
    const c = agentClient();
    const r = await c.StartWorkers({
      appId: 'app1',
      amAttempt: 1,
      amAddress: am.address,
      plans: [{ workerId: 'app1-map-2-1', suId: 'map', task: 'map', instance: 2, attempt: 1, command: { argv: ['sleep', '60'] }, resource: slot }],
    });
    c.close();
    const pid = r.workers[0]?.pid ?? 0;
    expect(pid).to.be.greaterThan(0);
    pids.push(pid);
    await agent.stop();
    await new Promise((res) => setTimeout(res, 200));
    expect(alive(pid)).to.equal(true);
  });
});
