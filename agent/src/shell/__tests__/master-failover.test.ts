/**
 * The agent across master failovers, against fake masters on loopback (port 0): moving on from a
 * dead master, following a standby's redirect, reporting its full state to a new leader exactly
 * once, and ignoring a deposed master. Workers are never touched by any of it.
 */
import { expect } from 'chai';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { nullLogger, UnavailableError, type Logger } from '@fuxi/common';
import {
  loadFuxiProto,
  type HeartbeatRequest__Output,
  type HeartbeatResponse,
  type RegisterAgentRequest__Output,
  type RegisterAgentResponse,
  type ReportAgentStateRequest__Output,
} from '@fuxi/proto';
import { connect, implement, startServer, type RunningServer } from '@fuxi/rpc';
import { removeAgentGroups } from '../cgroups.js';
import { Agent } from '../agent.js';
import { resolveConfig } from '../config.js';
import { alive, AM_TOKEN, AM_TOKEN_HASH, waitFor, removeWorkDir } from './helpers.js';

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Records every log line (message and fields) at warn level and above, plus info messages. */
class RecordingLogger implements Logger {
  readonly lines: Array<{ level: string; msg: string; obj: object }> = [];
  debug(): void {}
  info(obj: object, msg = ''): void {
    this.lines.push({ level: 'info', msg, obj });
  }
  warn(obj: object, msg = ''): void {
    this.lines.push({ level: 'warn', msg, obj });
  }
  error(obj: object, msg = ''): void {
    this.lines.push({ level: 'error', msg, obj });
  }
  child(): Logger {
    return this;
  }
  has(level: string, re: RegExp): boolean {
    return this.lines.some((l) => l.level === level && re.test(l.msg));
  }
}

/**
 * A fake master with a given epoch. As leader it answers RegisterAgent / Heartbeat /
 * ReportAgentState (asking for a report while `wantReport` and none arrived); with `leader` set it
 * is a standby that redirects every call; with `down` set it answers UNAVAILABLE without a leader.
 */
class FakeMaster {
  server!: RunningServer;
  readonly registrations: RegisterAgentRequest__Output[] = [];
  readonly heartbeats: HeartbeatRequest__Output[] = [];
  readonly reports: ReportAgentStateRequest__Output[] = [];
  /** 'register' / 'heartbeat' / 'report', in arrival order. */
  readonly calls: string[] = [];
  standbyCalls = 0;
  leader = '';
  down = false;
  wantReport = false;
  /** Extra fields for the next heartbeat answer only. */
  nextHeartbeat: Partial<HeartbeatResponse> | undefined;
  /** Fields for every heartbeat answer (after `nextHeartbeat`). */
  everyHeartbeat: Partial<HeartbeatResponse> = {};

  constructor(public epoch: string) {}

  get address(): string {
    return this.server.address;
  }

  private gate(): void {
    if (this.down) throw new UnavailableError('no leader right now');
    if (this.leader) {
      this.standbyCalls++;
      throw new UnavailableError('not the leader', this.leader);
    }
  }

  async start(): Promise<this> {
    const proto = loadFuxiProto();
    const def = proto.MasterService.service;
    const impl: Record<string, unknown> = {};
    for (const name of Object.keys(def)) {
      impl[name] = () => {
        throw new UnavailableError(`${name} not implemented by the fake`);
      };
    }
    impl.RegisterAgent = (req: RegisterAgentRequest__Output): RegisterAgentResponse => {
      this.gate();
      this.registrations.push(req);
      this.calls.push('register');
      return { epoch: this.epoch, heartbeatIntervalMs: 100, reportState: this.wantReport && this.reports.length === 0 };
    };
    impl.Heartbeat = (req: HeartbeatRequest__Output): HeartbeatResponse => {
      this.gate();
      this.heartbeats.push(req);
      this.calls.push('heartbeat');
      const extra = this.nextHeartbeat ?? {};
      this.nextHeartbeat = undefined;
      return { epoch: this.epoch, reportState: this.wantReport && this.reports.length === 0, ...this.everyHeartbeat, ...extra };
    };
    impl.ReportAgentState = (req: ReportAgentStateRequest__Output) => {
      this.gate();
      this.reports.push(req);
      this.calls.push('report');
      return {};
    };
    this.server = await startServer({
      bind: '127.0.0.1:0',
      log: nullLogger,
      services: [{ name: 'fuxi.v1.MasterService', definition: def, handlers: implement(def, impl as never, nullLogger) }],
    });
    return this;
  }

  async stop(): Promise<void> {
    await this.server?.shutdown(100);
  }
}

describe('Agent shell across master failovers (fake masters on loopback)', function () {
  this.timeout(30_000);
  const proto = loadFuxiProto();
  const slot = { cpuMilli: 100, memoryMb: 64 };
  let masters: FakeMaster[] = [];
  let agent: Agent | undefined;
  let log: RecordingLogger;
  let workDir = '';
  const pids: number[] = [];

  async function startAgent(addresses: string[]): Promise<Agent> {
    workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'fuxi-agent-ha-'));
    log = new RecordingLogger();
    const cfg = resolveConfig(
      { master: addresses.join(','), nodeId: 'node-a', cpu: '2', memory: '1Gi', workDir, stopGraceMs: 500, pendingTimeoutMs: 20_000 },
      {},
    );
    agent = new Agent(cfg, { log, tickMs: 100, sendEvents: async () => {} });
    await agent.start();
    return agent;
  }

  async function fakeMaster(epoch: string): Promise<FakeMaster> {
    const m = await new FakeMaster(epoch).start();
    masters.push(m);
    return m;
  }

  /** Grants app1/map 2 slots (epoch, seq), runs one long worker and one that finishes; returns the long one's pid. */
  async function runWorkers(a: Agent, epoch: string, seq: string): Promise<number> {
    const c = connect(proto.AgentService, a.address, { token: AM_TOKEN });
    await c.UpdateGrants({ epoch, seq, full: true, grants: [{ appId: 'app1', suId: 'map', slots: 2, resource: slot, amTokenHash: AM_TOKEN_HASH }] });
    const r = await c.StartWorkers({
      appId: 'app1',
      amAttempt: 1,
      amAddress: '127.0.0.1:1',
      plans: [
        { workerId: 'map.0.1', suId: 'map', task: 'map', instance: 0, attempt: 1, command: { argv: ['sleep', '60'] }, resource: slot },
        { workerId: 'map.1.1', suId: 'map', task: 'map', instance: 1, attempt: 1, command: { argv: ['true'] }, resource: slot },
      ],
    });
    c.close();
    const pid = r.workers[0]?.pid ?? 0;
    expect(pid).to.be.greaterThan(0);
    pids.push(pid);
    await waitFor(() => a.core.worker('app1', 'map.1.1')?.state === 'SUCCEEDED', 10_000, 'the short worker to finish');
    return pid;
  }

  afterEach(async () => {
    await agent?.stop();
    agent = undefined;
    await Promise.all(masters.map((m) => m.stop()));
    masters = [];
    for (const pid of pids.splice(0)) {
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
    // The worker cgroups of this agent (every process is gone by now).
    if (workDir) await removeAgentGroups('node-a', workDir);
    if (workDir) removeWorkDir(workDir);
  });

  it('moves on to the second master when the first dies, reports its full state there exactly once, and keeps its workers', async () => {
    const m1 = await fakeMaster('3');
    const m2 = await fakeMaster('4');
    m2.wantReport = true;
    const a = await startAgent([m1.address, m2.address]);
    await waitFor(() => m1.heartbeats.length >= 2, 10_000, 'heartbeats to the first master');
    const pid = await runWorkers(a, '3', '7');

    await m1.stop();
    const down = Date.now();
    await waitFor(() => m2.heartbeats.length >= 1, 5_000, 'a heartbeat to the second master');
    // Interval 100 ms: within a couple of heartbeats (plus the 2 s deadline margin of a call).
    expect(Date.now() - down).to.be.lessThan(3_000);
    expect(m2.heartbeats[0]?.epoch).to.equal('3');
    expect(m2.heartbeats[0]?.grantSeq).to.equal('7');

    await waitFor(() => m2.reports.length === 1 && m2.heartbeats.length >= 8, 5_000, 'the report and more heartbeats');
    expect(m2.reports).to.have.length(1);
    const rep = m2.reports[0]!;
    expect(rep.nodeId).to.equal('node-a');
    expect(rep.epoch).to.equal('4');
    expect(rep.grantSeq).to.equal('7');
    expect(rep.grants.map((g) => [g.appId, g.suId, g.slots, g.resource?.cpuMilli])).to.deep.equal([['app1', 'map', 2, 100]]);
    expect(rep.workers.map((w) => [w.workerId, w.state, w.pid > 0]).sort()).to.deep.equal([
      ['map.0.1', 'WORKER_STATE_RUNNING', true],
      ['map.1.1', 'WORKER_STATE_SUCCEEDED', true],
    ]);
    // The first heartbeat there was answered "report your state": the report went out before the next one.
    expect(m2.calls.slice(0, 3)).to.deep.equal(['heartbeat', 'report', 'heartbeat']);
    // Heartbeats now carry the new epoch, and seq 0 in its numbering (the table is the old master's).
    const last = m2.heartbeats[m2.heartbeats.length - 1]!;
    expect([last.epoch, last.grantSeq]).to.deep.equal(['4', '0']);
    expect(a.core.epochSeen).to.equal('4');

    // The new master's full table (its own seq 1, below the old 7) applies.
    m2.nextHeartbeat = {
      fullGrants: true,
      grantSeq: '1',
      grants: [
        { appId: 'app1', suId: 'map', slots: 2, resource: slot, amTokenHash: AM_TOKEN_HASH },
        { appId: 'app3', suId: 'x', slots: 1, resource: slot, amTokenHash: AM_TOKEN_HASH },
      ],
    };
    await waitFor(() => a.core.appliedGrantEpoch === '4', 5_000, 'the new full table');
    expect(a.core.appliedGrantSeq).to.equal('1');
    expect(a.core.grantTable().map((g) => g.appId)).to.deep.equal(['app1', 'app3']);
    await waitFor(() => m2.heartbeats[m2.heartbeats.length - 1]?.grantSeq === '1', 5_000, 'a heartbeat with the new seq');
    expect(m2.reports).to.have.length(1);
    expect(alive(pid)).to.equal(true);
    expect(a.core.worker('app1', 'map.0.1')?.state).to.equal('RUNNING');
    expect(log.has('info', /full state reported/)).to.equal(true);
  });

  it('follows a standby redirect to the leader (the old leader stepped down)', async () => {
    const l1 = await fakeMaster('2');
    const l2 = await fakeMaster('3');
    const a = await startAgent([l1.address]); // only the first one configured: this is no rotation
    await waitFor(() => l1.heartbeats.length >= 1, 10_000, 'heartbeats to the first leader');
    l1.leader = l2.address;
    await waitFor(() => l2.heartbeats.length >= 3, 5_000, 'heartbeats to the new leader');
    expect(l1.standbyCalls).to.be.greaterThan(0);
    expect(a.core.epochSeen).to.equal('3');
    // A registration also follows the redirect.
    l2.nextHeartbeat = { reregister: true };
    await waitFor(() => l2.registrations.length === 1, 5_000, 're-registration with the new leader');
    expect(l2.registrations[0]?.epochSeen).to.equal('3');
    expect(log.has('info', /following master redirect/)).to.equal(true);
  });

  it('asks for registration again on reregister, then reports when the registration answer asks', async () => {
    const m = await fakeMaster('5');
    const a = await startAgent([m.address]);
    await waitFor(() => m.heartbeats.length >= 1, 10_000, 'heartbeats');
    const pid = await runWorkers(a, '5', '1');
    m.epoch = '6';
    m.wantReport = true;
    m.nextHeartbeat = { reregister: true };
    await waitFor(() => m.registrations.length === 2 && m.reports.length === 1, 5_000, 're-registration and report');
    await waitFor(() => m.heartbeats.filter((h) => h.epoch === '6').length >= 3, 5_000, 'heartbeats after it');
    expect(m.reports).to.have.length(1);
    expect(m.reports[0]?.epoch).to.equal('6');
    expect(m.reports[0]?.workers.map((w) => w.workerId).sort()).to.deep.equal(['map.0.1', 'map.1.1']);
    expect(alive(pid)).to.equal(true);
  });

  it('refuses a push from a master epoch no answer confirmed (a forged 2^63-1) and keeps serving the real master', async () => {
    const m = await fakeMaster('5');
    const a = await startAgent([m.address]);
    await waitFor(() => m.heartbeats.length >= 1, 10_000, 'heartbeats to the leader');
    const pid = await runWorkers(a, '5', '2');
    const c = connect(proto.AgentService, a.address, { token: AM_TOKEN });
    const forged = '9223372036854775807';
    let code = '';
    try {
      await c.UpdateGrants({ epoch: forged, seq: '1', full: true, grants: [] });
    } catch (e) {
      code = (e as { code?: string }).code ?? '';
    }
    expect(code, 'the forged push is refused').to.equal('FAILED_PRECONDITION');
    expect(a.core.epochSeen).to.equal('5');
    expect(a.core.grantTable()).to.have.length(1);
    // The real master's next push is taken, and the worker runs on.
    const r = await c.UpdateGrants({
      epoch: '5',
      seq: '3',
      full: true,
      grants: [{ appId: 'app1', suId: 'map', slots: 2, resource: slot, amTokenHash: AM_TOKEN_HASH }],
    });
    expect(r.appliedSeq).to.equal('3');
    c.close();
    // Heartbeats go on with the real master, under its epoch (nothing raised it, so nothing persisted it).
    const before = m.heartbeats.length;
    await waitFor(() => m.heartbeats.length >= before + 2, 5_000, 'heartbeats after the forged push');
    expect(m.heartbeats.at(-1)?.epoch).to.equal('5');
    expect(a.core.epochSeen).to.equal('5');
    expect(alive(pid)).to.equal(true);
    expect(a.core.worker('app1', 'map.0.1')?.state).to.equal('RUNNING');
    expect(log.has('warn', /no registration confirmed/)).to.equal(true);
  });

  it('ignores answers from a deposed master (older epoch): no grants applied, no report, moves on', async () => {
    const good = await fakeMaster('5');
    const deposed = await fakeMaster('4');
    deposed.wantReport = true;
    // The deposed master answers as if it still led: an empty full table would revoke everything.
    deposed.everyHeartbeat = { fullGrants: true, grantSeq: '99', grants: [] };
    const a = await startAgent([good.address, deposed.address]);
    await waitFor(() => good.heartbeats.length >= 1, 10_000, 'heartbeats to the leader');
    const pid = await runWorkers(a, '5', '2');

    good.down = true; // e.g. cut off from etcd for a moment: UNAVAILABLE, no leader known
    await waitFor(() => deposed.heartbeats.length >= 2, 5_000, 'heartbeats answered by the deposed master');
    const before = good.heartbeats.length;
    good.down = false;
    await waitFor(() => good.heartbeats.length >= before + 3, 5_000, 'heartbeats back at the leader');

    expect(a.core.epochSeen).to.equal('5');
    expect([a.core.appliedGrantEpoch, a.core.appliedGrantSeq]).to.deep.equal(['5', '2']);
    expect(a.core.grantTable()).to.have.length(1);
    expect(deposed.reports).to.have.length(0);
    expect(good.reports).to.have.length(0);
    expect(alive(pid)).to.equal(true);
    expect(a.core.worker('app1', 'map.0.1')?.state).to.equal('RUNNING');
    expect(log.has('warn', /deposed master/)).to.equal(true);
    // The deposed master stays behind: the agent does not keep talking to it.
    const seen = deposed.heartbeats.length;
    await pause(500);
    expect(deposed.heartbeats.length).to.equal(seen);
  });
});
