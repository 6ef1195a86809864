import { expect } from 'chai';
import { FuxiError, InvalidArgumentError, normalizeJobSpec, type JobSpec } from '@fuxi/common';
import { RpcError } from '@fuxi/rpc';
import { FuxiClient } from '../sdk/fuxi-client.js';
import { FakeAgent, FakeAm, FakeMaster } from './fake-cluster.js';
import { mockJob, mockNode } from './helpers.js';

function spec(over: Record<string, unknown> = {}): JobSpec {
  return normalizeJobSpec({ name: 'wordcount', tasks: [{ name: 'map', instances: 2, resources: { cpu: 0.5, memory: 256 }, command: 'true' }], ...over });
}

async function rejects(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (e) {
    return e as Error;
  }
  expect.fail('expected a rejection');
}

describe('FuxiClient (against a fake master)', function () {
  this.timeout(20_000);
  let master: FakeMaster;
  let agents: FakeAgent[];
  let client: FuxiClient;

  beforeEach(async () => {
    master = await new FakeMaster().start();
    agents = [await new FakeAgent().start(), await new FakeAgent().start()];
    client = new FuxiClient({ masters: [master.address], insecure: true, retryForMs: 3000 });
  });

  afterEach(async () => {
    client.close();
    await master.stop();
    for (const a of agents) await a.stop();
  });

  it('submitMany: splits 2,500 jobs into calls of at most 1,000, keeps order, reports each job on its own', async () => {
    const mk = (name: string, id = '') => ({
      ...normalizeJobSpec({ name, tasks: [{ name: 't', instances: 1, resources: { cpu: 1, memory: 64 }, command: ['true'] }] }),
      jobId: id,
    });
    const specs = Array.from({ length: 2500 }, (_, i) => mk(`n${i}`, `id-${i}`));
    specs[7] = mk('refuse-me', 'id-7');
    specs[9] = { ...mk('broken', 'id-9'), tasks: [] };
    specs[11] = mk('no-id');
    const res = await client.submitMany(specs);
    expect(master.batches).to.deep.equal([1000, 1000, 499]);
    expect(res).to.have.length(2500);
    expect(res[0]).to.deep.equal({ jobId: 'id-0', created: true });
    expect(res[7]?.error?.code).to.equal('INVALID_ARGUMENT');
    expect(res[9]?.error?.message).to.match(/tasks/); // refused here, not sent
    expect(res[11]?.jobId).to.match(/^no-id-/);
    expect(res[2499]).to.deep.equal({ jobId: 'id-2499', created: true });
    // Idempotent: the same batch again finds every job.
    const again = await client.submitMany(specs.slice(0, 5));
    expect(again.map((r) => r.created)).to.deep.equal([false, false, false, false, false]);
  });

  it('submitMany dryRun: the same calls as the submit, every verdict, nothing taken; a master without dry runs is FAILED_PRECONDITION', async () => {
    const mk = (name: string, id: string, over: Record<string, unknown> = {}) => ({
      ...normalizeJobSpec({ name, tasks: [{ name: 't', instances: 1, resources: { cpu: 1, memory: 64 }, command: ['true'] }], ...over }),
      jobId: id,
    });
    const specs = Array.from({ length: 2500 }, (_, i) => mk(`n${i}`, `dry-${i}`));
    specs[5] = mk('n5', 'dry-5', { quotaGroup: 'nope' });
    specs[6] = { ...mk('broken', 'dry-6'), tasks: [] };
    const checked = await client.submitMany(specs, { dryRun: true });
    expect(master.dryRunBatches).to.deep.equal([1000, 1000, 499]);
    expect(master.batches).to.deep.equal([]);
    expect(master.jobs.size).to.equal(0);
    expect(checked[0]).to.deep.equal({ jobId: 'dry-0', created: true });
    expect(checked[5]?.error?.message).to.match(/unknown quota group "nope"/);
    expect(checked[6]?.error?.message).to.match(/tasks/); // refused here, not sent
    master.knowsDryRun = false;
    const err = await rejects(client.submitMany(specs.slice(0, 3), { dryRun: true }));
    expect((err as FuxiError).code).to.equal('FAILED_PRECONDITION');
    expect(err.message).to.match(/does not know dry runs .*the 3 jobs sent to be checked were submitted \(dry-0, dry-1, dry-2\)/);
  });

  it('submitMany: a batch refused for the submit rate is sent again after its retry-after', async () => {
    const specs = Array.from({ length: 3 }, (_, i) => ({ ...spec(), jobId: `paced-${i}` }));
    master.rateRefusals = 2;
    const t0 = Date.now();
    const res = await client.submitMany(specs);
    expect(Date.now() - t0).to.be.at.least(150); // two waits of 80 ms
    expect(master.batches).to.deep.equal([3]); // the refused calls took nothing
    expect(res.map((r) => r.created)).to.deep.equal([true, true, true]);
  });

  it('submitMany: a batch larger than the whole submit burst (no wait helps) is sent in halves, in order', async () => {
    const specs = Array.from({ length: 10 }, (_, i) => ({ ...spec(), jobId: `halves-${i}` }));
    master.submitBurst = 3;
    try {
      const res = await client.submitMany(specs);
      expect(res.map((r) => r.jobId)).to.deep.equal(specs.map((x) => x.jobId));
      expect(res.every((r) => r.created)).to.equal(true);
      expect(master.batches).to.deep.equal([3, 2, 3, 2]); // 10 -> 5 + 5 -> 3 + 2, 3 + 2
    } finally {
      master.submitBurst = Infinity;
    }
  });

  it('submitArray: one member per index with its id, environment and array fields', async () => {
    const seen: unknown[] = [];
    const orig = client.submitMany.bind(client);
    client.submitMany = async (specs) => {
      seen.push(...specs.map((x) => ({ id: x.jobId, env: x.env, array: x.array })));
      return orig(specs);
    };
    const spec = {
      ...normalizeJobSpec({ name: 'sweep', tasks: [{ name: 't', instances: 1, resources: { cpu: 1, memory: 64 }, command: ['true'] }] }),
      jobId: 'sw',
    };
    const { arrayId, results } = await client.submitArray(spec, { indices: [0, 1, 7], maxRunning: 2 });
    expect(arrayId).to.equal('sw');
    expect(results.map((r) => r.jobId)).to.deep.equal(['sw_0', 'sw_1', 'sw_7']);
    expect(seen[2]).to.deep.equal({ id: 'sw_7', env: { FUXI_ARRAY_ID: 'sw', FUXI_ARRAY_INDEX: '7' }, array: { id: 'sw', index: 7, maxRunning: 2 } });
  });

  it('submits with a client-made id and gets the job', async () => {
    const res = await client.submit(spec());
    expect(res.created).to.equal(true);
    expect(res.jobId).to.match(/^wordcount-[0-9a-f]{12}$/);
    const job = await client.get(res.jobId);
    expect(job.name).to.equal('wordcount');
    expect(job.state).to.equal('JOB_STATE_SUBMITTED');
    expect(job.tasks).to.deep.equal([
      { name: 'map', total: 2, pending: 2, running: 0, succeeded: 0, failed: 0, retries: 0, reexecutions: 0, progress: 0, backups: 0 },
    ]);
  });

  it('makes a resubmit with the same id idempotent', async () => {
    const a = await client.submit(spec({ id: 'wc-1' }));
    const b = await client.submit(spec({ id: 'wc-1' }));
    expect(a).to.deep.equal({ jobId: 'wc-1', created: true });
    expect(b).to.deep.equal({ jobId: 'wc-1', created: false });
  });

  it('retries a submit whose reply was lost, under the same id', async () => {
    master.loseSubmitReplies = 1;
    const res = await client.submit(spec());
    expect(res.created).to.equal(false); // the first attempt created it
    expect(master.jobs.size).to.equal(1);
    expect(master.calls.filter((c) => c === 'SubmitJob')).to.have.length(2);
  });

  it('validates locally before calling the master', async () => {
    const bad = { ...spec(), tasks: [{ ...spec().tasks[0]!, resource: { cpuMilli: -1000, memoryMb: 1 } }] };
    const e = await rejects(client.submit(bad));
    expect(e).to.be.instanceOf(InvalidArgumentError);
    expect(e.message).to.equal('tasks[0].resources.cpu: must be greater than 0, got -1');
    expect(master.calls).to.deep.equal([]);
  });

  it('reports NOT_FOUND for an unknown job', async () => {
    const e = await rejects(client.get('nope'));
    expect(e).to.be.instanceOf(RpcError);
    expect((e as RpcError).code).to.equal('NOT_FOUND');
  });

  it('lists by state and kills', async () => {
    await client.submit(spec({ id: 'a' }));
    await client.submit(spec({ id: 'b' }));
    master.update('b', { state: 'JOB_STATE_RUNNING' });
    expect((await client.list()).map((j) => j.jobId)).to.deep.equal(['a', 'b']);
    expect((await client.list({ states: ['JOB_STATE_RUNNING'] })).map((j) => j.jobId)).to.deep.equal(['b']);
    const killed = await client.kill('b', 'oops');
    expect(killed.state).to.equal('JOB_STATE_KILLED');
    expect(killed.message).to.equal('killed: oops');
  });

  it('watches until the job is terminal', async () => {
    const { jobId } = await client.submit(spec());
    const seen: string[] = [];
    const done = client.waitFor(jobId, (j) => seen.push(j.state));
    await new Promise((r) => setTimeout(r, 200));
    master.update(jobId, { state: 'JOB_STATE_RUNNING' });
    master.update(jobId, {
      state: 'JOB_STATE_RUNNING',
      tasks: [{ name: 'map', total: 2, pending: 0, running: 1, succeeded: 1, failed: 0, retries: 0, reexecutions: 0, progress: 0, backups: 0 }],
    });
    master.update(jobId, { state: 'JOB_STATE_SUCCEEDED' });
    const final = await done;
    expect(final.state).to.equal('JOB_STATE_SUCCEEDED');
    expect(seen).to.deep.equal(['JOB_STATE_SUBMITTED', 'JOB_STATE_RUNNING', 'JOB_STATE_RUNNING', 'JOB_STATE_SUCCEEDED']);
  });

  it('returns at once for a finished job', async () => {
    const { jobId } = await client.submit(spec());
    master.update(jobId, { state: 'JOB_STATE_FAILED', message: 'map/1 failed 3 times' });
    const final = await client.waitFor(jobId);
    expect(final.message).to.equal('map/1 failed 3 times');
  });

  it('reconnects the watch on UNAVAILABLE', async () => {
    const { jobId } = await client.submit(spec());
    master.failWatches = 2;
    const done = client.waitFor(jobId);
    await new Promise((r) => setTimeout(r, 600));
    master.update(jobId, { state: 'JOB_STATE_SUCCEEDED' });
    expect((await done).state).to.equal('JOB_STATE_SUCCEEDED');
    expect(master.calls.filter((c) => c === 'WatchJob').length).to.be.at.least(3);
  });

  it('reads logs from the node that has them', async () => {
    master.nodes = [mockNode('dead', '127.0.0.1:1'), mockNode('n1', agents[0]!.address), mockNode('n2', agents[1]!.address)];
    agents[1]!.logs.set('wc/map/3/stderr/0', ['hello ', 'world\n']);
    const chunks: Buffer[] = [];
    for await (const c of client.logs('wc', 'map', 3, { stream: 'stderr' })) chunks.push(c);
    expect(Buffer.concat(chunks).toString()).to.equal('hello world\n');
    expect(agents[0]!.reads).to.equal(1);
  });

  it('passes the attempt through', async () => {
    master.nodes = [mockNode('n1', agents[0]!.address)];
    agents[0]!.logs.set('wc/map/0/stdout/2', ['second try']);
    const chunks: Buffer[] = [];
    for await (const c of client.logs('wc', 'map', 0, { attempt: 2 })) chunks.push(c);
    expect(Buffer.concat(chunks).toString()).to.equal('second try');
  });

  it('keeps a quiet stream from a connected node', async () => {
    const c = new FuxiClient({ masters: [master.address], insecure: true, logProbeMs: 100 });
    try {
      master.nodes = [mockNode('n1', agents[0]!.address), mockNode('n2', agents[1]!.address)];
      agents[0]!.logs.set('wc/map/0/stdout/0', ['late']);
      agents[0]!.quietMs = 400;
      const chunks: Buffer[] = [];
      for await (const chunk of c.logs('wc', 'map', 0, { follow: true })) chunks.push(chunk);
      expect(Buffer.concat(chunks).toString()).to.equal('late');
      expect(agents[1]!.reads).to.equal(0);
    } finally {
      c.close();
    }
  });

  it('treats an empty log as found', async () => {
    master.nodes = [mockNode('n1', agents[0]!.address), mockNode('n2', agents[1]!.address)];
    agents[0]!.logs.set('wc/map/0/stdout/0', []);
    const chunks: Buffer[] = [];
    for await (const c of client.logs('wc', 'map', 0)) chunks.push(c);
    expect(chunks).to.deep.equal([]);
    expect(agents[1]!.reads).to.equal(0);
  });

  it('reports NOT_FOUND when no node has the log', async () => {
    master.nodes = [mockNode('n1', agents[0]!.address), mockNode('dead', '127.0.0.1:1', { healthy: false })];
    const e = await rejects(
      (async () => {
        for await (const _ of client.logs('wc', 'map', 9)) void _;
      })(),
    );
    expect(e).to.be.instanceOf(FuxiError);
    expect((e as FuxiError).code).to.equal('NOT_FOUND');
    expect(e.message).to.equal('log of wc/map/9 (stdout) not found on any node; unreachable nodes: dead');
  });

  const readAll = async (it: AsyncIterable<Buffer>): Promise<string> => {
    const chunks: Buffer[] = [];
    for await (const c of it) chunks.push(c);
    return Buffer.concat(chunks).toString();
  };
  const entry = (task: string, instance: number, attempt: number, nodeId: string, nodeAddress = '') =>
    JSON.stringify({
      task,
      instance,
      attempt,
      nodeId,
      workerId: `${task}.${instance}.${attempt}`,
      state: 'succeeded',
      ...(nodeAddress ? { nodeAddress } : {}),
    });

  it("reads a finished job's log only from the node its snapshot log names", async () => {
    master.jobs.set('wc', mockJob({ jobId: 'wc', state: 'JOB_STATE_SUCCEEDED' }));
    master.snapshots.set('wc', [entry('map', 3, 1, 'n1'), entry('map', 3, 2, 'n2'), entry('map', 4, 1, 'n1')]);
    master.nodes = [mockNode('n1', agents[0]!.address), mockNode('n2', agents[1]!.address)];
    agents[0]!.logs.set('wc/map/3/stdout/0', ['not this one']);
    agents[1]!.logs.set('wc/map/3/stdout/0', ['attempt 2\n']);
    expect(await readAll(client.logs('wc', 'map', 3))).to.equal('attempt 2\n');
    expect([agents[0]!.reads, agents[1]!.reads]).to.deep.equal([0, 1]);
    agents[0]!.logs.set('wc/map/3/stdout/1', ['attempt 1\n']);
    expect(await readAll(client.logs('wc', 'map', 3, { attempt: 1 }))).to.equal('attempt 1\n');
    expect(await client.locateWorker('wc', 'map', 4)).to.deep.equal({ nodeId: 'n1', address: '', attempt: 1 });
  });

  it("asks a running job's AM where a worker runs, and the AM's node for the AM's own log", async () => {
    const am = await new FakeAm().start();
    try {
      master.jobs.set('wc', mockJob({ jobId: 'wc', state: 'JOB_STATE_RUNNING', amAddress: am.address, amNodeId: 'n2', amAttempt: 1 }));
      am.workers = [
        { workerId: 'map.0.2', appId: 'wc', suId: 'map', task: 'map', instance: 0, attempt: 2, nodeId: 'n1', state: 'WORKER_STATE_RUNNING' } as never,
      ];
      master.nodes = [mockNode('n2', agents[1]!.address), mockNode('n1', agents[0]!.address)];
      agents[0]!.logs.set('wc/map/0/stdout/0', ['running\n']);
      agents[1]!.logs.set('wc/__am__/0/stdout/0', ['am\n']);
      expect(await readAll(client.logs('wc', 'map', 0))).to.equal('running\n');
      expect(await readAll(client.logs('wc', '__am__', 0))).to.equal('am\n');
      expect([agents[0]!.reads, agents[1]!.reads, am.asked]).to.deep.equal([1, 1, 1]);
    } finally {
      await am.stop();
    }
  });

  it('names the node that ran the instance when it is gone, unreachable or no longer has the log', async () => {
    master.jobs.set('wc', mockJob({ jobId: 'wc', state: 'JOB_STATE_FAILED' }));
    master.snapshots.set('wc', [entry('map', 0, 1, 'gone'), entry('map', 1, 1, 'dead', '127.0.0.1:1'), entry('map', 2, 1, 'n1')]);
    master.nodes = [mockNode('n1', agents[0]!.address), mockNode('n2', agents[1]!.address)];
    agents[1]!.logs.set('wc/map/0/stdout/0', ['elsewhere']);
    const fail = (instance: number) => rejects(readAll(client.logs('wc', 'map', instance)));
    const gone = (await fail(0)) as FuxiError;
    expect([gone.code, gone.message]).to.deep.equal([
      'NOT_FOUND',
      'log of wc/map/0 (stdout): it ran on node gone (attempt 1), which is no longer in the cluster',
    ]);
    const dead = (await fail(1)) as FuxiError;
    expect(dead.code).to.equal('UNAVAILABLE');
    expect(dead.message).to.equal('log of wc/map/1 (stdout): it ran on node dead (attempt 1), whose agent at 127.0.0.1:1 does not answer');
    const deleted = (await fail(2)) as FuxiError;
    expect(deleted.code).to.equal('NOT_FOUND');
    expect(deleted.message).to.match(/^log of wc\/map\/2 \(stdout\): it ran on node n1 \(attempt 1\), whose agent at .* no longer has it/);
    expect(agents[1]!.reads).to.equal(0);
  });

  it('reports UNAVAILABLE when no master answers', async () => {
    const c = new FuxiClient({ masters: ['127.0.0.1:1'], insecure: true, retryForMs: 300 });
    try {
      const e = await rejects(c.get('x'));
      expect((e as RpcError).code).to.equal('UNAVAILABLE');
    } finally {
      c.close();
    }
  });
});
