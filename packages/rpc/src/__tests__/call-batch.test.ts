import { expect } from 'chai';
import type * as grpc from '@grpc/grpc-js';
import { FailedPreconditionError, nullLogger, UnavailableError } from '@fuxi/common';
import { loadFuxiProto } from '@fuxi/proto';
import {
  AM_BATCHED,
  batchedCalls,
  bearerToken,
  CallBatcher,
  connect,
  implement,
  MasterConnection,
  MAX_BATCHED_CALLS,
  maxMessageBytes,
  setMaxMessageBytes,
  RpcError,
  startServer,
  type HandlerObserver,
  type RunningServer,
} from '../index.js';

interface Seen {
  batches: number[];
  tokens: string[];
  observed: Array<[string, string]>;
}

/**
 * A MasterService whose UpdateRequests answers with the request's seq as its epoch and records the
 * bearer token it was called with (apps named slow... after 300 ms); app `refused` gets FAILED_PRECONDITION, and every call a redirect
 * to `leader` when that is set. AmCalls is the real batch handler over these handlers, unless
 * `noBatches` (a master that predates it: the method is not served at all).
 */
function fakeMaster(seen: Seen, opts: { leader?: string; noBatches?: boolean } = {}) {
  const def = loadFuxiProto().MasterService.service;
  const notImpl = async () => {
    throw new Error('not implemented');
  };
  const impl = Object.fromEntries(Object.keys(def).map((k) => [k, notImpl])) as Record<string, unknown>;
  impl.UpdateRequests = async (req: { appId: string; seq: string }, call: grpc.ServerUnaryCall<object, object>) => {
    if (opts.leader) throw new UnavailableError('not the leader', opts.leader);
    seen.tokens.push(bearerToken(call.metadata) ?? '');
    if (req.appId.startsWith('slow')) await new Promise((r) => setTimeout(r, 300));
    if (req.appId === 'refused') throw new FailedPreconditionError(`app ${req.appId} is not running`, { reason: 'ended' });
    return { epoch: req.seq, assignments: [] };
  };
  impl.GetJob = async () => ({ job: { jobId: 'j1', name: 'one' } });
  const observe: HandlerObserver = (_service, method, code) => seen.observed.push([method, code]);
  const batch = batchedCalls(def, () => impl, AM_BATCHED, observe);
  impl.AmCalls = (req: { calls: unknown[] }, call: grpc.ServerUnaryCall<never, never>) => {
    seen.batches.push(req.calls.length);
    return batch(req as never, call);
  };
  let definition: object = def;
  if (opts.noBatches) {
    const { AmCalls: _gone, ...older } = def as unknown as Record<string, unknown>;
    definition = older;
    delete impl.AmCalls;
  }
  return {
    name: 'fuxi.v1.MasterService',
    definition: definition as grpc.ServiceDefinition,
    handlers: implement(definition as never, impl as never, nullLogger),
  };
}

const update = (appId: string, seq: number) => ({ appId, amAttempt: 1, seq: String(seq), units: [], deltas: [] }) as never;

describe('batched calls (AmCalls)', () => {
  const servers: RunningServer[] = [];
  const conns: MasterConnection[] = [];
  const fresh = (): Seen => ({ batches: [], tokens: [], observed: [] });
  after(async () => {
    for (const c of conns) c.close();
    for (const s of servers) await s.shutdown(100);
  });
  const serve = async (seen: Seen, opts: { leader?: string; noBatches?: boolean } = {}) => {
    const s = await startServer({ bind: '127.0.0.1:0', services: [fakeMaster(seen, opts)], log: nullLogger });
    servers.push(s);
    return s;
  };
  const connection = (addresses: string[], token: string) => {
    const c = new MasterConnection(addresses, { batch: true, token, retryForMs: 5000 });
    conns.push(c);
    return c;
  };

  it('many connections’ calls made together go in a few batches, each with its own token and its own answer', async () => {
    const seen = fresh();
    const s = await serve(seen);
    const cs = Array.from({ length: 20 }, (_, i) => connection([s.address], `token-${i}`));
    const answers = await Promise.all(cs.map((c, i) => c.call('UpdateRequests', update(`app-${i}`, 100 + i))));
    expect(answers.map((a) => a.epoch)).to.deep.equal(cs.map((_, i) => String(100 + i)));
    expect(seen.tokens.sort()).to.deep.equal(cs.map((_, i) => `token-${i}`).sort());
    // All 20 were made in one turn of the loop: fewer batches than calls, every call in one.
    expect(seen.batches.reduce((a, b) => a + b, 0)).to.equal(20);
    expect(seen.batches.length).to.be.lessThan(20);
    // Each call is observed as a call of its own (the daemon's metrics by method).
    expect(seen.observed.filter(([m, code]) => m === 'UpdateRequests' && code === 'OK')).to.have.length(20);
  });

  it("one call's error is its own (code, message, details); the others of its batch are answered", async () => {
    const seen = fresh();
    const s = await serve(seen);
    const a = connection([s.address], 'ta');
    const b = connection([s.address], 'tb');
    const [ok, refused] = await Promise.allSettled([a.call('UpdateRequests', update('fine', 7)), b.call('UpdateRequests', update('refused', 8))]);
    expect(seen.batches).to.deep.equal([2]);
    expect(ok.status === 'fulfilled' && ok.value.epoch).to.equal('7');
    expect(refused.status).to.equal('rejected');
    const e = (refused as PromiseRejectedResult).reason as RpcError;
    expect(e).to.be.instanceOf(RpcError);
    expect(e.code).to.equal('FAILED_PRECONDITION');
    expect(e.method).to.equal('UpdateRequests');
    expect(e.message).to.contain('app refused is not running');
    expect(e.details).to.deep.include({ reason: 'ended' });
    expect(seen.observed).to.deep.include(['UpdateRequests', 'FAILED_PRECONDITION']);
  });

  it("a standby's redirect reaches each call, and each follows it to the leader", async () => {
    const leaderSeen = fresh();
    const leader = await serve(leaderSeen);
    const standby = await serve(fresh(), { leader: leader.address });
    const cs = [connection([standby.address, leader.address], 't1'), connection([standby.address, leader.address], 't2')];
    const answers = await Promise.all(cs.map((c, i) => c.call('UpdateRequests', update(`r-${i}`, i + 1))));
    expect(answers.map((a) => a.epoch)).to.deep.equal(['1', '2']);
    expect(cs.map((c) => c.address)).to.deep.equal([leader.address, leader.address]);
    expect(leaderSeen.tokens.sort()).to.deep.equal(['t1', 't2']);
  });

  it('calls that are not batched go alone; a master that serves no batches gets every call alone', async () => {
    const seen = fresh();
    const s = await serve(seen);
    const c = connection([s.address], 't');
    expect((await c.call('GetJob', { jobId: 'j1' })).job?.jobId).to.equal('j1');
    expect(seen.batches).to.deep.equal([]);

    const oldSeen = fresh();
    const old = await serve(oldSeen, { noBatches: true });
    const cs = [connection([old.address], 'o1'), connection([old.address], 'o2')];
    const answers = await Promise.all(cs.map((x, i) => x.call('UpdateRequests', update(`o-${i}`, 40 + i))));
    expect(answers.map((a) => a.epoch)).to.deep.equal(['40', '41']);
    expect(oldSeen.tokens.sort()).to.deep.equal(['o1', 'o2']);
    // Learned once: the next call goes alone at once.
    expect((await cs[0]!.call('UpdateRequests', update('o-0', 42))).epoch).to.equal('42');
  });

  it('the server refuses, per call, a method that is not batched and bytes that are not its request; a batch over the limit whole', async () => {
    const seen = fresh();
    const s = await serve(seen);
    const client = connect(loadFuxiProto().MasterService, s.address);
    try {
      const res = await client.AmCalls({
        calls: [
          { method: 'GetJob', token: '', request: Buffer.alloc(0) },
          { method: 'UpdateRequests', token: 'x', request: Buffer.from([0xff, 0xff, 0xff]) },
          { method: 'UpdateRequests', token: 'y', request: loadFuxiProto().MasterService.service.UpdateRequests.requestSerialize(update('fine', 3)) },
        ],
      });
      expect(res.results.map((r) => r.code)).to.deep.equal(['INVALID_ARGUMENT', 'INVALID_ARGUMENT', '']);
      expect(res.results[0]!.message).to.match(/calls\[0\]\.method.*"GetJob" cannot be batched/);
      expect(res.results[1]!.message).to.match(/calls\[1\]\.request.*not a UpdateRequests request/);
      expect(loadFuxiProto().MasterService.service.UpdateRequests.responseDeserialize(Buffer.from(res.results[2]!.response)).epoch).to.equal('3');
      // A batch larger than the server takes is refused whole, naming the field; nothing in it ran.
      const ran = seen.tokens.length;
      const one = { method: 'UpdateRequests', token: 'z', request: loadFuxiProto().MasterService.service.UpdateRequests.requestSerialize(update('fine', 4)) };
      const e = await client.AmCalls({ calls: Array.from({ length: MAX_BATCHED_CALLS + 1 }, () => one) }).then(
        () => undefined,
        (err: unknown) => err as RpcError,
      );
      expect(e?.code).to.equal('INVALID_ARGUMENT');
      expect(e?.message).to.match(/calls.*1001 calls in one batch; at most 1000/);
      expect(seen.tokens.length).to.equal(ran);
    } finally {
      client.close();
    }
  });

  it('a batch holds at most maxCalls calls and maxBytes of requests; at most maxInFlight are out; a batch of one goes as the call alone', async () => {
    const seen = fresh();
    const s = await serve(seen);
    const client = connect(loadFuxiProto().MasterService, s.address);
    try {
      const batcher = new CallBatcher(loadFuxiProto().MasterService.service, AM_BATCHED, { maxCalls: 3, maxBytes: 200, maxInFlight: 1 });
      let alone = 0;
      const call = (req: never, token: string) =>
        batcher.call(client, 'UpdateRequests', req, { token }, () => {
          alone++;
          return client.UpdateRequests(req, { token });
        });
      const big = { ...(update('big', 1) as object), units: [{ suId: 'x'.repeat(300) }] } as never;
      const calls = [...Array.from({ length: 7 }, (_, i) => call(update(`s-${i}`, 10 + i), `t${i}`)), call(big, 'tb')];
      expect(batcher.queued).to.deep.equal({ pending: 8, inFlight: 0 });
      const answers = await Promise.all(calls);
      expect(answers.map((a) => a.epoch)).to.deep.equal(['10', '11', '12', '13', '14', '15', '16', '1']);
      // 3 + 3 in batches; then s-6 and the big one do not fit together: each goes alone.
      expect(seen.batches).to.deep.equal([3, 3]);
      expect(alone).to.equal(2);
      expect(seen.tokens.sort()).to.deep.equal(['t0', 't1', 't2', 't3', 't4', 't5', 't6', 'tb']);
      await new Promise((r) => setImmediate(r));
      expect(batcher.queued).to.deep.equal({ pending: 0, inFlight: 0 });

      // A lone call is never wrapped.
      expect((await call(update('lone', 5), 'tl')).epoch).to.equal('5');
      expect(seen.batches).to.deep.equal([3, 3]);
      expect(alone).to.equal(3);
    } finally {
      client.close();
    }
  });
  it("a call's short deadline is its own: it fails at it, and the call beside it in the batch is answered", async () => {
    const seen = fresh();
    const s = await serve(seen);
    const client = connect(loadFuxiProto().MasterService, s.address);
    try {
      const batcher = new CallBatcher(loadFuxiProto().MasterService.service, AM_BATCHED);
      const call = (req: never, deadlineMs: number) =>
        batcher.call(client, 'UpdateRequests', req, { token: 't', deadlineMs }, () => client.UpdateRequests(req, { deadlineMs }));
      const [short, long] = await Promise.allSettled([call(update('slow-short', 1), 100), call(update('slow-long', 2), 5000)]);
      expect(seen.batches).to.deep.equal([2]);
      expect(short.status).to.equal('rejected');
      expect(((short as PromiseRejectedResult).reason as RpcError).code).to.equal('DEADLINE_EXCEEDED');
      expect(long.status === 'fulfilled' && long.value.epoch).to.equal('2');
    } finally {
      client.close();
    }
  });
  it('keeps a batch within the process message limit, and fails a request that cannot be encoded alone', async () => {
    const seen = fresh();
    const s = await serve(seen);
    const client = connect(loadFuxiProto().MasterService, s.address);
    const before = maxMessageBytes();
    try {
      const batcher = new CallBatcher(loadFuxiProto().MasterService.service, AM_BATCHED);
      const call = (req: never) => batcher.call(client, 'UpdateRequests', req, { token: 't' }, () => client.UpdateRequests(req, { token: 't' }));
      const big = (appId: string) => ({ ...(update(appId, 1) as object), units: [{ suId: 'x'.repeat(90 * 1024) }] }) as never;
      // 256 KiB messages: two 90 KiB requests fit one batch, a third does not.
      setMaxMessageBytes(256 * 1024);
      const answers = await Promise.all([call(big('b1')), call(big('b2')), call(big('b3'))]);
      expect(answers).to.have.length(3);
      expect(seen.batches).to.deep.equal([2]); // and the third alone
      // An int64 field protobufjs cannot encode: that call fails, its neighbours are answered.
      const bad = { ...(update('bad', 1) as object), seq: '' } as never;
      const [b, ok1, ok2] = await Promise.allSettled([call(bad), call(update('ok-1', 3)), call(update('ok-2', 4))]);
      expect(b.status).to.equal('rejected');
      expect(((b as PromiseRejectedResult).reason as RpcError).code).to.equal('INTERNAL');
      expect([ok1, ok2].map((r) => r.status === 'fulfilled' && r.value.epoch)).to.deep.equal(['3', '4']);
    } finally {
      setMaxMessageBytes(before);
      client.close();
    }
  });
});
