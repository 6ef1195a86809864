/**
 * Mutual TLS on a real local cluster (a master and two agents, each its own process): who gets in,
 * who is refused, an agent certificate bound to its node, certificates reloaded without a restart,
 * and daemons that refuse to start without `tls` or `insecure: true`.
 */
import { expect } from 'chai';
import * as grpc from '@grpc/grpc-js';
import { execFile, spawn } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import { promisify } from 'node:util';
import { issueCert, makeCa } from '@fuxi/client';
import { BIN, waitExit, type LocalCluster, removeTree } from '@fuxi/deploy';
import { loadFuxiProto } from '@fuxi/proto';
import { connect, RpcError, Transport, type TlsFiles } from '@fuxi/rpc';
import { startCluster, stopCluster, until } from '../harness.js';

const run = promisify(execFile);

/** The error of `fn`, or undefined when it succeeded. */
async function failure(fn: () => Promise<unknown>): Promise<RpcError | undefined> {
  try {
    await fn();
    return undefined;
  } catch (e) {
    if (e instanceof RpcError) return e;
    throw e;
  }
}

/** The serial number of the certificate a server presents to a new connection. */
function servedSerial(address: string, client: TlsFiles): Promise<string> {
  const [host, port] = [address.slice(0, address.lastIndexOf(':')), Number(address.slice(address.lastIndexOf(':') + 1))];
  return new Promise((resolve, reject) => {
    const s = tlsConnect(
      {
        host,
        port,
        ca: readFileSync(client.ca),
        cert: readFileSync(client.cert),
        key: readFileSync(client.key),
        ALPNProtocols: ['h2'],
        servername: 'localhost',
      },
      () => {
        const serial = s.getPeerCertificate().serialNumber;
        s.destroy();
        resolve(serial);
      },
    );
    s.once('error', reject);
  });
}

function serialOf(file: string): string {
  return new X509Certificate(readFileSync(file)).serialNumber;
}

describe('mutual TLS (real processes)', function () {
  this.timeout(120_000);
  let cluster: LocalCluster;
  let failed = false;
  let other: string;

  before(async () => {
    cluster = await startCluster('tls', { agents: 2 });
    // Another CA, and a certificate it signed that claims to be an admin.
    other = mkdtempSync(join(tmpdir(), 'fuxi-it-tls-other-'));
    makeCa(other);
    issueCert({ dir: other, name: 'admin', role: 'admin' });
  });
  afterEach(function () {
    if (this.currentTest?.state === 'failed') failed = true;
  });
  after(async () => {
    await stopCluster(cluster, failed);
    rmSync(other, { recursive: true, force: true });
  });

  const master = (t: Transport) => connect(loadFuxiProto().MasterService, cluster.masterAddress, t);
  const agent = (t: Transport, i = 0) => connect(loadFuxiProto().AgentService, cluster.agents[i]!.address, t);

  it('the admin certificate gets through to the master and to an agent', async () => {
    const t = cluster.transport();
    const m = master(t);
    const a = agent(t);
    try {
      expect((await m.ListNodes({})).nodes).to.have.length(2);
      expect((await a.GetAgentState({})).node?.nodeId).to.equal('node-1');
    } finally {
      m.close();
      a.close();
    }
  });

  it('a client without a certificate, or with one from another CA, is refused by the master and by an agent', async () => {
    const pki = cluster.pki!;
    const plaintext = Transport.insecure();
    // TLS that trusts the cluster CA but presents no certificate of its own.
    const noCert = { channelCredentials: () => grpc.credentials.createSsl(readFileSync(pki.ca)) } as unknown as Transport;
    const foreign = Transport.from({ tls: { ca: pki.ca, cert: join(other, 'admin.crt'), key: join(other, 'admin.key') } });
    for (const [name, t] of [
      ['plaintext', plaintext],
      ['no certificate', noCert],
      ['another CA', foreign],
    ] as const) {
      const m = master(t);
      const a = agent(t);
      try {
        const em = await failure(() => m.ListNodes({}, { deadlineMs: 3000 }));
        const ea = await failure(() => a.GetAgentState({}, { deadlineMs: 3000 }));
        expect(em, `${name} -> master`).to.be.instanceOf(RpcError);
        expect(em!.code, `${name} -> master`).to.be.oneOf(['UNAVAILABLE', 'DEADLINE_EXCEEDED']);
        expect(ea, `${name} -> agent`).to.be.instanceOf(RpcError);
        expect(ea!.code, `${name} -> agent`).to.be.oneOf(['UNAVAILABLE', 'DEADLINE_EXCEEDED']);
      } finally {
        m.close();
        a.close();
      }
    }
  });

  it("an agent certificate for node-1 cannot register or heartbeat as node-2; an admin's cannot register at all", async () => {
    const pki = cluster.pki!;
    const node1 = Transport.from({ tls: pki.issue('node-1', 'agent') });
    const m = master(node1);
    const asAdmin = master(cluster.transport());
    try {
      const node = { nodeId: 'node-2', address: '127.0.0.1:1', rack: 'r', capacity: { cpuMilli: 64_000, memoryMb: 1_000_000 } };
      const reg = await failure(() => m.RegisterAgent({ node, epochSeen: '0' }));
      expect(reg?.code).to.equal('PERMISSION_DENIED');
      expect(reg?.message).to.equal('RegisterAgent: permission denied: agent node-1 may not act as node node-2');
      const hb = await failure(() => m.Heartbeat({ nodeId: 'node-2', epoch: '1' }));
      expect(hb?.code).to.equal('PERMISSION_DENIED');
      expect(hb?.message).to.match(/Heartbeat: permission denied: agent node-1 may not act as node node-2/);
      const admin = await failure(() => asAdmin.RegisterAgent({ node: { ...node, nodeId: 'admin' }, epochSeen: '0' }));
      expect(admin?.code).to.equal('PERMISSION_DENIED');
      expect(admin?.message).to.match(/RegisterAgent: permission denied: needs a node agent; admin is an admin/);
      // Nothing was registered.
      expect((await asAdmin.ListNodes({})).nodes.map((n) => n.node?.nodeId).sort()).to.deep.equal(['node-1', 'node-2']);
    } finally {
      m.close();
      asAdmin.close();
    }
  });

  it('reloads certificates without a restart: an agent on SIGHUP, the master when its files change', async () => {
    const pki = cluster.pki!;
    const admin = pki.admin();
    // The agent's certificate, issued again (a new serial), then SIGHUP.
    const a = cluster.agents[0]!;
    const before = await servedSerial(a.address, admin);
    issueCert({ dir: pki.dir, name: 'node-1', role: 'agent', ips: ['127.0.0.1'], dns: ['localhost'], force: true });
    const renewed = serialOf(join(pki.dir, 'node-1.crt'));
    expect(renewed).to.not.equal(before);
    process.kill(a.pid, 'SIGHUP');
    await until('the agent to serve its new certificate', async () => (await servedSerial(a.address, admin)) === renewed, 10_000);
    expect(process.kill(a.pid, 0)).to.equal(true);
    // The master's, issued again: it sees the change by itself (files re-read every 5 s).
    const m = cluster.master;
    issueCert({ dir: pki.dir, name: 'master', role: 'master', ips: ['127.0.0.1'], dns: ['localhost'], force: true });
    const next = serialOf(join(pki.dir, 'master.crt'));
    await until('the master to serve its new certificate', async () => (await servedSerial(m.address, admin)) === next, 15_000);
    // Same processes, still serving; the cluster still works over the new certificates.
    expect([cluster.master.pid, a.pid].every((pid) => process.kill(pid, 0))).to.equal(true);
    const c = cluster.client();
    try {
      await until('both agents healthy', async () => (await c.nodes()).filter((n) => n.healthy).length === 2, 15_000);
    } finally {
      c.close();
    }
  });

  it('the CLI needs the TLS files (or --insecure), and works with the env the launcher prints', async () => {
    const env = { ...process.env, FUXI_TLS_CA: '', FUXI_TLS_CERT: '', FUXI_TLS_KEY: '', FUXI_INSECURE: '' };
    const none = await run(process.execPath, [BIN.cli, '--master', cluster.masterAddress, 'nodes'], { env }).then(
      () => undefined,
      (e: { code: number; stderr: string }) => e,
    );
    expect(none?.code).to.equal(2);
    expect(none?.stderr).to.match(/^error: --tls-ca: required/);
    const ok = await run(process.execPath, [BIN.cli, '--master', cluster.masterAddress, 'nodes'], { env: { ...env, ...cluster.clientEnv() } });
    expect(ok.stdout).to.include('node-1');
    // Run as a program: its #! line points OpenSSL's default file at /dev/null (whatever the caller
    // has in SSL_CERT_FILE) and drops SSL_CERT_DIR; the cluster CA alone verifies the master.
    if (BIN.cli.endsWith('.cjs')) {
      const direct = await run(BIN.cli, ['--master', cluster.masterAddress, 'nodes'], {
        env: { ...env, ...cluster.clientEnv(), SSL_CERT_FILE: join(tmpdir(), 'no-such-bundle.pem'), SSL_CERT_DIR: tmpdir() },
      });
      expect(direct.stdout).to.include('node-1');
    }
  });

  it('a daemon with neither tls nor insecure: true refuses to start, naming tls; insecure beyond loopback warns once', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fuxi-it-tls-start-'));
    try {
      const m = await run(process.execPath, [BIN.master, '--listen', '127.0.0.1:0', '--store', 'memory']).then(
        () => undefined,
        (e: { code: number; stderr: string }) => e,
      );
      expect(m?.code).to.equal(2);
      expect(m?.stderr).to.equal(
        'fuxi-master: invalid configuration: tls: required: {ca, cert, key} PEM files for mutual TLS (or insecure: true for plaintext)\n',
      );
      const a = await run(process.execPath, [BIN.agent, '--master', cluster.masterAddress, '--work-dir', join(dir, 'w')]).then(
        () => undefined,
        (e: { code: number; stderr: string }) => e,
      );
      expect(a?.code).to.equal(2);
      expect(a?.stderr).to.match(/^fuxi-agent: invalid configuration: tls: required/);
      // An agent whose certificate names another node stops at start, naming the setting.
      const node1 = cluster.pki!.issue('node-1', 'agent');
      const wrong = await run(process.execPath, [
        BIN.agent,
        '--master',
        cluster.masterAddress,
        '--node-id',
        'node-9',
        '--work-dir',
        join(dir, 'w9'),
        '--tls-ca',
        node1.ca,
        '--tls-cert',
        node1.cert,
        '--tls-key',
        node1.key,
      ]).then(
        () => undefined,
        (e: { code: number; stderr: string }) => e,
      );
      expect(wrong?.code).to.equal(2);
      expect(wrong?.stderr).to.match(/^fuxi-agent: invalid configuration: tls\.cert: names node "node-1" \(CN\) but this agent is "node-9"/);
      const child = spawn(process.execPath, [BIN.master, '--listen', '0.0.0.0:0', '--store', 'memory', '--insecure'], {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      child.stdout.on('data', (d) => (out += String(d)));
      try {
        await until('the master to serve', () => out.includes('"master ready"'), 20_000);
        const warns = out.split('\n').filter((l) => l.includes('INSECURE'));
        expect(warns, out).to.have.length(1);
        expect(JSON.parse(warns[0]!).level).to.equal(40);
      } finally {
        child.kill('SIGTERM');
        if (!(await waitExit(child, 5000))) child.kill('SIGKILL');
      }
    } finally {
      removeTree(dir);
    }
  });
});
