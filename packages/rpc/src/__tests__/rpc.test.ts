import { expect } from 'chai';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { InvalidArgumentError, nullLogger, NotFoundError, UnavailableError } from '@fuxi/common';
import { loadFuxiProto } from '@fuxi/proto';
import {
  CHANNEL_LINGER_MS,
  connect,
  implement,
  MasterConnection,
  RpcError,
  setChannelLingerMs,
  startServer,
  withoutCallerStack,
  type RunningServer,
} from '../index.js';

interface ReflectionAnswer {
  list_services_response?: { service: { name: string }[] };
  file_descriptor_response?: { file_descriptor_proto: Buffer[] };
}

/** WatchJob streams of fakeMaster that their client cancelled. */
let streamsCancelled = 0;

/**
 * A MasterService whose GetJob answers from a tiny table (a standby's redirect when `leader` is
 * set; UNAVAILABLE without a leader when `unavailable`); other methods are not under test.
 */
function fakeMaster(leader = '', unavailable = false) {
  const fuxi = loadFuxiProto();
  const def = fuxi.MasterService.service;
  const notImpl = async () => {
    throw new Error('not implemented');
  };
  const impl = Object.fromEntries(Object.keys(def).map((k) => [k, notImpl])) as Record<string, unknown>;
  impl.GetJob = async (req: { jobId: string }) => {
    if (leader) throw new UnavailableError('not the leader', leader);
    if (unavailable) throw new UnavailableError('stepping down', '');
    if (req.jobId === 'bad') throw new InvalidArgumentError('jobId', 'must not be "bad"');
    if (req.jobId !== 'j1') throw new NotFoundError('job', req.jobId);
    return { job: { jobId: 'j1', name: 'one', state: 'JOB_STATE_RUNNING', submittedAtMs: '1234567890123' } };
  };
  impl.WatchJob = async (req: { jobId: string }, call: grpc.ServerWritableStream<object, object>) => {
    // 'many': 2,000 messages; 'fail': two, then NOT_FOUND; 'open': one, then open until cancelled.
    const n = req.jobId === 'many' ? 2000 : req.jobId === 'fail' || req.jobId === 'open' ? (req.jobId === 'open' ? 1 : 2) : 3;
    for (let i = 0; i < n; i++) call.write({ jobId: `w${i}` });
    if (req.jobId === 'fail') throw new NotFoundError('job', 'fail');
    if (req.jobId === 'open') {
      await new Promise<void>((resolve) => call.on('cancelled', () => resolve()));
      streamsCancelled++;
      return;
    }
    call.end();
  };
  return { name: 'fuxi.v1.MasterService', definition: def, handlers: implement(def, impl as never, nullLogger) };
}

describe('rpc plumbing', () => {
  const servers: RunningServer[] = [];
  after(async () => {
    for (const s of servers) await s.shutdown(100);
  });

  it('round-trips a unary call with int64 as string and enums as names', async () => {
    const s = await startServer({ bind: '127.0.0.1:0', services: [fakeMaster()], log: nullLogger });
    servers.push(s);
    const c = connect(loadFuxiProto().MasterService, s.address);
    const res = await c.GetJob({ jobId: 'j1' });
    expect(res.job?.name).to.equal('one');
    expect(res.job?.state).to.equal('JOB_STATE_RUNNING');
    expect(res.job?.submittedAtMs).to.equal('1234567890123');
    c.close();
  });

  it('a closed client leaves nothing in grpc-js’s process-wide subchannel pool (closing stays cheap however many addresses were called)', async () => {
    const s = await startServer({ bind: '127.0.0.1:0', services: [fakeMaster()], log: nullLogger });
    servers.push(s);
    const require = createRequire(import.meta.url);
    const grpcMain = require.resolve('@grpc/grpc-js');
    const pools = require(join(dirname(grpcMain), 'subchannel-pool.js')) as { getSubchannelPool(global: boolean): { pool: Record<string, unknown[]> } };
    const global = pools.getSubchannelPool(true);
    const before = Object.keys(global.pool).length;
    const c = connect(loadFuxiProto().MasterService, s.address);
    expect((await c.GetJob({ jobId: 'j1' })).job?.jobId).to.equal('j1');
    c.close();
    expect(Object.keys(global.pool).length).to.equal(before);
  });

  it('clients of one address share a channel; with a linger it stays open a while after the last one closes, then closes', async () => {
    const s = await startServer({ bind: '127.0.0.1:0', services: [fakeMaster()], log: nullLogger });
    servers.push(s);
    setChannelLingerMs(CHANNEL_LINGER_MS); // as the AM host sets it
    const svc = loadFuxiProto().MasterService;
    const a = connect(svc, s.address);
    const b = connect(svc, s.address);
    const channel = a.raw.getChannel();
    expect(b.raw.getChannel()).to.equal(channel);
    expect((await a.GetJob({ jobId: 'j1' })).job?.jobId).to.equal('j1');
    a.close();
    b.close();
    // The next client (the next AM of a host) takes the same connected channel: no new connection.
    const c = connect(svc, s.address);
    expect(c.raw.getChannel()).to.equal(channel);
    expect(channel.getConnectivityState(false)).to.equal(grpc.connectivityState.READY);
    expect((await c.GetJob({ jobId: 'j1' })).job?.jobId).to.equal('j1');
    setChannelLingerMs(50);
    try {
      c.close();
      await new Promise((r) => setTimeout(r, 150));
      expect(channel.getConnectivityState(false)).to.equal(grpc.connectivityState.SHUTDOWN);
      const d = connect(svc, s.address);
      expect(d.raw.getChannel()).to.not.equal(channel);
      expect((await d.GetJob({ jobId: 'j1' })).job?.jobId).to.equal('j1');
      setChannelLingerMs(0);
      d.close(); // with no linger (the default) it closes with its last client
      expect(d.raw.getChannel().getConnectivityState(false)).to.equal(grpc.connectivityState.SHUTDOWN);
    } finally {
      setChannelLingerMs(0);
    }
  });

  it('creates calls without capturing the caller’s stack, and restores the stack limit whatever happens', async () => {
    const limit = Error.stackTraceLimit;
    let inside = -1;
    expect(withoutCallerStack(() => (inside = Error.stackTraceLimit))).to.equal(0);
    expect(inside).to.equal(0);
    expect(() =>
      withoutCallerStack(() => {
        throw new Error('made in the call');
      }),
    ).to.throw('made in the call');
    expect(Error.stackTraceLimit).to.equal(limit);
    // A failed call still fails with the method and the status.
    const s = await startServer({ bind: '127.0.0.1:0', services: [fakeMaster()], log: nullLogger });
    servers.push(s);
    const c = connect(loadFuxiProto().MasterService, s.address);
    const nf = (await c.GetJob({ jobId: 'nope' }).catch((e: unknown) => e)) as RpcError;
    expect([nf.code, nf.message]).to.deep.equal(['NOT_FOUND', 'job "nope" not found']);
    c.close();
  });

  it('maps typed errors to gRPC codes and back', async () => {
    const s = await startServer({ bind: '127.0.0.1:0', services: [fakeMaster()], log: nullLogger });
    servers.push(s);
    const c = connect(loadFuxiProto().MasterService, s.address);
    const nf = await c.GetJob({ jobId: 'nope' }).catch((e: unknown) => e as RpcError);
    expect(nf).to.be.instanceOf(RpcError);
    expect((nf as RpcError).code).to.equal('NOT_FOUND');
    expect((nf as RpcError).grpcCode).to.equal(grpc.status.NOT_FOUND);
    const bad = (await c.GetJob({ jobId: 'bad' }).catch((e: unknown) => e)) as RpcError;
    expect(bad.code).to.equal('INVALID_ARGUMENT');
    expect(bad.message).to.equal('jobId: must not be "bad"');
    expect(bad.details.field).to.equal('jobId');
    const internal = (await c.ListNodes({}).catch((e: unknown) => e)) as RpcError;
    expect(internal.code).to.equal('INTERNAL');
    c.close();
  });

  it('an error that echoes a huge input is sent clipped, and the connection keeps working (found by the fuzz test)', async () => {
    const s = await startServer({ bind: '127.0.0.1:0', services: [fakeMaster()], log: nullLogger });
    servers.push(s);
    const c = connect(loadFuxiProto().MasterService, s.address);
    // NOT_FOUND names the 2 MB job id: the whole of it in the grpc-message trailer never arrived.
    const huge = 'x'.repeat(2_000_000);
    const t0 = Date.now();
    const nf = (await c.GetJob({ jobId: huge }, { deadlineMs: 5000 }).catch((e: unknown) => e)) as RpcError;
    expect(nf.code).to.equal('NOT_FOUND');
    expect(Date.now() - t0).to.be.below(4000);
    expect(nf.message.length).to.be.below(2200);
    expect(nf.message).to.match(/\.\.\. \(\d+ more characters\)$/);
    // A detail value that is not printable ASCII is still sent.
    const odd = (await c.GetJob({ jobId: 'ü😀' }, { deadlineMs: 5000 }).catch((e: unknown) => e)) as RpcError;
    expect(odd.code).to.equal('NOT_FOUND');
    expect((await c.GetJob({ jobId: 'j1' }, { deadlineMs: 5000 })).job?.jobId).to.equal('j1');
    c.close();
  });

  it('streams server messages as an async iterable', async () => {
    const s = await startServer({ bind: '127.0.0.1:0', services: [fakeMaster()], log: nullLogger });
    servers.push(s);
    const c = connect(loadFuxiProto().MasterService, s.address);
    const got: string[] = [];
    for await (const j of c.stream.WatchJob({ jobId: 'x' })) got.push(j.jobId);
    expect(got).to.deep.equal(['w0', 'w1', 'w2']);
    c.close();
  });

  it('a failed stream gives the messages it received, then its typed error; a reader that stops early cancels the call', async () => {
    const s = await startServer({ bind: '127.0.0.1:0', services: [fakeMaster()], log: nullLogger });
    servers.push(s);
    const c = connect(loadFuxiProto().MasterService, s.address);
    const got: string[] = [];
    const err = await (async () => {
      for await (const j of c.stream.WatchJob({ jobId: 'fail' })) got.push(j.jobId);
    })().catch((e: unknown) => e);
    expect(got).to.deep.equal(['w0', 'w1']);
    expect(err).to.be.instanceOf(RpcError);
    expect((err as RpcError).code).to.equal('NOT_FOUND');

    // A slow reader gets every message, in order (the call is read as the reader asks).
    let n = 0;
    for await (const j of c.stream.WatchJob({ jobId: 'many' })) {
      expect(j.jobId).to.equal(`w${n++}`);
      if (n % 500 === 0) await new Promise((r) => setTimeout(r, 20));
    }
    expect(n).to.equal(2000);

    const before = streamsCancelled;
    for await (const j of c.stream.WatchJob({ jobId: 'open' })) {
      expect(j.jobId).to.equal('w0');
      break;
    }
    for (let i = 0; i < 100 && streamsCancelled === before; i++) await new Promise((r) => setTimeout(r, 20));
    expect(streamsCancelled).to.equal(before + 1);
    c.close();
  });

  it('serves grpc.health.v1 and server reflection', async () => {
    const s = await startServer({ bind: '127.0.0.1:0', services: [fakeMaster()], log: nullLogger });
    servers.push(s);
    const { service: healthService } = await import('grpc-health-check');
    const Health = grpc.makeGenericClientConstructor(healthService as never, 'Health');
    const h = new Health(s.address, grpc.credentials.createInsecure()) as unknown as grpc.Client & {
      check(req: object, cb: (e: Error | null, r: { status: string }) => void): void;
    };
    const status = await new Promise<string>((resolve, reject) => h.check({ service: 'fuxi.v1.MasterService' }, (e, r) => (e ? reject(e) : resolve(r.status))));
    expect(status).to.equal('SERVING');
    h.close();
  });

  it('serves reflection from the precompiled descriptor', async () => {
    const s = await startServer({ bind: '127.0.0.1:0', services: [fakeMaster()], log: nullLogger });
    servers.push(s);
    const require = createRequire(import.meta.url);
    const includeDir = join(dirname(require.resolve('@grpc/reflection/package.json')), 'build', 'proto');
    const def = protoLoader.loadSync('grpc/reflection/v1/reflection.proto', { includeDirs: [includeDir], keepCase: true, defaults: true, oneofs: true });
    const Reflection = (grpc.loadPackageDefinition(def) as never as { grpc: { reflection: { v1: { ServerReflection: grpc.ServiceClientConstructor } } } }).grpc
      .reflection.v1.ServerReflection;
    const c = new Reflection(s.address, grpc.credentials.createInsecure()) as unknown as grpc.Client & {
      ServerReflectionInfo(): grpc.ClientDuplexStream<object, ReflectionAnswer>;
    };
    const call = c.ServerReflectionInfo();
    const answers: ReflectionAnswer[] = [];
    call.on('data', (d: ReflectionAnswer) => answers.push(d));
    const ended = new Promise((resolve, reject) => call.on('end', resolve).on('error', reject));
    call.write({ list_services: '' });
    call.write({ file_containing_symbol: 'fuxi.v1.MasterService' });
    call.end();
    await ended;
    c.close();
    const services = answers[0]?.list_services_response?.service ?? [];
    expect(services.map((x) => x.name)).to.include.members(['fuxi.v1.MasterService', 'fuxi.v1.AgentService', 'fuxi.v1.AppMasterService']);
    const files = answers[1]?.file_descriptor_response?.file_descriptor_proto ?? [];
    expect(files.length).to.be.greaterThan(0);
    expect(Buffer.concat(files).includes('SubmitJobRequest')).to.equal(true);
  });

  it('MasterConnection follows a standby redirect to the leader', async () => {
    const leader = await startServer({ bind: '127.0.0.1:0', services: [fakeMaster()], log: nullLogger });
    servers.push(leader);
    const standby = await startServer({ bind: '127.0.0.1:0', services: [fakeMaster(leader.address)], log: nullLogger });
    servers.push(standby);
    const redirects: string[] = [];
    const answers: string[] = [];
    const conn = new MasterConnection([standby.address], { onRedirect: (_f, to) => redirects.push(to), onAnswer: (a) => answers.push(a) });
    const res = await conn.call('GetJob', { jobId: 'j1' });
    expect(res.job?.jobId).to.equal('j1');
    expect(redirects).to.deep.equal([leader.address]);
    expect(answers).to.deep.equal([standby.address, leader.address]);
    expect(conn.address).to.equal(leader.address);
    conn.close();
  });

  it('MasterConnection retries idempotent calls while the master is unreachable', async () => {
    const port = await new Promise<number>((resolve) => {
      const probe = new grpc.Server();
      probe.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (_e, p) => probe.tryShutdown(() => resolve(p)));
    });
    const answers: string[] = [];
    const conn = new MasterConnection([`127.0.0.1:${port}`], { retryForMs: 10_000, onAnswer: (a) => answers.push(a) });
    const pending = conn.call('GetJob', { jobId: 'j1' }, { retry: true, deadlineMs: 500 });
    await new Promise((r) => setTimeout(r, 300));
    expect(answers, 'nobody answered yet').to.deep.equal([]);
    const s = await startServer({ bind: `127.0.0.1:${port}`, services: [fakeMaster()], log: nullLogger });
    servers.push(s);
    const res = await pending;
    expect(res.job?.jobId).to.equal('j1');
    conn.close();
  });

  it('MasterConnection passes over a master whose connection failed, and goes to the leader a standby named to the process', async () => {
    const failing = await startServer({ bind: '127.0.0.1:0', services: [fakeMaster('', true)], log: nullLogger });
    servers.push(failing);
    const leader = await startServer({ bind: '127.0.0.1:0', services: [fakeMaster()], log: nullLogger });
    servers.push(leader);
    const standby = await startServer({ bind: '127.0.0.1:0', services: [fakeMaster(leader.address)], log: nullLogger });
    servers.push(standby);
    // Taken once the servers hold their ports: a port given back before they started could be
    // handed to one of them (the "dead" master then answered, once in CI).
    const dead = `127.0.0.1:${await freePort()}`;
    const conn = new MasterConnection([failing.address, dead, standby.address]);
    // Nothing is known of the dead one yet: the list is taken in order.
    expect(((await conn.call('GetJob', { jobId: 'j1' }).catch((e: unknown) => e)) as RpcError).code).to.equal('UNAVAILABLE');
    expect(conn.address).to.equal(dead);
    expect(((await conn.call('GetJob', { jobId: 'j1' }).catch((e: unknown) => e)) as RpcError).code).to.equal('UNAVAILABLE');
    expect(conn.address).to.equal(standby.address);
    // Another connection of the process shares the channels: the dead one is passed over at once.
    const other = new MasterConnection([failing.address, dead, standby.address]);
    expect(((await other.call('GetJob', { jobId: 'j1' }).catch((e: unknown) => e)) as RpcError).code).to.equal('UNAVAILABLE');
    expect(other.address).to.equal(standby.address);
    expect((await other.call('GetJob', { jobId: 'j1' })).job?.jobId).to.equal('j1');
    expect(other.address).to.equal(leader.address);
    // That redirect named the leader to the whole process: a connection to the same masters whose
    // master fails goes there at once, not round the list.
    const hinted = new MasterConnection([failing.address, dead, standby.address]);
    expect(((await hinted.call('GetJob', { jobId: 'j1' }).catch((e: unknown) => e)) as RpcError).code).to.equal('UNAVAILABLE');
    expect(hinted.address).to.equal(leader.address);
    hinted.close();
    // A connection whose current master is the dead one starts at the next.
    const startAnswers: string[] = [];
    const starting = new MasterConnection([dead, standby.address], { onAnswer: (a) => startAnswers.push(a) });
    expect((await starting.call('GetJob', { jobId: 'j1' })).job?.jobId, 'answered without a retry').to.equal('j1');
    expect(startAnswers).to.deep.equal([standby.address, leader.address]);
    starting.close();
    // When every other master failed, the list is still taken in order, the dead one included.
    const alone = new MasterConnection([failing.address, dead]);
    await alone.call('GetJob', { jobId: 'j1' }).catch(() => undefined);
    expect(alone.address).to.equal(dead);
    for (const c of [conn, other, alone]) c.close();
  });
});

/** A port nothing listens on (bound once and given back). */
function freePort(): Promise<number> {
  return new Promise<number>((resolve) => {
    const probe = new grpc.Server();
    probe.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (_e, p) => probe.tryShutdown(() => resolve(p)));
  });
}

describe('gRPC errors from a broken connection', () => {
  const serviceError = (code: grpc.status, details: string) =>
    Object.assign(new Error(details), { code, details, metadata: new grpc.Metadata() }) as grpc.ServiceError;

  it('are UNAVAILABLE: the peer died or the link dropped under the call', async () => {
    const { fromGrpcError } = await import('../errors.js');
    const broken = fromGrpcError(
      serviceError(grpc.status.INTERNAL, 'Received RST_STREAM with code 2 triggered by internal client error: Session closed with error code 2'),
      'Heartbeat',
    );
    expect(broken.code).to.equal('UNAVAILABLE');
    expect(fromGrpcError(serviceError(grpc.status.INTERNAL, 'internal error: boom'), 'Heartbeat').code).to.equal('INTERNAL');
  });
});

describe('process guards', () => {
  it('tell weather (unavailable peers, a full store, fenced writes of a deposed leader) from bugs', async () => {
    const { isWeather } = await import('../process-guards.js');
    const { FailedPreconditionError, InternalError, ResourceExhaustedError } = await import('@fuxi/common');
    class FencedError extends FailedPreconditionError {}
    expect(isWeather(new UnavailableError('not the leader', ''))).to.equal(true);
    expect(isWeather(new FencedError('fenced: guard key gone'))).to.equal(true);
    expect(isWeather(new ResourceExhaustedError('etcd', 'etcd is out of space'))).to.equal(true);
    expect(isWeather(new FailedPreconditionError('stale'))).to.equal(false);
    expect(isWeather(new InternalError('boom'))).to.equal(false);
    expect(isWeather(new TypeError('x is undefined'))).to.equal(false);
  });
});
