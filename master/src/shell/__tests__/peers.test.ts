import { expect } from 'chai';
import type * as grpc from '@grpc/grpc-js';
import { nullLogger } from '@fuxi/common';
import { loadFuxiProto, type UpdateAssignmentsRequest__Output } from '@fuxi/proto';
import { AM_SERVER_BATCHED, implement, routedAddress, ServiceRouter, startServer, WORKER_EVENTS_BATCHED, type RunningServer } from '@fuxi/rpc';
import { Peers } from '../peers.js';

const def = loadFuxiProto().AppMasterService.service;

/** An AM host's server: a router taking `allowed` in its Calls batches, each AM recording the pushes it gets. */
async function amHost(allowed: ReadonlySet<string>, routes: string[], handlerDelayMs = 0) {
  const router = new ServiceRouter(def, { batch: { method: 'Calls', allowed } });
  const handlers = router.handlers();
  const batches: number[] = [];
  let out = 0;
  let maxOut = 0;
  const calls = handlers.Calls as (call: { request: { calls: unknown[] } }, cb: (e: unknown, r?: unknown) => void) => void;
  handlers.Calls = ((call: { request: { calls: unknown[] } }, cb: (e: unknown, r?: unknown) => void) => {
    batches.push(call.request.calls.length);
    maxOut = Math.max(maxOut, ++out);
    calls(call, (e, r) => {
      out--;
      cb(e, r);
    });
  }) as never;
  const unary = handlers.UpdateAssignments as (call: unknown, cb: (e: unknown, r?: unknown) => void) => void;
  handlers.UpdateAssignments = ((call: unknown, cb: (e: unknown, r?: unknown) => void) => {
    batches.push(1);
    maxOut = Math.max(maxOut, ++out);
    unary(call, (e, r) => {
      out--;
      cb(e, r);
    });
  }) as never;
  const srv = await startServer({ bind: '127.0.0.1:0', log: nullLogger, services: [{ name: 'fuxi.v1.AppMasterService', definition: def, handlers }] });
  const seen = new Map<string, string[]>();
  for (const route of routes) {
    const notImpl = async () => {
      throw new Error('not implemented');
    };
    const impl = Object.fromEntries(Object.keys(def).map((k) => [k, notImpl])) as Record<string, unknown>;
    impl.UpdateAssignments = async (req: UpdateAssignmentsRequest__Output, _call: grpc.ServerUnaryCall<object, object>) => {
      if (handlerDelayMs) await new Promise((r) => setTimeout(r, handlerDelayMs));
      seen.set(route, [...(seen.get(route) ?? []), req.seq]);
      return { appliedSeq: req.seq };
    };
    router.add(route, implement(def, impl as never, nullLogger));
  }
  return { srv, seen, batches, maxOut: () => maxOut };
}

const push = (seq: number) => ({ epoch: '7', seq: String(seq), full: false, assignments: [] });

describe('Peers: assignment pushes to AMs without a stream', () => {
  let srv: RunningServer | undefined;
  let peers: Peers | undefined;
  afterEach(async () => {
    peers?.close();
    peers = undefined;
    await srv?.shutdown(100);
    srv = undefined;
  });

  it("go to an AM host in one Calls batch per turn, one batch out at a time, each AM's pushes in the order they were made", async () => {
    const host = await amHost(AM_SERVER_BATCHED, ['a/1', 'b/1'], 20);
    srv = host.srv;
    peers = new Peers();
    const a = routedAddress(srv.address, 'a/1');
    const b = routedAddress(srv.address, 'b/1');
    // One turn: one batch. Then, while it is out, two more turns' pushes: one batch after it.
    const first = [
      peers.assignAm(a, push(1), { deadlineMs: 5000 }),
      peers.assignAm(b, push(1), { deadlineMs: 5000 }),
      peers.assignAm(a, push(2), { deadlineMs: 5000 }),
    ];
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setTimeout(r, 5));
    const second = [peers.assignAm(a, push(3), { deadlineMs: 5000 })];
    await new Promise((r) => setImmediate(r));
    second.push(peers.assignAm(b, push(2), { deadlineMs: 5000 }), peers.assignAm(a, push(4), { deadlineMs: 5000 }));
    const answers = await Promise.all([...first, ...second]);
    expect(answers.map((r) => r.appliedSeq)).to.deep.equal(['1', '1', '2', '3', '2', '4']);
    expect(host.batches).to.deep.equal([3, 3]);
    expect(host.maxOut()).to.equal(1);
    expect(host.seen.get('a/1')).to.deep.equal(['1', '2', '3', '4']);
    expect(host.seen.get('b/1')).to.deep.equal(['1', '2']);
  });

  it('a lone push goes as the call alone; an AM that is not served there fails UNAVAILABLE, its neighbours are answered', async () => {
    const host = await amHost(AM_SERVER_BATCHED, ['a/1']);
    srv = host.srv;
    peers = new Peers();
    expect((await peers.assignAm(routedAddress(srv.address, 'a/1'), push(1), { deadlineMs: 5000 })).appliedSeq).to.equal('1');
    expect(host.batches).to.deep.equal([1]);
    const answers = await Promise.all(
      ['a/1', 'gone/1'].map((r, i) =>
        peers!.assignAm(routedAddress(srv!.address, r), push(2 + i), { deadlineMs: 5000 }).then(
          (res) => res.appliedSeq,
          (e: unknown) => (e as Error).message,
        ),
      ),
    );
    expect(answers[0]).to.equal('2');
    expect(answers[1]).to.match(/nothing serves gone\/1/);
    expect(host.batches).to.deep.equal([1, 2]);
  });

  it("an AM server that takes only agents' WorkerEvents in its batches refuses the entry (an older AM host: it holds streams)", async () => {
    const host = await amHost(WORKER_EVENTS_BATCHED, ['a/1', 'b/1']);
    srv = host.srv;
    peers = new Peers();
    const answers = await Promise.all(
      ['a/1', 'b/1'].map((r) =>
        peers!.assignAm(routedAddress(srv!.address, r), push(1), { deadlineMs: 5000 }).then(
          () => 'ok',
          (e: unknown) => (e as Error).message,
        ),
      ),
    );
    for (const a of answers) expect(a).to.match(/method/);
    expect(host.seen.size).to.equal(0);
  });

  it('keeps the newest maxAmClients AM clients; an evicted one is made again on its next use', async () => {
    const host = await amHost(AM_SERVER_BATCHED, ['a/1', 'b/1', 'c/1']);
    srv = host.srv;
    peers = new Peers({ maxAmClients: 2 });
    const [a, b, c] = ['a/1', 'b/1', 'c/1'].map((r) => routedAddress(srv!.address, r)) as [string, string, string];
    const ca = peers.am(a);
    expect(peers.am(a)).to.equal(ca);
    peers.am(b);
    peers.am(c); // a goes
    expect(peers.am(a)).to.not.equal(ca);
    // The channel is the host's, shared: the others still reach it.
    expect((await peers.assignAm(b, push(1), { deadlineMs: 5000 })).appliedSeq).to.equal('1');
    expect((await peers.assignAm(a, push(1), { deadlineMs: 5000 })).appliedSeq).to.equal('1');
  });
});
