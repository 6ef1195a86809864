import { expect } from 'chai';
import { AsyncLocalStorage, AsyncResource } from 'node:async_hooks';
import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect, createServer, type SecureVersion, type TLSSocket } from 'node:tls';
import { installAsyncResourceBindFix, installPeerCertificateCache } from '../node-fixes.js';

describe('AsyncResource.prototype.bind (node-fixes.ts)', () => {
  it('is installed where Node gives bound functions a deprecated accessor, and binds as Node does', () => {
    // Node 20's bind defines the accessor on each bound function (two new functions each time).
    const installed = installAsyncResourceBindFix();
    if (process.versions.node.startsWith('20.')) expect(installed).to.equal(true);
    if (installed) {
      const getter = (fn: unknown) => Object.getOwnPropertyDescriptor(fn, 'asyncResource')?.get;
      const r = new AsyncResource('probe');
      expect(getter(r.bind(() => 1))).to.be.a('function');
      expect(getter(r.bind(() => 1))).to.equal(getter(r.bind(() => 2)));
    }

    const als = new AsyncLocalStorage<string>();
    const resource = als.run('scope-of-resource', () => new AsyncResource('test'));
    function f(this: unknown, a: number, b: number) {
      return { self: this, sum: a + b, store: als.getStore() };
    }
    const bound = resource.bind(f);
    expect(bound.length).to.equal(2);
    // Runs in the resource's async scope, with the caller's `this` and arguments.
    const out = als.run('scope-of-caller', () => bound.call('me', 1, 2));
    expect(out).to.deep.equal({ self: 'me', sum: 3, store: 'scope-of-resource' });
    // With thisArg, `this` is fixed.
    const fixed = (resource.bind as (fn: typeof f, thisArg: unknown) => typeof f)(f, 'fixed');
    expect(als.run('other', () => fixed(2, 3))).to.deep.equal({ self: 'fixed', sum: 5, store: 'scope-of-resource' });
    // The deprecated property still names the resource.
    process.noDeprecation = true;
    try {
      expect((bound as unknown as { asyncResource: AsyncResource }).asyncResource).to.equal(resource);
    } finally {
      process.noDeprecation = false;
    }
    // Node's own error for what is not a function.
    expect(() => resource.bind(5 as never))
      .to.throw(TypeError)
      .with.property('code', 'ERR_INVALID_ARG_TYPE');
    // The static form goes through the same method.
    expect(als.run('s', () => AsyncResource.bind(() => als.getStore()))()).to.equal('s');
  });
});

describe('TLSSocket.prototype.getPeerCertificate (node-fixes.ts)', () => {
  let dir: string;
  const selfSigned = (name: string) => {
    execFileSync(
      'openssl',
      ['req', '-x509', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'].concat([
        '-keyout',
        join(dir, `${name}.key`),
        '-out',
        join(dir, `${name}.crt`),
        '-days',
        '2',
        '-subj',
        `/CN=${name}/O=fuxi`,
      ]),
      { stdio: 'ignore' },
    );
    return { key: readFileSync(join(dir, `${name}.key`)), cert: readFileSync(join(dir, `${name}.crt`)) };
  };
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'fuxi-peercert-'));
    installPeerCertificateCache();
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  /** A TLS server (client certificates asked for) and one connection to it per client; the server's sockets. */
  async function connectAll(clients: Array<{ key: Buffer; cert: Buffer; maxVersion?: SecureVersion }>): Promise<{ sockets: TLSSocket[]; close: () => void }> {
    const sockets: TLSSocket[] = [];
    const server = createServer({ ...selfSigned('server'), requestCert: true, rejectUnauthorized: false }, (s) => {
      sockets.push(s);
      s.on('error', () => undefined);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    const conns: TLSSocket[] = [];
    for (const c of clients) {
      const conn = tlsConnect({
        host: '127.0.0.1',
        port,
        key: c.key,
        cert: c.cert,
        rejectUnauthorized: false,
        ...(c.maxVersion ? { maxVersion: c.maxVersion } : {}),
      });
      conn.on('error', () => undefined);
      await new Promise<void>((r) => conn.once('secureConnect', () => r()));
      conns.push(conn);
    }
    while (sockets.length < clients.length) await new Promise((r) => setTimeout(r, 5));
    return {
      sockets,
      close: () => {
        for (const c of conns) c.destroy();
        server.close();
      },
    };
  }

  it('gives each TLS 1.3 connection its own peer certificate, built once; detailed answers and TLS 1.2 are asked of Node each time', async () => {
    const a = selfSigned('client-a');
    const b = selfSigned('client-b');
    const { sockets, close } = await connectAll([a, b, { ...a, maxVersion: 'TLSv1.2' }]);
    try {
      const [sa, sb, s12] = sockets.sort((x, y) => (x.getProtocol() === 'TLSv1.2' ? 1 : 0) - (y.getProtocol() === 'TLSv1.2' ? 1 : 0));
      expect(sa!.getProtocol()).to.equal('TLSv1.3');
      expect(s12!.getProtocol()).to.equal('TLSv1.2');
      const names = [sa!, sb!].map((s) => s.getPeerCertificate().subject.CN).sort();
      expect(names).to.deep.equal(['client-a', 'client-b']);
      // Kept per socket: the same object again, and it is the peer's certificate.
      for (const s of [sa!, sb!]) {
        const first = s.getPeerCertificate();
        expect(s.getPeerCertificate()).to.equal(first);
        expect(new X509Certificate(first.raw).subject).to.contain(`CN=${first.subject.CN}`);
        // detailed: Node's own answer, a new object with the issuer chain.
        const detailed = s.getPeerCertificate(true);
        expect(detailed).to.not.equal(first);
        expect(detailed.issuerCertificate).to.be.an('object');
      }
      expect(sa!.getPeerCertificate()).to.not.equal(sb!.getPeerCertificate());
      // TLS 1.2 (a renegotiation could change the peer): a fresh answer each call, the same certificate.
      const one = s12!.getPeerCertificate();
      const two = s12!.getPeerCertificate();
      expect(two).to.not.equal(one);
      expect(two.fingerprint256).to.equal(one.fingerprint256);
    } finally {
      close();
    }
  });
});
