/**
 * A heartbeat that carries the agent's registration (`rejoin`, sent after the agent lost its
 * master), against a real MasterServer on loopback with an in-memory store: a master that does not
 * know the agent registers it from the heartbeat, a new leader rebuilding its soft state takes the
 * grant table along as the agent's report, a master that knows the agent ignores it, and a
 * registration naming another node is refused.
 */
import { expect } from 'chai';
import { nullLogger } from '@fuxi/common';
import { loadFuxiProto, type MasterServiceDefinition, type RegisterAgentRequest } from '@fuxi/proto';
import { connect, type TypedClient } from '@fuxi/rpc';
import { MemoryStore } from '@fuxi/store';
import { defaultConfig } from '../config.js';
import { MasterServer } from '../master-server.js';
import { rpcError } from './helpers.js';

const config = () => ({ ...defaultConfig(['true']), listen: '127.0.0.1:0', store: 'memory' as const, recoveryDeadlineMs: 20_000 });

const registration = (nodeId: string): RegisterAgentRequest => ({
  node: { nodeId, address: '127.0.0.1:1', rack: 'r1', capacity: { cpuMilli: 4000, memoryMb: 4096 } },
  epochSeen: '0',
  withState: true,
  grants: [],
});

describe('master: a heartbeat that carries the registration (rejoin)', function () {
  this.timeout(20_000);
  const servers: MasterServer[] = [];
  const clients: TypedClient<MasterServiceDefinition>[] = [];

  async function start(store: MemoryStore): Promise<TypedClient<MasterServiceDefinition>> {
    const server = new MasterServer(config(), nullLogger, { store });
    servers.push(server);
    await server.start();
    const client = connect(loadFuxiProto().MasterService, server.address);
    clients.push(client);
    return client;
  }

  afterEach(async () => {
    for (const c of clients.splice(0)) c.close();
    for (const s of servers.splice(0)) await s.stop();
  });

  const nodeIds = async (c: TypedClient<MasterServiceDefinition>) => (await c.ListNodes({})).nodes.map((n) => n.node?.nodeId);

  it('registers an agent it does not know from the heartbeat, and ignores the registration of one it knows', async () => {
    const c = await start(new MemoryStore());
    const first = await c.Heartbeat({ nodeId: 'n1', epoch: '0', rejoin: registration('n1') });
    expect(first.reregister).to.equal(false);
    expect(first.registered?.heartbeatIntervalMs).to.be.greaterThan(0);
    expect(first.registered?.epoch).to.equal(first.epoch);
    expect(await nodeIds(c)).to.deep.equal(['n1']);
    // Known now: a plain heartbeat answer.
    const second = await c.Heartbeat({ nodeId: 'n1', epoch: first.epoch, rejoin: registration('n1') });
    expect(second.registered).to.equal(null);
    expect(second.reregister).to.equal(false);
    // Without it, an unknown agent is still asked to register.
    expect((await c.Heartbeat({ nodeId: 'n2', epoch: '0' })).reregister).to.equal(true);
  });

  it('refuses a registration that names another node than the heartbeat, registering nothing', async () => {
    const c = await start(new MemoryStore());
    const e = await rpcError(c.Heartbeat({ nodeId: 'n1', epoch: '0', rejoin: registration('n9') }));
    expect(e.code).to.equal('INVALID_ARGUMENT');
    expect(e.message).to.match(/rejoin\.node\.nodeId/);
    expect(await nodeIds(c)).to.deep.equal([]);
  });

  it('a new leader rebuilding its soft state takes the grant table sent along as the agent’s report', async () => {
    const store = new MemoryStore();
    const old = await start(store);
    await old.RegisterAgent(registration('n1'));
    // The next master finds what the first one wrote (n1 in the roster) and waits for its report.
    const next = new MemoryStore();
    for (const kv of await store.list('')) await next.put(kv.key, kv.value);
    const c = await start(next);
    const r = await c.Heartbeat({ nodeId: 'n1', epoch: '0', rejoin: registration('n1') });
    expect(r.registered?.stateAdopted).to.equal(true);
    expect(r.registered?.reportState).to.equal(false);
    expect(r.registered?.grants).to.deep.equal([]);
    const after = await c.Heartbeat({ nodeId: 'n1', epoch: r.epoch });
    expect(after.reportState).to.equal(false);
    expect(after.reregister).to.equal(false);
  });
});
