/** WatchJobs against a real MasterServer over gRPC (in-memory store): many jobs on one stream. */
import { expect } from 'chai';
import { normalizeJobSpec, nullLogger } from '@fuxi/common';
import { loadFuxiProto, type JobInfo__Output, type MasterServiceDefinition } from '@fuxi/proto';
import { connect, jobSpecToProto, type TypedClient } from '@fuxi/rpc';
import { MemoryStore } from '@fuxi/store';
import { defaultConfig } from '../config.js';
import { MasterServer } from '../master-server.js';

const spec = (id: string, array?: { id: string; index: number; maxRunning: number }) => ({
  ...jobSpecToProto(normalizeJobSpec({ id, name: id, tasks: [{ name: 't', instances: 1, resources: { cpu: 1, memory: 64 }, command: ['true'] }] })),
  ...(array ? { array } : {}),
});

describe('master: WatchJobs (many jobs on one stream)', function () {
  this.timeout(20_000);
  let server: MasterServer;
  let client: TypedClient<MasterServiceDefinition>;

  beforeEach(async () => {
    server = new MasterServer({ ...defaultConfig(['true']), listen: '127.0.0.1:0', store: 'memory' }, nullLogger, { store: new MemoryStore() });
    await server.start();
    client = connect(loadFuxiProto().MasterService, server.address);
  });

  afterEach(async () => {
    client.close();
    await server.stop();
  });

  async function collect(req: { jobIds?: string[]; arrayId?: string; endsOnly?: boolean }, meanwhile: () => Promise<void>): Promise<JobInfo__Output[]> {
    const got: JobInfo__Output[] = [];
    const stream = client.stream.WatchJobs({ jobIds: req.jobIds ?? [], arrayId: req.arrayId ?? '', endsOnly: req.endsOnly ?? false });
    const reading = (async () => {
      for await (const j of stream) got.push(j);
    })();
    await new Promise((r) => setTimeout(r, 100));
    await meanwhile();
    await reading; // ends by itself once every job is terminal
    return got;
  }

  it('sends each job, then each change, and ends when every job (and array member) is terminal', async () => {
    await client.SubmitJobs({
      specs: [spec('a'), spec('b'), spec('s_0', { id: 's', index: 0, maxRunning: 1 }), spec('s_1', { id: 's', index: 1, maxRunning: 1 })],
    });
    const got = await collect({ jobIds: ['a', 'b'], arrayId: 's' }, async () => {
      for (const id of ['a', 'b', 's_0', 's_1']) await client.KillJob({ jobId: id, reason: 'done watching' });
    });
    const firsts = got.slice(0, 4).map((j) => [j.jobId, j.state]);
    expect(firsts).to.deep.equal([
      ['a', 'JOB_STATE_SUBMITTED'],
      ['b', 'JOB_STATE_SUBMITTED'],
      ['s_0', 'JOB_STATE_SUBMITTED'],
      ['s_1', 'JOB_STATE_SUBMITTED'],
    ]);
    const ends = got.filter((j) => j.state === 'JOB_STATE_KILLED').map((j) => j.jobId);
    expect(ends.sort()).to.deep.equal(['a', 'b', 's_0', 's_1']);
  });

  it('endsOnly: one message per job, its end', async () => {
    await client.SubmitJobs({ specs: [spec('x'), spec('y')] });
    const got = await collect({ jobIds: ['x', 'y'], endsOnly: true }, async () => {
      await client.KillJob({ jobId: 'y', reason: '' });
      await client.KillJob({ jobId: 'x', reason: '' });
    });
    expect(got.map((j) => [j.jobId, j.state])).to.deep.equal([
      ['y', 'JOB_STATE_KILLED'],
      ['x', 'JOB_STATE_KILLED'],
    ]);
  });

  it('refuses an unknown job or array (NOT_FOUND) and an empty request (INVALID_ARGUMENT)', async () => {
    const cases: Array<[{ jobIds: string[]; arrayId: string }, string]> = [
      [{ jobIds: ['nope'], arrayId: '' }, 'NOT_FOUND'],
      [{ jobIds: [], arrayId: 'none' }, 'NOT_FOUND'],
      [{ jobIds: [], arrayId: '' }, 'INVALID_ARGUMENT'],
    ];
    for (const [req, code] of cases) {
      let got = '';
      try {
        for await (const _ of client.stream.WatchJobs({ ...req, endsOnly: false })) void _;
      } catch (e) {
        got = (e as { code?: string }).code ?? '';
      }
      expect(got, JSON.stringify(req)).to.equal(code);
    }
  });
});
