import { expect } from 'chai';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { nullLogger } from '@fuxi/common';
import { loadFuxiProto, type GrantUpdate, type HeartbeatRequest__Output, type HeartbeatResponse, type WatchGrantsRequest__Output } from '@fuxi/proto';
import { connect, implement, startServer, type RunningServer } from '@fuxi/rpc';
import type * as grpc from '@grpc/grpc-js';
import { Agent } from '../agent.js';
import { resolveConfig } from '../config.js';
import { stubs, waitFor, removeWorkDir } from './helpers.js';

type Watch = grpc.ServerWritableStream<WatchGrantsRequest__Output, GrantUpdate>;

describe('Agent shell: grants over the WatchGrants stream', function () {
  this.timeout(30_000);
  const proto = loadFuxiProto();
  const slot = { cpuMilli: 100, memoryMb: 64 };
  let workDir: string;
  let master: RunningServer;
  let agent: Agent;
  const watches: Array<{ req: WatchGrantsRequest__Output; call: Watch; closed: boolean }> = [];
  let epoch = '5';
  let heartbeatReply: HeartbeatResponse | undefined;
  const heartbeats: HeartbeatRequest__Output[] = [];
  let registrations = 0;
  /** The next heartbeat that carries a registration is answered as registered from it by a master of this epoch, with this table. */
  let registerOnRejoin: GrantUpdate | undefined;

  before(async () => {
    workDir = fs.mkdtempSync(path.join(os.tmpdir(), 'fuxi-grant-stream-'));
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
              RegisterAgent: () => {
                registrations++;
                return { epoch, heartbeatIntervalMs: 100 };
              },
              Heartbeat: (req: HeartbeatRequest__Output): HeartbeatResponse => {
                heartbeats.push(req);
                const t = registerOnRejoin;
                if (t && req.rejoin) {
                  registerOnRejoin = undefined;
                  epoch = String(t.epoch); // the new leader's
                  return { epoch, registered: { epoch, heartbeatIntervalMs: 100, stateAdopted: true, grantSeq: t.seq, grants: t.grants } };
                }
                const r = heartbeatReply ?? { epoch };
                heartbeatReply = undefined;
                return r;
              },
              WatchGrants: (req: WatchGrantsRequest__Output, call: Watch) =>
                new Promise<void>((resolve) => {
                  const w = { req, call, closed: false };
                  watches.push(w);
                  call.on('cancelled', () => {
                    w.closed = true;
                    resolve();
                  });
                }),
            }),
            nullLogger,
          ),
        },
      ],
    });
    const cfg = resolveConfig({ master: master.address, nodeId: 'node-s', cpu: '2', memory: '1Gi', workDir, stopGraceMs: 500 }, {});
    agent = new Agent(cfg, { log: nullLogger, tickMs: 100 });
    await agent.start();
  });

  after(async () => {
    await agent?.stop();
    await master?.shutdown(100);
    removeWorkDir(workDir);
  });

  const open = () => watches.filter((w) => !w.closed);

  it('opens one stream after registering, naming its node and the epoch', async () => {
    await waitFor(() => watches.length > 0);
    await new Promise((r) => setTimeout(r, 400)); // several heartbeats: still one stream
    expect(open()).to.have.length(1);
    expect(watches[0]!.req).to.include({ nodeId: 'node-s', epoch: '5' });
  });

  it('applies grant tables and deltas from the stream, in seq order', async () => {
    const call = open()[0]!.call;
    call.write({ epoch: '5', seq: '1', full: true, grants: [{ appId: 'a1', suId: 'map', slots: 2, resource: slot }] });
    await waitFor(() => agent.core.grantTable().length === 1);
    call.write({ epoch: '5', seq: '2', full: false, grants: [{ appId: 'a2', suId: 'red', slots: 1, resource: slot }] });
    // Out of order: a delta that does not follow the applied seq is ignored.
    call.write({ epoch: '5', seq: '9', full: false, grants: [{ appId: 'a3', suId: 'x', slots: 1, resource: slot }] });
    await waitFor(() => agent.core.appliedGrantSeq === '2');
    await new Promise((r) => setTimeout(r, 100));
    expect(
      agent.core
        .grantTable()
        .map((g) => `${g.appId}/${g.suId}=${g.slots}`)
        .sort(),
    ).to.deep.equal(['a1/map=2', 'a2/red=1']);
    // The agent's own UpdateGrants still works alongside (the master's fallback).
    const c = connect(proto.AgentService, agent.address);
    try {
      const r = await c.UpdateGrants({ epoch: '5', seq: '3', full: false, grants: [{ appId: 'a1', suId: 'map', slots: 0, resource: slot }] });
      expect(r.appliedSeq).to.equal('3');
    } finally {
      c.close();
    }
    expect(agent.core.grantTable().map((g) => g.appId)).to.deep.equal(['a2']);
  });

  it('opens a new stream when the master ends it, and when a newer master answers', async () => {
    const first = open()[0]!;
    first.call.end();
    await waitFor(() => open().length === 1 && open()[0] !== first);
    const second = open()[0]!;
    expect(second.req.epoch).to.equal('5');
    // A new master (epoch 6) takes over: the next heartbeat answer moves the stream to it.
    epoch = '6';
    heartbeatReply = { epoch: '6' };
    await waitFor(() => open().length === 1 && open()[0]!.req.epoch === '6');
    expect(second.closed).to.equal(true);
  });

  it('after losing its stream, heartbeats carry its registration; a new master registers it from one (no RegisterAgent), its table applies and the stream opens again', async () => {
    const lost = open()[0]!;
    const registered = registrations;
    const tableBefore = agent.core.grantTable().map((g) => g.appId);
    // The leader of epoch 6 is gone; the one of epoch 7 does not know this agent yet.
    registerOnRejoin = { epoch: '7', seq: '1', full: true, grants: [{ appId: 'a9', suId: 'map', slots: 1, resource: slot }] };
    const from = heartbeats.length;
    lost.call.end();
    await waitFor(() => open().length === 1 && open()[0]!.req.epoch === '7');
    const rejoin = heartbeats.slice(from).find((h) => h.rejoin)?.rejoin;
    expect(rejoin?.node?.nodeId).to.equal('node-s');
    expect(rejoin?.withState).to.equal(true);
    expect(rejoin?.grants.map((g) => g.appId)).to.deep.equal(tableBefore);
    expect(registrations).to.equal(registered);
    expect(agent.core.epochSeen).to.equal('7');
    expect(agent.core.grantTable().map((g) => g.appId)).to.deep.equal(['a9']);
    // Answered: the heartbeats after it are plain ones.
    const n = heartbeats.length;
    await waitFor(() => heartbeats.length >= n + 3);
    expect(heartbeats.slice(n).every((h) => h.rejoin === null)).to.equal(true);
  });
});
