import { expect } from 'chai';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { InvalidArgumentError } from '@fuxi/common';
import { DEFAULT_AM_COMMAND, DEFAULT_AM_HOST_COMMAND, loadConfigFile, resolveConfig, type HostFacts } from '../config.js';

const HOST: HostFacts = { hostname: 'box1', cpus: 4, totalMemoryMb: 8192 };

describe('agent config', () => {
  it('uses host defaults', () => {
    const c = resolveConfig({ master: '127.0.0.1:7070' }, {}, HOST);
    expect(c).to.deep.equal({
      masters: ['127.0.0.1:7070'],
      listen: '127.0.0.1:0',
      advertise: undefined,
      metricsListen: '',
      nodeId: 'box1',
      rack: 'default',
      labels: {},
      capacity: { cpuMilli: 4000, memoryMb: 8192 },
      workDir: '/var/lib/fuxi/agent',
      workerRetentionMs: 86_400_000,
      workDirMaxDiskPercent: 90,
      stopGraceMs: 5000,
      pendingTimeoutMs: 60000,
      restoreGrantWaitMs: 5000,
      checkpointSync: false,
      logLevel: c.logLevel,
      amCommand: DEFAULT_AM_COMMAND,
      amHost: true,
      amHostCommand: DEFAULT_AM_HOST_COMMAND,
      amHostReserve: { cpuMilli: 50, memoryMb: 96 },
      amHostThreadInstances: 10_000,
      probe: { enabled: true, periodMs: 200, misses: 3, port: 0 },
      resourceEnforcement: 'auto',
      insecure: false,
      workerUser: '',
      workerUsers: {},
      allowRootWorkers: false,
      allowedPaths: [],
      maxMessageBytes: 64 * 1024 * 1024,
    });
  });

  it("reads tokenFile's token at start: a missing file stops the agent naming the key", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fuxi-agent-token-'));
    try {
      fs.writeFileSync(path.join(dir, 'token'), 'agent-token-of-box1-000\n');
      expect(resolveConfig({ master: 'm:1', tokenFile: path.join(dir, 'token') }, {}, HOST).tokenFile).to.equal(path.join(dir, 'token'));
      expect(() => resolveConfig({ master: 'm:1', tokenFile: path.join(dir, 'none') }, {}, HOST)).to.throw(/tokenFile: cannot read/);
      expect(resolveConfig({ master: 'm:1' }, {}, HOST)).not.to.have.property('tokenFile');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('takes tls {ca, cert, key} from the file, each file overridden by --tls-*; errors name the field', () => {
    const tls = { ca: '/pki/ca.crt', cert: '/pki/box1.crt', key: '/pki/box1.key' };
    expect(resolveConfig({ master: 'm:1' }, { tls }, HOST))
      .to.include({ insecure: false })
      .and.to.have.deep.property('tls', tls);
    expect(resolveConfig({ master: 'm:1', tlsCert: '/other.crt' }, { tls }, HOST).tls).to.deep.equal({ ...tls, cert: '/other.crt' });
    expect(resolveConfig({ master: 'm:1', tlsCa: 'a', tlsCert: 'b', tlsKey: 'c' }, {}, HOST).tls).to.deep.equal({ ca: 'a', cert: 'b', key: 'c' });
    expect(resolveConfig({ master: 'm:1' }, { insecure: true }, HOST))
      .to.include({ insecure: true })
      .and.not.have.property('tls');
    // Flags over the file: --insecure drops the file's tls, --tls-* the file's insecure.
    expect(resolveConfig({ master: 'm:1', insecure: true }, { tls }, HOST))
      .to.include({ insecure: true })
      .and.not.have.property('tls');
    expect(resolveConfig({ master: 'm:1', tlsCa: 'a', tlsCert: 'b', tlsKey: 'c' }, { insecure: true }, HOST)).to.include({ insecure: false });
    expect(() => resolveConfig({ master: 'm:1', tlsCa: 'a' }, {}, HOST)).to.throw(InvalidArgumentError, /^tls\.cert: must be the path of a PEM file/);
    expect(() => resolveConfig({ master: 'm:1' }, { tls: { ca: 'a', cert: 'b', key: 'c', password: 'x' } }, HOST)).to.throw(/^tls\.password: unknown field/);
    expect(() => resolveConfig({ master: 'm:1' }, { insecure: 'yes' }, HOST)).to.throw(/^insecure: must be true or false/);
  });

  it('reads the work dir retention as a duration and a disk percentage; errors name the field', () => {
    const c = resolveConfig({ master: 'm:1' }, { workerRetention: '90m', workDirMaxDiskPercent: 80 }, HOST);
    expect([c.workerRetentionMs, c.workDirMaxDiskPercent]).to.deep.equal([5_400_000, 80]);
    expect(resolveConfig({ master: 'm:1', workerRetention: '1.5d', workDirMaxDiskPercent: '75%' }, {}, HOST)).to.include({
      workerRetentionMs: 129_600_000,
      workDirMaxDiskPercent: 75,
    });
    expect(resolveConfig({ master: 'm:1', workerRetention: '2500' }, {}, HOST).workerRetentionMs).to.equal(2500);
    for (const [k, v] of [
      ['workerRetention', '24 hours'],
      ['workerRetention', '-1h'],
      ['workerRetention', 'h'],
      ['workDirMaxDiskPercent', 0],
      ['workDirMaxDiskPercent', 101],
      ['workDirMaxDiskPercent', 'most'],
    ] as const) {
      expect(() => resolveConfig({ master: 'm:1' }, { [k]: v }, HOST), `${k}=${v}`)
        .to.throw(InvalidArgumentError)
        .with.property('field', k);
    }
  });

  it('configures peer probing: a mapping in the file, key=value pairs or true/false as a flag', () => {
    expect(resolveConfig({ master: 'm:1' }, { probe: { periodMs: 500, misses: 5 } }, HOST).probe).to.deep.equal({
      enabled: true,
      periodMs: 500,
      misses: 5,
      port: 0,
    });
    expect(resolveConfig({ master: 'm:1', probe: 'enabled=false,port=7999' }, { probe: { periodMs: 500 } }, HOST).probe).to.deep.equal({
      enabled: false,
      periodMs: 200,
      misses: 3,
      port: 7999,
    });
    expect(resolveConfig({ master: 'm:1', probe: 'false' }, {}, HOST).probe.enabled).to.equal(false);
    expect(resolveConfig({ master: 'm:1' }, { probe: false }, HOST).probe.enabled).to.equal(false);
    const bad: Array<[unknown, RegExp]> = [
      [{ periodMs: 0 }, /^probe\.periodMs: must be a positive integer/],
      [{ misses: 'many' }, /^probe\.misses:/],
      [{ port: 70000 }, /^probe\.port: must be a UDP port/],
      [{ enabled: 'maybe' }, /^probe\.enabled:/],
      [{ every: 1 }, /^probe\.every: unknown setting/],
      ['periodMs', /^probe: must be key=value/],
      [[1], /^probe: must be a mapping/],
    ];
    for (const [probe, re] of bad) expect(() => resolveConfig({ master: 'm:1' }, { probe }, HOST), JSON.stringify(probe)).to.throw(InvalidArgumentError, re);
  });

  it('reads workerUser, workerUsers, allowRootWorkers and allowedPaths; a bad value names the key', () => {
    const c = resolveConfig(
      { master: 'm:1', workerUsers: 'research=alice, ops=bob', allowedPaths: '/data,/scratch' },
      { workerUser: 'fuxi', allowRootWorkers: true },
      HOST,
    );
    expect([c.workerUser, c.workerUsers, c.allowRootWorkers, c.allowedPaths]).to.deep.equal([
      'fuxi',
      { research: 'alice', ops: 'bob' },
      true,
      ['/data', '/scratch'],
    ]);
    expect(resolveConfig({ master: 'm:1' }, { workerUsers: { research: 'alice' } }, HOST).workerUsers).to.deep.equal({ research: 'alice' });
    expect(() => resolveConfig({ master: 'm:1' }, { workerUsers: 'research' }, HOST)).to.throw(InvalidArgumentError, /^workerUsers: /);
    expect(() => resolveConfig({ master: 'm:1' }, { workerUsers: { research: '' } }, HOST)).to.throw(InvalidArgumentError, /^workerUsers\.research: /);
    expect(() => resolveConfig({ master: 'm:1' }, { allowedPaths: ['data'] }, HOST)).to.throw(InvalidArgumentError, /^allowedPaths: must be absolute/);
    expect(() => resolveConfig({ master: 'm:1' }, { allowRootWorkers: 'maybe' }, HOST)).to.throw(InvalidArgumentError, /^allowRootWorkers: /);
  });

  it('reads resourceEnforcement (auto by default); a bad value names the field', () => {
    expect(resolveConfig({ master: 'm:1' }, {}, HOST).resourceEnforcement).to.equal('auto');
    for (const v of ['auto', 'cgroup-v2', 'cgroup-v1', 'rss', 'off'])
      expect(resolveConfig({ master: 'm:1' }, { resourceEnforcement: v }, HOST).resourceEnforcement).to.equal(v);
    expect(resolveConfig({ master: 'm:1', resourceEnforcement: ' rss ' }, { resourceEnforcement: 'off' }, HOST).resourceEnforcement).to.equal('rss');
    for (const v of ['cgroups', 'v1', true, 3, ''])
      expect(() => resolveConfig({ master: 'm:1' }, { resourceEnforcement: v }, HOST), JSON.stringify(v)).to.throw(
        InvalidArgumentError,
        /^resourceEnforcement: must be one of auto, cgroup-v2, cgroup-v1, rss, off/,
      );
  });

  it('configures the AM host: on by default, its command, reserve and thread threshold', () => {
    const c = resolveConfig(
      { master: 'm:1', amHost: 'false', amHostCpu: '100m', amHostMemory: '200Mi', amHostThreadInstances: '500' },
      { amHostCommand: '/opt/fuxi/bin/amhost --x' },
      HOST,
    );
    expect(c).to.deep.include({
      amHost: false,
      amHostCommand: ['/opt/fuxi/bin/amhost', '--x'],
      amHostReserve: { cpuMilli: 100, memoryMb: 200 },
      amHostThreadInstances: 500,
    });
    expect(() => resolveConfig({ master: 'm:1', amHost: 'maybe' }, {}, HOST)).to.throw(InvalidArgumentError, /^amHost: must be true or false/);
    expect(() => resolveConfig({ master: 'm:1', cpu: '1', amHostCpu: '2' }, {}, HOST)).to.throw(
      InvalidArgumentError,
      /^amHostCpu: the AM host's reserve must be smaller/,
    );
    expect(() => resolveConfig({ master: 'm:1', amHostThreadInstances: '-1' }, {}, HOST)).to.throw(
      InvalidArgumentError,
      /amHostThreadInstances.*instance count/,
    );
  });

  it("runs this installation's application master unless amCommand says otherwise", () => {
    // The bundle after `make build`; the module tree when only tsc ran.
    expect(DEFAULT_AM_COMMAND[1]).to.match(/appmaster\/dist\/(fuxi-appmaster\.cjs|shell\/main\.js)$/);
    expect(resolveConfig({ master: 'm:1' }, { amCommand: '/opt/fuxi/bin/am --x' }, HOST).amCommand).to.deep.equal(['/opt/fuxi/bin/am', '--x']);
    expect(resolveConfig({ master: 'm:1', amCommand: 'a b' }, { amCommand: ['x'] }, HOST).amCommand).to.deep.equal(['a', 'b']);
    expect(() => resolveConfig({ master: 'm:1' }, { amCommand: [1] }, HOST)).to.throw(InvalidArgumentError, /amCommand/);
  });

  it('serves metrics on metricsListen (off by default); a bad address names the key', () => {
    expect(resolveConfig({ master: 'm:1' }, { metricsListen: '127.0.0.1:9101' }, HOST).metricsListen).to.equal('127.0.0.1:9101');
    expect(resolveConfig({ master: 'm:1', metricsListen: '0.0.0.0:0' }, { metricsListen: '127.0.0.1:9101' }, HOST).metricsListen).to.equal('0.0.0.0:0');
    expect(() => resolveConfig({ master: 'm:1', metricsListen: ':9101' }, {}, HOST)).to.throw(InvalidArgumentError, /metricsListen: must be host:port/);
  });

  it('lets flags override the file', () => {
    const c = resolveConfig(
      { cpu: '500m', stopGraceMs: '100' },
      {
        master: ['a:1', 'b:2'],
        cpu: 2,
        memory: '8Gi',
        nodeId: 'n7',
        rack: 'r2',
        labels: { zone: 'z1' },
        workDir: '/w',
        pendingTimeoutMs: 5000,
        logLevel: 'debug',
      },
      HOST,
    );
    expect(c.masters).to.deep.equal(['a:1', 'b:2']);
    expect(c.capacity).to.deep.equal({ cpuMilli: 500, memoryMb: 8192 });
    expect(c.nodeId).to.equal('n7');
    expect(c.rack).to.equal('r2');
    expect(c.labels).to.deep.equal({ zone: 'z1' });
    expect(c.stopGraceMs).to.equal(100);
    expect(c.pendingTimeoutMs).to.equal(5000);
    expect(c.logLevel).to.equal('debug');
    expect(resolveConfig({ master: 'a:1,b:2', labels: 'x=1,y=2' }, {}, HOST).labels).to.deep.equal({ x: '1', y: '2' });
    // --checkpoint-sync is a bare flag (true); files may say true / false.
    expect(resolveConfig({ master: 'a:1', checkpointSync: true }, { checkpointSync: false }, HOST).checkpointSync).to.equal(true);
    expect(resolveConfig({ master: 'a:1' }, { checkpointSync: 'true', restoreGrantWaitMs: 250 }, HOST)).to.include({
      checkpointSync: true,
      restoreGrantWaitMs: 250,
    });
  });

  it('names the offending key', () => {
    const bad: Array<[Record<string, unknown>, Record<string, unknown>, RegExp]> = [
      [{}, {}, /^master: is required/],
      [{ master: 'nohost' }, {}, /^master: must be host:port/],
      [{ master: 'a:1' }, { bogus: 1 }, /^bogus: unknown setting/],
      [{ master: 'a:1', memory: 'lots' }, {}, /^memory:/],
      [{ master: 'a:1', stopGraceMs: '1.5' }, {}, /^stopGraceMs:/],
      [{ master: 'a:1' }, { pendingTimeoutMs: -3 }, /^pendingTimeoutMs:/],
      [{ master: 'a:1', logLevel: 'loud' }, {}, /^logLevel:/],
      [{ master: 'a:1', listen: '127.0.0.1' }, {}, /^listen:/],
      [{ master: 'a:1', nodeId: 'has space' }, {}, /^nodeId:/],
      [{ master: 'a:1' }, { checkpointSync: 'yes' }, /^checkpointSync:/],
      [{ master: 'a:1', restoreGrantWaitMs: 'soon' }, {}, /^restoreGrantWaitMs:/],
    ];
    for (const [flags, file, re] of bad) {
      expect(() => resolveConfig(flags, file, HOST), JSON.stringify([flags, file])).to.throw(InvalidArgumentError, re);
    }
  });

  it('reads YAML and JSON files', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fuxi-agent-cfg-'));
    try {
      fs.writeFileSync(path.join(dir, 'a.yaml'), 'master: 127.0.0.1:7070\ncpu: 2\nmemory: 4Gi\n');
      fs.writeFileSync(path.join(dir, 'a.json'), '{"master": "127.0.0.1:7070", "rack": "r9"}');
      fs.writeFileSync(path.join(dir, 'bad.yaml'), '- a\n- b\n');
      expect(resolveConfig({}, loadConfigFile(path.join(dir, 'a.yaml')), HOST).capacity).to.deep.equal({ cpuMilli: 2000, memoryMb: 4096 });
      expect(resolveConfig({}, loadConfigFile(path.join(dir, 'a.json')), HOST).rack).to.equal('r9');
      expect(() => loadConfigFile(path.join(dir, 'bad.yaml'))).to.throw(InvalidArgumentError, /mapping/);
      expect(() => loadConfigFile(path.join(dir, 'missing.yaml'))).to.throw(InvalidArgumentError, /cannot read/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
