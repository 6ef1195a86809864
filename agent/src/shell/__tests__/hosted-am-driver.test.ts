/**
 * HostedAmDriver with a real `fuxi-amhost`: hosted AM workers go to the host (pid and start time
 * of the host, worker dir with cmd.json and exit file), everything else to the inner driver; a stop
 * of a hosted AM never reaches the inner driver; across a driver restart the host is re-adopted
 * (its running AMs probe alive, ended ones by their exit file) and AMs no worker claims are
 * stopped; the host's death is every hosted AM's exit. The hosted AMs point at a master that does
 * not exist, so they keep running (retrying registration) until stopped.
 */
import { expect } from 'chai';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { AM_SU, nullLogger, UnavailableError } from '@fuxi/common';
import type { Liveness, SpawnSpec, WorkerRef } from '../../core/agent-core.js';
import { AmHostSupervisor, readHostRecord } from '../am-host-supervisor.js';
import { AM_HOSTED_ENV, HostedAmDriver } from '../hosted-am-driver.js';
import { readExitFile, workerDir, type ExitInfo, type ProcessDriver, type RegisteredWorker, type SpawnResult } from '../process-driver.js';
import { alive, waitFor, removeWorkDir } from './helpers.js';

const HOST_MAIN = fileURLToPath(new URL('../../../../appmaster/dist/shell/am-host-main.js', import.meta.url));

/** Records what reaches the inner (real) driver. */
class InnerFake implements ProcessDriver {
  spawned: string[] = [];
  killed: Array<[number, string]> = [];
  probed: string[] = [];
  private cb: (e: ExitInfo) => void = () => {};
  spawn(spec: SpawnSpec): Promise<SpawnResult> {
    this.spawned.push(spec.workerId);
    return Promise.resolve({ pid: 5_000_001, startTime: '1', bootId: '' });
  }
  kill(pid: number, _graceMs?: number, w?: WorkerRef): void {
    this.killed.push([pid, w?.workerId ?? '']);
  }
  onExit(cb: (e: ExitInfo) => void): void {
    this.cb = cb;
  }
  logPath(): string {
    return '';
  }
  probe(w: RegisteredWorker): Liveness {
    this.probed.push(w.workerId);
    return { kind: 'gone' };
  }
  close(): void {
    void this.cb;
  }
}

describe('HostedAmDriver (real fuxi-amhost)', function () {
  this.timeout(60_000);
  let workDir = '';
  const drivers: HostedAmDriver[] = [];

  beforeEach(() => {
    workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'fuxi-hosted-'));
  });
  afterEach(async () => {
    for (const d of drivers.splice(0)) d.close();
    const rec = readHostRecord(workDir);
    if (rec && alive(rec.pid)) {
      process.kill(-rec.pid, 'SIGKILL');
      // Gone before its dir is: a host still dying may write one more line into it.
      for (let i = 0; i < 100 && alive(rec.pid); i++) await new Promise((r) => setTimeout(r, 50));
    }
    removeWorkDir(workDir);
  });

  function driver(inner = new InnerFake()): { d: HostedAmDriver; inner: InnerFake; exits: ExitInfo[] } {
    const host = new AmHostSupervisor({ workDir, command: [process.execPath, HOST_MAIN], threadInstances: 10_000, log: nullLogger, pingMs: 200 });
    const d = new HostedAmDriver(inner, host, { workDir });
    const exits: ExitInfo[] = [];
    d.onExit((e) => exits.push(e));
    drivers.push(d);
    return { d, inner, exits };
  }

  const amSpec = (appId: string, hosted = true): SpawnSpec => ({
    workerId: 'am.1',
    appId,
    suId: AM_SU,
    task: AM_SU,
    instance: 0,
    attempt: 1,
    argv: ['/nonexistent/fuxi-appmaster'],
    env: { FUXI_MASTER: '127.0.0.1:1', FUXI_APP_ID: appId, FUXI_AM_ATTEMPT: '1', FUXI_LOG_LEVEL: 'warn', ...(hosted ? { [AM_HOSTED_ENV]: '1' } : {}) },
    cwd: '',
  });

  it('starts hosted AMs in the host, other workers in the inner driver; a hosted stop never reaches the inner driver', async () => {
    const { d, inner, exits } = driver();
    const a = await d.spawn(amSpec('app-a'));
    const b = await d.spawn(amSpec('app-b'));
    const rec = readHostRecord(workDir)!;
    expect([a.pid, a.startTime, b.pid]).to.deep.equal([rec.pid, rec.startTime, rec.pid]);
    expect(JSON.parse(fs.readFileSync(path.join(workerDir(workDir, 'app-a', 'am.1'), 'cmd.json'), 'utf8'))).to.include({ hosted: true, appId: 'app-a' });
    await d.spawn(amSpec('app-c', false));
    await d.spawn({ ...amSpec('app-d'), suId: 'map', task: 'map', workerId: 'map.0.1' }); // not an AM: marker ignored
    expect(inner.spawned).to.deep.equal(['am.1', 'map.0.1']);
    d.kill(rec.pid, 500, { appId: 'app-a', workerId: 'am.1' });
    await waitFor(() => exits.length === 1, 10_000, 'the stopped AM to exit');
    expect(exits[0]).to.deep.include({ appId: 'app-a', workerId: 'am.1', pid: rec.pid });
    expect(readExitFile(workerDir(workDir, 'app-a', 'am.1'))).to.not.equal(null);
    // A stop of an AM that has ended, by the host's pid, goes nowhere (never to the inner driver).
    d.kill(rec.pid, 500, { appId: 'app-a', workerId: 'am.1' });
    d.kill(5_000_001, 500, { appId: 'app-c', workerId: 'am.1' });
    expect(inner.killed).to.deep.equal([[5_000_001, 'am.1']]);
    expect(alive(rec.pid)).to.equal(true);
    expect(exits).to.have.length(1);
  });

  it('runs a hosted AM as a process of its own when no AM host can be started', async () => {
    const inner = new InnerFake();
    const host = new AmHostSupervisor({ workDir, command: [path.join(workDir, 'no-such-amhost')], threadInstances: 10_000, log: nullLogger });
    const d = new HostedAmDriver(inner, host, { workDir });
    drivers.push(d);
    expect(await d.spawn(amSpec('app-a'))).to.deep.include({ pid: 5_000_001 });
    expect(inner.spawned).to.deep.equal(['am.1']);
  });

  it('across a restart: re-adopts the host, probes its AMs, stops the ones no worker claims; the host dying ends every AM it held', async () => {
    const first = driver();
    await first.d.spawn(amSpec('app-a'));
    await first.d.spawn(amSpec('app-b'));
    await first.d.spawn(amSpec('app-orphan'));
    const rec = readHostRecord(workDir)!;
    first.d.kill(rec.pid, 500, { appId: 'app-b', workerId: 'am.1' });
    await waitFor(() => first.exits.length === 1, 10_000, 'app-b to end');
    first.d.close(); // the agent stops; the host and app-a, app-orphan keep running

    const second = driver();
    await second.d.attach();
    const reg = (appId: string): RegisteredWorker => ({ appId, workerId: 'am.1', pid: rec.pid, startTime: rec.startTime, bootId: rec.bootId });
    expect(second.d.probe(reg('app-a'))).to.deep.equal({ kind: 'alive', pid: rec.pid, startTime: rec.startTime, bootId: rec.bootId });
    expect(second.d.probe(reg('app-b'))).to.deep.include({ kind: 'exited' });
    expect(second.d.probe({ ...reg('app-x'), pid: 4242, startTime: '9' })).to.deep.equal({ kind: 'gone' });
    expect(second.inner.probed).to.deep.equal(['am.1']); // only the non-host worker went to the inner driver
    second.d.adopt(reg('app-a'));
    second.d.restored(500); // app-orphan: no worker of the checkpoint claims it
    await waitFor(() => fs.existsSync(path.join(workerDir(workDir, 'app-orphan', 'am.1'), 'exit')), 10_000, 'the unclaimed AM to be stopped');
    expect(second.exits).to.deep.equal([]);
    // kill -9 of the host: its adopted AM ends with it.
    process.kill(-rec.pid, 'SIGKILL');
    await waitFor(() => second.exits.length === 1, 10_000, 'the hosted AM to end with its host');
    expect(second.exits[0]).to.deep.include({ appId: 'app-a', workerId: 'am.1', pid: rec.pid, exitCode: null });
    expect(second.exits[0]!.detail).to.match(/ended with the AM host/);
  });
});

describe('HostedAmDriver start retry (stub host)', () => {
  /** A host that runs (pid > 0) and fails its first `failures` starts as a connection closed under them. */
  function stubHost(failures: number): { host: AmHostSupervisor; starts: string[] } {
    const starts: string[] = [];
    let left = failures;
    const host = {
      pid: 4242,
      onExit: () => undefined,
      start: (am: { key: string }) => {
        starts.push(am.key);
        if (left-- > 0) return Promise.reject(new UnavailableError('the AM host connection closed'));
        return Promise.resolve({ pid: 4242, startTime: '7', bootId: 'b' });
      },
    };
    return { host: host as unknown as AmHostSupervisor, starts };
  }

  let workDir = '';
  beforeEach(() => (workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'fuxi-hosted-'))));
  afterEach(() => removeWorkDir(workDir));

  const spec: SpawnSpec = {
    workerId: 'am.2',
    appId: 'job-r',
    suId: AM_SU,
    task: AM_SU,
    instance: 0,
    attempt: 2,
    argv: ['/nonexistent/fuxi-appmaster'],
    env: { FUXI_APP_ID: 'job-r', [AM_HOSTED_ENV]: '1' },
    cwd: '',
  };

  it('sends a start again once when the connection closed under it while the host runs', async () => {
    const { host, starts } = stubHost(1);
    const inner = new InnerFake();
    const r = await new HostedAmDriver(inner, host, { workDir }).spawn(spec);
    expect(r).to.deep.equal({ pid: 4242, startTime: '7', bootId: 'b' });
    expect(starts).to.deep.equal(['job-r/am.2', 'job-r/am.2']);
    expect(inner.spawned).to.deep.equal([]);
  });

  it('fails the spawn when the running host is unavailable twice (never a second AM process)', async () => {
    const { host, starts } = stubHost(2);
    const inner = new InnerFake();
    const err = await new HostedAmDriver(inner, host, { workDir }).spawn(spec).catch((e: unknown) => e as Error);
    expect(err).to.be.instanceOf(UnavailableError);
    expect(starts).to.have.length(2);
    expect(inner.spawned).to.deep.equal([]);
  });
});
