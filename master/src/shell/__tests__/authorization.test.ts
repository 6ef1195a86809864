/**
 * Authorization over gRPC against a real MasterServer on loopback (memory store) on a secure
 * cluster (`insecure: false`) with a tokens file: an agent acts only as its own node, anonymous
 * callers are UNAUTHENTICATED, users submit into their groups and see their own jobs, admins
 * everything; the job's owner is in GetJob; AM calls need the attempt's token.
 */
import { expect } from 'chai';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { normalizeJobSpec, nullLogger } from '@fuxi/common';
import { loadFuxiProto, type MasterServiceDefinition } from '@fuxi/proto';
import { connect, jobSpecToProto, RpcError, tokenHash, type TypedClient } from '@fuxi/rpc';
import { defaultConfig } from '../config.js';
import { MasterServer } from '../master-server.js';

const ADMIN = 'admin-token-0000000001';
const ALICE = 'alice-token-000000002';
const BOB = 'bob-token-0000000000003';
const AGENT = 'agent-n1-token-0000004';
const AM_TOKEN = 'the-am-token-of-job-a1';

async function refusal(p: Promise<unknown>): Promise<RpcError> {
  const r = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(r instanceof RpcError)) throw new Error(`expected a refusal, got ${String(r)}`);
  return r;
}

describe('master: authorization over gRPC (secure cluster, tokens file)', function () {
  this.timeout(20_000);
  let dir: string;
  let server: MasterServer;
  let client: TypedClient<MasterServiceDefinition>;
  const spec = (id: string, quotaGroup = 'default') =>
    jobSpecToProto(normalizeJobSpec({ id, name: id, quotaGroup, tasks: [{ name: 't', instances: 1, resources: { cpu: 1, memory: 64 }, command: ['true'] }] }));
  const node = (nodeId: string) => ({ nodeId, address: '127.0.0.1:1', rack: 'r', capacity: { cpuMilli: 4000, memoryMb: 4096 }, labels: {}, bootId: 'b' });

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fuxi-authz-'));
    const tokensFile = path.join(dir, 'tokens.csv');
    fs.writeFileSync(tokensFile, `${ADMIN},root,admin\n${ALICE},alice,user\n${BOB},bob,user,gold\n${AGENT},n1,agent\n`);
    server = new MasterServer(
      {
        ...defaultConfig(['true']),
        listen: '127.0.0.1:0',
        store: 'memory',
        schedulingIntervalMs: 0,
        insecure: false,
        tokensFile,
        quotaGroups: [
          { name: 'default', weight: 1 },
          { name: 'gold', weight: 1 },
        ],
      },
      nullLogger,
      { mintAmToken: () => ({ token: AM_TOKEN, hash: tokenHash(AM_TOKEN) }) },
    );
    await server.start();
    client = connect(loadFuxiProto().MasterService, server.address);
  });
  after(async () => {
    client.close();
    await server.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('an agent registers only as the node its token names; anonymous callers are UNAUTHENTICATED', async () => {
    await client.RegisterAgent({ node: node('n1'), epochSeen: '0', withState: false, grants: [] } as never, { token: AGENT });
    expect((await refusal(client.RegisterAgent({ node: node('n2'), epochSeen: '0', withState: false, grants: [] } as never, { token: AGENT }))).code).to.equal(
      'PERMISSION_DENIED',
    );
    expect((await refusal(client.RegisterAgent({ node: node('n1'), epochSeen: '0', withState: false, grants: [] } as never))).code).to.equal('UNAUTHENTICATED');
    expect((await refusal(client.RegisterAgent({ node: node('n1'), epochSeen: '0', withState: false, grants: [] } as never, { token: ALICE }))).code).to.equal(
      'PERMISSION_DENIED',
    );
    expect((await refusal(client.ListNodes({}))).code).to.equal('UNAUTHENTICATED');
    expect((await client.ListNodes({}, { token: ALICE })).nodes.map((n) => n.node?.nodeId)).to.deep.equal(['n1']);
  });

  it('users submit into their groups, see and kill only their own jobs; admins anything', async () => {
    await client.SubmitJob({ spec: spec('a1') }, { token: ALICE });
    await client.SubmitJob({ spec: spec('b1', 'gold') }, { token: BOB });
    expect((await refusal(client.SubmitJob({ spec: spec('b2') }, { token: BOB }))).message).to.match(/bob may submit only into quota groups gold, not default/);
    expect((await refusal(client.SubmitJob({ spec: spec('x1') }))).code).to.equal('UNAUTHENTICATED');
    expect((await client.GetJob({ jobId: 'a1' }, { token: ALICE })).job?.owner).to.equal('alice');
    expect((await refusal(client.GetJob({ jobId: 'a1' }, { token: BOB }))).code).to.equal('PERMISSION_DENIED');
    expect((await refusal(client.KillJob({ jobId: 'b1', reason: '' }, { token: ALICE }))).code).to.equal('PERMISSION_DENIED');
    expect((await client.ListJobs({ states: [], arrayId: '', limit: 0, after: '' }, { token: ALICE })).jobs.map((j) => j.jobId)).to.deep.equal(['a1']);
    expect((await client.ListJobs({ states: [], arrayId: '', limit: 0, after: '' }, { token: ADMIN })).jobs.map((j) => j.jobId)).to.deep.equal(['a1', 'b1']);
    expect((await refusal(client.CordonNode({ nodeId: 'n1', reason: '', requestedBy: '' }, { token: ALICE }))).code).to.equal('PERMISSION_DENIED');
    await client.CordonNode({ nodeId: 'n1', reason: 'maintenance', requestedBy: 'root' }, { token: ADMIN });
    expect((await client.KillJob({ jobId: 'b1', reason: 'admin' }, { token: ADMIN })).job?.state).to.equal('JOB_STATE_KILLED');
  });

  it("AM calls need the attempt's token: a user's is refused, the AM's taken", async () => {
    const report = { appId: 'a1', amAttempt: 1, seq: '1', units: [], deltas: [], assignmentSeq: '0', progress: [] };
    expect((await refusal(client.UpdateRequests(report as never, { token: ALICE }))).code).to.equal('PERMISSION_DENIED');
    expect((await refusal(client.UpdateRequests(report as never, { token: ADMIN }))).code).to.equal('PERMISSION_DENIED');
    await client.UpdateRequests(report as never, { token: AM_TOKEN });
    // The AM's token names its app: it is no user's identity elsewhere.
    expect((await refusal(client.GetJob({ jobId: 'a1' }, { token: AM_TOKEN }))).code).to.equal('UNAUTHENTICATED');
  });
});
