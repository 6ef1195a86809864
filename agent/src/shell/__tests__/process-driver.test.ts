import { expect } from 'chai';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { SpawnSpec } from '../../core/agent-core.js';
import { spawn } from 'node:child_process';
import {
  RealProcessDriver,
  groupAlive,
  readBootId,
  readFamilyFile,
  readExitFile,
  readPidFile,
  readPidRecord,
  readProcStat,
  readStartTime,
  safeName,
  sameProcessAlive,
  workerDir,
  type ExitInfo,
  type SpawnResult,
} from '../process-driver.js';
import { FORKER_ENV } from '../forker.js';
import { DIE_BEFORE_REPLY_ENV } from '../helper-channel.js';
import { launchDetached, runLaunchPrep } from '../launch-prep.js';
import { HelperSpawner, SpawnOutcomeUnknownError, type SpawnRequest, type Spawner } from '../spawner.js';
import { alive, killGroups, waitFor, removeWorkDir } from './helpers.js';

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

function spec(workerId: string, argv: string[], over: Partial<SpawnSpec> = {}): SpawnSpec {
  return { workerId, appId: 'app1', suId: 'map', task: 'map', instance: 0, attempt: 1, argv, env: { GREETING: 'hello' }, cwd: '', ...over };
}

describe('readFamilyFile', () => {
  it("reads the marker from cmd.json, else from the family file an older agent wrote, else ''", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fuxi-family-'));
    try {
      expect(readFamilyFile(dir)).to.equal('');
      fs.writeFileSync(path.join(dir, 'family'), 'older-1\n');
      expect(readFamilyFile(dir)).to.equal('older-1');
      fs.writeFileSync(path.join(dir, 'cmd.json'), JSON.stringify({ workerId: 'w', family: 'abc-123' }));
      expect(readFamilyFile(dir)).to.equal('abc-123');
      fs.writeFileSync(path.join(dir, 'cmd.json'), JSON.stringify({ workerId: 'w', family: 'no/t ok' }));
      expect(readFamilyFile(dir)).to.equal('');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

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
    // The work dir itself is an allowed root here: tests run workers in it.
    driver = new RealProcessDriver({ workDir, stopGraceMs: 500, allowedPaths: [workDir] });
    driver.onExit((e) => exits.push(e));
  });

  after(() => {
    driver.close();
    killGroups(started);
    removeWorkDir(workDir);
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

  it('refuses a cwd that climbs out of the worker directory or is a symlink out of it', async () => {
    const strict = new RealProcessDriver({ workDir, stopGraceMs: 500 });
    try {
      const refused = async (workerId: string, cwd: string): Promise<string> => {
        try {
          await strict.spawn(spec(workerId, ['pwd'], { cwd }));
        } catch (e) {
          return `${(e as Error).name}: ${(e as Error).message}`;
        }
        return 'spawned';
      };
      expect(await refused('up', '../../etc')).to.match(/InvalidArgumentError: cwd: "\.\.\/\.\.\/etc"/);
      expect(await refused('up2', '../../../../../../../../../../etc')).to.match(/InvalidArgumentError: cwd: .* resolves to \/etc, outside/);
      expect(await refused('abs', '/etc')).to.match(/InvalidArgumentError: cwd: .*outside/);
      const dir = workerDir(workDir, 'app1', 'link');
      fs.mkdirSync(dir, { recursive: true });
      fs.symlinkSync('/etc', path.join(dir, 'escape'));
      expect(await refused('link', 'escape')).to.match(/InvalidArgumentError: cwd: "escape" resolves to \/etc, outside/);
      // Inside its own directory is fine.
      fs.mkdirSync(path.join(workerDir(workDir, 'app1', 'sub'), 'inner'), { recursive: true });
      const r = await strict.spawn(spec('sub', ['pwd'], { cwd: 'inner' }));
      started.push(r.pid);
      await waitFor(() => fs.existsSync(path.join(workerDir(workDir, 'app1', 'sub'), 'exit')));
      expect(fs.readFileSync(path.join(workerDir(workDir, 'app1', 'sub'), 'stdout'), 'utf8').trim()).to.equal(
        fs.realpathSync(path.join(workerDir(workDir, 'app1', 'sub'), 'inner')),
      );
    } finally {
      strict.close();
    }
  });

  it('gives a job process a clean environment: none of the agent variables', async () => {
    process.env.FUXI_TEST_AGENT_SECRET = 'secret';
    try {
      const r = await driver.spawn(spec('env', ['sh', '-c', 'env | sort'], { env: { GREETING: 'hello', FUXI_APP_ID: 'app1' } }));
      started.push(r.pid);
      await exitOf('env');
      const dir = workerDir(workDir, 'app1', 'env');
      const names = fs
        .readFileSync(path.join(dir, 'stdout'), 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => l.slice(0, l.indexOf('=')));
      // The shell adds PWD (and SHLVL, _); nothing else beyond what the agent put there.
      const extra = names.filter((n) => !['PWD', 'SHLVL', '_', 'OLDPWD'].includes(n));
      expect(extra.sort()).to.deep.equal(
        ['FUXI_APP_ID', 'FUXI_OUTPUT_DIR', 'FUXI_PROGRESS_FILE', 'FUXI_WORKER_FAMILY', 'GREETING', 'HOME', 'LANG', 'PATH'].sort(),
      );
      expect(fs.readFileSync(path.join(dir, 'stdout'), 'utf8')).to.match(new RegExp(`^HOME=${dir}$`, 'm'));
    } finally {
      delete process.env.FUXI_TEST_AGENT_SECRET;
    }
  });

  it('runs a job process as the configured user, in its own 0700 directory', async function () {
    if (process.getuid?.() !== 0) this.skip();
    const nobody = { name: 'nobody', uid: 65534, gid: 65534 };
    const asUser = new RealProcessDriver({ workDir, stopGraceMs: 500, runAs: () => nobody });
    try {
      const r = await asUser.spawn(spec('who', ['sh', '-c', 'id -u; id -g; id -G; touch "$FUXI_OUTPUT_DIR/x"']));
      started.push(r.pid);
      const dir = workerDir(workDir, 'app1', 'who');
      // The wrapper creates the file, then writes the code: wait for the code, not the file.
      const exitFile = path.join(dir, 'exit');
      await waitFor(() => fs.existsSync(exitFile) && fs.readFileSync(exitFile, 'utf8').trim() !== '');
      expect(fs.readFileSync(path.join(dir, 'stdout'), 'utf8').split('\n').slice(0, 3)).to.deep.equal(['65534', '65534', '65534']);
      expect(fs.readFileSync(path.join(dir, 'exit'), 'utf8').trim()).to.equal('0');
      const st = fs.statSync(dir);
      expect([st.uid, st.mode & 0o777]).to.deep.equal([65534, 0o700]);
      expect(fs.statSync(path.join(dir, 'out', 'x')).uid).to.equal(65534);
    } finally {
      asUser.close();
    }
  });

  it('runs a system process (the built-in AM) as the agent, with the agent environment', async () => {
    const nobody = { name: 'nobody', uid: 65534, gid: 65534 };
    process.env.FUXI_TEST_AGENT_VAR = 'kept';
    const sys = new RealProcessDriver({ workDir, stopGraceMs: 500, runAs: () => nobody, isSystem: (s) => s.suId === '__am__' });
    try {
      const r = await sys.spawn(spec('am', ['sh', '-c', 'id -u; echo "$FUXI_TEST_AGENT_VAR"'], { suId: '__am__' }));
      started.push(r.pid);
      const dir = workerDir(workDir, 'app1', 'am');
      const exitFile = path.join(dir, 'exit');
      await waitFor(() => fs.existsSync(exitFile) && fs.readFileSync(exitFile, 'utf8').trim() !== '');
      expect(fs.readFileSync(path.join(dir, 'stdout'), 'utf8').split('\n').slice(0, 2)).to.deep.equal([String(process.getuid?.()), 'kept']);
    } finally {
      delete process.env.FUXI_TEST_AGENT_VAR;
      sys.close();
    }
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
    expect(fs.readFileSync(path.join(workerDir(workDir, 'app1', 'sleeper'), 'exit'), 'utf8')).to.equal('143\n');
  });

  it('kill stops the whole process group', async () => {
    const r = await driver.spawn(spec('group', ['sh', '-c', 'sleep 60 & sleep 60; wait']));
    started.push(r.pid);
    // the command's sh (the root, no wrapper) + 2 sleeps, once both have exec'd
    const sleepsOf = (members: number[]) =>
      members.filter((p) => {
        try {
          return fs.readFileSync(`/proc/${p}/comm`, 'utf8').trim() === 'sleep';
        } catch {
          return false;
        }
      });
    await waitFor(() => sleepsOf(groupMembers(r.pid)).length === 2);
    const members = groupMembers(r.pid);
    expect(members).to.have.length(3);
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
    await waitFor(() => groupMembers(r.pid).length >= 2); // the command's sh + sleep
    const members = groupMembers(r.pid);
    const t0 = Date.now();
    driver.kill(r.pid, 300);
    await waitFor(() => members.every((p) => !alive(p)));
    expect(Date.now() - t0).to.be.greaterThanOrEqual(250);
    await exitOf('stubborn');
  });

  it('starts the command itself, no wrapper: the root is the command, its pid file names it and its start time', async () => {
    const r = await driver.spawn(spec('pidfile', ['sleep', '30']));
    started.push(r.pid);
    const dir = workerDir(workDir, 'app1', 'pidfile');
    expect(fs.readFileSync(`/proc/${r.pid}/cmdline`, 'utf8').split('\0')).to.deep.equal(['sleep', '30', '']);
    expect(readPidRecord(dir)).to.deep.equal({ pid: r.pid, startTime: r.startTime });
    driver.kill(r.pid, 100);
    const e = await exitOf('pidfile');
    expect([e.exitCode, e.signal]).to.deep.equal([null, 'SIGTERM']);
    // What sh would have recorded, for an agent that restarts later.
    expect(fs.readFileSync(path.join(dir, 'exit'), 'utf8')).to.equal('143\n');
  });

  it('with the spawn helper on a thread, a wrapper writes its own pid first thing and the exit code last', async () => {
    const threaded = new RealProcessDriver({ workDir, stopGraceMs: 300, spawner: new HelperSpawner({ helper: 'thread' }) });
    const exits: ExitInfo[] = [];
    threaded.onExit((e) => exits.push(e));
    try {
      const r = await threaded.spawn(spec('wrapped', ['sh', '-c', 'sleep 0.3; exit 6']));
      started.push(r.pid);
      const dir = workerDir(workDir, 'app1', 'wrapped');
      expect(fs.readFileSync(`/proc/${r.pid}/cmdline`, 'utf8')).to.include(dir);
      await waitFor(() => readPidFile(dir) > 0);
      expect(readPidRecord(dir)).to.deep.equal({ pid: r.pid, startTime: '' });
      await waitFor(() => exits.length > 0);
      expect([exits[0]?.exitCode, exits[0]?.signal]).to.deep.equal([6, null]);
      expect(fs.readFileSync(path.join(dir, 'exit'), 'utf8')).to.equal('6\n');
    } finally {
      threaded.close();
    }
  });

  it('a helper outlives its agent while workers it started run, records their exit codes, then ends', async () => {
    const spawner = new HelperSpawner();
    const first = new RealProcessDriver({ workDir, stopGraceMs: 300, spawner });
    const r = await first.spawn(spec('outlive', ['sh', '-c', 'sleep 0.5; exit 4']));
    started.push(r.pid);
    const helper = spawner.helperPid as number;
    expect(helper).to.be.a('number');
    first.close(); // the agent stops (or dies: the channel ends the same way)
    expect(alive(helper)).to.equal(true);
    const dir = workerDir(workDir, 'app1', 'outlive');
    await waitFor(() => readExitFile(dir) !== null, 5000);
    expect(readExitFile(dir)).to.equal(4);
    await waitFor(() => !alive(helper), 5000);
  });

  /** The parent of `pid` and its command line's first word. */
  const parentOf = (pid: number): { ppid: number; name: string } => {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    return { ppid, name: path.basename(fs.readFileSync(`/proc/${ppid}/cmdline`, 'utf8').split('\0')[0] ?? '') };
  };

  for (const forker of [true, false]) {
    it(`a direct start ${forker ? 'is forked by fuxi-forker, the helper’s child' : 'with FUXI_SPAWN_FORKER=0 is forked by the helper itself'}: same pid file, exit file and exit`, async () => {
      const had = process.env[FORKER_ENV];
      if (!forker) process.env[FORKER_ENV] = '0';
      const spawner = new HelperSpawner();
      const own = new RealProcessDriver({ workDir, stopGraceMs: 300, spawner });
      const ends: ExitInfo[] = [];
      own.onExit((e) => ends.push(e));
      try {
        const r = await own.spawn(spec(`via-${String(forker)}`, ['sh', '-c', 'sleep 0.3; exit 5']));
        started.push(r.pid);
        const helper = spawner.helperPid as number;
        const parent = parentOf(r.pid);
        if (forker) {
          expect(parent.name).to.equal('fuxi-forker');
          expect(parentOf(parent.ppid).ppid).to.equal(helper);
        } else expect(parent.ppid).to.equal(helper);
        const dir = workerDir(workDir, 'app1', `via-${String(forker)}`);
        expect(readPidRecord(dir)).to.deep.equal({ pid: r.pid, startTime: r.startTime });
        await waitFor(() => ends.length === 1, 10_000);
        expect([ends[0]?.exitCode, ends[0]?.signal]).to.deep.equal([5, null]);
        expect(fs.readFileSync(path.join(dir, 'exit'), 'utf8')).to.equal('5\n');
      } finally {
        own.close();
        if (had === undefined) delete process.env[FORKER_ENV];
        else process.env[FORKER_ENV] = had;
      }
    });
  }

  it('50 direct starts at once of a command that ends at once: every end is reported with its code and recorded', async () => {
    const spawner = new HelperSpawner();
    const own = new RealProcessDriver({ workDir, stopGraceMs: 300, spawner });
    const ends: ExitInfo[] = [];
    own.onExit((e) => ends.push(e));
    try {
      const rs = await Promise.all(Array.from({ length: 50 }, (_, i) => own.spawn(spec(`quick-${i}`, ['true']))));
      expect(new Set(rs.map((r) => r.pid)).size).to.equal(50);
      await waitFor(() => ends.length === 50, 20_000);
      expect(ends.every((e) => e.exitCode === 0 && e.signal === null)).to.equal(true);
      for (let i = 0; i < 50; i++) expect(fs.readFileSync(path.join(workerDir(workDir, 'app1', `quick-${i}`), 'exit'), 'utf8')).to.equal('0\n');
    } finally {
      const helper = spawner.helperPid;
      own.close();
      // A helper still waiting for an end it never heard would stay: it is this test's to stop.
      if (helper !== undefined) await waitFor(() => !alive(helper), 5000).catch(() => process.kill(helper, 'SIGKILL'));
    }
  });

  it('a forker killed under its helper ends the helper: the worker runs on, is watched through /proc, and the next spawn starts both again', async () => {
    const spawner = new HelperSpawner({ pollMs: 50 });
    const own = new RealProcessDriver({ workDir, stopGraceMs: 300, spawner });
    const ends: ExitInfo[] = [];
    own.onExit((e) => ends.push(e));
    try {
      const r = await own.spawn(spec('forker-dies', ['sleep', '0.5']));
      started.push(r.pid);
      const helper = spawner.helperPid as number;
      const forker = parentOf(r.pid).ppid;
      process.kill(forker, 'SIGKILL');
      await waitFor(() => !alive(helper), 5000);
      expect(alive(r.pid)).to.equal(true);
      await waitFor(() => ends.length === 1, 10_000);
      expect(ends[0]?.pid).to.equal(r.pid);
      const next = await own.spawn(spec('forker-again', ['sleep', '0.3']));
      started.push(next.pid);
      expect(spawner.helperPid).to.be.a('number').and.not.equal(helper);
      expect(parentOf(next.pid).name).to.equal('fuxi-forker');
      await waitFor(() => ends.length === 2, 10_000);
    } finally {
      own.close();
    }
  });

  describe('after an agent restart: probe() and adopt()', () => {
    /** A second driver on the same work dir: the restarted agent's. */
    let again: RealProcessDriver;
    const adoptedExits: ExitInfo[] = [];
    beforeEach(() => {
      again = new RealProcessDriver({ workDir, stopGraceMs: 300, adoptPollMs: 50 });
      again.onExit((e) => adoptedExits.push(e));
    });
    afterEach(() => again.close());

    it('finds a running worker alive by pid + start time + boot id', async () => {
      const r = await driver.spawn(spec('p-alive', ['sleep', '30']));
      started.push(r.pid);
      expect(again.probe({ appId: 'app1', workerId: 'p-alive', pid: r.pid, startTime: r.startTime, bootId: r.bootId })).to.deep.equal({
        kind: 'alive',
        pid: r.pid,
        startTime: r.startTime,
        bootId: r.bootId,
      });
      driver.kill(r.pid, 100);
      await exitOf('p-alive');
    });

    it('never takes a reused pid for the worker: another start time or another boot is not it', async () => {
      const r = await driver.spawn(spec('p-reuse', ['sleep', '30']));
      started.push(r.pid);
      const other = String(Number(r.startTime) - 1);
      expect(again.probe({ appId: 'app1', workerId: 'p-reuse', pid: r.pid, startTime: other, bootId: r.bootId })).to.deep.equal({ kind: 'gone' });
      expect(again.probe({ appId: 'app1', workerId: 'p-reuse', pid: r.pid, startTime: r.startTime, bootId: 'another-boot' })).to.deep.equal({ kind: 'gone' });
      expect(again.probe({ appId: 'app1', workerId: 'p-reuse', pid: r.pid, startTime: '', bootId: r.bootId })).to.deep.equal({ kind: 'gone' });
      expect(alive(r.pid)).to.equal(true); // probing never touches the process
      driver.kill(r.pid, 100);
      await exitOf('p-reuse');
    });

    it('reports the exit code the wrapper recorded, with the time it was written', async () => {
      const r = await driver.spawn(spec('p-exit', ['sh', '-c', 'exit 7']));
      started.push(r.pid);
      await exitOf('p-exit');
      const l = again.probe({ appId: 'app1', workerId: 'p-exit', pid: r.pid, startTime: r.startTime, bootId: r.bootId });
      expect(l.kind).to.equal('exited');
      expect(l).to.include({ exitCode: 7 });
      expect((l as { atMs: number }).atMs).to.be.within(Date.now() - 10_000, Date.now());
    });

    it('takes an empty exit file (the wrapper killed while writing it) for none: the worker is gone, no exit code made up', async () => {
      const r = await driver.spawn(spec('p-empty', ['sh', '-c', 'exit 3']));
      started.push(r.pid);
      await exitOf('p-empty');
      fs.writeFileSync(path.join(workerDir(workDir, 'app1', 'p-empty'), 'exit'), '');
      expect(again.probe({ appId: 'app1', workerId: 'p-empty', pid: r.pid, startTime: r.startTime, bootId: r.bootId })).to.deep.equal({ kind: 'gone' });
    });

    it('finds a worker whose spawn was never recorded (pid 0) through its pid file, only if its command line names its dir', async () => {
      const r = await driver.spawn(spec('p-nopid', ['sleep', '30']));
      started.push(r.pid);
      const dir = workerDir(workDir, 'app1', 'p-nopid');
      await waitFor(() => readPidFile(dir) > 0);
      expect(again.probe({ appId: 'app1', workerId: 'p-nopid', pid: 0, startTime: '', bootId: '' })).to.deep.equal({
        kind: 'alive',
        pid: r.pid,
        startTime: r.startTime,
        bootId: r.bootId,
      });
      // A pid file naming some other live process (ours) is not believed.
      fs.writeFileSync(path.join(dir, 'pid'), `${process.pid}\n`);
      expect(again.probe({ appId: 'app1', workerId: 'p-nopid', pid: 0, startTime: '', bootId: '' })).to.deep.equal({ kind: 'gone' });
      driver.kill(r.pid, 100);
      await exitOf('p-nopid');
    });

    it('counts a zombie (ended, never reaped by its parent) as ended', async () => {
      // The inner sleep's parent execs into `sleep 30`, which never reaps it: a zombie after 0.2 s.
      const f = path.join(workDir, 'zpid');
      const holder = spawn('sh', ['-c', `sleep 0.2 & echo $! > ${f}; exec sleep 30`], { detached: true, stdio: 'ignore' });
      started.push(holder.pid!);
      await waitFor(() => fs.existsSync(f) && fs.readFileSync(f, 'utf8').trim() !== '');
      const zpid = Number(fs.readFileSync(f, 'utf8').trim());
      const st = readProcStat(zpid)!;
      await waitFor(() => readProcStat(zpid)?.state === 'Z');
      expect(readProcStat(zpid)?.startTime).to.equal(st.startTime);
      expect(sameProcessAlive(zpid, st.startTime)).to.equal(false);
      process.kill(-holder.pid!, 'SIGKILL');
    });

    it('adopt() watches a worker it did not start and reports its real exit code when it ends', async () => {
      const r = await driver.spawn(spec('a-exit', ['sh', '-c', 'sleep 0.5; exit 5']));
      started.push(r.pid);
      again.adopt({ appId: 'app1', workerId: 'a-exit', pid: r.pid, startTime: r.startTime, bootId: r.bootId });
      expect(again.adoptedCount).to.equal(1);
      await waitFor(() => adoptedExits.some((e) => e.workerId === 'a-exit'), 5000);
      expect(adoptedExits.find((e) => e.workerId === 'a-exit')).to.deep.equal({ appId: 'app1', workerId: 'a-exit', pid: r.pid, exitCode: 5, signal: null });
      expect(again.adoptedCount).to.equal(0);
    });

    it('adopt(): a worker killed by a signal ends with the code its spawn helper recorded (128 + the signal)', async () => {
      const r = await driver.spawn(spec('a-kill', ['sleep', '30']));
      started.push(r.pid);
      again.adopt({ appId: 'app1', workerId: 'a-kill', pid: r.pid, startTime: r.startTime, bootId: r.bootId });
      again.kill(r.pid, 100); // the restarted agent can stop its group
      await waitFor(() => adoptedExits.some((e) => e.workerId === 'a-kill'), 5000);
      const e = adoptedExits.find((x) => x.workerId === 'a-kill')!;
      expect([e.exitCode, e.signal]).to.deep.equal([143, null]);
    });

    it('adopt(): a worker whose spawn helper died too ends with exit code and signal unknown (nothing recorded it)', async () => {
      const spawner = new HelperSpawner();
      const first = new RealProcessDriver({ workDir, stopGraceMs: 300, spawner });
      try {
        const r = await first.spawn(spec('a-orphan', ['sleep', '30']));
        started.push(r.pid);
        await spawner.killHelper();
        expect(alive(r.pid)).to.equal(true); // no healthy worker dies with its helper
        again.adopt({ appId: 'app1', workerId: 'a-orphan', pid: r.pid, startTime: r.startTime, bootId: r.bootId });
        again.kill(r.pid, 100);
        await waitFor(() => adoptedExits.some((e) => e.workerId === 'a-orphan'), 5000);
        const e = adoptedExits.find((x) => x.workerId === 'a-orphan')!;
        expect([e.exitCode, e.signal]).to.deep.equal([null, null]);
        expect(e.detail).to.match(/without an exit code/);
      } finally {
        first.close();
      }
    });
  });

  it('makes ids with slashes or dots safe as directory names', () => {
    expect(safeName('map-1.2')).to.equal('map-1.2');
    expect(safeName('a/b')).to.equal('a%2Fb');
    expect(safeName('..')).to.equal('%2E%2E');
    expect(workerDir('/w', '../x', 'y')).to.equal('/w/apps/%2E%2E%2Fx/y');
  });
});

describe('RealProcessDriver: a spawn whose spawn helper ended before it answered', function () {
  this.timeout(30_000);
  let workDir: string;
  const started: number[] = [];

  /**
   * A spawner whose helper "dies" with every spawn under way: it lays the launch out and, when
   * `start`, starts the command (no pid file: the helper died between the fork and writing it),
   * then rejects as HelperSpawner does when its helper ends.
   */
  class LosingSpawner implements Spawner {
    /** `late`: laid out, the helper lost, and the command started `lateMs` later (a fork that execs late). */
    constructor(
      private readonly how: 'started' | 'prepared' | 'never-received' | 'late',
      private readonly lateMs = 0,
    ) {}
    spawn(req: SpawnRequest): Promise<{ pid: number; startTime: string }> {
      return new Promise((_resolve, reject) => {
        const lost = (): void => reject(new SpawnOutcomeUnknownError());
        if (this.how === 'never-received') return lost();
        if (this.how === 'prepared' || this.how === 'late') {
          const cwd = runLaunchPrep(req.prep!);
          if (this.how === 'late') {
            const [file, ...args] = req.direct!.argv;
            const cb = { started: (pid: number) => started.push(pid), failed: () => {}, exited: () => {} };
            setTimeout(() => launchDetached(file!, args, { cwd, env: req.env }, undefined, cb)?.unref(), this.lateMs);
          }
          return lost();
        }
        const [file, ...args] = req.direct!.argv;
        launchDetached(file!, args, { cwd: '', env: req.env }, req.prep, {
          started: (pid) => {
            started.push(pid);
            lost();
          },
          failed: reject,
          exited: () => {},
        })?.unref();
      });
    }
    close(): void {}
  }

  before(() => {
    workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'fuxi-agent-lost-'));
  });

  after(() => {
    killGroups(started);
    removeWorkDir(workDir);
  });

  it('a helper killed after the fork, before its reply: the worker is adopted with its real pid, not failed; the next spawn starts a new helper', async () => {
    const spawner = new HelperSpawner();
    const d = new RealProcessDriver({ workDir, stopGraceMs: 300, adoptPollMs: 50, spawner });
    const exits: ExitInfo[] = [];
    d.onExit((e) => exits.push(e));
    try {
      let first: Promise<SpawnResult>;
      // The helper forks with the spawn (synchronously), taking the hook in its environment.
      process.env[DIE_BEFORE_REPLY_ENV] = '1';
      try {
        first = d.spawn(spec('lost-running', ['sleep', '30']));
      } finally {
        delete process.env[DIE_BEFORE_REPLY_ENV];
      }
      const helper = spawner.helperPid as number;
      expect(helper).to.be.a('number');
      const r = await first;
      started.push(r.pid);
      expect(alive(helper)).to.equal(false);
      const dir = workerDir(workDir, 'app1', 'lost-running');
      expect(readPidRecord(dir)).to.deep.equal({ pid: r.pid, startTime: r.startTime });
      expect(fs.readFileSync(`/proc/${r.pid}/cmdline`, 'utf8').split('\0')).to.deep.equal(['sleep', '30', '']);
      expect(r.startTime).to.equal(readStartTime(r.pid));
      expect(r.bootId).to.equal(readBootId());
      expect(alive(r.pid)).to.equal(true);
      expect(d.adoptedCount).to.equal(1);

      // Watched: the driver stops its family and reports its end (no exit code: its helper is gone).
      d.kill(r.pid, 100);
      await waitFor(() => exits.some((e) => e.workerId === 'lost-running'), 10_000, 'the adopted worker to end');
      expect(alive(r.pid)).to.equal(false);
      const e = exits.find((x) => x.workerId === 'lost-running')!;
      expect([e.pid, e.exitCode, e.signal]).to.deep.equal([r.pid, null, null]);

      const next = await d.spawn(spec('lost-next', ['sh', '-c', 'exit 7']));
      started.push(next.pid);
      expect(spawner.helperPid).to.be.a('number').and.not.equal(helper);
      await waitFor(() => exits.some((x) => x.workerId === 'lost-next'), 10_000, 'the next exit');
      expect(exits.find((x) => x.workerId === 'lost-next')).to.deep.equal({ appId: 'app1', workerId: 'lost-next', pid: next.pid, exitCode: 7, signal: null });
      expect(exits.filter((x) => x.workerId === 'lost-running')).to.have.length(1);
    } finally {
      d.close();
      // Stopped in `after` even when the spawn failed (the worker ran on, unwatched).
      const left = readPidFile(workerDir(workDir, 'app1', 'lost-running'));
      if (left > 1) started.push(left);
    }
  });

  it('a helper killed before its reply for a wrapper that ran and ended: the spawn succeeds and the end comes with the exit code the wrapper recorded', async () => {
    const spawner = new HelperSpawner();
    const d = new RealProcessDriver({ workDir, stopGraceMs: 300, adoptPollMs: 50, spawner });
    const exits: ExitInfo[] = [];
    d.onExit((e) => exits.push(e));
    try {
      let first: Promise<SpawnResult>;
      process.env[DIE_BEFORE_REPLY_ENV] = '1';
      try {
        // A command the exec cannot run: the helper starts the wrapper, which records 127.
        first = d.spawn(spec('lost-ended', ['/nonexistent/fuxi-test-binary']));
      } finally {
        delete process.env[DIE_BEFORE_REPLY_ENV];
      }
      const r = await first;
      started.push(r.pid);
      await waitFor(() => exits.some((e) => e.workerId === 'lost-ended'), 10_000, 'the end');
      expect(exits).to.deep.equal([{ appId: 'app1', workerId: 'lost-ended', pid: r.pid, exitCode: 127, signal: null }]);
    } finally {
      d.close();
    }
  });

  it('finds a worker forked before the helper could write its pid file by its marker in /proc', async () => {
    const d = new RealProcessDriver({ workDir, stopGraceMs: 300, adoptPollMs: 50, spawner: new LosingSpawner('started') });
    const exits: ExitInfo[] = [];
    d.onExit((e) => exits.push(e));
    try {
      const r = await d.spawn(spec('lost-marker', ['sleep', '30']));
      expect(started).to.include(r.pid);
      expect(readPidFile(workerDir(workDir, 'app1', 'lost-marker'))).to.equal(0);
      expect(r.startTime).to.equal(readStartTime(r.pid));
      expect(fs.readFileSync(`/proc/${r.pid}/cmdline`, 'utf8').split('\0')).to.deep.equal(['sleep', '30', '']);
      expect(d.adoptedCount).to.equal(1);
      d.kill(r.pid, 100);
      await waitFor(() => exits.length === 1, 10_000, 'the adopted worker to end');
      expect(exits[0]).to.include({ workerId: 'lost-marker', pid: r.pid });
      expect(alive(r.pid)).to.equal(false);
    } finally {
      d.close();
    }
  });

  it('a launch that never started fails: after looking for it for lostSpawnWaitMs once laid out, at once when the helper never had it', async () => {
    const failed = async (how: 'prepared' | 'never-received', workerId: string): Promise<{ err: unknown; ms: number }> => {
      const d = new RealProcessDriver({ workDir, lostSpawnWaitMs: 400, spawner: new LosingSpawner(how) });
      const t0 = Date.now();
      try {
        await d.spawn(spec(workerId, ['sleep', '30']));
        return { err: undefined, ms: Date.now() - t0 };
      } catch (e) {
        return { err: e, ms: Date.now() - t0 };
      } finally {
        d.close();
      }
    };
    const prepared = await failed('prepared', 'lost-never');
    expect(prepared.err).to.be.instanceOf(SpawnOutcomeUnknownError);
    expect(prepared.ms).to.be.within(380, 5000);
    const unsent = await failed('never-received', 'lost-unsent');
    expect(unsent.err).to.be.instanceOf(SpawnOutcomeUnknownError);
    expect(unsent.ms).to.be.below(300);
  });

  it('a launch reported failed whose process execs only after the wait is stopped once it shows: it never runs on unwatched', async () => {
    const d = new RealProcessDriver({ workDir, lostSpawnWaitMs: 300, spawner: new LosingSpawner('late', 1000) });
    const before = started.length;
    try {
      let err: unknown;
      await d.spawn(spec('lost-late', ['sleep', '30'])).catch((e: unknown) => (err = e));
      expect(err).to.be.instanceOf(SpawnOutcomeUnknownError);
      await waitFor(() => started.length > before, 10_000, 'the late exec');
      const pid = started[started.length - 1]!;
      expect(fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0]).to.equal('sleep');
      await waitFor(() => !alive(pid), 10_000, 'the late process to be stopped');
    } finally {
      d.close();
    }
  });
});
