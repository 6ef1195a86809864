import { expect } from 'chai';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkTlsFiles } from '@fuxi/rpc';
import { ClusterPki, tlsArgs, tlsEnv } from '../cluster-pki.js';

describe("ClusterPki (a test or demo cluster's certificates)", function () {
  this.timeout(30_000);
  let dir: string;
  before(() => (dir = mkdtempSync(join(tmpdir(), 'fuxi-pki-test-'))));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('makes a CA once and a certificate per daemon, naming loopback and the given addresses', () => {
    const pki = ClusterPki.create(dir);
    const files = pki.issue('node-1', 'agent', ['10.219.0.21']);
    expect(checkTlsFiles(files)).to.deep.equal({ name: 'node-1', role: 'agent', sans: ['DNS:localhost', 'IP:127.0.0.1', 'IP:10.219.0.21'] });
    expect(checkTlsFiles(pki.admin())).to.include({ name: 'admin', role: 'admin' });
  });

  it('keeps what exists: the same CA and certificates after a restart', () => {
    const serial = (f: string) => new X509Certificate(readFileSync(f)).serialNumber;
    const first = ClusterPki.create(dir);
    const ca = serial(first.ca);
    const node = serial(first.issue('node-1', 'agent').cert);
    const again = ClusterPki.create(dir);
    expect(serial(again.ca)).to.equal(ca);
    expect(serial(again.issue('node-1', 'agent').cert)).to.equal(node);
  });

  it('daemon flags and client environment, or their plaintext forms', () => {
    const pki = ClusterPki.create(dir);
    expect(pki.daemonArgs('master', 'master')).to.deep.equal(['--tls-ca', pki.ca, '--tls-cert', join(dir, 'master.crt'), '--tls-key', join(dir, 'master.key')]);
    expect(pki.clientEnv()).to.deep.equal({ FUXI_TLS_CA: pki.ca, FUXI_TLS_CERT: join(dir, 'admin.crt'), FUXI_TLS_KEY: join(dir, 'admin.key') });
    expect(tlsArgs(undefined)).to.deep.equal(['--insecure']);
    expect(tlsEnv(undefined)).to.deep.equal({ FUXI_INSECURE: '1' });
  });
});
