/**
 * The release tarball (`make dist`, scripts/dist.mjs) is self-contained and its systemd units are
 * what it installs. Builds the tarball into a temp dir and unpacks it under /tmp, out of reach of
 * this repository's node_modules (Node looks for packages only in the parents of a file), then:
 *
 * - every bin/ program answers --version from there; a Node.js older than 20.19 is refused by name;
 * - a master and an agent started from its bin/ (embedded store, loopback) run a job whose AM is
 *   the installation's own, and `fuxi logs` of the installation reads a worker's log;
 * - install.sh --root installs into a temp root (twice: it is idempotent and keeps edited
 *   configs), and `systemd-analyze verify --root` passes on the installed units. The root holds a
 *   copy of this host's /usr/lib/systemd/system (the targets the units name: network-online,
 *   multi-user) and the installed release, so verify checks that ExecStart= names an executable
 *   that the tarball installs, not one of this machine's. A broken unit fails the same check.
 */
import { expect } from 'chai';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { FUXI_VERSION } from '@fuxi/common';
import { removeTree } from '@fuxi/deploy';
import { until } from '../harness.js';

const run = promisify(execFile);
const repo = fileURLToPath(new URL('../../../', import.meta.url));
const PROGRAMS = ['fuxi', 'fuxi-master', 'fuxi-agent', 'fuxi-appmaster', 'fuxi-amhost', 'fuxi-local-cluster'];

describe('release tarball (make dist)', function () {
  this.timeout(180_000);
  let tmp: string;
  let inst: string; // the unpacked tarball
  /** A PATH with the host's node and the system tools, nothing of this repository. */
  const env = { PATH: `${path.dirname(process.execPath)}:/usr/sbin:/usr/bin:/sbin:/bin`, HOME: os.tmpdir() };
  const children: ChildProcess[] = [];

  before(async () => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'fuxi-dist-'));
    // The agent's workers run as its unprivileged worker user: their directories under it must be reachable.
    fs.chmodSync(tmp, 0o711);
    const t0 = Date.now();
    await run(process.execPath, [path.join(repo, 'scripts/dist.mjs'), '--out', path.join(tmp, 'out')], { cwd: repo });
    const tarball = path.join(tmp, 'out', `fuxi-${FUXI_VERSION}-linux.tar.gz`);
    fs.mkdirSync(path.join(tmp, 'unpacked'));
    await run('tar', ['-xzf', tarball, '-C', path.join(tmp, 'unpacked')]);
    inst = path.join(tmp, 'unpacked', `fuxi-${FUXI_VERSION}`);
    process.stderr.write(`      (tarball built and unpacked in ${((Date.now() - t0) / 1000).toFixed(1)} s)\n`);
  });

  after(() => {
    for (const c of children) if (c.pid && c.exitCode === null && c.signalCode === null) process.kill(c.pid, 'SIGKILL');
    // A process the agent started may still be writing its files (a dedicated AM's last log lines,
    // its exit code recorded by the spawn helper): removal is tried again while a directory fills.
    if (tmp) removeTree(tmp);
  });

  it('holds the compiled code and production node_modules only, outside the repository', () => {
    expect(path.relative(repo, inst).startsWith('..')).to.equal(true);
    for (const p of [
      'node_modules/@grpc/grpc-js',
      'node_modules/classic-level',
      'node_modules/@fuxi/agent',
      'proto/fuxi/v1/master.proto',
      'install.sh',
      'lib/fuxi-run',
    ])
      expect(fs.existsSync(path.join(inst, p)), p).to.equal(true);
    for (const p of ['node_modules/typescript', 'node_modules/mocha', 'node_modules/@fuxi/test', 'test', 'agent/src', 'agent/dist/shell/__tests__'])
      expect(fs.existsSync(path.join(inst, p)), p).to.equal(false);
  });

  it('runs each program with the host node, and refuses a Node.js older than 20.19', async () => {
    for (const p of PROGRAMS) {
      const { stdout } = await run(path.join(inst, 'bin', p), ['--version'], { cwd: tmp, env });
      expect(stdout.trim(), p).to.equal(FUXI_VERSION);
    }
    const fakeNode = (version: string): string => {
      const f = path.join(tmp, `node-${version}`);
      fs.writeFileSync(f, `#!/bin/sh\n[ "$1" = --version ] && { echo ${version}; exit 0; }\nexec ${process.execPath} "$@"\n`, { mode: 0o755 });
      return f;
    };
    const old = await run(path.join(inst, 'bin', 'fuxi-master'), ['--version'], { cwd: tmp, env: { ...env, FUXI_NODE: fakeNode('v20.18.3') } }).catch(
      (e: unknown) => e,
    );
    expect(old).to.include({ code: 127 });
    expect((old as { stderr: string }).stderr).to.match(/Node\.js v20\.18\.3; fuxi-master needs 20\.19 or newer/);
    const newer = await run(path.join(inst, 'bin', 'fuxi'), ['--version'], { cwd: tmp, env: { ...env, FUXI_NODE: fakeNode('v22.1.0') } });
    expect(newer.stdout.trim()).to.equal(FUXI_VERSION);
    // The bundled programs check the version in their own Node (no `node --version` first).
    const older = path.join(tmp, 'node-v20.18.3.cjs');
    fs.writeFileSync(older, "Object.defineProperty(process.versions, 'node', { value: '20.18.3' });\n");
    for (const p of ['fuxi', 'fuxi-amhost']) {
      const r = await run(path.join(inst, 'bin', p), ['--version'], { cwd: tmp, env: { ...env, FUXI_NODE_ARGS: `--require ${older}` } }).catch(
        (e: unknown) => e,
      );
      expect(r, p).to.include({ code: 127 });
      expect((r as { stderr: string }).stderr).to.include(`is Node.js v20.18.3; ${p} needs 20.19 or newer`);
    }
  });

  it("fuxi runs with the build's code cache, unpacked as it is, and without Node's default trust store", async () => {
    const cache = path.join(inst, 'client', 'dist', 'fuxi.bundle.cjs.cache');
    const before = fs.readFileSync(cache);
    // Node warns at start when NODE_EXTRA_CA_CERTS names no file: the installed fuxi's Node never sees it.
    const r = await run(path.join(inst, 'bin', 'fuxi'), ['--version'], { cwd: tmp, env: { ...env, NODE_EXTRA_CA_CERTS: path.join(tmp, 'none.pem') } });
    expect([r.stdout.trim(), r.stderr]).to.deep.equal([FUXI_VERSION, '']);
    // A cache the launcher rejected (tar keeps whole seconds of the bundle's mtime) would be written anew.
    expect(fs.readFileSync(cache).equals(before)).to.equal(true);
  });

  it('runs a master, an agent and a job from the unpacked tarball; its fuxi reads a worker log', async () => {
    const port = await freePort();
    const master = `127.0.0.1:${port}`;
    const start = (bin: string, args: string[], log: string): ChildProcess => {
      const out = fs.openSync(path.join(tmp, log), 'a');
      const c = spawn(path.join(inst, 'bin', bin), args, { cwd: tmp, env, stdio: ['ignore', out, out] });
      fs.closeSync(out);
      children.push(c);
      return c;
    };
    // Mutual TLS with certificates made by the installed `fuxi certs`.
    const pki = path.join(tmp, 'pki');
    const certs = (...args: string[]) => run(path.join(inst, 'bin', 'fuxi'), ['certs', ...args], { cwd: tmp, env });
    await certs('ca', '--dir', pki);
    await certs('issue', '--dir', pki, '--name', 'master', '--role', 'master', '--ip', '127.0.0.1');
    await certs('issue', '--dir', pki, '--name', 'dist-n1', '--role', 'agent', '--ip', '127.0.0.1');
    await certs('issue', '--dir', pki, '--name', 'ops', '--role', 'admin');
    const tls = (name: string) => [
      '--tls-ca',
      path.join(pki, 'ca.crt'),
      '--tls-cert',
      path.join(pki, `${name}.crt`),
      '--tls-key',
      path.join(pki, `${name}.key`),
    ];
    start(
      'fuxi-master',
      ['--store', 'embedded', '--data-dir', path.join(tmp, 'master'), '--listen', master, '--heartbeat-interval-ms', '300', ...tls('master')],
      'master.log',
    );
    start(
      'fuxi-agent',
      [
        '--master',
        master,
        '--node-id',
        'dist-n1',
        '--listen',
        '127.0.0.1:0',
        '--work-dir',
        path.join(tmp, 'agent'),
        '--cpu',
        '2',
        '--memory',
        '2Gi',
        '--am-host',
        'false',
        '--probe',
        'false',
        ...tls('dist-n1'),
      ],
      'agent.log',
    );
    const fuxi = (...args: string[]) => run(path.join(inst, 'bin', 'fuxi'), ['--master', master, ...tls('ops'), ...args], { cwd: tmp, env });
    await until('the agent registered', async () => (await fuxi('nodes')).stdout.includes('dist-n1'), 60_000, 300);
    const jobFile = path.join(tmp, 'job.yaml');
    fs.writeFileSync(
      jobFile,
      [
        'name: hello',
        'tasks:',
        '  - name: hello',
        '    instances: 2',
        '    resources: { cpu: 0.1, memory: 64Mi }',
        "    command: ['sh', '-c', 'echo hello from instance ${instance}']",
        '',
      ].join('\n'),
    );
    await fuxi('submit', jobFile, '--id', 'hello-1', '--wait'); // exits 1 unless the job succeeded
    const { stdout } = await fuxi('logs', 'hello-1', 'hello', '1');
    expect(stdout).to.equal('hello from instance 1\n');
    // The job's AM (a process of its own here) ends after the job does: its exit code on disk.
    await until('the AM ended', () => fs.existsSync(path.join(tmp, 'agent', 'apps', 'hello-1', 'am.1', 'exit')) || undefined, 30_000, 100);
  });

  it('install.sh --root installs what the systemd units run, and systemd-analyze verify passes on them', async () => {
    const root = path.join(tmp, 'root');
    await run(path.join(inst, 'install.sh'), ['--root', root], { env });
    fs.writeFileSync(path.join(root, 'etc/fuxi/agent.yaml'), 'master: m1:7070\n');
    await run(path.join(inst, 'install.sh'), ['--root', root], { env }); // again: idempotent
    expect(fs.readFileSync(path.join(root, 'etc/fuxi/agent.yaml'), 'utf8')).to.equal('master: m1:7070\n');
    expect(fs.existsSync(path.join(root, 'etc/fuxi/master.yaml'))).to.equal(true);
    expect(fs.statSync(path.join(root, 'var/lib/fuxi')).isDirectory()).to.equal(true);
    expect(fs.readlinkSync(path.join(root, 'usr/local/bin/fuxi'))).to.equal('/opt/fuxi/bin/fuxi');
    const { stdout } = await run(path.join(root, 'opt/fuxi/bin/fuxi'), ['--version'], { env });
    expect(stdout.trim()).to.equal(FUXI_VERSION);

    const units = ['fuxi-master.service', 'fuxi-agent.service'].map((u) => path.join(root, 'etc/systemd/system', u));
    for (const u of units) {
      const exec = /^ExecStart=(\S+)/m.exec(fs.readFileSync(u, 'utf8'))?.[1] ?? '';
      expect(exec, u).to.match(/^\/opt\/fuxi\/bin\/fuxi-(master|agent)$/);
      fs.accessSync(path.join(root, exec), fs.constants.X_OK);
    }
    fs.mkdirSync(path.join(root, 'usr/lib/systemd'), { recursive: true });
    fs.cpSync('/usr/lib/systemd/system', path.join(root, 'usr/lib/systemd/system'), { recursive: true, verbatimSymlinks: true });
    const verify = (files: string[]) =>
      run('systemd-analyze', ['verify', `--root=${root}`, ...files], { env }).then(
        (r) => ({ code: 0, out: r.stdout + r.stderr }),
        (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, out: e.stdout + e.stderr }),
      );
    expect(await verify(units)).to.deep.equal({ code: 0, out: '' });

    // The same check fails on a unit whose ExecStart= the tarball does not install.
    const broken = path.join(root, 'etc/systemd/system/fuxi-broken.service');
    fs.writeFileSync(broken, fs.readFileSync(units[0]!, 'utf8').replace('/opt/fuxi/bin/fuxi-master', '/opt/fuxi/bin/fuxi-nothing'));
    const bad = await verify([broken]);
    expect(bad.code).to.not.equal(0);
    expect(bad.out).to.match(/fuxi-nothing is not executable/);
  });
});

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}
