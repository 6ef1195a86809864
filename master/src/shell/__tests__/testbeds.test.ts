/**
 * Testbeds over gRPC against a real MasterServer on loopback with an in-memory store whose writes
 * can be made to fail: a testbed is written before memory changes, so a failed write answers
 * UNAVAILABLE and leaves the master as it was (no testbed, no reserved host, nothing to rebuild);
 * bad requests are INVALID_ARGUMENT naming the field; a master starting on a store that holds
 * testbeds loads them.
 */
import { expect } from 'chai';
import { normalizeJobSpec, nullLogger } from '@fuxi/common';
import { loadFuxiProto, type MasterServiceDefinition } from '@fuxi/proto';
import { connect, jobSpecToProto, type TypedClient } from '@fuxi/rpc';
import { MemoryStore, type StoreOp } from '@fuxi/store';
import { defaultConfig } from '../config.js';
import { MasterServer } from '../master-server.js';
import { rpcError } from './helpers.js';

/** A memory store whose writes fail while `failing` is set. */
class FlakyStore extends MemoryStore {
  failing = false;
  override async batch(ops: readonly StoreOp[]): Promise<void> {
    if (this.failing) throw new Error('injected store fault: write refused');
    return super.batch(ops);
  }
}

const config = () => ({
  ...defaultConfig(['true']),
  listen: '127.0.0.1:0',
  store: 'memory' as const,
  quotaGroups: [
    { name: 'default', weight: 1 },
    { name: 'research', weight: 1 },
  ],
});

const create = (name: string, over: Record<string, unknown> = {}) => ({
  name,
  quotaGroup: 'research',
  hosts: [] as string[],
  label: '',
  count: 0,
  startMs: '0',
  endMs: '0',
  requestedBy: 'tester',
  ...over,
});

describe('master: testbeds over gRPC', function () {
  this.timeout(20_000);
  let server: MasterServer;
  let store: FlakyStore;
  let client: TypedClient<MasterServiceDefinition>;

  beforeEach(async () => {
    store = new FlakyStore();
    server = new MasterServer(config(), nullLogger, { store });
    await server.start();
    client = connect(loadFuxiProto().MasterService, server.address);
    for (const nodeId of ['n1', 'n2', 'n3'])
      await client.RegisterAgent({ node: { nodeId, address: '127.0.0.1:1', rack: 'r1', capacity: { cpuMilli: 4000, memoryMb: 4096 } }, epochSeen: '0' });
  });

  afterEach(async () => {
    client.close();
    await server.stop();
  });

  const testbedOf = async (nodeId: string) => (await client.ListNodes({})).nodes.find((n) => n.node?.nodeId === nodeId)?.testbed;

  it('creates a testbed once durable; ListTestbeds and ListNodes show it', async () => {
    const res = await client.CreateTestbed(create('ml', { hosts: ['n2', 'n1'] }));
    expect(res.testbed).to.deep.include({ name: 'ml', quotaGroup: 'research', hosts: ['n1', 'n2'], active: true });
    expect(JSON.parse((await store.get('testbeds/ml')) ?? '{}')).to.deep.include({ name: 'ml', group: 'research', hosts: ['n1', 'n2'] });
    expect((await client.ListTestbeds({})).testbeds.map((t) => t.name)).to.deep.equal(['ml']);
    expect(await testbedOf('n1')).to.equal('ml');
    expect(await testbedOf('n3')).to.equal('');
    // The same request again (a retry) is the same testbed.
    expect((await client.CreateTestbed(create('ml', { hosts: ['n1', 'n2'] }))).testbed?.createdMs).to.equal(res.testbed?.createdMs);
  });

  it('a failed write changes nothing: UNAVAILABLE, no testbed, no reserved host; the master answers at once', async () => {
    await client.CreateTestbed(create('ml', { hosts: ['n1'] }));
    store.failing = true;
    const err = await rpcError(client.CreateTestbed(create('etl', { hosts: ['n2'] })));
    expect(err.code).to.equal('UNAVAILABLE');
    expect(err.message).to.match(/nothing changed/);
    const del = await rpcError(client.DeleteTestbed({ name: 'ml', requestedBy: 'tester' }));
    expect(del.code).to.equal('UNAVAILABLE');
    // Memory as it was; the same leader serves (no rebuild was needed).
    expect((await client.ListTestbeds({}, { deadlineMs: 1000 })).testbeds.map((t) => t.name)).to.deep.equal(['ml']);
    expect(await testbedOf('n2')).to.equal('');
    expect(await testbedOf('n1')).to.equal('ml');
    expect(await store.get('testbeds/etl')).to.equal(undefined);
    store.failing = false;
    // n2 is free: the retry makes it.
    expect((await client.CreateTestbed(create('etl', { hosts: ['n2'] }))).testbed?.hosts).to.deep.equal(['n2']);
    await client.DeleteTestbed({ name: 'ml', requestedBy: 'tester' });
    expect(await store.get('testbeds/ml')).to.equal(undefined);
    expect(await testbedOf('n1')).to.equal('');
  });

  it('bad requests are INVALID_ARGUMENT naming the field; a taken host, an unknown testbed', async () => {
    await client.CreateTestbed(create('ml', { hosts: ['n1'] }));
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ quotaGroup: 'nope' }, /^group: "nope" is not a configured quota group/],
      [{ hosts: ['n9'] }, /^hosts: unknown node n9/],
      [{ hosts: ['n1'] }, /^hosts: n1 is in testbed "ml"/],
      [{ count: 3 }, /^count: asks for 3 hosts; only 2/],
      [{ label: 'gpu' }, /^label: must be key=value/],
      [{ hosts: ['n2'], endMs: '1000' }, /^end: is not in the future/],
    ];
    for (const [over, message] of cases) {
      const e = await rpcError(client.CreateTestbed(create('x', over)));
      expect(e.code, JSON.stringify(over)).to.equal('INVALID_ARGUMENT');
      expect(e.message).to.match(message);
    }
    expect((await rpcError(client.CreateTestbed(create('ml', { hosts: ['n2'] })))).code).to.equal('ALREADY_EXISTS');
    expect((await rpcError(client.DeleteTestbed({ name: 'ghost', requestedBy: '' }))).code).to.equal('NOT_FOUND');
    expect((await client.ListTestbeds({})).testbeds).to.have.length(1);
  });

  it('a job may name only an existing testbed of its own quota group', async () => {
    await client.CreateTestbed(create('ml', { hosts: ['n1'] }));
    const spec = (id: string, over: Record<string, unknown>) =>
      jobSpecToProto(
        normalizeJobSpec({ id, name: id, tasks: [{ name: 'map', instances: 1, resources: { cpu: 1, memory: 256 }, command: ['true'] }], ...over }),
      );
    expect((await client.SubmitJob({ spec: spec('ok', { quotaGroup: 'research', testbed: 'ml' }) })).created).to.equal(true);
    const other = await rpcError(client.SubmitJob({ spec: spec('other', { testbed: 'ml' }) }));
    expect(other.code).to.equal('INVALID_ARGUMENT');
    expect(other.message).to.match(/^testbed: "ml" is reserved for quota group "research", not "default"/);
    expect((await rpcError(client.SubmitJob({ spec: spec('none', { quotaGroup: 'research', testbed: 'ghost' }) }))).message).to.match(
      /^testbed: no testbed "ghost"/,
    );
  });

  it('a master starting on a store that holds testbeds loads them', async () => {
    const held = new MemoryStore();
    await held.put('testbeds/ml', JSON.stringify({ name: 'ml', group: 'research', selector: { hosts: ['n1'] }, hosts: ['n1'], createdMs: 1 }));
    const other = new MasterServer(config(), nullLogger, { store: held });
    await other.start();
    const c = connect(loadFuxiProto().MasterService, other.address);
    try {
      const list = (await c.ListTestbeds({})).testbeds;
      expect(list.map((t) => [t.name, t.quotaGroup, t.hosts, t.active])).to.deep.equal([['ml', 'research', ['n1'], true]]);
    } finally {
      c.close();
      await other.stop();
    }
  });
});
