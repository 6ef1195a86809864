import { expect } from 'chai';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InvalidArgumentError } from '@fuxi/common';
import { checkTlsFiles } from '@fuxi/rpc';
import { runCli, type CliDeps } from '../cli/program.js';
import { issueCert, makeCa } from '../sdk/certs.js';
import { Capture } from './helpers.js';

async function fuxi(args: string[]): Promise<{ code: number; out: string; err: string }> {
  const stdout = new Capture();
  const stderr = new Capture();
  const deps: CliDeps = {
    makeClient: () => {
      throw new Error('fuxi certs needs no client');
    },
    stdout,
    stderr,
    env: {},
    readFile: (p) => readFileSync(p, 'utf8'),
  };
  const code = await runCli(args, deps);
  return { code, out: stdout.text, err: stderr.text };
}

describe('fuxi certs (openssl)', function () {
  this.timeout(30_000);
  let dir: string;
  before(() => (dir = mkdtempSync(join(tmpdir(), 'fuxi-certs-test-'))));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('makes a CA and certificates: CN = name, O = role, SANs, keys 0600, signed by the CA', async () => {
    const ca = await fuxi(['certs', 'ca', '--dir', dir]);
    expect(ca.code, ca.err).to.equal(0);
    expect(statSync(join(dir, 'ca.key')).mode & 0o777).to.equal(0o600);
    const r = await fuxi(['certs', 'issue', '--dir', dir, '--name', 'node-1', '--role', 'agent', '--ip', '10.0.0.21', '--ip', '127.0.0.1', '--dns', 'host-1']);
    expect(r.code, r.err).to.equal(0);
    expect(r.out).to.include('CN=node-1, O=agent');
    expect(statSync(join(dir, 'node-1.key')).mode & 0o777).to.equal(0o600);
    const files = { ca: join(dir, 'ca.crt'), cert: join(dir, 'node-1.crt'), key: join(dir, 'node-1.key') };
    expect(checkTlsFiles(files)).to.deep.equal({ name: 'node-1', role: 'agent', sans: ['DNS:host-1', 'IP:10.0.0.21', 'IP:127.0.0.1'] });
    const cert = new X509Certificate(readFileSync(files.cert));
    expect(cert.verify(new X509Certificate(readFileSync(files.ca)).publicKey)).to.equal(true);
    expect(cert.ca).to.equal(false);
    expect(new X509Certificate(readFileSync(files.ca)).ca).to.equal(true);
  });

  it('errors name the flag: role, name, ip, dns, a missing CA, an existing file', async () => {
    const bad = async (args: string[], re: RegExp) => {
      const r = await fuxi(['certs', 'issue', '--dir', dir, ...args]);
      expect(r.code, r.err).to.equal(2);
      expect(r.err).to.match(re);
    };
    await bad(['--name', 'u1', '--role', 'root'], /^error: --role: must be one of master, agent, admin, user, worker, got "root"/);
    await bad(['--name', 'a b', '--role', 'user'], /^error: --name: must be letters/);
    await bad(['--name', 'boss', '--role', 'master'], /^error: --name: a master's certificate is named "master"/);
    await bad(['--name', 'u1', '--role', 'user', '--ip', '10.0.0'], /^error: --ip: must be an IPv4 or IPv6 address, got "10.0.0"/);
    await bad(['--name', 'u1', '--role', 'user', '--dns', 'a_b!'], /^error: --dns: must be a DNS name/);
    await bad(['--name', 'node-1', '--role', 'agent'], /^error: --name: .*node-1\.crt already exists; --force replaces it/);
    const empty = mkdtempSync(join(tmpdir(), 'fuxi-certs-empty-'));
    try {
      const r = await fuxi(['certs', 'issue', '--dir', empty, '--name', 'u1', '--role', 'user']);
      expect(r.err).to.match(/^error: --dir: .* has no CA \(ca\.crt and ca\.key\): run "fuxi certs ca --dir/);
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
    const missing = await fuxi(['certs', 'issue', '--dir', dir, '--role', 'user']);
    expect(missing.code).to.equal(2);
    expect(missing.err).to.include("required option '--name <name>' not specified");
    expect((await fuxi(['certs', 'ca', '--dir', dir])).err).to.match(/^error: --dir: .* already has a CA/);
  });

  it('as a library: makeCa / issueCert', () => {
    const d = mkdtempSync(join(tmpdir(), 'fuxi-certs-lib-'));
    try {
      makeCa(d);
      const c = issueCert({ dir: d, name: 'master', role: 'master', ips: ['127.0.0.1'], dns: ['localhost'] });
      expect(checkTlsFiles(c)).to.deep.equal({ name: 'master', role: 'master', sans: ['DNS:localhost', 'IP:127.0.0.1'] });
      expect(() => issueCert({ dir: d, name: 'x', role: 'agent', days: 0 })).to.throw(InvalidArgumentError, /^--days/);
    } finally {
      rmSync(d, { recursive: true, force: true });
    }
  });
});
