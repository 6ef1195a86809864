/**
 * Durable before acknowledged, against a real MasterServer over gRPC on loopback with an in-memory
 * store whose writes can be made to fail: a failed hard-state write is an UNAVAILABLE answer and
 * the master rebuilds its state from the store (nothing the store lacks is shown afterwards); a
 * retry then creates the job exactly once; another spec under the same id is ALREADY_EXISTS; an
 * oversized spec is INVALID_ARGUMENT before anything changes. Nothing goes out to an agent
 * before the store has it: a kill whose write is slow and then fails stops no worker.
 */
import { expect } from 'chai';
import * as grpc from '@grpc/grpc-js';
import { normalizeJobSpec, nullLogger, UnavailableError } from '@fuxi/common';
import { loadFuxiProto, type JobInfo__Output, type MasterServiceDefinition } from '@fuxi/proto';
import { AGENT_BATCHED, batchedCalls, connect, implement, jobSpecToProto, RpcError, type TypedClient } from '@fuxi/rpc';
import { MemoryStore, type StoreOp } from '@fuxi/store';
import { defaultConfig } from '../config.js';
import { MasterServer } from '../master-server.js';
import { rpcError } from './helpers.js';

/** A memory store whose writes fail while `failing` is set (with `fault`, else a plain error). */
class FlakyStore extends MemoryStore {
  failing = false;
  fault: () => Error = () => new Error('injected store fault: write refused');
  /** While set, writes wait for it (a slow store). */
  gate: Promise<void> | undefined;
  override async batch(ops: readonly StoreOp[]): Promise<void> {
    if (this.gate) await this.gate;
    if (this.failing) throw this.fault();
    return super.batch(ops);
  }
  override async put(key: string, value: string): Promise<void> {
    if (this.failing) throw this.fault();
    return super.put(key, value);
  }
}

const spec = (id: string, over: Record<string, unknown> = {}) =>
  jobSpecToProto(normalizeJobSpec({ id, name: id, tasks: [{ name: 'map', instances: 2, resources: { cpu: 1, memory: 256 }, command: ['true'] }], ...over }));

describe('master: durable before acknowledged (store faults)', function () {
  this.timeout(20_000);
  let server: MasterServer;
  let store: FlakyStore;
  let client: TypedClient<MasterServiceDefinition>;

  beforeEach(async () => {
    store = new FlakyStore();
    server = new MasterServer({ ...defaultConfig(['true']), listen: '127.0.0.1:0', store: 'memory', maxJobSpecBytes: 64 * 1024 }, nullLogger, { store });
    await server.start();
    client = connect(loadFuxiProto().MasterService, server.address);
  });

  afterEach(async () => {
    client.close();
    await server.stop();
  });

  /** Lists job ids once the master answers again (it rebuilds after a failed write). */
  async function jobIds(): Promise<string[]> {
    const until = Date.now() + 10_000;
    for (;;) {
      try {
        return (await client.ListJobs({ states: [] }, { deadlineMs: 2000 })).jobs.map((j) => j.jobId).sort();
      } catch (e) {
        if (Date.now() > until) throw e;
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  }

  it('answers a failed write with UNAVAILABLE, rebuilds from the store, and a retry creates the job once', async () => {
    expect((await client.SubmitJob({ spec: spec('kept') })).created).to.equal(true);
    store.failing = true;
    const err = await rpcError(client.SubmitJob({ spec: spec('lost') }));
    expect(err.code).to.equal('UNAVAILABLE');
    expect(err.message).to.match(/hard-state write failed/);
    store.failing = false;
    // The job whose write failed was never acknowledged and is not shown; the stored one is.
    expect(await jobIds()).to.deep.equal(['kept']);
    expect(server.epoch, 'a new term under a new epoch').to.not.equal('1');
    // The client's retry creates it exactly once.
    expect((await client.SubmitJob({ spec: spec('lost') })).created).to.equal(true);
    expect((await client.SubmitJob({ spec: spec('lost') })).created).to.equal(false);
    expect(await jobIds()).to.deep.equal(['kept', 'lost']);
    expect((await store.list('jobs/')).map((kv) => kv.key)).to.deep.equal(['jobs/kept', 'jobs/lost']);
  });

  it('a write that fails UNAVAILABLE (it may not have been applied) also rebuilds: a retry is not answered from memory', async () => {
    store.fault = () => new UnavailableError('etcd batch: injected: connection dropped');
    store.failing = true;
    const err = await rpcError(client.SubmitJob({ spec: spec('maybe') }));
    expect(err.code).to.equal('UNAVAILABLE');
    store.failing = false;
    // Had the master kept its term, this retry would be answered created: false from memory
    // while the store has no such job (the job lost at the next failover).
    expect(await jobIds()).to.deep.equal([]);
    expect((await client.SubmitJob({ spec: spec('maybe') })).created).to.equal(true);
    expect((await store.list('jobs/')).map((kv) => kv.key)).to.deep.equal(['jobs/maybe']);
  });

  it('a retry, a read, a watch or a refusal while the job is still being written waits for the write: nothing not durable is acknowledged or shown', async () => {
    let release!: () => void;
    store.gate = new Promise<void>((r) => (release = r));
    const first = client.SubmitJob({ spec: spec('slow') });
    const settled = (p: Promise<unknown>) =>
      p.then(
        () => 'ok',
        (e: unknown) => (e instanceof RpcError ? e.code : String(e)),
      );
    const firstDone = settled(first);
    await new Promise((r) => setTimeout(r, 100));
    // The job is in memory, its write is not done: a retry, reads, and a refusal of another spec
    // under its id (ALREADY_EXISTS would show the job) must wait for it.
    // A watch must not show it either: a stream's first record waits the same way.
    const watched = (stream: AsyncIterable<JobInfo__Output>) =>
      settled(
        (async () => {
          for await (const j of stream) return `shown ${j.jobId}`;
          return 'ended';
        })(),
      );
    const outcomes = [
      settled(client.SubmitJob({ spec: spec('slow') })),
      settled(client.GetJob({ jobId: 'slow' })),
      settled(client.ListJobs({ states: [] })),
      settled(client.GetClusterStatus({})),
      settled(client.ListNodes({})),
      settled(client.SubmitJob({ spec: spec('slow', { name: 'other' }) })),
      watched(client.stream.WatchJob({ jobId: 'slow' })),
      watched(client.stream.WatchJobs({ jobIds: ['slow'], arrayId: '', endsOnly: false })),
    ];
    const early = await Promise.race([Promise.all(outcomes), new Promise((r) => setTimeout(() => r('waiting'), 300))]);
    if (early !== 'waiting') release(); // let the next test run
    expect(early, 'answered before the write was durable').to.equal('waiting');
    // The write fails: none of them is answered from memory.
    store.failing = true;
    store.gate = undefined;
    release();
    expect(await firstDone).to.equal('UNAVAILABLE');
    expect(await Promise.all(outcomes)).to.deep.equal(outcomes.map(() => 'UNAVAILABLE'));
    store.failing = false;
    expect(await jobIds()).to.deep.equal([]);
  });

  it('a watch open when the term ends (a write failed) ends UNAVAILABLE, and watching again shows the job as the rebuilt master has it', async () => {
    expect((await client.SubmitJob({ spec: spec('kept') })).created).to.equal(true);
    const stream = client.stream.WatchJob({ jobId: 'kept' });
    const seen: string[] = [];
    const ended = (async () => {
      try {
        for await (const j of stream) seen.push(j.state);
        return 'ended OK';
      } catch (e) {
        return e instanceof RpcError ? e.code : String(e);
      }
    })();
    await new Promise((r) => setTimeout(r, 100));
    expect(seen).to.have.length(1);
    store.failing = true;
    expect((await rpcError(client.SubmitJob({ spec: spec('lost') }))).code).to.equal('UNAVAILABLE');
    store.failing = false;
    // Left open, the stream would hear of nothing more: the next term's changes go to its own watchers.
    expect(await ended).to.equal('UNAVAILABLE');
    expect(await jobIds()).to.deep.equal(['kept']);
    const again = client.stream.WatchJob({ jobId: 'kept' });
    for await (const j of again) {
      expect(j.jobId).to.equal('kept');
      break;
    }
    again.cancel();
  });

  it('a kill whose write failed is not shown as killed after the rebuild; its retry kills the job once', async () => {
    expect((await client.SubmitJob({ spec: spec('victim') })).created).to.equal(true);
    store.failing = true;
    const err = await rpcError(client.KillJob({ jobId: 'victim', reason: 'first try' }));
    expect(err.code).to.equal('UNAVAILABLE');
    store.failing = false;
    expect(await jobIds()).to.deep.equal(['victim']);
    const shown = await client.GetJob({ jobId: 'victim' });
    expect(shown.job?.state, 'the unacknowledged kill left no trace').to.not.equal('JOB_STATE_KILLED');
    const killed = await client.KillJob({ jobId: 'victim', reason: 'retry' });
    expect(killed.job?.state).to.equal('JOB_STATE_KILLED');
    expect(JSON.parse((await store.get('jobs/victim'))!)).to.deep.include({ state: 'killed' });
  });

  it('sends an agent nothing a write under way would change: a kill whose write is slow and then fails revokes no slot and stops no worker', async () => {
    // A recording agent: every call the master makes to it, in order.
    const calls: Array<{ method: string; req: Record<string, unknown> }> = [];
    const def = loadFuxiProto().AgentService.service;
    const impl: Record<string, unknown> = Object.fromEntries(
      Object.keys(def).map((method) => [
        method,
        async (req: Record<string, unknown>) => {
          calls.push({ method, req });
          return {};
        },
      ]),
    );
    // The master's stops and AM launches may come in batches: each entry recorded as its call.
    impl.Calls = batchedCalls(def, () => impl, AGENT_BATCHED);
    const agent = new grpc.Server();
    agent.addService(def, implement(def, impl as never, nullLogger));
    const port = await new Promise<number>((resolve, reject) =>
      agent.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))),
    );
    try {
      await client.RegisterAgent({
        node: { nodeId: 'n1', address: `127.0.0.1:${port}`, rack: 'r1', capacity: { cpuMilli: 8000, memoryMb: 8192 } },
        epochSeen: '0',
      });
      expect((await client.SubmitJob({ spec: spec('victim') })).created).to.equal(true);
      const until = Date.now() + 10_000;
      while (!calls.some((c) => c.method === 'StartWorkers')) {
        if (Date.now() > until) throw new Error(`the AM was never launched: ${JSON.stringify(calls.map((c) => c.method))}`);
        await new Promise((r) => setTimeout(r, 20));
      }
      const before = calls.length;
      // The kill's write waits (a slow store), then fails.
      let release!: () => void;
      store.gate = new Promise<void>((r) => (release = r));
      const kill = rpcError(client.KillJob({ jobId: 'victim', reason: 'not durable' }));
      await new Promise((r) => setTimeout(r, 300));
      const whileWriting = calls.slice(before).map((c) => c.method);
      store.failing = true;
      store.gate = undefined;
      release();
      expect((await kill).code).to.equal('UNAVAILABLE');
      await new Promise((r) => setTimeout(r, 300));
      expect(whileWriting, 'sent while the kill was being written').to.deep.equal([]);
      const after = calls.slice(before);
      expect(after.filter((c) => c.method === 'StopWorkers')).to.deep.equal([]);
      // Any grant table sent since still holds the AM's slot (a table of the rebuilt master may come).
      for (const c of after.filter((x) => x.method === 'UpdateGrants')) {
        const grants = (c.req.grants ?? []) as Array<{ appId: string }>;
        expect(
          grants.map((g) => g.appId),
          'a grant table sent after the failed kill',
        ).to.include('victim');
      }
      store.failing = false;
      expect(await jobIds()).to.deep.equal(['victim']);
    } finally {
      store.gate = undefined;
      store.failing = false;
      agent.forceShutdown();
    }
  });

  it('refuses another spec under an existing id with ALREADY_EXISTS naming the first differing field', async () => {
    expect((await client.SubmitJob({ spec: spec('wc') })).created).to.equal(true);
    const err = await rpcError(
      client.SubmitJob({ spec: spec('wc', { tasks: [{ name: 'map', instances: 4, resources: { cpu: 1, memory: 256 }, command: ['true'] }] }) }),
    );
    expect(err.code).to.equal('ALREADY_EXISTS');
    expect(err.message).to.include('tasks[0].instances: 4, not 2');
  });

  it('refuses a spec over maxJobSpecBytes with INVALID_ARGUMENT before anything changes', async () => {
    const err = await rpcError(client.SubmitJob({ spec: spec('big', { env: { BLOB: 'x'.repeat(100 * 1024) } }) }));
    expect(err.code).to.equal('INVALID_ARGUMENT');
    expect(err.message).to.match(/spec.*limit is 65536 \(maxJobSpecBytes/);
    expect(await jobIds()).to.deep.equal([]);
    expect(await store.list('jobs/')).to.deep.equal([]);
  });
});
