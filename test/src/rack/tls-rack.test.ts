/**
 * Mutual TLS across hosts: three masters and two agents, each on a host of its own (its own
 * network namespace and address, its own certificate naming that address), started from the
 * multi-host config files (`deploy/config/cluster/`, whose `tls` keys the harness points at its
 * certificates). The test process stays outside on the rack's bridge, like a client machine.
 *
 * - every daemon refuses a plaintext client, a client without a certificate and one whose
 *   certificate another CA signed;
 * - an agent certificate for node-1 cannot register (nor heartbeat) as node-2, at any master;
 * - a word count runs across the hosts over TLS (reducers fetch map output from other hosts, the
 *   result is fetched from the reducers' hosts) and is correct.
 */
import { expect } from 'chai';
import * as grpc from '@grpc/grpc-js';
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { issueCert, makeCa, type FuxiClient } from '@fuxi/client';
import { expectedCounts, sameCounts, smallWordcountSpec, wordcountResult, removeTree } from '@fuxi/deploy';
import { loadFuxiProto } from '@fuxi/proto';
import { connect, RpcError, Transport } from '@fuxi/rpc';
import { RackCluster } from './rack-cluster.js';

async function failure(fn: () => Promise<unknown>): Promise<RpcError | undefined> {
  try {
    await fn();
    return undefined;
  } catch (e) {
    if (e instanceof RpcError) return e;
    throw e;
  }
}

describe('mutual TLS on the rack: every daemon on its own host with its own certificate', function () {
  this.timeout(300_000);
  let rc: RackCluster | undefined;
  let client: FuxiClient;
  let dir = '';
  let other = '';
  let failed = false;

  before(async function () {
    this.timeout(180_000);
    dir = mkdtempSync(join(tmpdir(), 'fuxi-rack-tls-'));
    chmodSync(dir, 0o711); // the agents' unprivileged worker user passes through to its directories
    rc = await RackCluster.start({
      dir,
      agents: 2,
      prefix: 'fxt',
      subnet: '10.219.0',
      leaseTtlSec: 3,
      heartbeatIntervalMs: 300,
      agentCpu: '2',
      agentMemory: '2Gi',
      logLevel: 'info',
    });
    client = rc.ha.client({ retryForMs: 60_000 });
    other = mkdtempSync(join(tmpdir(), 'fuxi-rack-tls-other-'));
    makeCa(other);
    issueCert({ dir: other, name: 'admin', role: 'admin' });
  });
  afterEach(function () {
    if (this.currentTest?.state === 'failed') failed = true;
  });
  after(async function () {
    this.timeout(120_000);
    client?.close();
    await rc?.stop();
    if (other) rmSync(other, { recursive: true, force: true });
    if (dir && !failed) removeTree(dir);
    else if (dir) process.stderr.write(`  (rack logs kept in ${dir})\n`);
  });

  it('each host serves its own certificate, naming its address; the admin certificate gets through everywhere', async () => {
    const nodes = await client.nodes();
    expect(nodes.map((n) => n.node?.nodeId).sort()).to.deep.equal(['node-1', 'node-2']);
    for (const n of nodes) expect(n.node!.address).to.match(/^10\.219\.0\.\d+:\d+$/);
    const t = rc!.ha.transport();
    for (const address of rc!.ha.masterAddresses) {
      const m = connect(loadFuxiProto().MasterService, address, t);
      try {
        // An answer: the leader's status, or a standby's redirect to it (either way, TLS went through).
        const e = await failure(() => m.GetClusterStatus({}, { deadlineMs: 5000 }));
        expect(e === undefined || e.leader !== '', `${address}: ${e?.message}`).to.equal(true);
      } finally {
        m.close();
      }
    }
  });

  it('every daemon refuses a plaintext client, one without a certificate and one from another CA', async () => {
    const pki = rc!.ha.pki!;
    const clients: Array<[string, Transport]> = [
      ['plaintext', Transport.insecure()],
      ['no certificate', { channelCredentials: () => grpc.credentials.createSsl(readFileSync(pki.ca)) } as unknown as Transport],
      ['another CA', Transport.from({ tls: { ca: pki.ca, cert: join(other, 'admin.crt'), key: join(other, 'admin.key') } })],
    ];
    const agents = (await client.nodes()).map((n) => n.node!.address);
    const daemons: Array<[string, (t: Transport) => Promise<unknown>]> = [
      ...rc!.ha.masterAddresses.map(
        (a) =>
          [
            `master ${a}`,
            async (t: Transport) => {
              const c = connect(loadFuxiProto().MasterService, a, t);
              try {
                return await c.GetClusterStatus({}, { deadlineMs: 3000 });
              } finally {
                c.close();
              }
            },
          ] as [string, (t: Transport) => Promise<unknown>],
      ),
      ...agents.map(
        (a) =>
          [
            `agent ${a}`,
            async (t: Transport) => {
              const c = connect(loadFuxiProto().AgentService, a, t);
              try {
                return await c.GetAgentState({}, { deadlineMs: 3000 });
              } finally {
                c.close();
              }
            },
          ] as [string, (t: Transport) => Promise<unknown>],
      ),
    ];
    expect(daemons).to.have.length(5);
    for (const [who, t] of clients) {
      for (const [daemon, call] of daemons) {
        const e = await failure(() => call(t));
        expect(e, `${who} -> ${daemon}`).to.be.instanceOf(RpcError);
        expect(e!.code, `${who} -> ${daemon}`).to.be.oneOf(['UNAVAILABLE', 'DEADLINE_EXCEEDED']);
      }
    }
  });

  it("node-1's certificate cannot register or heartbeat as node-2 at any master", async () => {
    const node1 = Transport.from({ tls: rc!.ha.pki!.issue('node-1', 'agent') });
    for (const address of rc!.ha.masterAddresses) {
      const m = connect(loadFuxiProto().MasterService, address, node1);
      try {
        const node = { nodeId: 'node-2', address: '10.219.0.99:7071', rack: 'rack-a', capacity: { cpuMilli: 64_000, memoryMb: 1_000_000 } };
        const reg = await failure(() => m.RegisterAgent({ node, epochSeen: '0' }, { deadlineMs: 5000 }));
        expect(reg?.code, address).to.equal('PERMISSION_DENIED');
        expect(reg?.message).to.equal('RegisterAgent: permission denied: agent node-1 may not act as node node-2');
        const hb = await failure(() => m.Heartbeat({ nodeId: 'node-2', epoch: '1' }, { deadlineMs: 5000 }));
        expect(hb?.code, address).to.equal('PERMISSION_DENIED');
      } finally {
        m.close();
      }
    }
    // node-2 is still the real one, at its own address.
    const n2 = (await client.nodes()).find((n) => n.node?.nodeId === 'node-2');
    expect(n2?.node?.address).to.not.equal('10.219.0.99:7071');
  });

  it('a word count runs across the hosts over TLS and is correct', async () => {
    const spec = smallWordcountSpec('tls-wc');
    const { jobId } = await client.submit(spec);
    const done = await client.waitFor(jobId);
    expect(done.state, done.message).to.equal('JOB_STATE_SUCCEEDED');
    const counts = await wordcountResult(client, jobId, spec);
    expect(sameCounts(counts, await expectedCounts(spec))).to.equal(true);
  });
});
