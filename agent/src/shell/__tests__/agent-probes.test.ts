import { expect } from 'chai';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { nullLogger, portOf } from '@fuxi/common';
import { loadFuxiProto, type HeartbeatRequest__Output, type HeartbeatResponse, type RegisterAgentRequest__Output } from '@fuxi/proto';
import { implement, startServer, type RunningServer } from '@fuxi/rpc';
import { removeAgentGroups } from '../cgroups.js';
import { Agent } from '../agent.js';
import { resolveConfig } from '../config.js';
import { Prober } from '../prober.js';
import { stubs, waitFor, removeWorkDir } from './helpers.js';

/**
 * The agent's heartbeat carries its probe report and targets version; the answer's
 * connectivity_seq, connectivity_resync and probe_targets are applied (a fake master that acks
 * like the real one: it holds the set the deltas build).
 */
describe('Agent shell: peer probing in heartbeats (fake master, a peer prober on loopback)', function () {
  this.timeout(30_000);
  const proto = loadFuxiProto();
  let workDir: string;
  let master: RunningServer;
  let agent: Agent | undefined;
  let peer: Prober | undefined;
  const registrations: RegisterAgentRequest__Output[] = [];
  const heartbeats: HeartbeatRequest__Output[] = [];
  /** What the fake master holds for the agent: seq and set, as applyDelta would. */
  let held: { seq: number; set: Set<string> } | undefined;
  let targets: HeartbeatResponse['probeTargets'] = null;
  let resyncOnce = false;

  before(async () => {
    workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'fuxi-agent-probes-'));
    peer = new Prober({ nodeId: 'peer', host: '127.0.0.1', port: 0, periodMs: 20, misses: 3 });
    await peer.start();
    master = await startServer({
      bind: '127.0.0.1:0',
      log: nullLogger,
      services: [
        {
          name: 'fuxi.v1.MasterService',
          definition: proto.MasterService.service,
          handlers: implement(
            proto.MasterService.service,
            stubs(proto.MasterService.service, {
              RegisterAgent: (req: RegisterAgentRequest__Output) => {
                registrations.push(req);
                return { epoch: '3', heartbeatIntervalMs: 50 };
              },
              Heartbeat: (req: HeartbeatRequest__Output): HeartbeatResponse => {
                heartbeats.push(req);
                const d = req.connectivity;
                let ack = 0;
                let resync = false;
                if (d && resyncOnce) {
                  resyncOnce = false;
                  resync = true;
                } else if (d && Number(d.baseSeq) === 0) held = { seq: Number(d.seq), set: new Set(d.unreachable) };
                else if (d && held && held.seq === Number(d.baseSeq)) {
                  for (const p of d.unreachable) held.set.add(p);
                  for (const p of d.reachable) held.set.delete(p);
                  held.seq = Number(d.seq);
                } else if (d) resync = true;
                ack = resync ? 0 : (held?.seq ?? 0);
                const stale = targets && String(targets.version) !== req.probeTargetsVersion;
                return { epoch: '3', connectivitySeq: String(ack), connectivityResync: resync, probeTargets: stale ? targets : null };
              },
            }),
            nullLogger,
          ),
        },
      ],
    });
    const cfg = resolveConfig(
      { master: master.address, nodeId: 'node-a', cpu: '2', memory: '1Gi', workDir, amHost: 'false', probe: 'periodMs=20,misses=3' },
      {},
    );
    agent = new Agent(cfg, { log: nullLogger, tickMs: 100 });
    await agent.start();
  });

  after(async () => {
    await agent?.stop();
    peer?.stop();
    await master?.shutdown(100);
    // The worker cgroups of this agent (every process is gone by now).
    await removeAgentGroups('node-a', workDir);
    removeWorkDir(workDir);
  });

  const last = () => heartbeats[heartbeats.length - 1]!;

  it('registers its probe port (the gRPC port) and sends the whole empty set until it is acknowledged', async () => {
    await waitFor(() => heartbeats.length >= 3, 10_000, 'heartbeats');
    expect(registrations[0]?.node?.probePort).to.equal(portOf(agent!.address));
    expect(agent!.probes?.port).to.equal(portOf(agent!.address));
    expect(heartbeats[0]?.connectivity).to.deep.equal({ seq: '1', baseSeq: '0', unreachable: [], reachable: [] });
    expect(heartbeats[0]?.probeTargetsVersion).to.equal('0');
    expect(last().connectivity).to.deep.equal({ seq: '1', baseSeq: '1', unreachable: [], reachable: [] });
  });

  it('takes its targets from the answer, probes them, and reports a peer that stops answering as a change', async () => {
    targets = { version: '7', peers: [{ nodeId: 'peer', address: peer!.address }] };
    await waitFor(() => last().probeTargetsVersion === '7', 10_000, 'targets applied');
    await waitFor(() => (peer!.stats().pingsReceived ?? 0) >= 3, 10_000, 'pings at the peer');
    const port = peer!.port;
    peer!.stop();
    await waitFor(() => held?.set.has('peer') === true, 10_000, 'the master holds peer unreachable');
    const down = heartbeats.find((h) => h.connectivity?.unreachable.includes('peer'));
    expect(down?.connectivity?.baseSeq).to.equal('1');
    expect(down?.connectivity?.seq).to.equal('2');
    peer = new Prober({ nodeId: 'peer', host: '127.0.0.1', port, periodMs: 20, misses: 3 });
    await peer.start();
    await waitFor(() => held?.set.size === 0, 10_000, 'peer reachable again at the master');
    expect(heartbeats.find((h) => h.connectivity?.reachable.includes('peer'))?.connectivity?.seq).to.equal('3');
  });

  it('sends the whole set again when the master asks for a resync', async () => {
    peer!.stop();
    await waitFor(() => held?.set.has('peer') === true, 10_000, 'peer unreachable again');
    const n = heartbeats.length;
    resyncOnce = true;
    await waitFor(() => heartbeats.length > n + 2, 10_000, 'heartbeats after the resync');
    const full = heartbeats.slice(n).find((h) => h.connectivity?.baseSeq === '0');
    expect(full?.connectivity?.unreachable).to.deep.equal(['peer']);
  });
});
