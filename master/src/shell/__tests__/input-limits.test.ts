/**
 * Input limits of a real MasterServer over gRPC on loopback (in-memory store): the per-caller submit
 * rate (RESOURCE_EXHAUSTED with a retry hint, nothing created), the job input limits, and the
 * largest message (refused by gRPC before any handler).
 */
import { expect } from 'chai';
import { normalizeJobSpec, nullLogger } from '@fuxi/common';
import { loadFuxiProto, type MasterServiceDefinition } from '@fuxi/proto';
import { connect, jobSpecToProto, parseTokens, RpcError, setMaxMessageBytes, DEFAULT_MAX_MESSAGE_BYTES, type TypedClient } from '@fuxi/rpc';
import { MemoryStore } from '@fuxi/store';
import { defaultConfig } from '../config.js';
import * as grpc from '@grpc/grpc-js';
import { authorizeCalls } from '../authorization.js';
import { callerKey } from '../handlers.js';
import { MasterServer } from '../master-server.js';

const spec = (id: string, over: Record<string, unknown> = {}) =>
  jobSpecToProto(normalizeJobSpec({ id, name: id, tasks: [{ name: 't', instances: 1, resources: { cpu: 1, memory: 64 }, command: ['true'] }], ...over }));

async function refusal(p: Promise<unknown>): Promise<RpcError> {
  try {
    await p;
  } catch (e) {
    return e as RpcError;
  }
  return expect.fail('expected the call to be refused');
}

describe('master: input limits over gRPC', function () {
  this.timeout(20_000);
  let server: MasterServer | undefined;
  let store: MemoryStore;
  let client: TypedClient<MasterServiceDefinition> | undefined;

  const start = async (over: Partial<ReturnType<typeof defaultConfig>>) => {
    store = new MemoryStore();
    server = new MasterServer({ ...defaultConfig(['true']), listen: '127.0.0.1:0', store: 'memory', ...over }, nullLogger, { store });
    await server.start();
    client = connect(loadFuxiProto().MasterService, server.address);
    return client;
  };

  afterEach(async () => {
    client?.close();
    await server?.stop();
    client = undefined;
    server = undefined;
    setMaxMessageBytes(DEFAULT_MAX_MESSAGE_BYTES);
  });

  it('callerKey: the peer host without its port', () => {
    expect(callerKey({ getPeer: () => 'ipv4:127.0.0.1:53211' })).to.equal('127.0.0.1');
    expect(callerKey({ getPeer: () => '[::1]:53211' })).to.equal('::1');
    expect(callerKey({ getPeer: () => '10.1.2.3:7' })).to.equal('10.1.2.3');
    expect(callerKey(undefined)).to.equal('');
  });

  it('callerKey: an authenticated caller by its role and name, so users on one host have buckets of their own', async () => {
    const tokens = parseTokens('alice-token-0000000001,alice,user\nbob-token-000000000002,bob,user\n');
    const seen: string[] = [];
    const handlers = authorizeCalls({ SubmitJob: (_req: unknown, call: { getPeer(): string }) => (seen.push(callerKey(call)), {}) } as never, {
      core: {} as never,
      insecure: false,
      tokens: () => tokens,
    }) as unknown as { SubmitJob(req: unknown, call: unknown): Promise<unknown> };
    const call = (token: string) => {
      const metadata = new grpc.Metadata();
      metadata.set('authorization', `Bearer ${token}`);
      return { metadata, getPeer: () => 'ipv4:127.0.0.1:5000' };
    };
    await handlers.SubmitJob({ spec: { quotaGroup: 'default' } }, call('alice-token-0000000001'));
    await handlers.SubmitJob({ spec: { quotaGroup: 'default' } }, call('bob-token-000000000002'));
    expect(seen).to.deep.equal(['user:alice', 'user:bob']);
  });

  it('refuses submits past the caller rate with RESOURCE_EXHAUSTED and a retry hint; nothing of them is stored', async () => {
    const client = await start({ submitRatePerSec: 1, submitBurst: 3 });
    await client.SubmitJobs({ specs: [spec('a'), spec('b')] });
    await client.SubmitJob({ spec: spec('c') });
    const e = await refusal(client.SubmitJob({ spec: spec('d') }));
    expect(e.code).to.equal('RESOURCE_EXHAUSTED');
    expect(e.message).to.match(/submit rate limit of this caller .*retry after \d+ ms/);
    expect(Number(e.details['retry-after-ms'])).to.be.within(1, 1000);
    const batch = await refusal(client.SubmitJobs({ specs: [spec('e'), spec('f')] }));
    expect(batch.code).to.equal('RESOURCE_EXHAUSTED');
    expect((await store.list('jobs/')).map((kv) => kv.key.split('/').pop()).sort()).to.deep.equal(['a', 'b', 'c']);
    // Reads are not limited.
    expect((await client.ListJobs({})).jobs).to.have.length(3);
  });

  it('refuses a job over the environment and instance limits, naming the field', async () => {
    const client = await start({ maxEnvVars: 2, maxInstancesPerJob: 3 });
    const env = await refusal(client.SubmitJob({ spec: spec('env', { env: { A: '1', B: '2', C: '3' } }) }));
    expect([env.code, env.message]).to.deep.equal(['INVALID_ARGUMENT', 'env: task "t" gets 3 environment variables; the limit is 2 (maxEnvVars)']);
    const many = await refusal(
      client.SubmitJob({ spec: spec('many', { tasks: [{ name: 't', instances: 4, resources: { cpu: 1, memory: 64 }, command: ['true'] }] }) }),
    );
    expect(many.message).to.equal('tasks: the job has 4 instances in all; the limit is 3 (maxInstancesPerJob)');
    expect(await store.list('jobs/')).to.have.length(0);
  });

  it('refuses a message larger than maxMessageBytes before any handler', async () => {
    setMaxMessageBytes(256 * 1024);
    const client = await start({ maxMessageBytes: 256 * 1024 });
    const big = await refusal(client.SubmitJob({ spec: spec('big', { env: { BIG: 'x'.repeat(300 * 1024) } }) }));
    expect(big.code).to.equal('RESOURCE_EXHAUSTED');
    expect(await store.list('jobs/')).to.have.length(0);
  });
});
