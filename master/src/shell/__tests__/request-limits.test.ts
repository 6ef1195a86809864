/**
 * What an AM may ask for, over gRPC against a real MasterServer on loopback (memory store): a
 * request beyond the job's spec is INVALID_ARGUMENT naming the field (also in the `fuxi-field`
 * metadata) and the limit, and changes nothing; the same call within the spec is taken.
 */
import { expect } from 'chai';
import { normalizeJobSpec, nullLogger } from '@fuxi/common';
import { loadFuxiProto, type MasterServiceDefinition } from '@fuxi/proto';
import { connect, jobSpecToProto, tokenHash, type TypedClient } from '@fuxi/rpc';

const AM_TOKEN = 'the-am-token-of-this-test';
import { defaultConfig } from '../config.js';
import { MasterServer } from '../master-server.js';
import { rpcError } from './helpers.js';

describe('master: request limits over gRPC', function () {
  this.timeout(20_000);
  let server: MasterServer;
  let client: TypedClient<MasterServiceDefinition>;

  beforeEach(async () => {
    // The test is the app's AM: it knows the token the master gives the attempt.
    server = new MasterServer({ ...defaultConfig(['true']), listen: '127.0.0.1:0', store: 'memory', schedulingIntervalMs: 0 }, nullLogger, {
      mintAmToken: () => ({ token: AM_TOKEN, hash: tokenHash(AM_TOKEN) }),
    });
    await server.start();
    client = connect(loadFuxiProto().MasterService, server.address);
    const spec = normalizeJobSpec({ id: 'wc', name: 'wc', tasks: [{ name: 'map', instances: 4, resources: { cpu: 1, memory: 256 }, command: ['true'] }] });
    await client.SubmitJob({ spec: jobSpecToProto(spec) });
  });

  afterEach(async () => {
    client.close();
    await server.stop();
  });

  const request = (seq: number, cpuMilli: number, delta: number) =>
    client.UpdateRequests(
      {
        appId: 'wc',
        amAttempt: 1,
        seq: String(seq),
        units: [{ suId: 'map', resource: { cpuMilli, memoryMb: 256 }, priority: 0 }],
        deltas: [{ suId: 'map', location: '', delta }],
        assignmentSeq: '0',
        progress: [],
      },
      { token: AM_TOKEN },
    );

  it('answers a slot larger than the task declares with INVALID_ARGUMENT naming the field, and applies nothing', async () => {
    const err = await rpcError(request(1, 2000, 1));
    expect(err.code).to.equal('INVALID_ARGUMENT');
    expect(err.details.field).to.equal('units[map].resource.cpuMilli');
    expect(err.message).to.equal('units[map].resource.cpuMilli: 2000 is more than task "map" declares per instance (1000, tasks[0].resources)');
    // Nothing was taken, the seq included: the same seq within the spec is applied.
    await request(1, 1000, 5);
    const over = await rpcError(request(2, 1000, 1));
    expect(over.code).to.equal('INVALID_ARGUMENT');
    expect(over.details.field).to.equal('deltas.delta');
    expect(over.message).to.match(/would have 6 slots outstanding and 0 granted; task "map" allows 5 \(4 instances \+ 1 speculation allowance/);
  });
});
