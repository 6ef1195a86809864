import { expect } from 'chai';
import {
  agentGroup,
  cpuMaxLine,
  decideEnforcement,
  groupName,
  groupsToSweep,
  isOomMessage,
  legacyWorkerGroup,
  limitsFor,
  oomMessage,
  oomVerdict,
  overMemory,
  parseProcCgroup,
  parseWorkerGroupName,
  workerGroup,
  type EnforcementProbe,
} from '../resource-limits.js';

const probe = (over: { v2?: Partial<EnforcementProbe['v2']>; v1?: Partial<EnforcementProbe['v1']> } = {}): EnforcementProbe => ({
  v2: { writable: false, controllers: [], ...over.v2 },
  v1: { memory: false, cpu: false, ...over.v1 },
});
const V2 = { writable: true, controllers: ['cpuset', 'cpu', 'io', 'memory', 'pids'] };
const V1 = { memory: true, cpu: true };

describe('resource limits: the enforcement mode', () => {
  it('auto takes cgroup v2, else v1, else RSS sampling', () => {
    expect(decideEnforcement('auto', probe({ v2: V2, v1: V1 }))).to.include({ ok: true, mode: 'cgroup-v2' });
    expect(decideEnforcement('auto', probe({ v1: V1 }))).to.include({ ok: true, mode: 'cgroup-v1' });
    // v2 mounted but memory or cpu not delegated: v1.
    expect(decideEnforcement('auto', probe({ v2: { writable: true, controllers: ['hugetlb'] }, v1: V1 }))).to.include({ mode: 'cgroup-v1' });
    const rss = decideEnforcement('auto', probe({ v1: { memory: true, cpu: false, problem: 'cannot create a group in /sys/fs/cgroup/cpu (EACCES)' } }));
    expect(rss).to.include({ ok: true, mode: 'rss' });
    expect(rss.reason).to.match(/EACCES/);
  });

  it('a mode named explicitly is taken only when the host has it, and says why not', () => {
    expect(decideEnforcement('cgroup-v1', probe({ v2: V2, v1: V1 }))).to.include({ ok: true, mode: 'cgroup-v1' });
    expect(decideEnforcement('cgroup-v2', probe({ v2: V2 }))).to.include({ ok: true, mode: 'cgroup-v2' });
    const no2 = decideEnforcement('cgroup-v2', probe({ v2: { writable: true, controllers: ['pids'] }, v1: V1 }));
    expect(no2).to.deep.equal({ ok: false, reason: 'cgroup v2 controllers delegated: pids (memory and cpu needed)' });
    expect(decideEnforcement('cgroup-v1', probe({ v1: { memory: true, cpu: false } }))).to.deep.equal({
      ok: false,
      reason: 'the cgroup v1 cpu controller is not writable',
    });
    expect(decideEnforcement('rss', probe())).to.include({ ok: true, mode: 'rss' });
    expect(decideEnforcement('off', probe({ v2: V2 }))).to.include({ ok: true, mode: 'off' });
  });
});

describe('resource limits: arithmetic', () => {
  it('memory MB -> bytes; cpuMilli -> a CFS quota over a 100 ms period', () => {
    expect(limitsFor({ cpuMilli: 500, memoryMb: 64 })).to.deep.equal({ memoryBytes: 67_108_864, cpuQuotaUs: 50_000, cpuPeriodUs: 100_000 });
    expect(limitsFor({ cpuMilli: 2500, memoryMb: 4096 })).to.deep.equal({ memoryBytes: 4_294_967_296, cpuQuotaUs: 250_000, cpuPeriodUs: 100_000 });
    // The kernel's smallest quota is 1 ms; nothing granted is no limit.
    expect(limitsFor({ cpuMilli: 1, memoryMb: 0 })).to.deep.equal({ memoryBytes: null, cpuQuotaUs: 1000, cpuPeriodUs: 100_000 });
    expect(limitsFor({ cpuMilli: 0, memoryMb: 1 })).to.deep.equal({ memoryBytes: 1_048_576, cpuQuotaUs: null, cpuPeriodUs: 100_000 });
    expect(cpuMaxLine(limitsFor({ cpuMilli: 250, memoryMb: 1 }))).to.equal('25000 100000');
    expect(cpuMaxLine(limitsFor({ cpuMilli: 0, memoryMb: 1 }))).to.equal('max 100000');
  });

  it('the RSS fallback kills only past the memory grant', () => {
    const l = limitsFor({ cpuMilli: 100, memoryMb: 64 });
    expect(overMemory(64 * 1024 * 1024, l)).to.equal(false);
    expect(overMemory(64 * 1024 * 1024 + 1, l)).to.equal(true);
    expect(overMemory(1e12, limitsFor({ cpuMilli: 100, memoryMb: 0 }))).to.equal(false);
  });
});

describe('resource limits: OOM', () => {
  const ev = { oomKills: 1, maxUsageBytes: 67_108_864, limitBytes: 67_108_864 };

  it('says how much was used of how much', () => {
    expect(oomMessage(67_108_864, 67_108_864)).to.equal('OOM: used 64 MB of 64 MB');
    expect(oomMessage(100.25 * 1024 * 1024, 64 * 1024 * 1024)).to.equal('OOM: used 100.3 MB of 64 MB');
    expect(oomMessage(12 * 1024 ** 3, 16 * 1024 ** 3)).to.equal('OOM: used 12.0 GB of 16.0 GB');
    expect(isOomMessage('OOM: used 64 MB of 64 MB')).to.equal(true);
    expect(isOomMessage('exit code 137')).to.equal(false);
  });

  it('is the verdict when something in the group was killed for memory and the worker did not succeed', () => {
    expect(oomVerdict(137, null, ev)).to.equal('OOM: used 64 MB of 64 MB');
    expect(oomVerdict(null, 'SIGKILL', ev)).to.equal('OOM: used 64 MB of 64 MB');
    expect(oomVerdict(1, null, ev)).to.equal('OOM: used 64 MB of 64 MB');
    // A child killed for memory, the worker coped and succeeded: a success.
    expect(oomVerdict(0, null, ev)).to.equal('');
    expect(oomVerdict(137, null, { ...ev, oomKills: 0 })).to.equal('');
    expect(oomVerdict(137, null, { ...ev, limitBytes: null })).to.equal('');
    expect(oomVerdict(137, null, undefined)).to.equal('');
  });
});

describe('resource limits: groups', () => {
  it('reads the group of each controller from /proc/self/cgroup', () => {
    const g = parseProcCgroup('4:memory:/process_api/abc\n2:cpu,cpuacct:/\n0::/system.slice/fuxi-agent.service\n');
    expect([...g.entries()]).to.deep.equal([
      ['memory', '/process_api/abc'],
      ['cpu', '/'],
      ['cpuacct', '/'],
      ['', '/system.slice/fuxi-agent.service'],
    ]);
  });

  it("puts the agent's groups under its own group, a worker's one level under the agent's (<app>@<worker>)", () => {
    expect(agentGroup('/process_api/abc', 'n1')).to.equal('/process_api/abc/fuxi-n1');
    expect(agentGroup('/', 'n1')).to.equal('/fuxi-n1');
    expect(agentGroup('/a', 'n1', '0badcafe')).to.equal('/a/fuxi-n1-0badcafe');
    expect(workerGroup('/x/fuxi-n1', 'job-7', 'map.0.1')).to.equal('/x/fuxi-n1/job-7@map.0.1');
    expect(legacyWorkerGroup('/x/fuxi-n1', 'job-7', 'map.0.1')).to.equal('/x/fuxi-n1/job-7/map.0.1');
  });

  it('a one-level group name gives back its app and worker; an earlier agent app group gives nothing', () => {
    for (const [app, worker] of [
      ['job-7', 'map.0.1'],
      ['a@b', 'w@1'],
      ['a/b', '..'],
      ['memory.x', 'cgroup.procs'],
    ] as const) {
      const name = workerGroup('', app, worker).slice(1);
      expect(name.split('@'), name).to.have.length(2);
      expect(parseWorkerGroupName(name)).to.deep.equal({ app: groupName(app), worker: groupName(worker) });
    }
    expect(groupName('a@b')).to.not.include('@');
    expect(parseWorkerGroupName('job-7')).to.equal(undefined);
    expect(parseWorkerGroupName('@x')).to.equal(undefined);
    expect(parseWorkerGroupName('x@')).to.equal(undefined);
  });

  it('names groups safely: no slashes, dots alone or control-file look-alikes', () => {
    expect(groupName('map.0.1')).to.equal('map.0.1');
    for (const id of ['a/b', '..', '.', 'memory.limit_in_bytes', 'cgroup.procs', 'tasks', ' x']) expect(groupName(id), id).to.match(/^x[A-Za-z0-9_-]+$/);
    expect(groupName('a/b')).to.not.equal(groupName('a_b'));
  });

  it('the start-up sweep keeps the groups of live workers only', () => {
    const found = [
      { app: 'j1', worker: 'w1' },
      { app: 'j1', worker: 'w2' },
      { app: 'x' + encodeURIComponent('a/b').replace(/%/g, '_'), worker: 'w1' },
    ];
    expect(groupsToSweep(found, [{ appId: 'j1', workerId: 'w2' }])).to.deep.equal([found[0], found[2]]);
    expect(groupsToSweep(found, [{ appId: 'a/b', workerId: 'w1' }])).to.deep.equal([found[0], found[1]]);
  });
});
