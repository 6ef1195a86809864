import { expect } from 'chai';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { SpawnSpec } from '../../core/agent-core.js';
import { RealProcessDriver, groupAlive, readBootId, readStartTime, safeName, workerDir, type ExitInfo } from '../process-driver.js';

/** Pids of every live process in process group `pgid` (from /proc). */
function groupMembers(pgid: number): number[] {
  const out: number[] = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${name}/stat`, 'utf8');
      const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      // rest[0] = state (field 3), rest[2] = pgrp (field 5)
      if (Number(rest[2]) === pgid && rest[0] !== 'Z') out.push(Number(name));
    } catch {
      /* gone */
    }
  }
  return out;
}

function alive(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

async function waitFor(cond: () => boolean, ms = 10_000): Promise<void> {
  const until = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > until) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 20));
  }
}

function spec(workerId: string, argv: string[], over: Partial<SpawnSpec> = {}): SpawnSpec {
  return { workerId, appId: 'app1', suId: 'map', task: 'map', instance: 0, attempt: 1, argv, env: { GREETING: 'hello' }, cwd: '', ...over };
}

describe('RealProcessDriver (real processes)', function () {
  this.timeout(30_000);
  let workDir: string;
  let driver: RealProcessDriver;
  const exits: ExitInfo[] = [];
  const started: number[] = [];

  const exitOf = async (workerId: string): Promise<ExitInfo> => {
    await waitFor(() => exits.some((e) => e.workerId === workerId));
    return exits.find((e) => e.workerId === workerId) as ExitInfo;
  };

  before(() => {
    workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'fuxi-agent-driver-'));
    driver = new RealProcessDriver({ workDir, stopGraceMs: 500 });
    driver.onExit((e) => exits.push(e));
  });

  after(() => {
    driver.close();
    for (const pid of started) {
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        /* already gone */
      }
    }
    fs.rmSync(workDir, { recursive: true, force: true });
  });

  it('captures exit code 0, stdout, stderr, env and cmd.json', async () => {
    const r = await driver.spawn(spec('ok', ['sh', '-c', 'echo out-$GREETING-$FUXI_X; echo err >&2; exit 0'], { env: { GREETING: 'hello', FUXI_X: 'x' } }));
    started.push(r.pid);
    expect(r.pid).to.be.greaterThan(0);
    const e = await exitOf('ok');
    expect(e).to.deep.equal({ appId: 'app1', workerId: 'ok', pid: r.pid, exitCode: 0, signal: null });
    const dir = workerDir(workDir, 'app1', 'ok');
    expect(fs.readFileSync(path.join(dir, 'stdout'), 'utf8')).to.equal('out-hello-x\n');
    expect(fs.readFileSync(path.join(dir, 'stderr'), 'utf8')).to.equal('err\n');
    expect(fs.readFileSync(path.join(dir, 'exit'), 'utf8').trim()).to.equal('0');
    expect(fs.existsSync(path.join(dir, 'exit.tmp'))).to.equal(false);
    const cmd = JSON.parse(fs.readFileSync(path.join(dir, 'cmd.json'), 'utf8')) as SpawnSpec;
    expect(cmd.argv[0]).to.equal('sh');
    expect(cmd.task).to.equal('map');
    expect(driver.logPath('app1', 'ok', 'stdout')).to.equal(path.join(dir, 'stdout'));
  });

  it('captures a non-zero exit code', async () => {
    const r = await driver.spawn(spec('three', ['sh', '-c', 'exit 3']));
    started.push(r.pid);
    const e = await exitOf('three');
    expect(e.exitCode).to.equal(3);
    expect(e.signal).to.equal(null);
  });

  it('reports 127 for a command that does not exist', async () => {
    const r = await driver.spawn(spec('missing', ['/nonexistent/fuxi-test-binary']));
    started.push(r.pid);
    const e = await exitOf('missing');
    expect(e.exitCode).to.equal(127);
    expect(fs.readFileSync(driver.logPath('app1', 'missing', 'stderr'), 'utf8')).to.match(/nonexistent/);
  });

  it('runs in the given cwd and fails to spawn when it does not exist', async () => {
    const r = await driver.spawn(spec('cwd', ['pwd'], { cwd: workDir }));
    started.push(r.pid);
    await exitOf('cwd');
    expect(fs.readFileSync(driver.logPath('app1', 'cwd', 'stdout'), 'utf8').trim()).to.equal(fs.realpathSync(workDir));
    let err: unknown;
    try {
      await driver.spawn(spec('nocwd', ['pwd'], { cwd: path.join(workDir, 'nope') }));
    } catch (e) {
      err = e;
    }
    expect(String(err)).to.match(/does not exist/);
  });

  it('records the start time from /proc and the boot id; runs the worker in its own process group', async () => {
    const r = await driver.spawn(spec('sleeper', ['sleep', '30']));
    started.push(r.pid);
    expect(r.startTime).to.match(/^\d+$/);
    expect(r.startTime).to.equal(readStartTime(r.pid));
    expect(r.bootId).to.equal(fs.readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim());
    expect(readBootId()).to.equal(r.bootId);
    expect(groupMembers(r.pid)).to.include(r.pid); // pgid == pid: its own group
    expect(process.pid).to.not.be.oneOf(groupMembers(r.pid));
    driver.kill(r.pid);
    const e = await exitOf('sleeper');
    expect(e.signal).to.equal('SIGTERM');
    expect(e.exitCode).to.equal(null);
    expect(fs.existsSync(path.join(workerDir(workDir, 'app1', 'sleeper'), 'exit'))).to.equal(false);
  });

  it('kill stops the whole process group', async () => {
    const r = await driver.spawn(spec('group', ['sh', '-c', 'sleep 60 & sleep 60; wait']));
    started.push(r.pid);
    // wrapper sh + inner sh + 2 sleeps
    await waitFor(() => groupMembers(r.pid).length >= 4);
    const members = groupMembers(r.pid);
    const sleeps = members.filter((p) => {
      try {
        return fs.readFileSync(`/proc/${p}/comm`, 'utf8').trim() === 'sleep';
      } catch {
        return false;
      }
    });
    expect(sleeps).to.have.length(2);
    driver.kill(r.pid, 500);
    await exitOf('group');
    await waitFor(() => members.every((p) => !alive(p)));
    await waitFor(() => groupMembers(r.pid).length === 0);
    // Reaped (not only dead) soon after; kill(-pgid, 0) then fails.
    await waitFor(() => !groupAlive(r.pid));
  });

  it('escalates to SIGKILL when the group ignores SIGTERM', async () => {
    const r = await driver.spawn(spec('stubborn', ['sh', '-c', "trap '' TERM; sleep 60 & wait; sleep 60"]));
    started.push(r.pid);
    await waitFor(() => groupMembers(r.pid).length >= 3);
    const members = groupMembers(r.pid);
    const t0 = Date.now();
    driver.kill(r.pid, 300);
    await waitFor(() => members.every((p) => !alive(p)));
    expect(Date.now() - t0).to.be.greaterThanOrEqual(250);
    await exitOf('stubborn');
  });

  it('makes ids with slashes or dots safe as directory names', () => {
    expect(safeName('map-1.2')).to.equal('map-1.2');
    expect(safeName('a/b')).to.equal('a%2Fb');
    expect(safeName('..')).to.equal('%2E%2E');
    expect(workerDir('/w', '../x', 'y')).to.equal('/w/apps/%2E%2E%2Fx/y');
  });
});
