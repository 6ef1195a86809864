/**
 * GetAppSnapshot against a real MasterServer over gRPC on loopback (in-memory store): an app's
 * topology and its log entries in key order, in one read of the app's keys, and nothing of an app
 * whose id starts the same.
 */
import { expect } from 'chai';
import { normalizeJobSpec } from '@fuxi/common';
import type { MasterServiceDefinition } from '@fuxi/proto';
import { jobSpecToProto, type TypedClient } from '@fuxi/rpc';
import { MemoryStore } from '@fuxi/store';
import { KEYS } from '../../core/store-ops.js';
import type { MasterServer } from '../master-server.js';
import { loopbackMaster } from './helpers.js';

const spec = (id: string) =>
  jobSpecToProto(normalizeJobSpec({ id, name: id, tasks: [{ name: 'map', instances: 1, resources: { cpu: 1, memory: 256 }, command: ['true'] }] }));

describe('master: GetAppSnapshot', function () {
  this.timeout(20_000);
  let server: MasterServer;
  let store: MemoryStore;
  let client: TypedClient<MasterServiceDefinition>;

  beforeEach(async () => {
    store = new MemoryStore();
    ({ server, client } = await loopbackMaster(store));
  });

  afterEach(async () => {
    client.close();
    await server.stop();
  });

  it("answers the app's topology and its log entries in key order, in one read, and nothing of another app", async () => {
    for (const id of ['a', 'a-2']) await client.SubmitJob({ spec: spec(id) });
    await store.put(KEYS.appTopology('a'), '{"tasks":["map"]}');
    await store.put(KEYS.appLogEntry('a', 1, 2, 0), 'second');
    await store.put(KEYS.appLogEntry('a', 1, 1, 1), 'first-1');
    await store.put(KEYS.appLogEntry('a', 1, 1, 0), 'first-0');
    await store.put(KEYS.appTopology('a-2'), 'other');
    await store.put(KEYS.appLogEntry('a-2', 1, 1, 0), 'other-entry');
    let reads = 0;
    const list = store.list.bind(store);
    const get = store.get.bind(store);
    store.list = (prefix: string) => (reads++, list(prefix));
    store.get = (key: string) => (reads++, get(key));
    const snap = await client.GetAppSnapshot({ appId: 'a' });
    expect(reads).to.equal(1);
    expect(snap.topology).to.equal('{"tasks":["map"]}');
    expect(snap.entries).to.deep.equal(['first-0', 'first-1', 'second']);
    const none = await client.GetAppSnapshot({ appId: 'a-2' });
    expect(none.topology).to.equal('other');
    expect(none.entries).to.deep.equal(['other-entry']);
  });
});
