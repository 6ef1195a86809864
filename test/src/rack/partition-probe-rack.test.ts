/**
 * Peer probing on the rack: three agents each on a host of its own probe one another over UDP; a
 * link cut with nftables between two agent hosts (a1 <-> a2, both still reaching the masters)
 * shows in `GetClusterStatus` as the broken link node-1 <-/-> node-2 and in `ListNodes` as each
 * end's unreachable peer, in `fuxi nodes` and `fuxi cluster status` too, and clears after the
 * heal. Nothing else changes: every node stays ready. The rack is its own ('fxp', 10.215.0), so it
 * never meets another rack on this machine.
 */
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { FuxiClient } from '@fuxi/client';
import { BIN, removeTree } from '@fuxi/deploy';
import { until } from '../harness.js';
import { RackCluster } from './rack-cluster.js';

const run = promisify(execFile);

describe('peer probing on the rack: a link cut between two agent hosts shows, and clears after the heal', function () {
  this.timeout(300_000);
  let rc: RackCluster | undefined;
  let client: FuxiClient;
  let dir = '';
  let failed = false;

  before(async function () {
    this.timeout(180_000);
    dir = mkdtempSync(join(tmpdir(), 'fuxi-probe-rack-'));
    chmodSync(dir, 0o711); // the agents' unprivileged worker user passes through to its directories
    rc = await RackCluster.start({
      dir,
      agents: 3,
      prefix: 'fxp',
      subnet: '10.215.0',
      leaseTtlSec: 3,
      heartbeatIntervalMs: 300,
      agentTimeoutMs: 30_000,
      amTimeoutMs: 30_000,
      agentCpu: '1',
      agentMemory: '1Gi',
      logLevel: 'debug',
    });
    client = rc.ha.client({ retryForMs: 60_000 });
  });
  afterEach(function () {
    if (this.currentTest?.state === 'failed') failed = true;
  });
  after(async function () {
    this.timeout(120_000);
    client?.close();
    await rc?.stop();
    if (dir && !failed) removeTree(dir);
    else if (dir) process.stderr.write(`  (rack logs kept in ${dir})\n`);
  });

  const unreachable = async () => Object.fromEntries((await client.nodes()).map((n) => [n.node?.nodeId ?? '?', n.unreachablePeers]));
  const links = async () => ((await client.clusterStatus()).connectivity?.brokenLinks ?? []).map((l) => `${l.a} <-/-> ${l.b}`);
  const cli = async (...args: string[]) =>
    (
      await run(process.execPath, [BIN.cli, '--master', rc!.ha.masterAddresses.join(','), ...args], {
        env: { ...process.env, ...rc!.ha.clientEnv() },
        timeout: 60_000,
        maxBuffer: 4 << 20,
      })
    ).stdout;

  it('every agent registers a probe responder on its own host, and nothing is broken', async () => {
    const nodes = await until('three nodes with probe responders', async () => {
      const ns = await client.nodes();
      return ns.length === 3 && ns.every((n) => n.healthy && (n.node?.probePort ?? 0) > 0) ? ns : undefined;
    });
    for (const n of nodes) expect(n.node?.address).to.match(/^10\.215\.0\.2\d:/);
    // A few probe periods with everything connected: no link is reported broken.
    await new Promise((r) => setTimeout(r, 3000));
    expect(await links()).to.deep.equal([]);
    expect(await unreachable()).to.deep.equal({ 'node-1': [], 'node-2': [], 'node-3': [] });
  });

  it('a1 <-/-> a2 cut: node-1 <-/-> node-2 is broken in the cluster status and ListNodes, every node still ready', async () => {
    const t0 = Date.now();
    await rc!.rack.cut('a1', 'a2');
    await until('node-1 <-/-> node-2 in GetClusterStatus', async () => ((await links()).includes('node-1 <-/-> node-2') ? true : undefined), 60_000, 200);
    const detectedMs = Date.now() - t0;
    await until(
      'the unreachable peers of both ends in ListNodes',
      async () => {
        const u = await unreachable();
        return u['node-1']?.join() === 'node-2' && u['node-2']?.join() === 'node-1' && u['node-3']?.length === 0 ? u : undefined;
      },
      60_000,
      200,
    );
    process.stderr.write(`      (the cut showed in GetClusterStatus ${detectedMs} ms after it was made)\n`);
    expect(await links()).to.deep.equal(['node-1 <-/-> node-2']);
    expect((await client.nodes()).map((n) => n.state)).to.deep.equal(['ready', 'ready', 'ready']);
    const nodesOut = await cli('nodes');
    expect(nodesOut.split('\n')[0]).to.match(/\sUNREACHABLE$/);
    expect(nodesOut).to.match(/^node-1\s.*\snode-2$/m);
    expect(nodesOut).to.match(/^node-3\s.*\s-$/m);
    const statusOut = await cli('cluster', 'status');
    expect(statusOut).to.match(/\npartitions:\n {2}node-1 <-\/-> node-2 {2}for /);
  });

  it('healed: the link clears from the cluster status and ListNodes', async () => {
    await rc!.rack.heal('a1', 'a2');
    await until('no broken link', async () => ((await links()).length === 0 ? true : undefined), 60_000, 200);
    await until('no unreachable peer', async () => {
      const u = await unreachable();
      return Object.values(u).every((p) => p.length === 0) ? true : undefined;
    });
    expect(await cli('cluster', 'status')).to.not.match(/partitions:/);
  });
});
