import { expect } from 'chai';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { SpawnSpec } from '../../core/agent-core.js';
import { legacyWorkerGroup, parseProcCgroup } from '../../core/resource-limits.js';
import { openEnforcer, removeAgentGroups, type ResourceEnforcer } from '../cgroups.js';
import { cgroupMounts } from '../cgroup-paths.js';
import { RealProcessDriver, type ExitInfo } from '../process-driver.js';
import { HelperSpawner } from '../spawner.js';
import { waitFor, removeWorkDir } from './helpers.js';

/** Allocates (and touches) 8 MB every 20 ms until killed: far past a 64 MB grant within a second. */
const HOG = ['node', '-e', 'const a = []; setInterval(() => a.push(Buffer.alloc(8 << 20, 1)), 20);'];

function spec(workerId: string, argv: string[], memoryMb: number, cpuMilli = 500): SpawnSpec {
  return { workerId, appId: 'cg-app', suId: 'map', task: 'map', instance: 0, attempt: 1, argv, env: {}, cwd: '', resource: { cpuMilli, memoryMb } };
}

/** Whether this host lets the agent make cgroup v1 memory and cpu groups (root, v1 mounted). */
function v1Writable(): boolean {
  try {
    return openEnforcer({ setting: 'cgroup-v1', nodeId: `probe-${process.pid}` }).mode === 'cgroup-v1';
  } catch {
    return false;
  }
}

/** The driver with `enforcer`, its exits, and cleanup of whatever it started. */
function harness(enforcer: ResourceEnforcer) {
  const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'fuxi-cgroups-'));
  const spawner = new HelperSpawner();
  const driver = new RealProcessDriver({ workDir, stopGraceMs: 500, familySampleMs: 200, enforcer, spawner });
  const exits: ExitInfo[] = [];
  const pids: number[] = [];
  driver.onExit((e) => exits.push(e));
  return {
    driver,
    spawner,
    pids,
    async exitOf(workerId: string, ms = 30_000): Promise<ExitInfo> {
      await waitFor(() => exits.some((e) => e.workerId === workerId), ms, `exit of ${workerId}`);
      return exits.find((e) => e.workerId === workerId) as ExitInfo;
    },
    cleanup(): void {
      driver.close();
      for (const pid of pids) {
        try {
          process.kill(-pid, 'SIGKILL');
        } catch {
          /* gone */
        }
      }
      enforcer.close();
      removeWorkDir(workDir);
    },
  };
}

describe('cgroups: mounts and the agent group', () => {
  it('reads cgroup mounts (with their root) from mountinfo', () => {
    const ms = cgroupMounts(
      [
        '32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu',
        '35 31 0:32 /docker/abc /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory',
        '41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw',
        '22 1 0:20 / /proc rw - proc proc rw',
      ].join('\n'),
    );
    expect(ms.map((m) => [m.dir, m.root, m.fstype])).to.deep.equal([
      ['/sys/fs/cgroup/cpu', '/', 'cgroup'],
      ['/sys/fs/cgroup/memory', '/docker/abc', 'cgroup'],
      ['/sys/fs/cgroup/unified', '/', 'cgroup2'],
    ]);
  });

  it('off and rss need no cgroup', () => {
    expect(openEnforcer({ setting: 'off', nodeId: 'n' }).mode).to.equal('off');
    const rss = openEnforcer({ setting: 'rss', nodeId: 'n' });
    expect(rss.mode).to.equal('rss');
    expect(rss.prepare('a', 'w', { memoryBytes: 1, cpuQuotaUs: null, cpuPeriodUs: 100_000 })).to.deep.equal([]);
  });

  it('refuses a cgroup mode the host does not have, naming resourceEnforcement', () => {
    const noCgroups = { procSelfCgroup: '0::/\n', mountInfo: '' };
    expect(() => openEnforcer({ setting: 'cgroup-v2', nodeId: 'n', ...noCgroups })).to.throw(/resourceEnforcement: cgroup-v2 is not available/);
    expect(() => openEnforcer({ setting: 'cgroup-v1', nodeId: 'n', ...noCgroups })).to.throw(/resourceEnforcement: cgroup-v1 is not available/);
    expect(openEnforcer({ setting: 'auto', nodeId: 'n', ...noCgroups }).mode).to.equal('rss');
  });
});

describe('cgroups: cgroup v1 (real groups on this host)', function () {
  this.timeout(60_000);
  let enforcer: ResourceEnforcer;
  let h: ReturnType<typeof harness>;
  const nodeId = `test-${process.pid}-${Date.now()}`;

  before(function () {
    if (!v1Writable()) this.skip();
    enforcer = openEnforcer({ setting: 'auto', nodeId });
    h = harness(enforcer);
  });

  after(async () => {
    h?.cleanup();
    await removeAgentGroups(nodeId, ''); // whatever a failed test left
    for (const d of enforcer?.agentDirs ?? []) expect(fs.existsSync(d), `${d} removed`).to.equal(false);
  });

  it('auto picks cgroup v1 here, under the agent own group of each controller', () => {
    expect(enforcer.mode).to.equal('cgroup-v1');
    const own = parseProcCgroup(fs.readFileSync('/proc/self/cgroup', 'utf8'));
    const [mem, cpu] = enforcer.agentDirs;
    expect(mem).to.equal(path.join('/sys/fs/cgroup/memory', own.get('memory') ?? '', `fuxi-${nodeId}`));
    expect(cpu).to.equal(path.join('/sys/fs/cgroup/cpu', own.get('cpu') ?? '', `fuxi-${nodeId}`));
  });

  it('runs a worker in its own groups with the limits of its grant, and removes them after', async () => {
    // It runs until the checks are done: a worker that has already ended shows the root groups in
    // /proc/<pid>/cgroup (a zombie's), however slow the machine is.
    const release = path.join(os.tmpdir(), `fuxi-cg-release-${process.pid}-${Date.now()}`);
    const r = await h.driver.spawn(spec('normal', ['sh', '-c', `while [ ! -e ${release} ]; do sleep 0.05; done`], 64, 250));
    h.pids.push(r.pid);
    const [memDir, cpuDir] = enforcer.groupDirs('cg-app', 'normal') as [string, string];
    expect(fs.readFileSync(path.join(memDir, 'memory.limit_in_bytes'), 'utf8').trim()).to.equal(String(64 * 1024 * 1024));
    expect(fs.readFileSync(path.join(cpuDir, 'cpu.cfs_quota_us'), 'utf8').trim()).to.equal('25000');
    expect(fs.readFileSync(path.join(cpuDir, 'cpu.cfs_period_us'), 'utf8').trim()).to.equal('100000');
    // The command (the root: no wrapper) was born in both groups; its spawn helper is back in its own.
    expect(fs.readFileSync(path.join(memDir, 'cgroup.procs'), 'utf8').split('\n')).to.include(String(r.pid));
    const groups = parseProcCgroup(fs.readFileSync(`/proc/${r.pid}/cgroup`, 'utf8'));
    expect(memDir.endsWith(groups.get('memory') ?? '?')).to.equal(true);
    expect(cpuDir.endsWith(groups.get('cpu') ?? '?')).to.equal(true);
    const own = parseProcCgroup(fs.readFileSync('/proc/self/cgroup', 'utf8'));
    const helper = parseProcCgroup(fs.readFileSync(`/proc/${h.spawner.helperPid ?? 0}/cgroup`, 'utf8'));
    expect([helper.get('memory'), helper.get('cpu')]).to.deep.equal([own.get('memory'), own.get('cpu')]);
    fs.writeFileSync(release, '');
    const e = await h.exitOf('normal');
    fs.rmSync(release, { force: true });
    expect(e.exitCode).to.equal(0);
    expect(e.detail).to.equal(undefined);
    await waitFor(() => !fs.existsSync(memDir) && !fs.existsSync(cpuDir), 5000, 'groups removed');
  });

  it('a worker allocating far past its memory grant is OOM-killed and says so', async () => {
    const r = await h.driver.spawn(spec('hog', HOG, 64));
    h.pids.push(r.pid);
    const e = await h.exitOf('hog');
    expect([e.exitCode, e.signal]).to.deep.equal([null, 'SIGKILL']); // the helper saw it die of SIGKILL
    expect(e.detail).to.match(/^OOM: used [\d.]+ MB of 64 MB$/);
    for (const d of enforcer.groupDirs('cg-app', 'hog')) await waitFor(() => !fs.existsSync(d), 5000, `${d} removed`);
  });

  it('a re-adopted worker (agent restart) keeps its groups; its OOM is reported by the new driver', async () => {
    const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'fuxi-cgroups-adopt-'));
    const first = new RealProcessDriver({ workDir, stopGraceMs: 500, enforcer });
    first.onExit(() => {}); // in this process its child's exit still arrives; a dead agent hears nothing
    // Waits for a file, then allocates past its grant: it runs on after the first driver is gone.
    const go = path.join(workDir, 'go');
    const s = spec('adopted', ['sh', '-c', `while [ ! -e ${go} ]; do sleep 0.05; done; exec "$@"`, 'sh', ...HOG], 64);
    const r = await first.spawn(s);
    h.pids.push(r.pid);
    const inGroup = (d: string) => fs.readFileSync(path.join(d, 'cgroup.procs'), 'utf8').split('\n').includes(String(r.pid));
    await waitFor(() => enforcer.groupDirs('cg-app', 'adopted').every(inGroup), 5000, 'the wrapper in its groups');
    first.close();
    // The restarted agent: a new enforcer of the same identity, the start-up sweep with the live worker.
    const again = openEnforcer({ setting: 'auto', nodeId });
    again.sweep([{ appId: 'cg-app', workerId: 'adopted' }]);
    const dirs = again.groupDirs('cg-app', 'adopted');
    for (const d of dirs) expect(inGroup(d), d).to.equal(true);
    const second = new RealProcessDriver({ workDir, adoptPollMs: 100, enforcer: again });
    const exits: ExitInfo[] = [];
    second.onExit((e) => exits.push(e));
    second.adopt({ appId: 'cg-app', workerId: 'adopted', pid: r.pid, startTime: r.startTime, bootId: r.bootId, resource: { cpuMilli: 500, memoryMb: 64 } });
    fs.writeFileSync(go, '');
    await waitFor(() => exits.length > 0, 30_000, 'the adopted worker ends');
    second.close();
    expect(exits[0]).to.include({ workerId: 'adopted', exitCode: 137 });
    expect(exits[0]?.detail).to.match(/^OOM: used [\d.]+ MB of 64 MB$/);
    for (const d of dirs) await waitFor(() => !fs.existsSync(d), 5000, `${d} removed`);
    removeWorkDir(workDir);
  });

  it("makes each worker's group one level under the agent's (no group per app), and removes only that one", () => {
    const limits = { memoryBytes: 64 * 1024 * 1024, cpuQuotaUs: 10_000, cpuPeriodUs: 100_000 };
    enforcer.prepare('cg-two', 'a', limits);
    enforcer.prepare('cg-two', 'b', limits);
    for (const [i, d] of enforcer.groupDirs('cg-two', 'a').entries()) expect(path.dirname(d)).to.equal(enforcer.agentDirs[i]);
    const [, cpuB] = enforcer.groupDirs('cg-two', 'b') as [string, string];
    expect(fs.readFileSync(path.join(cpuB, 'cpu.cfs_period_us'), 'utf8').trim()).to.equal('100000');
    expect(enforcer.finish('cg-two', 'a')).to.deep.include({ oomKills: 0, limitBytes: 64 * 1024 * 1024 });
    for (const d of enforcer.groupDirs('cg-two', 'a')) expect(fs.existsSync(d), d).to.equal(false);
    for (const d of [...enforcer.groupDirs('cg-two', 'b'), ...enforcer.agentDirs]) expect(fs.existsSync(d), d).to.equal(true);
    enforcer.finish('cg-two', 'b');
    for (const d of enforcer.groupDirs('cg-two', 'b')) expect(fs.existsSync(d), d).to.equal(false);
  });

  it('a period other than the kernel default is written', () => {
    enforcer.prepare('cg-period', 'a', { memoryBytes: null, cpuQuotaUs: 5_000, cpuPeriodUs: 50_000 });
    const [, cpu] = enforcer.groupDirs('cg-period', 'a') as [string, string];
    expect(fs.readFileSync(path.join(cpu, 'cpu.cfs_period_us'), 'utf8').trim()).to.equal('50000');
    expect(fs.readFileSync(path.join(cpu, 'cpu.cfs_quota_us'), 'utf8').trim()).to.equal('5000');
    enforcer.finish('cg-period', 'a');
    expect(fs.existsSync(cpu)).to.equal(false);
  });

  it("finds a worker's group where an earlier agent made it (<app>/<worker>): its evidence read, it and its emptied app group removed", () => {
    // As an agent of the earlier layout left them: two workers of one app, a group each.
    const old = (w: string) => enforcer.agentDirs.map((d) => legacyWorkerGroup(d, 'cg-old', w));
    for (const d of [...old('a'), ...old('b')]) fs.mkdirSync(d, { recursive: true });
    const [memA] = old('a') as [string];
    fs.writeFileSync(path.join(memA, 'memory.limit_in_bytes'), String(64 * 1024 * 1024));
    // A restarted agent (no limits of its own for them) finishes the first: found, read, removed.
    const again = openEnforcer({ setting: 'auto', nodeId });
    expect(again.finish('cg-old', 'a')).to.deep.include({ oomKills: 0, limitBytes: 64 * 1024 * 1024 });
    for (const d of old('a')) expect(fs.existsSync(d), d).to.equal(false);
    for (const d of old('b')) expect(fs.existsSync(path.dirname(d)), path.dirname(d)).to.equal(true);
    // The sweep finds the other in the earlier layout too, and removes the app group with it.
    again.sweep([]);
    for (const d of old('b')) expect(fs.existsSync(path.dirname(d)), path.dirname(d)).to.equal(false);
  });

  it('the start-up sweep keeps the earlier layout group of a live worker', () => {
    const old = enforcer.agentDirs.map((d) => legacyWorkerGroup(d, 'cg-old2', 'live'));
    for (const d of old) fs.mkdirSync(d, { recursive: true });
    enforcer.sweep([{ appId: 'cg-old2', workerId: 'live' }]);
    for (const d of old) expect(fs.existsSync(d), d).to.equal(true);
    enforcer.sweep([]);
    for (const d of old) expect(fs.existsSync(path.dirname(d)), path.dirname(d)).to.equal(false);
  });

  /** Pid written to `file` by a process that runs without the worker's environment under init. */
  const escapee = (file: string) => `(env -i sh -c 'echo $$ > ${file}.tmp; mv ${file}.tmp ${file}; exec sleep 300' &)`;
  const readPid = (file: string) => Number(fs.readFileSync(file, 'utf8').trim());
  const alive = (pid: number) => {
    try {
      process.kill(pid, 0);
      return fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0] !== 'Z';
    } catch {
      return false;
    }
  };

  it('a kill stops a descendant that dropped its environment and was reparented before any sample saw it: it is in the group', async () => {
    // No sample runs before the kill: only the group can name the descendant.
    const workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'fuxi-cgroups-escape-'));
    const driver = new RealProcessDriver({ workDir, stopGraceMs: 500, familySampleMs: 600_000, enforcer });
    const exits: ExitInfo[] = [];
    driver.onExit((e) => exits.push(e));
    const file = path.join(workDir, 'escaped.pid');
    const r = await driver.spawn(spec('escape', ['sh', '-c', `${escapee(file)}; exec sleep 300`], 64));
    h.pids.push(r.pid);
    await waitFor(() => fs.existsSync(file), 10_000, 'the descendant started');
    const pid = readPid(file);
    h.pids.push(pid);
    expect(fs.readFileSync(`/proc/${pid}/environ`, 'utf8')).to.not.include('FUXI_WORKER_FAMILY');
    driver.kill(r.pid);
    await waitFor(() => exits.length > 0, 10_000, 'the worker ends');
    await waitFor(() => !alive(pid), 10_000, `the descendant ${pid} is stopped`);
    for (const d of enforcer.groupDirs('cg-app', 'escape')) await waitFor(() => !fs.existsSync(d), 5000, `${d} removed`);
    driver.close();
    removeWorkDir(workDir);
  });

  it('a worker that ends on its own leaves nothing running: what it left in its group is stopped, and the group removed', async () => {
    const file = path.join(os.tmpdir(), `fuxi-cg-left-${process.pid}-${Date.now()}.pid`);
    const r = await h.driver.spawn(spec('leaves', ['sh', '-c', `${escapee(file)}; while [ ! -e ${file} ]; do sleep 0.05; done; exit 0`], 64));
    h.pids.push(r.pid);
    const e = await h.exitOf('leaves');
    expect([e.exitCode, e.signal]).to.deep.equal([0, null]);
    const pid = readPid(file);
    h.pids.push(pid);
    fs.rmSync(file, { force: true });
    await waitFor(() => !alive(pid), 10_000, `the process ${pid} it left is stopped`);
    for (const d of enforcer.groupDirs('cg-app', 'leaves')) await waitFor(() => !fs.existsSync(d), 5000, `${d} removed`);
    await waitFor(() => h.driver.stopsRunning === 0, 5000, 'the stop ends');
  });

  it('the start-up sweep removes groups of gone workers and keeps those of live ones', () => {
    for (const d of [...enforcer.groupDirs('cg-app', 'gone'), ...enforcer.groupDirs('cg-app', 'live')]) fs.mkdirSync(d, { recursive: true });
    enforcer.sweep([{ appId: 'cg-app', workerId: 'live' }]);
    for (const d of enforcer.groupDirs('cg-app', 'gone')) expect(fs.existsSync(d)).to.equal(false);
    for (const d of enforcer.groupDirs('cg-app', 'live')) expect(fs.existsSync(d)).to.equal(true);
    enforcer.sweep([]);
    for (const d of enforcer.groupDirs('cg-app', 'live')) expect(fs.existsSync(d)).to.equal(false);
    for (const d of enforcer.agentDirs) expect(fs.readdirSync(d, { withFileTypes: true }).filter((x) => x.isDirectory())).to.deep.equal([]);
  });
});

describe('cgroups: rss fallback (real processes)', function () {
  this.timeout(60_000);
  let h: ReturnType<typeof harness>;

  before(() => {
    h = harness(openEnforcer({ setting: 'rss', nodeId: 'rss' }));
  });
  after(() => h.cleanup());

  it('kills a worker family whose RSS passes its memory grant, with the OOM message', async () => {
    const r = await h.driver.spawn(spec('hog', HOG, 64));
    h.pids.push(r.pid);
    const e = await h.exitOf('hog');
    expect(e.exitCode === 0).to.equal(false);
    expect(e.detail).to.match(/^OOM: used [\d.]+ MB of 64 MB$/);
    await waitFor(() => h.driver.stopsRunning === 0, 10_000, 'family stopped');
  });

  it('leaves a worker within its grant alone', async () => {
    const r = await h.driver.spawn(spec('small', ['sh', '-c', 'sleep 1'], 64));
    h.pids.push(r.pid);
    const e = await h.exitOf('small');
    expect(e.exitCode).to.equal(0);
    expect(e.detail).to.equal(undefined);
  });
});
