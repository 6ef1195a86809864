import { expect } from 'chai';
import type * as grpc from '@grpc/grpc-js';
import { FailedPreconditionError, nullLogger } from '@fuxi/common';
import { loadFuxiProto } from '@fuxi/proto';
import {
  bearerToken,
  callBatched,
  connect,
  implement,
  routedAddress,
  RpcError,
  ServiceRouter,
  splitRoute,
  startServer,
  WORKER_EVENTS_BATCHED,
  type RunningServer,
} from '../index.js';

/** A MasterService instance whose GetJob and WatchJob answer with its own name. */
function instance(name: string) {
  const def = loadFuxiProto().MasterService.service;
  const notImpl = async () => {
    throw new Error('not implemented');
  };
  const impl = Object.fromEntries(Object.keys(def).map((k) => [k, notImpl])) as Record<string, unknown>;
  impl.GetJob = async (req: { jobId: string }) => ({ job: { jobId: `${name}:${req.jobId}` } });
  impl.WatchJob = async (_req: unknown, call: grpc.ServerWritableStream<object, object>) => {
    for (let i = 0; i < 2; i++) call.write({ jobId: `${name}:w${i}` });
    call.end();
  };
  return implement(def, impl as never, nullLogger);
}

describe('routed addresses (routing.ts)', () => {
  let srv: RunningServer | undefined;
  afterEach(async () => {
    await srv?.shutdown(100);
    srv = undefined;
  });

  it('split into the server to dial and the route; a route with a space or # is refused', () => {
    expect(splitRoute('10.0.0.5:4000#job-1/2')).to.deep.equal({ target: '10.0.0.5:4000', route: 'job-1/2' });
    expect(splitRoute('10.0.0.5:4000')).to.deep.equal({ target: '10.0.0.5:4000', route: undefined });
    expect(routedAddress('10.0.0.5:4000', 'job-1/2')).to.equal('10.0.0.5:4000#job-1/2');
    expect(() => routedAddress('h:1', 'a b')).to.throw(/route/);
    expect(() => routedAddress('h:1', 'a#b')).to.throw(/route/);
  });

  it('one server serves many instances: each call reaches the one its route names, over one shared channel; a route not served fails UNAVAILABLE', async () => {
    const def = loadFuxiProto().MasterService.service;
    const router = new ServiceRouter(def);
    srv = await startServer({
      bind: '127.0.0.1:0',
      log: nullLogger,
      services: [{ name: 'fuxi.v1.MasterService', definition: def, handlers: router.handlers() }],
    });
    router.add('a/1', instance('a'));
    router.add('b/1', instance('b'));
    expect(() => router.add('a/1', instance('again'))).to.throw(/served already/);

    const a = connect(loadFuxiProto().MasterService, routedAddress(srv.address, 'a/1'));
    const b = connect(loadFuxiProto().MasterService, routedAddress(srv.address, 'b/1'));
    const gone = connect(loadFuxiProto().MasterService, routedAddress(srv.address, 'c/1'));
    const plain = connect(loadFuxiProto().MasterService, srv.address);
    try {
      expect(a.address).to.equal(`${srv.address}#a/1`);
      expect((await a.GetJob({ jobId: 'x' })).job?.jobId).to.equal('a:x');
      expect((await b.GetJob({ jobId: 'y' })).job?.jobId).to.equal('b:y');
      // One channel (and connection) to the server for both instances.
      expect(a.raw.getChannel()).to.equal(b.raw.getChannel());
      const streamed: string[] = [];
      for await (const j of b.stream.WatchJob({ jobId: 'x' })) streamed.push(j.jobId);
      expect(streamed).to.deep.equal(['b:w0', 'b:w1']);

      const unavailable = async (p: Promise<unknown>, what: RegExp) => {
        const e = (await p.catch((x: unknown) => x)) as RpcError;
        expect(e).to.be.instanceOf(RpcError);
        expect(e.code).to.equal('UNAVAILABLE');
        expect(e.message).to.match(what);
      };
      await unavailable(gone.GetJob({ jobId: 'x' }), /nothing serves c\/1 here/);
      await unavailable(plain.GetJob({ jobId: 'x' }), /routed addresses/);
      await unavailable(
        (async () => {
          for await (const _ of gone.stream.WatchJob({ jobId: 'x' })) void _;
        })(),
        /nothing serves c\/1/,
      );
      // An instance that ends: its calls fail as a closed server's would; the others go on.
      router.remove('a/1');
      expect(router.size).to.equal(1);
      await unavailable(a.GetJob({ jobId: 'x' }), /nothing serves a\/1/);
      expect((await b.GetJob({ jobId: 'z' })).job?.jobId).to.equal('b:z');
    } finally {
      for (const c of [a, b, gone, plain]) c.close();
    }
  });

  it("a batch (Calls) carries calls for several routes in one call: each reaches its route's handler with its own token and gets its own answer", async () => {
    const def = loadFuxiProto().AppMasterService.service;
    const batches: number[] = [];
    const observed: string[] = [];
    const router = new ServiceRouter(def, {
      batch: { method: 'Calls', allowed: WORKER_EVENTS_BATCHED, observe: (_s, method, code) => observed.push(`${method}:${code}`) },
    });
    const handlers = router.handlers();
    const counted = handlers.Calls as (call: { request: { calls: unknown[] } }, cb: unknown) => void;
    handlers.Calls = ((call: { request: { calls: unknown[] } }, cb: unknown) => {
      batches.push(call.request.calls.length);
      counted(call, cb);
    }) as never;
    srv = await startServer({ bind: '127.0.0.1:0', log: nullLogger, services: [{ name: 'fuxi.v1.AppMasterService', definition: def, handlers }] });
    const seen: string[] = [];
    const am = (name: string) => {
      const notImpl = async () => {
        throw new Error('not implemented');
      };
      const impl = Object.fromEntries(Object.keys(def).map((k) => [k, notImpl])) as Record<string, unknown>;
      impl.WorkerEvents = async (req: { nodeId: string }, call: grpc.ServerUnaryCall<object, object>) => {
        if (req.nodeId === 'refused') throw new FailedPreconditionError(`${name} refuses`, { reason: 'test' });
        seen.push(`${name}:${req.nodeId}:${bearerToken(call.metadata) ?? ''}`);
        return {};
      };
      return implement(def, impl as never, nullLogger);
    };
    router.add('a/1', am('a'));
    router.add('b/1', am('b'));
    const proto = loadFuxiProto();
    const clients = ['a/1', 'b/1', 'c/1', 'a/1'].map((r) => connect(proto.AppMasterService, routedAddress(srv!.address, r)));
    try {
      const send = (i: number, nodeId: string, token: string) =>
        callBatched(clients[i]!, def, WORKER_EVENTS_BATCHED, 'WorkerEvents', { nodeId, events: [] }, { token }).then(
          () => 'ok',
          (e: unknown) => `${(e as RpcError).code}: ${(e as RpcError).message}`,
        );
      // Made in one turn: one call to the server.
      const answers = await Promise.all([send(0, 'n1', 'tok-a'), send(1, 'n2', 'tok-b'), send(2, 'n3', ''), send(3, 'refused', '')]);
      expect(batches).to.deep.equal([4]);
      expect(answers[0]).to.equal('ok');
      expect(answers[1]).to.equal('ok');
      expect(answers[2]).to.match(/^UNAVAILABLE: .*nothing serves c\/1 here/);
      expect(answers[3]).to.equal('FAILED_PRECONDITION: a refuses');
      expect(seen.sort()).to.deep.equal(['a:n1:tok-a', 'b:n2:tok-b']);
      expect(observed.sort()).to.deep.equal(['WorkerEvents:FAILED_PRECONDITION', 'WorkerEvents:OK', 'WorkerEvents:OK', 'WorkerEvents:UNAVAILABLE']);
      // A method that may not be batched is refused per entry, naming the field.
      const raw = clients[0]!;
      const res = await raw.Calls({
        calls: [{ method: 'GetAppState', token: '', route: 'a/1', request: def.GetAppState.requestSerialize({}) }],
      });
      expect(res.results[0]?.code).to.equal('INVALID_ARGUMENT');
      expect(res.results[0]?.message).to.match(/calls\[0\]\.method/);
    } finally {
      for (const c of clients) c.close();
    }
  });
  it("a stalled instance's entry fails UNAVAILABLE after the entry wait; its neighbours in the batch are answered", async () => {
    const def = loadFuxiProto().AppMasterService.service;
    const router = new ServiceRouter(def, { batch: { method: 'Calls', allowed: WORKER_EVENTS_BATCHED, entryWaitMs: 200 } });
    srv = await startServer({
      bind: '127.0.0.1:0',
      log: nullLogger,
      services: [{ name: 'fuxi.v1.AppMasterService', definition: def, handlers: router.handlers() }],
    });
    let release!: () => void;
    const stalled = new Promise<void>((r) => (release = r));
    const am = (stall: boolean) => {
      const notImpl = async () => {
        throw new Error('not implemented');
      };
      const impl = Object.fromEntries(Object.keys(def).map((k) => [k, notImpl])) as Record<string, unknown>;
      impl.WorkerEvents = async () => {
        if (stall) await stalled;
        return {};
      };
      return implement(def, impl as never, nullLogger);
    };
    router.add('paused/1', am(true));
    router.add('fine/1', am(false));
    const proto = loadFuxiProto();
    const clients = ['paused/1', 'fine/1'].map((r) => connect(proto.AppMasterService, routedAddress(srv!.address, r)));
    try {
      const t0 = Date.now();
      const answers = await Promise.all(
        clients.map((c) =>
          callBatched(c, def, WORKER_EVENTS_BATCHED, 'WorkerEvents', { nodeId: 'n1', events: [] }, { deadlineMs: 10_000 }).then(
            () => 'ok',
            (e: unknown) => `${(e as RpcError).code}: ${(e as RpcError).message}`,
          ),
        ),
      );
      expect(answers[0]).to.match(/^UNAVAILABLE: .*paused\/1 did not answer within 200 ms/);
      expect(answers[1]).to.equal('ok');
      // Answered at the entry wait, not at the batch's deadline.
      expect(Date.now() - t0).to.be.lessThan(5000);
    } finally {
      release();
      for (const c of clients) c.close();
    }
  });
});
