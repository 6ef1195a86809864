import { expect } from 'chai';
import type * as grpc from '@grpc/grpc-js';
import { FailedPreconditionError, nullLogger, UnavailableError } from '@fuxi/common';
import { loadFuxiProto } from '@fuxi/proto';
import {
  AM_BATCHED,
  BATCH_ANSWER_RESOURCE,
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
  /** Apps RegisterApp ran for, in order. */
  registered: string[];
  /** The encoded size of each AmCalls answer. */
  answerBytes: number[];
}

/**
 * A MasterService whose UpdateRequests answers with the request's seq as its epoch and records the
 * bearer token it was called with (apps named slow... after 300 ms); app `refused` gets FAILED_PRECONDITION, and every call a redirect
 * to `leader` when that is set. RegisterApp answers app `fat<N>k-...` with a job spec of N KiB. AmCalls is the real batch handler
 * over these handlers, unless `noBatches` (a master that predates it: the method is not served at all).
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
  impl.RegisterApp = async (req: { appId: string }) => {
    seen.registered.push(req.appId);
    const kib = Number(/^fat(\d+)k-/.exec(req.appId)?.[1] ?? 0);
    return { epoch: '1', spec: { jobId: req.appId, name: 'x'.repeat(kib * 1024) }, heartbeatIntervalMs: 1000, assignments: [], assignmentSeq: '0' };
  };
  const observe: HandlerObserver = (_service, method, code) => seen.observed.push([method, code]);
  const batch = batchedCalls(def, () => impl, AM_BATCHED, observe);
  impl.AmCalls = async (req: { calls: unknown[] }, call: grpc.ServerUnaryCall<never, never>) => {
    seen.batches.push(req.calls.length);
    const res = await batch(req as never, call);
    seen.answerBytes.push(def.AmCalls.responseSerialize(res).length);
    return res;
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
  const fresh = (): Seen => ({ batches: [], tokens: [], observed: [], registered: [], answerBytes: [] });
  after(async () => {
    for (const c of conns) c.close();
    for (const s of servers) await s.shutdown(100);
  });
  const serve = async (seen: Seen, opts: { leader?: string; noBatches?: boolean } = {}) => {
    const s = await startServer({ bind: '127.0.0.1:0', services: [fakeMaster(seen, opts)], log: nullLogger });
    servers.push(s);
    return s;
  };
  /** Runs `fn` with the process's message limit at `bytes`, and puts the limit back. */
  const underLimit = async (bytes: number, fn: () => Promise<void>) => {
    const before = maxMessageBytes();
    setMaxMessageBytes(bytes);
    try {
      await fn();
    } finally {
      setMaxMessageBytes(before);
    }
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
  /** RegisterApp of `appId` as an entry of a batch. */
  const register = (appId: string) => ({
    method: 'RegisterApp',
    token: '',
    request: loadFuxiProto().MasterService.service.RegisterApp.requestSerialize({ appId, amAttempt: 1, address: '127.0.0.1:1' }),
  });

  it('runs a call of a method it has no answer of yet alone once those before it have answered, not refused for want of room', async () => {
    const seen = fresh();
    const s = await serve(seen);
    const client = connect(loadFuxiProto().MasterService, s.address);
    const M = loadFuxiProto().MasterService.service;
    try {
      // A fresh server: neither method has answered in a batch yet.
      const res = await client.AmCalls({
        calls: [
          { method: 'RegisterApp', token: '', request: M.RegisterApp.requestSerialize({ appId: 'new-a', amAttempt: 1 } as never) },
          { method: 'UpdateRequests', token: 'u', request: M.UpdateRequests.requestSerialize(update('new-b', 5)) },
          { method: 'RegisterApp', token: '', request: M.RegisterApp.requestSerialize({ appId: 'new-c', amAttempt: 1 } as never) },
          { method: 'UpdateRequests', token: 'v', request: M.UpdateRequests.requestSerialize(update('refused', 6)) },
        ],
      });
      expect(res.results.map((r) => r.code)).to.deep.equal(['', '', '', 'FAILED_PRECONDITION']);
      expect(seen.registered).to.deep.equal(['new-a', 'new-c']);
      expect(seen.tokens).to.deep.equal(['u', 'v']);
    } finally {
      client.close();
    }
  });

  it('keeps its answer within the message limit: an entry there is no room for, and every one after it, is not run but answered RESOURCE_EXHAUSTED; an answer larger than foreseen that ran fails UNAVAILABLE', async () => {
    await underLimit(64 * 1024, async () => {
      const seen = fresh();
      const s = await serve(seen);
      const client = connect(loadFuxiProto().MasterService, s.address);
      try {
        // Answers of 20 KiB in 64 KiB messages: two fit, four (all of which would have run) do not.
        const res = await client.AmCalls({ calls: [...['fat20k-0', 'fat20k-1', 'fat20k-2', 'fat20k-3'].map(register), register('small')] });
        expect(res.results.map((r) => r.code)).to.deep.equal(['', '', 'RESOURCE_EXHAUSTED', 'RESOURCE_EXHAUSTED', 'RESOURCE_EXHAUSTED']);
        for (const r of res.results.slice(2)) {
          expect(r.details).to.deep.include({ resource: BATCH_ANSWER_RESOURCE });
          expect(r.message).to.match(/not run/);
        }
        // Not run: neither the third large one nor the small one after it (a caller's later call
        // must not overtake its earlier one).
        expect(seen.registered).to.deep.equal(['fat20k-0', 'fat20k-1']);
        expect(seen.answerBytes).to.have.length(1);
        expect(seen.answerBytes[0]).to.be.within(40 * 1024, 64 * 1024);
        expect(seen.observed.filter(([m]) => m === 'RegisterApp')).to.have.length(2);
      } finally {
        client.close();
      }

      // A server that has seen only small answers of the method runs such entries at once; when
      // they answer far more than foreseen, those that ran and do not fit fail UNAVAILABLE (they
      // may be called again), and the answer still fits.
      const seen2 = fresh();
      const s2 = await serve(seen2);
      const client2 = connect(loadFuxiProto().MasterService, s2.address);
      try {
        const warm = await client2.AmCalls({ calls: [register('small-a'), register('small-b')] });
        expect(warm.results.map((r) => r.code)).to.deep.equal(['', '']);
        const res = await client2.AmCalls({ calls: ['fat20k-a', 'fat20k-b', 'fat20k-c', 'fat20k-d'].map(register) });
        expect(seen2.registered.slice(2).sort()).to.deep.equal(['fat20k-a', 'fat20k-b', 'fat20k-c', 'fat20k-d']);
        expect(res.results.filter((r) => r.code === '')).to.have.length(2);
        for (const r of res.results.filter((x) => x.code !== '')) {
          expect(r.code).to.equal('UNAVAILABLE');
          expect(r.message).to.match(/ran, but its answer did not fit/);
        }
        expect(Math.max(...seen2.answerBytes)).to.be.at.most(64 * 1024);
        // Learned: the next such batch runs only what fits.
        const next = await client2.AmCalls({ calls: ['fat20k-e', 'fat20k-f', 'fat20k-g'].map(register) });
        expect(next.results.map((r) => r.code)).to.deep.equal(['', '', 'RESOURCE_EXHAUSTED']);
        expect(seen2.registered.slice(6)).to.deep.equal(['fat20k-e', 'fat20k-f']);
      } finally {
        client2.close();
      }
    });
  });

  it('sends the calls the server did not run for want of room in its answer again, in its next batches, until each is answered once', async () => {
    await underLimit(64 * 1024, async () => {
      const seen = fresh();
      const s = await serve(seen);
      const client = connect(loadFuxiProto().MasterService, s.address);
      try {
        const batcher = new CallBatcher(loadFuxiProto().MasterService.service, AM_BATCHED, { maxInFlight: 1 });
        const call = (appId: string) =>
          batcher.call(client, 'RegisterApp', { appId, amAttempt: 1, address: '127.0.0.1:1' }, { token: 't' }, () =>
            client.RegisterApp({ appId, amAttempt: 1, address: '127.0.0.1:1' }, { token: 't' }),
          );
        // Eight answers of 20 KiB: 160 KiB in all, in 64 KiB messages.
        const apps = Array.from({ length: 8 }, (_, i) => `fat20k-${i}`);
        const answers = await Promise.all(apps.map(call));
        expect(answers.map((a) => [a.spec?.jobId, a.spec?.name.length])).to.deep.equal(apps.map((a) => [a, 20 * 1024]));
        // Each ran once; two per answer, the rest sent again (first in the next batch).
        expect(seen.registered.slice().sort()).to.deep.equal(apps.slice().sort());
        expect(seen.batches).to.deep.equal([8, 6, 4, 2]);
        expect(seen.answerBytes.every((n) => n <= 64 * 1024)).to.equal(true);
        await new Promise((r) => setImmediate(r));
        expect(batcher.queued).to.deep.equal({ pending: 0, inFlight: 0 });
      } finally {
        client.close();
      }
    });
  });
});
