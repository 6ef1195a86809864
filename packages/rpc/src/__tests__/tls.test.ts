import { expect } from 'chai';
import * as grpc from '@grpc/grpc-js';
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import { InvalidArgumentError, nullLogger } from '@fuxi/common';
import { loadFuxiProto } from '@fuxi/proto';
import {
  checkTlsFiles,
  connect,
  implement,
  insecureListenWarning,
  parseTlsConfig,
  peerIdentity,
  resolveTransport,
  ReloadingCertificateProvider,
  RpcError,
  startServer,
  Transport,
  transportEnv,
  transportFromEnv,
  type RunningServer,
  type TlsFiles,
} from '../index.js';

/** A CA in `dir/<ca>.crt|key`, as `fuxi certs ca` makes one (openssl). */
function makeCa(dir: string, ca: string): void {
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-new',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      join(dir, `${ca}.key`),
      '-out',
      join(dir, `${ca}.crt`),
      '-days',
      '2',
      '-subj',
      `/CN=${ca}/O=fuxi`,
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
    ],
    { stdio: 'ignore' },
  );
}

/** `dir/<name>.crt|key` signed by CA `ca`: CN=name, O=role, SANs `sans` (e.g. `IP:127.0.0.1`). */
function issue(dir: string, ca: string, name: string, role: string, sans: string[]): TlsFiles {
  const ext = join(dir, `${name}.ext`);
  writeFileSync(ext, `extendedKeyUsage=serverAuth,clientAuth\n${sans.length ? `subjectAltName=${sans.join(',')}\n` : ''}`);
  const csr = join(dir, `${name}.csr`);
  execFileSync(
    'openssl',
    [
      'req',
      '-new',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      join(dir, `${name}.key`),
      '-out',
      csr,
      '-subj',
      `/CN=${name}/O=${role}`,
    ],
    { stdio: 'ignore' },
  );
  execFileSync(
    'openssl',
    [
      'x509',
      '-req',
      '-in',
      csr,
      '-CA',
      join(dir, `${ca}.crt`),
      '-CAkey',
      join(dir, `${ca}.key`),
      '-set_serial',
      String(Date.now()),
      '-days',
      '2',
      '-extfile',
      ext,
      '-out',
      join(dir, `${name}.crt`),
    ],
    { stdio: 'ignore' },
  );
  return { ca: join(dir, `${ca}.crt`), cert: join(dir, `${name}.crt`), key: join(dir, `${name}.key`) };
}

/** A MasterService whose GetJob answers with the caller's certificate name and role in `name`. */
function whoAmI() {
  const def = loadFuxiProto().MasterService.service;
  const notImpl = async () => {
    throw new Error('not implemented');
  };
  const impl = Object.fromEntries(Object.keys(def).map((k) => [k, notImpl])) as Record<string, unknown>;
  impl.GetJob = async (_req: unknown, call: grpc.ServerUnaryCall<object, object>) => {
    const who = peerIdentity(call);
    return { job: { jobId: 'j1', name: who ? `${who.name}/${who.role ?? ''}/${who.sans.join(' ')}` : 'plaintext' } };
  };
  return { name: 'fuxi.v1.MasterService', definition: def, handlers: implement(def, impl as never, nullLogger) };
}

/** The CN of the certificate a TLS server at 127.0.0.1:port presents now (a new connection). */
function serverCn(port: number, client: TlsFiles, read: (f: string) => Buffer): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = tlsConnect(
      { host: '127.0.0.1', port, ca: read(client.ca), cert: read(client.cert), key: read(client.key), ALPNProtocols: ['h2'], rejectUnauthorized: false },
      () => {
        const cn: string | string[] | undefined = s.getPeerCertificate().subject.CN;
        s.destroy();
        resolve((Array.isArray(cn) ? cn[0] : cn) ?? '');
      },
    );
    s.once('error', reject);
  });
}

describe('mutual TLS (tls.ts)', function () {
  this.timeout(30_000);
  let dir: string;
  let server: TlsFiles;
  let admin: TlsFiles;
  let agentA: TlsFiles;
  let foreign: TlsFiles;
  let noLoopback: TlsFiles;
  const servers: RunningServer[] = [];

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'fuxi-tls-test-'));
    makeCa(dir, 'ca');
    makeCa(dir, 'other-ca');
    server = issue(dir, 'ca', 'master', 'master', ['DNS:localhost', 'IP:127.0.0.1']);
    admin = issue(dir, 'ca', 'admin', 'admin', []);
    agentA = issue(dir, 'ca', 'node-a', 'agent', ['IP:127.0.0.1']);
    foreign = issue(dir, 'other-ca', 'intruder', 'admin', []);
    foreign.ca = join(dir, 'ca.crt'); // it trusts the cluster's CA, but its own certificate is another CA's
    noLoopback = issue(dir, 'ca', 'elsewhere', 'master', ['IP:10.9.9.9']);
  });
  after(async () => {
    for (const s of servers) await s.shutdown(100);
    rmSync(dir, { recursive: true, force: true });
  });

  async function serve(files: TlsFiles): Promise<RunningServer> {
    const s = await startServer({ bind: '127.0.0.1:0', services: [whoAmI()], log: nullLogger, transport: Transport.from({ tls: files }) });
    servers.push(s);
    return s;
  }

  async function call(s: RunningServer, t: Transport): Promise<string> {
    const c = connect(loadFuxiProto().MasterService, s.address, t);
    try {
      return (await c.GetJob({ jobId: 'j1' }, { deadlineMs: 3000 })).job?.name ?? '';
    } finally {
      c.close();
    }
  }

  describe('config', () => {
    it('needs tls or insecure: true, and names the field', () => {
      expect(() => resolveTransport({})).to.throw(InvalidArgumentError, /^tls: required/);
      expect(() => resolveTransport({}, '--tls-ca')).to.throw(/^--tls-ca: required/);
      expect(() => resolveTransport({ insecure: true, tls: admin })).to.throw(/not both/);
      expect(resolveTransport({ insecure: true })).to.deep.equal({ insecure: true });
    });

    it('parses {ca, cert, key}; a missing or unknown field is named', () => {
      expect(parseTlsConfig('tls', { ca: 'a', cert: 'b', key: 'c' })).to.deep.equal({ ca: 'a', cert: 'b', key: 'c' });
      expect(() => parseTlsConfig('tls', { ca: 'a', cert: 'b' })).to.throw(InvalidArgumentError, /^tls\.key: must be the path of a PEM file/);
      expect(() => parseTlsConfig('tls', { ca: 'a', cert: 'b', key: 'c', pem: 'd' })).to.throw(/^tls\.pem: unknown field/);
      expect(() => parseTlsConfig('tls', 'ca.pem')).to.throw(/^tls: must be a mapping/);
    });

    it('reads FUXI_TLS_* and FUXI_INSECURE, and hands the same to a child (paths only)', () => {
      expect(transportFromEnv({ FUXI_TLS_CA: 'a', FUXI_TLS_CERT: 'b', FUXI_TLS_KEY: 'c' })).to.deep.equal({ tls: { ca: 'a', cert: 'b', key: 'c' } });
      expect(transportFromEnv({ FUXI_INSECURE: '1' })).to.deep.equal({ insecure: true });
      expect(() => transportFromEnv({ FUXI_TLS_CA: 'a', FUXI_TLS_KEY: 'c' })).to.throw(/^FUXI_TLS_CERT: must be set too/);
      expect(transportFromEnv(transportEnv({ tls: admin }))).to.deep.equal({ tls: admin });
      expect(transportFromEnv(transportEnv({ insecure: true }))).to.deep.equal({ insecure: true });
    });

    it('checks the files at start: unreadable, not PEM, or a key of another certificate', () => {
      expect(checkTlsFiles(admin)).to.deep.equal({ name: 'admin', role: 'admin', sans: [] });
      expect(checkTlsFiles(server).sans).to.deep.equal(['DNS:localhost', 'IP:127.0.0.1']);
      expect(() => checkTlsFiles({ ...admin, cert: join(dir, 'nope.crt') })).to.throw(InvalidArgumentError, /^tls\.cert: cannot read/);
      expect(() => checkTlsFiles({ ...admin, ca: admin.key })).to.throw(/^tls\.ca: .* is not a PEM certificate/);
      expect(() => checkTlsFiles({ ...admin, key: server.key })).to.throw(/^tls\.key: .* is not the key of/);
    });

    it('warns about plaintext beyond loopback only', () => {
      expect(insecureListenWarning(Transport.insecure(), '0.0.0.0:7070')).to.match(/^INSECURE: .*every interface/);
      expect(insecureListenWarning(Transport.insecure(), '10.0.0.1:7070')).to.match(/10\.0\.0\.1/);
      expect(insecureListenWarning(Transport.insecure(), '127.0.0.1:7070')).to.equal(undefined);
      expect(insecureListenWarning(Transport.from({ tls: server }), '0.0.0.0:7070')).to.equal(undefined);
    });
  });

  describe('connections', () => {
    it('a client with a certificate of the cluster CA gets through; the server sees its CN, O and SANs', async () => {
      const s = await serve(server);
      expect(await call(s, Transport.from({ tls: admin }))).to.equal('admin/admin/');
      expect(await call(s, Transport.from({ tls: agentA }))).to.equal('node-a/agent/IP:127.0.0.1');
    });

    it('refuses a plaintext client, a client without a certificate and one whose certificate is another CA', async () => {
      const s = await serve(server);
      const refused = async (t: Transport) => {
        const c = connect(loadFuxiProto().MasterService, s.address, t);
        try {
          return await c.GetJob({ jobId: 'j1' }, { deadlineMs: 2000 }).then(
            () => undefined,
            (x: unknown) => x as RpcError,
          );
        } finally {
          c.close();
        }
      };
      // TLS that trusts the cluster CA but presents no certificate of its own.
      const noCertTransport = { channelCredentials: () => grpc.credentials.createSsl(readFileSync(server.ca)) } as unknown as Transport;
      const plaintext = (await refused(Transport.insecure())) as RpcError;
      expect(plaintext, 'plaintext').to.be.instanceOf(RpcError);
      expect(plaintext.code).to.be.oneOf(['UNAVAILABLE', 'DEADLINE_EXCEEDED']);
      const noCert = (await refused(noCertTransport)) as RpcError;
      expect(noCert, 'no client certificate').to.be.instanceOf(RpcError);
      expect(noCert.code).to.be.oneOf(['UNAVAILABLE', 'DEADLINE_EXCEEDED']);
      const other = (await refused(Transport.from({ tls: foreign }))) as RpcError;
      expect(other, 'another CA').to.be.instanceOf(RpcError);
      expect(other.code).to.be.oneOf(['UNAVAILABLE', 'DEADLINE_EXCEEDED']);
    });

    it('verifies the server by the address dialed (its certificate must name 127.0.0.1)', async () => {
      const s = await serve(noLoopback);
      const e = await call(s, Transport.from({ tls: admin })).then(
        () => undefined,
        (x: unknown) => x as RpcError,
      );
      expect(e).to.be.instanceOf(RpcError);
      expect(e!.code).to.equal('UNAVAILABLE');
    });
  });

  describe('files read once (watch: false, a one-shot process such as the CLI)', () => {
    it('calls and serves with the files as read when made; later changes and reload() change nothing', async () => {
      const live: TlsFiles = { ca: join(dir, 'ca.crt'), cert: join(dir, 'once.crt'), key: join(dir, 'once.key') };
      copyFileSync(admin.cert, live.cert);
      copyFileSync(admin.key, live.key);
      const t = Transport.from({ tls: live }, 'tls', { watch: false });
      expect(t.secure).to.equal(true);
      expect(t.identity?.name).to.equal('admin');
      const s = await serve(server);
      expect(await call(s, t)).to.equal('admin/admin/');
      // Another identity in the files: this transport still presents the one it read.
      copyFileSync(agentA.cert, live.cert);
      copyFileSync(agentA.key, live.key);
      t.reload();
      await t.ready();
      expect(await call(s, t)).to.equal('admin/admin/');
      // A server made this way serves its certificate too, and checks its clients'.
      const once = await startServer({
        bind: '127.0.0.1:0',
        services: [whoAmI()],
        log: nullLogger,
        transport: Transport.from({ tls: server }, 'tls', { watch: false }),
      });
      servers.push(once);
      expect(await call(once, Transport.from({ tls: agentA }, 'tls', { watch: false }))).to.equal('node-a/agent/IP:127.0.0.1');
      const other = await call(once, Transport.from({ tls: foreign }, 'tls', { watch: false })).then(
        () => undefined,
        (x: unknown) => x as RpcError,
      );
      expect(other, 'another CA').to.be.instanceOf(RpcError);
    });

    it('checks the files when made, as a watched transport does', () => {
      expect(() => Transport.from({ tls: { ...admin, key: agentA.key } }, '--tls-ca', { watch: false }))
        .to.throw(InvalidArgumentError)
        .with.property('field', '--tls-ca.key');
    });
  });

  describe('reload', () => {
    it('serves a replaced certificate to new connections on reload(), without a restart', async () => {
      const live: TlsFiles = { ca: join(dir, 'ca.crt'), cert: join(dir, 'live.crt'), key: join(dir, 'live.key') };
      copyFileSync(server.cert, live.cert);
      copyFileSync(server.key, live.key);
      const t = Transport.from({ tls: { ...live, reloadMs: 3_600_000 } });
      const s = await startServer({ bind: '127.0.0.1:0', services: [whoAmI()], log: nullLogger, transport: t });
      servers.push(s);
      const read = (f: string) => readFileSync(f);
      await until(async () => (await serverCn(s.port, admin, read)) === 'master');
      const next = issue(dir, 'ca', 'master-2', 'master', ['IP:127.0.0.1']);
      copyFileSync(next.cert, live.cert);
      copyFileSync(next.key, live.key);
      expect(await serverCn(s.port, admin, read), 'before reload').to.equal('master');
      t.reload();
      await until(async () => (await serverCn(s.port, admin, read)) === 'master-2');
      expect(await call(s, Transport.from({ tls: admin }))).to.equal('admin/admin/');
    });

    it('keeps serving the last good certificate while a file is missing', async () => {
      const live: TlsFiles = { ca: join(dir, 'ca.crt'), cert: join(dir, 'gone.crt'), key: join(dir, 'gone.key'), reloadMs: 50 };
      copyFileSync(server.cert, live.cert);
      copyFileSync(server.key, live.key);
      const s = await startServer({ bind: '127.0.0.1:0', services: [whoAmI()], log: nullLogger, transport: Transport.from({ tls: live }) });
      servers.push(s);
      rmSync(live.cert);
      await new Promise((r) => setTimeout(r, 300)); // several failed re-reads
      expect(await serverCn(s.port, admin, readFileSync)).to.equal('master');
      expect(await call(s, Transport.from({ tls: admin }))).to.equal('admin/admin/');
    });

    it('picks up changed files by itself (reloadMs)', async () => {
      const live: TlsFiles = { ca: join(dir, 'ca.crt'), cert: join(dir, 'watched.crt'), key: join(dir, 'watched.key'), reloadMs: 100 };
      copyFileSync(server.cert, live.cert);
      copyFileSync(server.key, live.key);
      const s = await startServer({ bind: '127.0.0.1:0', services: [whoAmI()], log: nullLogger, transport: Transport.from({ tls: live }) });
      servers.push(s);
      const read = (f: string) => readFileSync(f);
      await until(async () => (await serverCn(s.port, admin, read)) === 'master');
      const next = issue(dir, 'ca', 'master-3', 'master', ['IP:127.0.0.1']);
      copyFileSync(next.cert, live.cert);
      copyFileSync(next.key, live.key);
      await until(async () => (await serverCn(s.port, admin, read)) === 'master-3');
    });

    it('passes on a re-read only when the files changed (each update rebuilds every TLS context)', async () => {
      const live: TlsFiles = { ca: join(dir, 'ca.crt'), cert: join(dir, 'quiet.crt'), key: join(dir, 'quiet.key'), reloadMs: 50 };
      copyFileSync(server.cert, live.cert);
      copyFileSync(server.key, live.key);
      const p = new ReloadingCertificateProvider(live);
      const ids: unknown[] = [];
      const cas: unknown[] = [];
      const onId = (u: unknown) => ids.push(u);
      const onCa = (u: unknown) => cas.push(u);
      p.addIdentityCertificateListener(onId);
      p.addCaCertificateListener(onCa);
      try {
        await new Promise((r) => setTimeout(r, 600)); // about 12 re-reads of the same bytes
        expect([ids.length, cas.length]).to.deep.equal([1, 1]);
        // A listener added later gets the current certificates at once.
        const late: unknown[] = [];
        const onLate = (u: unknown) => late.push(u);
        p.addIdentityCertificateListener(onLate);
        await new Promise((r) => setTimeout(r, 20));
        expect(late).to.have.length(1);
        p.removeIdentityCertificateListener(onLate);
        const next = issue(dir, 'ca', 'master-4', 'master', ['IP:127.0.0.1']);
        copyFileSync(next.cert, live.cert);
        copyFileSync(next.key, live.key);
        await until(async () => ids.length === 2);
        await new Promise((r) => setTimeout(r, 300));
        expect([ids.length, cas.length]).to.deep.equal([2, 1]);
      } finally {
        p.removeIdentityCertificateListener(onId);
        p.removeCaCertificateListener(onCa);
      }
    });
  });
});

/** Polls `fn` (a failure counts as false) until it is true. */
async function until(fn: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await fn().catch(() => false))) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 50));
  }
}
