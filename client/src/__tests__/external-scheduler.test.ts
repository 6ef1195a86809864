import { expect } from 'chai';
import type * as grpc from '@grpc/grpc-js';
import { FailedPreconditionError, nullLogger, UnavailableError } from '@fuxi/common';
import { loadFuxiProto, type PlaceRequest__Output, type SchedulerEvent } from '@fuxi/proto';
import { implement, startServer, toGrpcError, type RunningServer } from '@fuxi/rpc';
import { ExternalScheduler, fitsIn, slotsIn, type ClusterView, type PendingRequest, type Placement, type Rejection } from '../sdk/external-scheduler.js';

const R = (cpuMilli: number, memoryMb: number) => ({ cpuMilli, memoryMb });
const host = (nodeId: string, cpu: number) => ({ nodeId, rack: 'r1', capacity: R(4000, 4096), free: R(cpu, 4096), schedulable: true });
const pending = (appId: string, count: number, gang = 1) => ({
  appId,
  unit: 'map',
  resource: R(1000, 512),
  count,
  gang,
  waitingSinceMs: '1',
  queueOrder: 0,
  priority: 0,
});

/** A SchedulerService that streams scripted events per Watch and records Place calls. */
class FakeSchedulerMaster {
  server!: RunningServer;
  watches = 0;
  places: PlaceRequest__Output[] = [];
  /** Per Watch (by its number from 1): the events to send, then how the stream ends (undefined: stays open). */
  script: (n: number, call: grpc.ServerWritableStream<unknown, SchedulerEvent>) => Promise<void> = async () => new Promise(() => undefined);
  rejectIndexes = new Set<number>();

  async start(): Promise<void> {
    const fuxi = loadFuxiProto();
    const streaming =
      (fn: (call: grpc.ServerWritableStream<unknown, SchedulerEvent>) => Promise<void>) =>
      async (_req: unknown, call: grpc.ServerWritableStream<unknown, SchedulerEvent>) => {
        try {
          await fn(call);
        } catch (e) {
          call.emit('error', Object.assign(new Error(String(e)), toGrpcError(e)));
        }
      };
    const sched = implement(
      fuxi.SchedulerService.service,
      {
        Watch: streaming((call) => this.script(++this.watches, call)) as never,
        Place: (req: PlaceRequest__Output) => {
          this.places.push(req);
          const rejected = req.placements.map((_, index) => index).filter((i) => this.rejectIndexes.has(i));
          return {
            applied: req.placements.length - rejected.length,
            rejected: rejected.map((index) => ({ index, code: 'OVER_CAPACITY', message: 'no room' })),
          };
        },
      },
      nullLogger,
    );
    const master = implement(
      fuxi.MasterService.service,
      Object.fromEntries(Object.keys(fuxi.MasterService.service).map((k) => [k, () => ({})])) as never,
      nullLogger,
    );
    this.server = await startServer({
      bind: '127.0.0.1:0',
      log: nullLogger,
      services: [
        { name: 'fuxi.v1.SchedulerService', definition: fuxi.SchedulerService.service, handlers: sched },
        { name: 'fuxi.v1.MasterService', definition: fuxi.MasterService.service, handlers: master },
      ],
    });
  }
}

/** Queue-based: each head on the first host with room, one slot per call to pickNext. */
class FirstFit extends ExternalScheduler {
  rejections: Rejection[] = [];
  protected override pickNext(queue: readonly PendingRequest[], view: ClusterView): Placement[] | undefined {
    const req = queue[0]!;
    const h = [...view.hosts.values()].find((x) => x.schedulable && fitsIn(req.resource, x.free));
    return h && [{ appId: req.appId, unit: req.unit, nodeId: h.nodeId, count: Math.min(req.count, slotsIn(req.resource, h.free)) }];
  }
  protected override onRejected(r: readonly Rejection[]): void {
    this.rejections.push(...r);
  }
  decideOn(view: ClusterView) {
    return this.onState(view);
  }
}

const until = async <T>(fn: () => T | undefined | false, ms = 5000): Promise<T> => {
  const end = Date.now() + ms;
  for (;;) {
    const v = fn();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 10));
  }
};

describe('ExternalScheduler (SDK)', () => {
  it('queue-based: asks pickNext for each head in turn, with the room earlier placements took off the view', () => {
    const s = new FirstFit({ name: 'ff', style: 'queue', insecure: true, masters: ['127.0.0.1:1'] });
    const view: ClusterView = {
      version: 1,
      hosts: new Map([
        ['h1', host('h1', 3000)],
        ['h2', host('h2', 2000)],
      ]),
      pending: [
        { ...pending('a', 3), waitingSinceMs: 1 },
        { ...pending('b', 2), waitingSinceMs: 1, queueOrder: 1 },
      ],
      history: [],
    };
    expect(s.decideOn(view)).to.deep.equal([
      { appId: 'a', unit: 'map', nodeId: 'h1', count: 3 },
      { appId: 'b', unit: 'map', nodeId: 'h2', count: 2 },
    ]);
    expect(view.hosts.get('h1')!.free.cpuMilli, 'the view itself is not changed').to.equal(3000);
    s.stop();
  });

  it('registers, applies the full view and its deltas, places with its epoch, reports rejections', async () => {
    const m = new FakeSchedulerMaster();
    m.rejectIndexes = new Set([1]);
    m.script = async (_n, call) => {
      call.write({ registered: { epoch: '42', masterEpoch: '1', stallMs: 3000 } });
      call.write({ view: { version: '1', full: true, hosts: [host('h1', 1000), host('h2', 4000)], pending: [] } });
      call.write({ view: { version: '2', full: false, hosts: [host('h1', 2000)], pending: [pending('a', 2), { ...pending('b', 1), queueOrder: 1 }] } });
      await new Promise(() => undefined);
    };
    await m.start();
    const s = new FirstFit({ name: 'ff', style: 'queue', insecure: true, masters: [m.server.address] });
    const run = s.run();
    await until(() => m.places.length > 0);
    const p = m.places[0]!;
    expect(p).to.deep.include({ name: 'ff', epoch: '42', version: '2' });
    expect(p.placements.map((x) => `${x.appId}@${x.nodeId}x${x.count}`)).to.deep.equal(['a@h1x2', 'b@h2x1']);
    await until(() => s.rejections.length > 0);
    expect(s.rejections.map((r) => `${r.placement.appId} ${r.code} ${r.message}`)).to.deep.equal(['b OVER_CAPACITY no room']);
    // Applied: off the local view until the master's next push says otherwise.
    expect(s.view().pending.map((q) => `${q.appId}:${q.count}`)).to.deep.equal(['b:1']);
    expect(s.view().hosts.get('h1')?.free.cpuMilli).to.equal(0);
    s.stop();
    await run;
    await m.server.shutdown(100);
  });

  it('registers again when its stream ends, and stops when a newer registration fences it', async () => {
    const m = new FakeSchedulerMaster();
    m.script = async (n, call) => {
      call.write({ registered: { epoch: String(n), masterEpoch: '1', stallMs: 3000 } });
      if (n === 1) throw new UnavailableError('the master stopped leading: register with the new leader', '');
      if (n === 2) throw new FailedPreconditionError('fenced: ff registered again with epoch 3');
    };
    await m.start();
    const s = new FirstFit({ name: 'ff', style: 'queue', insecure: true, masters: [m.server.address] });
    let err: unknown;
    await s.run().catch((e: unknown) => (err = e));
    expect(m.watches).to.equal(2);
    expect(s.registrations).to.equal(2);
    expect(String(err)).to.match(/fenced: ff registered again/);
    await m.server.shutdown(100);
  });
});
