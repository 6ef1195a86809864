import { expect } from 'chai';
import * as net from 'node:net';
import { nullLogger } from '@fuxi/common';
import { loadFuxiProto, type WorkerEventsRequest, type WorkerStatus } from '@fuxi/proto';
import { implement, startServer } from '@fuxi/rpc';
import { EventSender } from '../event-sender.js';
import { waitFor } from './helpers.js';

const status = (workerId: string, state: WorkerStatus['state']): WorkerStatus => ({ workerId, appId: 'app1', state });

describe('EventSender', () => {
  const senders: EventSender[] = [];
  afterEach(() => senders.splice(0).forEach((s) => s.close()));

  it('retries until delivered and keeps only the latest status per worker', async () => {
    const calls: Array<{ address: string; req: WorkerEventsRequest }> = [];
    let failures = 2;
    const s = new EventSender({
      nodeId: 'n1',
      initialBackoffMs: 5,
      send: async (address, req) => {
        calls.push({ address, req });
        if (failures-- > 0) throw new Error('unreachable');
      },
    });
    senders.push(s);
    s.push('app1', 'am:1', status('w1', 'WORKER_STATE_RUNNING'));
    s.push('app1', 'am:1', status('w1', 'WORKER_STATE_SUCCEEDED'));
    s.push('app1', 'am:1', status('w2', 'WORKER_STATE_RUNNING'));
    await waitFor(() => s.pending() === 0);
    const last = calls[calls.length - 1];
    expect(last?.req.nodeId).to.equal('n1');
    expect(last?.req.events?.map((e) => [e.workerId, e.state])).to.deep.equal([
      ['w1', 'WORKER_STATE_SUCCEEDED'],
      ['w2', 'WORKER_STATE_RUNNING'],
    ]);
    expect(calls.length).to.equal(3);
  });

  it('holds a start for company: a start and its end within holdStartsMs are one call with the end', async () => {
    const calls: WorkerEventsRequest[] = [];
    const s = new EventSender({ nodeId: 'n1', holdStartsMs: 200, send: async (_a, req) => void calls.push(req) });
    senders.push(s);
    s.push('app1', 'am:1', status('w1', 'WORKER_STATE_RUNNING'));
    await new Promise((r) => setTimeout(r, 20));
    expect(calls).to.have.length(0);
    s.push('app1', 'am:1', status('w1', 'WORKER_STATE_SUCCEEDED'));
    await waitFor(() => s.pending() === 0);
    expect(calls.map((c) => c.events?.map((e) => [e.workerId, e.state]))).to.deep.equal([[['w1', 'WORKER_STATE_SUCCEEDED']]]);
  });

  it('sends a start alone once holdStartsMs has passed, and at once with holdStartsMs 0', async () => {
    const held: Array<{ at: number; req: WorkerEventsRequest }> = [];
    const t0 = Date.now();
    const s = new EventSender({ nodeId: 'n1', holdStartsMs: 50, send: async (_a, req) => void held.push({ at: Date.now() - t0, req }) });
    senders.push(s);
    s.push('app1', 'am:1', status('w1', 'WORKER_STATE_RUNNING'));
    await waitFor(() => held.length === 1);
    expect(held[0]!.at).to.be.at.least(45);
    expect(held[0]!.req.events?.map((e) => e.state)).to.deep.equal(['WORKER_STATE_RUNNING']);
    const now: WorkerEventsRequest[] = [];
    const eager = new EventSender({ nodeId: 'n1', holdStartsMs: 0, send: async (_a, req) => void now.push(req) });
    senders.push(eager);
    eager.push('app1', 'am:1', status('w1', 'WORKER_STATE_RUNNING'));
    expect(now).to.have.length(1);
  });

  it('retargets to a new AM address', async () => {
    const calls: string[] = [];
    const s = new EventSender({
      nodeId: 'n1',
      initialBackoffMs: 10_000,
      send: async (address) => {
        calls.push(address);
        if (address === 'old:1') throw new Error('dead AM');
      },
    });
    senders.push(s);
    s.push('app1', 'old:1', status('w1', 'WORKER_STATE_RUNNING'));
    await waitFor(() => calls.length === 1);
    s.push('app1', 'new:2', status('w2', 'WORKER_STATE_RUNNING'));
    await waitFor(() => s.pending() === 0);
    expect(calls).to.deep.equal(['old:1', 'new:2']);
  });

  it('drops events after failing for dropAfterMs', async () => {
    const s = new EventSender({
      nodeId: 'n1',
      initialBackoffMs: 5,
      maxBackoffMs: 10,
      dropAfterMs: 60,
      send: async () => {
        throw new Error('unreachable');
      },
    });
    senders.push(s);
    s.push('app1', 'am:1', status('w1', 'WORKER_STATE_RUNNING'));
    expect(s.pending('app1')).to.equal(1);
    await waitFor(() => s.pending() === 0);
  });

  it('keeps the channel to an AM open for lingerMs after its queue empties, then closes it', async () => {
    const def = loadFuxiProto().AppMasterService.service;
    const got: string[] = [];
    const notImpl = async () => {
      throw new Error('not implemented');
    };
    const impl = Object.fromEntries(Object.keys(def).map((k) => [k, notImpl])) as Record<string, unknown>;
    impl.WorkerEvents = async (req: WorkerEventsRequest) => {
      for (const e of req.events ?? []) got.push(e.workerId ?? '');
      return {};
    };
    const server = await startServer({
      bind: '127.0.0.1:0',
      log: nullLogger,
      services: [{ name: 'fuxi.v1.AppMasterService', definition: def, handlers: implement(def, impl as never, nullLogger) }],
    });
    // A TCP relay in front of the AM counts the connections the sender opens.
    let connections = 0;
    const [host, port] = server.address.split(':') as [string, string];
    const relay = net.createServer((c) => {
      connections++;
      const up = net.connect(Number(port), host);
      c.pipe(up).pipe(c);
      c.on('error', () => up.destroy());
      up.on('error', () => c.destroy());
    });
    await new Promise<void>((r) => relay.listen(0, '127.0.0.1', r));
    const address = `127.0.0.1:${(relay.address() as net.AddressInfo).port}`;
    try {
      const s = new EventSender({ nodeId: 'n1', lingerMs: 300 });
      senders.push(s);
      s.push('app1', address, status('w1', 'WORKER_STATE_RUNNING'));
      await waitFor(() => got.length === 1);
      await waitFor(() => s.pending() === 0);
      expect(s.openClients, 'open while it lingers').to.equal(1);
      s.push('app1', address, status('w1', 'WORKER_STATE_SUCCEEDED'));
      await waitFor(() => got.length === 2);
      expect(connections, 'the second event went on the first connection').to.equal(1);
      await waitFor(() => s.openClients === 0);
    } finally {
      relay.close();
      await server.shutdown(100);
    }
  });
});
