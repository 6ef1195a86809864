import { expect } from 'chai';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { SpawnSpec } from '../../core/agent-core.js';
import { FAMILY_ENV, familyOf } from '../../core/process-family.js';
import { RealProcessDriver, readFamilyFile, workerDir, type ExitInfo } from '../process-driver.js';
import { ProcTable, envValue, parseStat, readStartTime } from '../proc-table.js';
import { WorkerFamilies } from '../worker-families.js';
import { alive, waitFor, removeWorkDir } from './helpers.js';

/** Appends a line to $OUT every 100 ms, after writing its own pid to $PIDF. */
const LOOP = 'echo $$ > "$PIDF"; while :; do echo x >> "$OUT"; sleep 0.1; done';

/**
 * A worker that starts two grandchildren running LOOP, then sleeps: (a) one that called `setsid`
 * (own session and process group), (b) one that double-forked (its parent exited: reparented).
 */
const ESCAPER = 'OUT="$D/setsid.out" PIDF="$D/setsid.pid" setsid sh -c "$LOOP" & ' + '(OUT="$D/dfork.out" PIDF="$D/dfork.pid" sh -c "$LOOP" &); ' + 'sleep 600';

const size = (f: string) => (fs.existsSync(f) ? fs.statSync(f).size : 0);
const pidIn = (f: string) => (fs.existsSync(f) ? Number(fs.readFileSync(f, 'utf8').trim()) || 0 : 0);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Waits until `file` exists and grew, i.e. its writer runs. */
async function growing(file: string): Promise<void> {
  await waitFor(() => size(file) > 0, 15_000, `${file} written`);
  const s = size(file);
  await waitFor(() => size(file) > s, 15_000, `${file} growing`);
}

/** The file does not grow over a second. */
async function expectStill(file: string): Promise<void> {
  const s = size(file);
  await sleep(1000);
  expect(size(file), `${path.basename(file)} still growing`).to.equal(s);
}

describe('stopping a worker ends its whole process family (real processes)', function () {
  this.timeout(60_000);
  let workDir: string;
  const drivers: RealProcessDriver[] = [];
  /** Every pid a test started or learned of, killed by pid at the end. */
  const pids: number[] = [];
  const exits: ExitInfo[] = [];

  const newDriver = (over: Partial<ConstructorParameters<typeof RealProcessDriver>[0]> = {}) => {
    const d = new RealProcessDriver({ workDir, stopGraceMs: 500, familySampleMs: 100, ...over });
    d.onExit((e) => exits.push(e));
    drivers.push(d);
    return d;
  };
  const spec = (workerId: string, argv: string[], env: Record<string, string> = {}): SpawnSpec => ({
    workerId,
    appId: 'fam',
    suId: 'u',
    task: 't',
    instance: 0,
    attempt: 1,
    argv,
    env,
    cwd: '',
  });
  /** A directory for a worker's side files (outside the worker dirs). */
  const sideDir = (name: string) => {
    const d = path.join(workDir, 'side', name);
    fs.mkdirSync(d, { recursive: true });
    return d;
  };
  /** The family of a worker as /proc shows it now, by its marker only. */
  const markedNow = (workerId: string) => {
    const marker = readFamilyFile(workerDir(workDir, 'fam', workerId));
    expect(marker).to.match(/^[0-9a-f-]{36}$/);
    return familyOf(new ProcTable(FAMILY_ENV).read(), { marker, known: [], exclude: [process.pid] });
  };

  before(() => {
    workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'fuxi-agent-family-'));
  });

  after(() => {
    for (const d of drivers) d.close();
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* already gone */
      }
    }
    removeWorkDir(workDir);
  });

  it('parses /proc stat lines (comm with spaces and parentheses) and environment blocks', () => {
    expect(parseStat(42, '42 (a) b)) S 7 42 42 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 123456 1000 10')).to.deep.equal({
      pid: 42,
      ppid: 7,
      startTime: '123456',
      state: 'S',
    });
    expect(parseStat(42, 'garbage')).to.equal(undefined);
    const env = Buffer.from('A=1\0XFUXI_WORKER_FAMILY=no\0FUXI_WORKER_FAMILY=abc\0B=2\0');
    expect(envValue(env, Buffer.from('FUXI_WORKER_FAMILY='))).to.equal('abc');
    expect(envValue(Buffer.from('A=1\0'), Buffer.from('FUXI_WORKER_FAMILY='))).to.equal(undefined);
  });

  it('a process read with no environment (inside its exec) is known by its marker at the next read', () => {
    const proc = fs.mkdtempSync(path.join(os.tmpdir(), 'fuxi-proc-'));
    try {
      const put = (pid: number, environ: string) => {
        fs.mkdirSync(path.join(proc, String(pid)), { recursive: true });
        fs.writeFileSync(path.join(proc, String(pid), 'stat'), `${pid} (sleep) S 1 ${pid} ${pid} 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 777 1000 10`);
        fs.writeFileSync(path.join(proc, String(pid), 'environ'), environ);
      };
      put(500, ''); // caught inside its exec
      put(501, 'A=1\0'); // a real environment without the marker
      const table = new ProcTable(FAMILY_ENV, proc);
      expect(table.read().map((e) => e.marker)).to.deep.equal([undefined, undefined]);
      put(500, `${FAMILY_ENV}=m1\0`);
      put(501, `${FAMILY_ENV}=m2\0`); // the same process: its first answer stands
      const byPid = new Map(table.read().map((e) => [e.pid, e.marker]));
      expect(byPid.get(500)).to.equal('m1');
      expect(byPid.get(501)).to.equal(undefined);
    } finally {
      fs.rmSync(proc, { recursive: true, force: true });
    }
  });

  it('kill ends a setsid grandchild and a double-forked grandchild; a same-command process outside the family is untouched', async () => {
    const d = sideDir('escape');
    const driver = newDriver();
    const r = await driver.spawn(spec('escape', ['sh', '-c', ESCAPER], { D: d, LOOP }));
    pids.push(r.pid);
    // Outside the family: the very same command line, started by the test (no marker).
    const outsider = spawn('sh', ['-c', LOOP], {
      detached: true,
      stdio: 'ignore',
      env: { ...process.env, OUT: path.join(d, 'outsider.out'), PIDF: path.join(d, 'outsider.pid') },
    });
    pids.push(outsider.pid!);
    for (const f of ['setsid.out', 'dfork.out', 'outsider.out']) await growing(path.join(d, f));
    const a = pidIn(path.join(d, 'setsid.pid'));
    const b = pidIn(path.join(d, 'dfork.pid'));
    pids.push(a, b);
    // They did leave: another session (a) and another parent (b) than the worker's tree.
    expect(fs.readFileSync(`/proc/${a}/stat`, 'utf8').split(') ')[1]!.split(' ')[3]).to.equal(String(a)); // session id = own pid
    expect(Number(fs.readFileSync(`/proc/${b}/stat`, 'utf8').split(') ')[1]!.split(' ')[1])).to.not.equal(r.pid);
    expect(markedNow('escape').map((p) => p.pid)).to.include.members([r.pid, a, b]);

    driver.kill(r.pid, 500, { appId: 'fam', workerId: 'escape' });
    await waitFor(() => exits.some((e) => e.workerId === 'escape'), 15_000, 'the worker exit');
    await waitFor(() => !alive(a) && !alive(b), 15_000, 'both grandchildren gone');
    await expectStill(path.join(d, 'setsid.out'));
    await expectStill(path.join(d, 'dfork.out'));
    expect(markedNow('escape')).to.deep.equal([]);
    await waitFor(() => driver.stopsRunning === 0, 15_000, 'the stop to finish');
    // The outsider runs on.
    expect(alive(outsider.pid!)).to.equal(true);
    await growing(path.join(d, 'outsider.out'));
    process.kill(outsider.pid!, 'SIGKILL');
  });

  it('a worker re-adopted after an agent restart is stopped with its escaped grandchildren (marker from its directory)', async () => {
    const d = sideDir('adopted');
    const first = newDriver();
    const r = await first.spawn(spec('adopted', ['sh', '-c', ESCAPER], { D: d, LOOP }));
    pids.push(r.pid);
    for (const f of ['setsid.out', 'dfork.out']) await growing(path.join(d, f));
    const a = pidIn(path.join(d, 'setsid.pid'));
    const b = pidIn(path.join(d, 'dfork.pid'));
    pids.push(a, b);
    first.close(); // the agent died; its workers run on

    const again = newDriver({ adoptPollMs: 50 });
    const reg = { appId: 'fam', workerId: 'adopted', pid: r.pid, startTime: r.startTime, bootId: r.bootId };
    expect(again.probe(reg).kind).to.equal('alive');
    again.adopt(reg);
    again.kill(r.pid, 500, { appId: 'fam', workerId: 'adopted' });
    await waitFor(() => !alive(r.pid) && !alive(a) && !alive(b), 15_000, 'worker and grandchildren gone');
    await expectStill(path.join(d, 'setsid.out'));
    await expectStill(path.join(d, 'dfork.out'));
    expect(markedNow('adopted')).to.deep.equal([]);
  });

  it('a kill that comes after the worker itself ended still finds its detached children by their marker', async () => {
    const d = sideDir('leftover');
    const driver = newDriver();
    // The worker starts a setsid'd grandchild and exits at once.
    const r = await driver.spawn(spec('leftover', ['sh', '-c', 'OUT="$D/setsid.out" PIDF="$D/setsid.pid" setsid sh -c "$LOOP" & exit 0'], { D: d, LOOP }));
    pids.push(r.pid);
    await growing(path.join(d, 'setsid.out'));
    const a = pidIn(path.join(d, 'setsid.pid'));
    pids.push(a);
    await waitFor(() => exits.some((e) => e.workerId === 'leftover'), 15_000, 'the worker exit');
    driver.kill(r.pid, 500, { appId: 'fam', workerId: 'leftover' });
    await waitFor(() => !alive(a), 15_000, 'the grandchild gone');
    await expectStill(path.join(d, 'setsid.out'));
  });

  it('a child that scrubbed its environment and was reparented is still found when a sample saw it', async () => {
    const d = sideDir('scrubbed');
    const driver = newDriver({ familySampleMs: 100 });
    // `env -i` drops the marker; the intermediate shell exits after 1.5 s, so the looping child is
    // then under init: neither marker nor tree leads to it, only the samples taken before.
    const worker = '(env -i OUT="$D/scrubbed.out" PIDF="$D/scrubbed.pid" /bin/sh -c "$LOOP" & sleep 1.5) ; sleep 600';
    const r = await driver.spawn(spec('scrubbed', ['sh', '-c', worker], { D: d, LOOP }));
    pids.push(r.pid);
    await growing(path.join(d, 'scrubbed.out'));
    const a = pidIn(path.join(d, 'scrubbed.pid'));
    pids.push(a);
    expect(fs.readFileSync(`/proc/${a}/environ`, 'utf8')).to.not.contain(FAMILY_ENV);
    await waitFor(() => Number(fs.readFileSync(`/proc/${a}/stat`, 'utf8').split(') ')[1]!.split(' ')[1]) !== r.pid && !isUnder(a, r.pid), 15_000, 'reparented');
    driver.kill(r.pid, 500, { appId: 'fam', workerId: 'scrubbed' });
    await waitFor(() => !alive(a), 15_000, 'the scrubbed child gone');
    await expectStill(path.join(d, 'scrubbed.out'));
  });

  it('a family that ignores SIGTERM and keeps forking detached children is frozen and killed to the last', async () => {
    const driver = newDriver();
    // Every 20 ms a new double-forked `sleep` that ignores SIGTERM (SIG_IGN survives exec).
    const r = await driver.spawn(spec('forker', ['sh', '-c', "trap '' TERM; while :; do (sleep 60 &); sleep 0.02; done"]));
    pids.push(r.pid);
    await waitFor(() => markedNow('forker').length >= 10, 15_000, 'a crowd of children');
    driver.kill(r.pid, 300, { appId: 'fam', workerId: 'forker' });
    await waitFor(() => exits.some((e) => e.workerId === 'forker'), 15_000, 'the worker exit');
    await waitFor(() => markedNow('forker').length === 0, 15_000, 'no member left');
    await waitFor(() => driver.stopsRunning === 0, 15_000, 'the stop to finish');
    await sleep(500);
    expect(markedNow('forker')).to.deep.equal([]);
  });

  it('a new worker on the pid of one whose stop still runs is not part of that stop', async () => {
    const families = new WorkerFamilies({ sampleMs: 100, pollMs: 50 });
    try {
      // A's root ended; one process it left ignores SIGTERM, so A's stop runs until its grace ends.
      const left = spawn('sh', ['-c', "trap '' TERM; sleep 30"], { detached: true, stdio: 'ignore', env: { ...process.env, [FAMILY_ENV]: 'mark-a' } });
      // B: the new worker that got A's root pid (the pid is the key; B is a real process).
      const b = spawn('sleep', ['30'], { detached: true, stdio: 'ignore', env: { ...process.env, [FAMILY_ENV]: 'mark-b' } });
      pids.push(left.pid!, b.pid!);
      await sleep(100);
      const key = b.pid!;
      families.track(key, { appId: 'fam', workerId: 'a', root: { pid: left.pid!, startTime: readStartTime(left.pid!) }, marker: 'mark-a' });
      families.stop(key, 400);
      families.rootEnded(key);
      families.track(key, { appId: 'fam', workerId: 'b', root: { pid: b.pid!, startTime: readStartTime(b.pid!) }, marker: 'mark-b' });
      expect(families.recordOf(key)?.workerId).to.equal('b');
      await waitFor(() => !alive(left.pid!), 10_000, "A's leftover killed after its grace");
      await sleep(300);
      expect(alive(b.pid!), 'B untouched').to.equal(true);
      expect(families.stopping).to.equal(0);
    } finally {
      families.close();
    }
  });

  it('never signals a pid it does not know as a worker', async () => {
    const driver = newDriver();
    const bystander = spawn('sleep', ['30'], { detached: true, stdio: 'ignore' });
    pids.push(bystander.pid!);
    driver.kill(bystander.pid!, 100);
    driver.kill(bystander.pid!, 100, { appId: 'fam', workerId: 'no-such-worker' });
    await sleep(500);
    expect(alive(bystander.pid!)).to.equal(true);
    expect(driver.stopsRunning).to.equal(0);
    process.kill(bystander.pid!, 'SIGKILL');
  });
});

/** Whether `pid` has `ancestor` among its ancestors now. */
function isUnder(pid: number, ancestor: number): boolean {
  let p = pid;
  for (let i = 0; i < 64 && p > 1; i++) {
    try {
      p = Number(fs.readFileSync(`/proc/${p}/stat`, 'utf8').split(') ')[1]!.split(' ')[1]);
    } catch {
      return false;
    }
    if (p === ancestor) return true;
  }
  return false;
}
