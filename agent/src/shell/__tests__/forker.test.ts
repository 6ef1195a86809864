import { expect } from 'chai';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { encodeRequest, exitOf, Forker, FORKER_ENV, forkerPath, usableForker } from '../forker.js';
import type { DirectLaunch } from '../direct-launch.js';
import { readStartTime } from '../proc-table.js';
import { alive, waitFor } from './helpers.js';

/** The forker must be built here (`make build` builds it; `make test` installs the compiler first). */
const FORKER = forkerPath();

/** `Forker.start` as a promise. */
function startOn(f: Forker, ...args: [DirectLaunch, { cwd: string; env: Record<string, string> }]): Promise<{ pid: number; startTime: string } | undefined> {
  return new Promise((resolve) => f.start(...args, resolve));
}

/** Field `n` (1-based) of /proc/<pid>/stat. */
function statField(pid: number, n: number): string {
  const text = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  return text.slice(text.lastIndexOf(')') + 2).split(' ')[n - 3] ?? '';
}

describe('forker: the spawn helper’s forking arm (fuxi-forker)', function () {
  this.timeout(20_000);
  let dir: string;
  const forkers: Forker[] = [];
  const started: number[] = [];
  const exits: Array<{ pid: number; code: number | null; signal: string | null }> = [];
  const gone: string[] = [];
  /** Pids whose answer came (the 50-at-once test), and ends that came before their answer. */
  const answered = new Set<number>();
  let endedBeforeAnswer = 0;

  const open = (file = FORKER): Forker => {
    const f = Forker.start(
      file,
      (pid, code, signal) => {
        // Its answer came first (it was recorded when the end arrives).
        endedBeforeAnswer += answered.has(pid) ? 0 : 1;
        exits.push({ pid, code, signal });
      },
      (why) => gone.push(why),
    );
    forkers.push(f);
    return f;
  };
  const exitOfPid = (pid: number) => exits.find((e) => e.pid === pid);

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fuxi-forker-'));
    exits.length = 0;
    gone.length = 0;
    answered.clear();
    endedBeforeAnswer = 0;
  });
  afterEach(async () => {
    for (const pid of started.splice(0)) {
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        /* ended */
      }
    }
    for (const f of forkers.splice(0)) {
      const pid = f.pid;
      f.close();
      if (pid !== undefined) await waitFor(() => !alive(pid), 5000);
    }
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('is built (make build) and used unless FUXI_SPAWN_FORKER=0', () => {
    expect(fs.statSync(FORKER).mode & 0o111).to.not.equal(0);
    expect(usableForker({})).to.equal(FORKER);
    expect(usableForker({ [FORKER_ENV]: '0' })).to.equal(undefined);
    expect(usableForker({}, path.join(dir, 'none'))).to.equal(undefined);
  });

  it('starts the command in its own session, looked up in the PATH of its environment, with its output in the worker’s files; says how it ended', async () => {
    const bin = path.join(dir, 'bin');
    fs.mkdirSync(bin);
    fs.writeFileSync(path.join(bin, 'task'), '#!/bin/sh\necho "out $FOO $(pwd)"\necho err >&2\nread x || echo "no stdin"\nexit 3\n', { mode: 0o755 });
    const work = path.join(dir, 'w');
    fs.mkdirSync(work);
    const f = open();
    const r = await startOn(f, { argv: ['task'], dir: work, procs: [] }, { cwd: bin, env: { PATH: `${bin}:/usr/bin:/bin`, FOO: 'bar baz' } });
    expect(r).to.not.equal(undefined);
    const { pid, startTime } = r as { pid: number; startTime: string };
    started.push(pid);
    expect(startTime).to.match(/^\d+$/);
    await waitFor(() => exitOfPid(pid) !== undefined, 10_000);
    expect(exitOfPid(pid)).to.deep.equal({ pid, code: 3, signal: null });
    expect(fs.readFileSync(path.join(work, 'stdout'), 'utf8')).to.equal(`out bar baz ${bin}\nno stdin\n`);
    expect(fs.readFileSync(path.join(work, 'stderr'), 'utf8')).to.equal('err\n');
  });

  it('its child leads a session of its own and has the start time /proc gives; a signal’s end comes as the signal', async () => {
    const work = path.join(dir, 'w');
    fs.mkdirSync(work);
    const f = open();
    const r = await startOn(f, { argv: ['sleep', '30'], dir: work, procs: [] }, { cwd: work, env: { PATH: '/usr/bin:/bin' } });
    const pid = (r as { pid: number }).pid;
    started.push(pid);
    expect(r?.startTime).to.equal(readStartTime(pid));
    expect(statField(pid, 6)).to.equal(String(pid)); // session id
    expect(statField(pid, 4)).to.equal(String(f.pid)); // its parent: the forker
    process.kill(pid, 'SIGKILL');
    await waitFor(() => exitOfPid(pid) !== undefined, 10_000);
    expect(exitOfPid(pid)).to.deep.equal({ pid, code: null, signal: 'SIGKILL' });
  });

  it('a command it cannot exec, a cwd that is not there, a cgroup it cannot join: nothing starts and nothing is left in the directory', async () => {
    const work = path.join(dir, 'w');
    fs.mkdirSync(work);
    const f = open();
    const env = { PATH: '/usr/bin:/bin' };
    expect(await startOn(f, { argv: ['no-such-command-here'], dir: work, procs: [] }, { cwd: work, env })).to.equal(undefined);
    expect(await startOn(f, { argv: ['true'], dir: work, procs: [] }, { cwd: path.join(dir, 'gone'), env })).to.equal(undefined);
    expect(await startOn(f, { argv: ['true'], dir: work, procs: [path.join(dir, 'no-group', 'cgroup.procs')] }, { cwd: work, env })).to.equal(undefined);
    expect(fs.readdirSync(work)).to.deep.equal([]);
    // It still works after those.
    const r = await startOn(f, { argv: ['true'], dir: work, procs: [] }, { cwd: work, env });
    expect(r?.pid).to.be.a('number');
    await waitFor(() => exitOfPid(r?.pid ?? 0) !== undefined, 10_000);
    expect(exitOfPid(r?.pid ?? 0)?.code).to.equal(0);
  });

  it('never writes through a symlink where an output file goes: the start is left to the helper, the link’s target untouched', async () => {
    const work = path.join(dir, 'w');
    fs.mkdirSync(work);
    const victim = path.join(dir, 'victim');
    fs.writeFileSync(victim, 'keep');
    fs.symlinkSync(victim, path.join(work, 'stderr'));
    const f = open();
    expect(await startOn(f, { argv: ['true'], dir: work, procs: [] }, { cwd: work, env: { PATH: '/usr/bin:/bin' } })).to.equal(undefined);
    expect(fs.readFileSync(victim, 'utf8')).to.equal('keep');
    expect(fs.readdirSync(work).sort()).to.deep.equal(['stderr']); // its own stdout removed again
  });

  it('50 starts at once of a command that ends at once: each answer comes before its end, and every end comes', async () => {
    const f = open();
    for (let i = 0; i < 50; i++) {
      const work = path.join(dir, `w${i}`);
      fs.mkdirSync(work);
      f.start({ argv: ['true'], dir: work, procs: [] }, { cwd: work, env: { PATH: '/usr/bin:/bin' } }, (r) => {
        expect(r).to.not.equal(undefined);
        answered.add(r?.pid ?? 0);
      });
    }
    await waitFor(() => exits.length === 50, 10_000);
    expect(endedBeforeAnswer).to.equal(0);
    expect(answered.size).to.equal(50);
    expect(exits.every((e) => e.code === 0)).to.equal(true);
  });

  it('with its input closed it reaps the children it still has, then ends', async () => {
    const work = path.join(dir, 'w');
    fs.mkdirSync(work);
    const f = open();
    const r = await startOn(f, { argv: ['sleep', '0.5'], dir: work, procs: [] }, { cwd: work, env: { PATH: '/usr/bin:/bin' } });
    const pid = (r as { pid: number }).pid;
    started.push(pid);
    f.close();
    expect(alive(f.pid as number)).to.equal(true);
    await waitFor(() => exitOfPid(pid) !== undefined, 10_000);
    await waitFor(() => !alive(f.pid as number), 5000);
    expect(gone).to.deep.equal([]);
  });

  it('a forker killed after it started is gone (onGone); one that cannot run at all leaves every start to the helper', async () => {
    const f = open();
    const work = path.join(dir, 'w');
    fs.mkdirSync(work);
    await startOn(f, { argv: ['true'], dir: work, procs: [] }, { cwd: work, env: {} });
    process.kill(f.pid as number, 'SIGKILL');
    await waitFor(() => gone.length === 1, 5000);
    expect(gone[0]).to.match(/SIGKILL/);

    const notElf = path.join(dir, 'not-a-forker');
    fs.writeFileSync(notElf, 'not a program', { mode: 0o644 }); // exec: EACCES
    const bad = open(notElf);
    expect(await startOn(bad, { argv: ['true'], dir: work, procs: [] }, { cwd: work, env: {} })).to.equal(undefined);
    expect(bad.unusable).to.be.a('string');
    expect(await startOn(bad, { argv: ['true'], dir: work, procs: [] }, { cwd: work, env: {} })).to.equal(undefined);
    expect(gone).to.have.length(1);
  });

  it('encodes requests it cannot say as none (a NUL in a field, "=" in a variable name); reads a status as a code or a signal', () => {
    const d = { argv: ['true'], dir: '/w', procs: [] };
    expect(encodeRequest(1, { ...d, argv: ['a\0b'] }, { cwd: '/', env: {} })).to.equal(undefined);
    expect(encodeRequest(1, d, { cwd: '/', env: { 'A=B': 'c' } })).to.equal(undefined);
    const rec = encodeRequest(7, d, { cwd: '/c', env: { A: 'x=y' }, uid: 1000, gid: 100 }) as Buffer;
    expect(rec.readUInt32LE(0)).to.equal(rec.length - 4);
    expect(rec.subarray(4).toString('utf8').split('\0')).to.deep.equal(['7', '1000', '100', '/c', '/w', '0', '1', 'true', '1', 'A=x=y', '']);
    expect(exitOf(0)).to.deep.equal({ code: 0, signal: null });
    expect(exitOf(-15)).to.deep.equal({ code: null, signal: 'SIGTERM' });
  });
});
