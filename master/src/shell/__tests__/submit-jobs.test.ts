/**
 * SubmitJobs against a real MasterServer over gRPC on loopback (in-memory store): each job taken or
 * refused on its own, idempotent by id, acknowledged once durable, written in few store batches.
 */
import { expect } from 'chai';
import { normalizeJobSpec } from '@fuxi/common';
import type { MasterServiceDefinition } from '@fuxi/proto';
import { jobSpecToProto, type TypedClient } from '@fuxi/rpc';
import { MemoryStore, type StoreOp } from '@fuxi/store';
import type { MasterServer } from '../master-server.js';
import { loopbackMaster, rpcError } from './helpers.js';

class CountingStore extends MemoryStore {
  batches = 0;
  failing = false;
  override async batch(ops: readonly StoreOp[]): Promise<void> {
    this.batches++;
    if (this.failing) throw new Error('injected store fault: write refused');
    return super.batch(ops);
  }
}

const spec = (id: string, over: Record<string, unknown> = {}) =>
  jobSpecToProto(normalizeJobSpec({ id, name: id, tasks: [{ name: 't', instances: 1, resources: { cpu: 1, memory: 64 }, command: ['true'] }], ...over }));

describe('master: SubmitJobs (many jobs in one call)', function () {
  this.timeout(20_000);
  let server: MasterServer;
  let store: CountingStore;
  let client: TypedClient<MasterServiceDefinition>;

  beforeEach(async () => {
    store = new CountingStore();
    ({ server, client } = await loopbackMaster(store));
  });

  afterEach(async () => {
    client.close();
    await server.stop();
  });

  it('takes 300 jobs in a few store batches, each acknowledged once durable', async () => {
    const before = store.batches;
    const specs = Array.from({ length: 300 }, (_, i) => spec(`j-${i}`));
    const res = await client.SubmitJobs({ specs });
    expect(res.results).to.have.length(300);
    expect(res.results.every((r, i) => r.jobId === `j-${i}` && r.created && r.errorCode === '')).to.equal(true);
    expect((await store.list('jobs/')).length).to.equal(300);
    // 300 job records in batches of at most 128 operations, not a write per job.
    expect(store.batches - before).to.be.at.most(4);
  });

  it('refuses a bad job alone and finds a repeated id: created once, then already there', async () => {
    await client.SubmitJob({ spec: spec('old') });
    const res = await client.SubmitJobs({
      specs: [spec('a'), spec('bad', { quotaGroup: 'nope' }), spec('a'), spec('old', { priority: 5 }), spec('old'), spec('b')],
    });
    expect(res.results.map((r) => [r.jobId, r.created, r.errorCode])).to.deep.equal([
      ['a', true, ''],
      ['bad', false, 'INVALID_ARGUMENT'],
      ['a', false, ''],
      ['old', false, 'ALREADY_EXISTS'],
      ['old', false, ''],
      ['b', true, ''],
    ]);
    expect(res.results[1]!.errorMessage).to.match(/quotaGroup/);
    expect(res.results[3]!.errorMessage).to.match(/priority/);
    expect((await store.list('jobs/')).map((kv) => kv.key)).to.deep.equal(['jobs/a', 'jobs/b', 'jobs/old']);
  });

  it('a failed write fails the call (UNAVAILABLE); the retried batch creates every job exactly once', async () => {
    store.failing = true;
    let code = '';
    try {
      await client.SubmitJobs({ specs: [spec('x'), spec('y')] });
    } catch (e) {
      code = (e as { code?: string }).code ?? '';
    }
    expect(code).to.equal('UNAVAILABLE');
    store.failing = false;
    let res;
    for (const until = Date.now() + 10_000; ;) {
      try {
        res = await client.SubmitJobs({ specs: [spec('x'), spec('y')] });
        break;
      } catch (e) {
        if (Date.now() > until) throw e;
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    expect(res.results.map((r) => [r.jobId, r.created])).to.deep.equal([
      ['x', true],
      ['y', true],
    ]);
    expect((await store.list('jobs/')).map((kv) => kv.key)).to.deep.equal(['jobs/x', 'jobs/y']);
  });

  it('a job array: members held past maxRunning, listed by array id, admitted as members end', async () => {
    const specs = Array.from({ length: 4 }, (_, i) => ({ ...spec(`arr_${i}`), array: { id: 'arr', index: i, maxRunning: 1 } }));
    await client.SubmitJobs({ specs });
    await client.SubmitJob({ spec: spec('other') });
    const members = async () =>
      (await client.ListJobs({ states: [], arrayId: 'arr' })).jobs.map((j) => [j.jobId, j.amAttempt, j.message.startsWith('held') ? 'held' : j.state]);
    expect(await members()).to.deep.equal([
      ['arr_0', 1, 'JOB_STATE_SUBMITTED'],
      ['arr_1', 0, 'held'],
      ['arr_2', 0, 'held'],
      ['arr_3', 0, 'held'],
    ]);
    await client.KillJob({ jobId: 'arr_0', reason: 'next' });
    expect((await members())[1]).to.deep.equal(['arr_1', 1, 'JOB_STATE_SUBMITTED']);
    // The array survives the store: its members' records hold it.
    expect(JSON.parse((await store.get('jobs/arr_3'))!).spec.array).to.deep.equal({ id: 'arr', index: 3, maxRunning: 1 });
  });

  it('refuses an empty batch and one over the per-call limit, naming the field', async () => {
    for (const specs of [[], Array.from({ length: 1001 }, (_, i) => spec(`z-${i}`))]) {
      let msg = '';
      try {
        await client.SubmitJobs({ specs });
      } catch (e) {
        msg = `${(e as { code?: string }).code}: ${(e as Error).message}`;
      }
      expect(msg).to.match(/^INVALID_ARGUMENT: specs: /);
    }
  });

  describe('dry run', () => {
    const verdicts = (rs: Array<{ jobId: string; created: boolean; errorCode: string; errorMessage: string }>) =>
      rs.map((r) => [r.jobId, r.created, r.errorCode, r.errorMessage]);
    const member = (i: number, arrayId = 'arr') => ({ ...spec(`${arrayId}_${i}`), array: { id: arrayId, index: i, maxRunning: 1 } });

    it('runs every check a real submit runs and writes nothing: the same verdicts, then the real submit takes them', async () => {
      await client.SubmitJob({ spec: spec('old') });
      await client.SubmitJobs({ specs: [member(0)] });
      const stored = async () => (await store.list('jobs/')).map((kv) => `${kv.key}=${kv.value}`);
      const listed = async () => JSON.stringify((await client.ListJobs({ states: [], arrayId: '', limit: 0, after: '' })).jobs);
      const [storedBefore, listedBefore, batchesBefore] = [await stored(), await listed(), store.batches];
      const specs = [
        spec('a'),
        spec('bad', { quotaGroup: 'nope' }),
        spec('arr'), // the id of job array arr
        member(0, 'old'), // an array with the id of job old
        spec('old'),
        spec('old', { priority: 5 }),
        member(1),
        spec('a'),
      ];
      const dry = await client.SubmitJobs({ specs, dryRun: true });
      expect(dry.dryRun).to.equal(true);
      expect(dry.results.map((r) => [r.jobId, r.created, r.errorCode])).to.deep.equal([
        ['a', true, ''],
        ['bad', false, 'INVALID_ARGUMENT'],
        ['arr', false, 'ALREADY_EXISTS'],
        ['old_0', false, 'ALREADY_EXISTS'],
        ['old', false, ''],
        ['old', false, 'ALREADY_EXISTS'],
        ['arr_1', true, ''],
        ['a', false, ''],
      ]);
      expect(dry.results[2]!.errorMessage).to.match(/^job array "arr" already exists/);
      expect(dry.results[3]!.errorMessage).to.match(/^job "old" already exists/);
      expect(await stored()).to.deep.equal(storedBefore);
      expect(store.batches).to.equal(batchesBefore);
      expect(await listed()).to.equal(listedBefore);
      const real = await client.SubmitJobs({ specs });
      expect(real.dryRun).to.equal(false);
      expect(verdicts(real.results)).to.deep.equal(verdicts(dry.results));
      expect((await store.list('jobs/')).map((kv) => kv.key)).to.deep.equal(['jobs/a', 'jobs/arr_0', 'jobs/arr_1', 'jobs/old']);
    });

    it("answers a job without an id with job_id '' (the real submit makes another) and takes nothing from the submit rate", async () => {
      client.close();
      await server.stop();
      store = new CountingStore();
      ({ server, client } = await loopbackMaster(store, { submitRatePerSec: 0.001, submitBurst: 2 }));
      const specs = [spec('', { name: 'anon' }), spec('r1'), spec('r2')];
      for (let i = 0; i < 3; i++) {
        const dry = await client.SubmitJobs({ specs, dryRun: true });
        expect(dry.results.map((r) => [r.jobId, r.created, r.errorCode])).to.deep.equal([
          ['', true, ''],
          ['r1', true, ''],
          ['r2', true, ''],
        ]);
      }
      expect((await rpcError(client.SubmitJobs({ specs }))).code).to.equal('RESOURCE_EXHAUSTED');
      const real = await client.SubmitJobs({ specs: specs.slice(1) });
      expect(real.results.map((r) => r.created)).to.deep.equal([true, true]);
      expect((await store.list('jobs/')).map((kv) => kv.key)).to.deep.equal(['jobs/r1', 'jobs/r2']);
    });
  });
});
