/**
 * The AM shell across its own failover (attempt 2 resumes from the snapshot and adopts the workers
 * the agents list) and across agent timing failures, against a fake master and fake agents on
 * loopback (port 0).
 */
import { expect } from 'chai';
import { nullLogger, validateJobSpec } from '@fuxi/common';
import { loadFuxiProto, type JobSpec, type WorkerStatus } from '@fuxi/proto';
import { connect, jobSpecFromProto } from '@fuxi/rpc';
import { decodeEntry, encodeEntry, encodeTopology } from '../../core/snapshot.js';
import { AppMaster } from '../app-master.js';
import { FakeAgent, FakeMaster, wireJob } from './fakes.js';

async function waitFor(cond: () => boolean, ms = 10_000, what = 'condition'): Promise<void> {
  const until = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** Every map entry reached the master before the request for reduce did (one FIFO queue). */
function expectMapsSavedBeforeReduce(m: FakeMaster): void {
  const nth = (name: string, k: number) => m.calls.map((c, i) => [c, i] as const).filter(([c]) => c === name)[k]?.[1] ?? -1;
  const reduceRequest = nth(
    'UpdateRequests',
    m.requests.findIndex((r) => r.deltas.some((d) => d.suId === 'reduce' && d.delta > 0)),
  );
  let mapEntries = 0;
  const lastMapSave = nth(
    'SaveAppSnapshot',
    m.snapshotCalls.findIndex((c) => (mapEntries += c.entries.filter((e) => decodeEntry(e)?.task === 'map').length) === 4),
  );
  expect(lastMapSave).to.be.greaterThan(-1);
  expect(reduceRequest).to.be.greaterThan(lastMapSave);
}

/** A worker of AM attempt 1 as an agent lists it. */
function earlier(workerId: string, nodeId: string, state: WorkerStatus['state']): WorkerStatus {
  const [task, instance, attempt] = workerId.split('.');
  return { workerId, appId: 'app-1', suId: task, task, instance: Number(instance), attempt: Number(attempt), amAttempt: 1, nodeId, state, pid: 4242 };
}

describe('AppMaster shell: AM failover and agent timing failures (fake master and agents on loopback)', function () {
  this.timeout(30_000);
  let master: FakeMaster | undefined;
  let agents: FakeAgent[] = [];

  async function cluster(spec: JobSpec): Promise<FakeMaster> {
    agents = await Promise.all(['n1', 'n2'].map((id) => new FakeAgent(id).start()));
    master = await new FakeMaster(spec, agents).start();
    for (const a of agents) a.master = master;
    return master;
  }

  const am = (m: FakeMaster, amAttempt: number, snapshotDelayMs?: number) =>
    new AppMaster({
      masters: [m.address],
      appId: 'app-1',
      amAttempt,
      nodeId: 'n1',
      log: nullLogger,
      deadlineMs: 3000,
      pollMs: 50,
      adoptWaitMs: 2000,
      ...(snapshotDelayMs !== undefined ? { snapshotDelayMs } : {}),
    });
  const plans = () => agents.flatMap((x) => x.plans);
  const entries = (m: FakeMaster) => m.snapshot.entries.map((e) => decodeEntry(e)!);

  afterEach(async () => {
    await master?.stop();
    await Promise.all(agents.map((a) => a.stop()));
    master = undefined;
    agents = [];
  });

  it('attempt 1 writes the topology once, with the first entries, and logs every instance that finished before the last step', async () => {
    const spec = wireJob();
    const m = await cluster(spec);
    expect((await am(m, 1).run()).succeeded).to.equal(true);
    expect(m.snapshot.topology).to.equal(encodeTopology(validateJobSpec(jobSpecFromProto(spec))));
    expect(m.snapshotCalls.filter((c) => c.topology !== '')).to.have.length(1);
    expect(m.snapshotCalls[0]?.topology).to.not.equal('');
    expect(m.snapshotCalls.every((c) => c.entries.length > 0)).to.equal(true);
    // The last step's entries (the reduce that ended the job) are not sent: FinishApp ends the app
    // and the master deletes its snapshot. Every map finished before reduce was asked for.
    const logged = entries(m).map((e) => `${e.workerId}:${e.state}`);
    expect(new Set(logged).size).to.equal(logged.length);
    expect(logged.filter((w) => w.startsWith('map')).sort()).to.deep.equal(['map.0.1', 'map.1.1', 'map.2.1', 'map.3.1'].map((w) => `${w}:succeeded`));
    expect(logged.filter((w) => w.startsWith('reduce')).length).to.be.lessThan(2);
    const seqs = m.snapshotCalls.map((c) => Number(c.seq));
    expect(seqs).to.deep.equal(seqs.map((_, i) => i + 1));
    expectMapsSavedBeforeReduce(m);
  });

  it('snapshot entries wait for others (snapshotDelayMs), yet reach the master before the request that follows from them', async () => {
    const spec = wireJob(); // map x4 -> reduce x2
    const m = await cluster(spec);
    // A wait far past the job's length: only the calls that follow the entries can carry them out.
    expect((await am(m, 1, 60_000).run()).succeeded).to.equal(true);
    const maps = entries(m).filter((e) => e.task === 'map');
    expect(maps.map((e) => `${e.workerId}:${e.state}`).sort()).to.deep.equal(['map.0.1', 'map.1.1', 'map.2.1', 'map.3.1'].map((w) => `${w}:succeeded`));
    expectMapsSavedBeforeReduce(m);
  });

  it('attempt 2 adopts a running worker that ListWorkers reports and finishes the job without starting it again', async () => {
    const spec = wireJob(); // map x4 -> reduce x2
    const m = await cluster(spec);
    const [n1, n2] = agents as [FakeAgent, FakeAgent];
    // What attempt 1 left: map.0 and map.1 logged done; map.2.1 still running on n1; map.3.1 failed
    // on n2 while no AM was there; one map slot on each node.
    m.snapshot.topology = encodeTopology(validateJobSpec(jobSpecFromProto(spec)));
    for (const i of [0, 1])
      m.snapshot.entries.push(encodeEntry({ task: 'map', instance: i, attempt: 1, nodeId: 'n1', workerId: `map.${i}.1`, state: 'succeeded' }));
    m.asgn.set('map|n1', 1);
    m.asgn.set('map|n2', 1);
    m.seq = 3;
    n1.listed.push(earlier('map.2.1', 'n1', 'WORKER_STATE_RUNNING'));
    n2.listed.push(earlier('map.3.1', 'n2', 'WORKER_STATE_FAILED'));

    const a = am(m, 2);
    const running = a.run();
    await waitFor(() => plans().some((p) => p.workerId === 'map.3.2'), 10_000, 'the failed instance retried');
    // map.2.1 ends; its agent still sends events to the dead AM: attempt 2 learns it by polling.
    const pollsBefore = n1.listCalls;
    n1.finishListed('map.2.1', 'WORKER_STATE_SUCCEEDED');
    const result = await running;

    expect(result).to.deep.equal({ succeeded: true, message: '2 tasks succeeded' });
    expect(m.registered).to.deep.equal([2]);
    expect(m.calls.indexOf('GetAppSnapshot')).to.be.lessThan(m.calls.indexOf('RegisterApp'));
    expect(n1.listCalls).to.be.greaterThan(pollsBefore);
    // Nothing done or running was started again; the failed instance got a higher attempt number.
    expect(
      plans()
        .map((p) => p.workerId)
        .sort(),
    ).to.deep.equal(['map.3.2', 'reduce.0.1', 'reduce.1.1']);
    expect(agents.flatMap((x) => x.started).every((s) => s.amAttempt === 2 && s.amAddress === a.address)).to.equal(true);
    expect(agents.flatMap((x) => x.stopped)).to.deep.equal([]);
    expect(m.finished).to.deep.include({ amAttempt: 2, succeeded: true });
    expect(m.finished?.progress.map((p) => [p.name, p.succeeded, p.retries])).to.deep.equal([
      ['map', 4, 1],
      ['reduce', 2, 0],
    ]);
    // The log now holds every map instance once (the last step's reduce entries go unsent: the
    // job ended with them); attempt 2 did not rewrite the topology.
    expect(
      entries(m)
        .map((e) => e.workerId)
        .filter((w) => w.startsWith('map'))
        .sort(),
    ).to.deep.equal(['map.0.1', 'map.1.1', 'map.2.1', 'map.3.2']);
    expect(entries(m).filter((e) => e.task === 'reduce').length).to.be.lessThan(2);
    expect(entries(m).find((e) => e.workerId === 'map.2.1')).to.deep.include({ nodeId: 'n1', state: 'succeeded' });
    expect(m.snapshotCalls.every((c) => c.amAttempt === 2 && c.topology === '')).to.equal(true);
    expect([...m.asgn.values()].every((n) => n === 0)).to.equal(true);
    expect(agents.flatMap((x) => x.violations)).to.deep.equal([]);
  });

  it('attempt 2 takes the events an agent pushes for an adopted worker', async () => {
    const spec = wireJob({ tasks: [wireJob().tasks![0]!] });
    const m = await cluster(spec);
    const [n1] = agents as [FakeAgent, FakeAgent];
    m.asgn.set('map|n1', 4);
    for (const i of [0, 1, 2, 3]) n1.listed.push(earlier(`map.${i}.1`, 'n1', 'WORKER_STATE_RUNNING'));
    const a = new AppMaster({ masters: [m.address], appId: 'app-1', amAttempt: 2, log: nullLogger, deadlineMs: 3000, pollMs: 60_000 });
    const running = a.run();
    await waitFor(() => m.calls.includes('UpdateRequests'), 10_000, 'the AM to start');
    n1.amAddress = a.address; // the agent learned the new AM's address
    for (const i of [0, 1, 2, 3]) n1.finishListed(`map.${i}.1`, 'WORKER_STATE_SUCCEEDED', true);
    expect((await running).succeeded).to.equal(true);
    expect(plans()).to.deep.equal([]);
    expect(m.finished?.progress.map((p) => [p.name, p.succeeded])).to.deep.equal([['map', 4]]);
    // No snapshot existed: attempt 2 writes the topology with its first entries (those of the last
    // step are not sent: FinishApp ends the app).
    expect(entries(m).length).to.be.lessThan(4);
    if (entries(m).length > 0) expect(m.snapshot.topology).to.not.equal('');
    expect(m.snapshotCalls.filter((c) => c.topology !== '').length).to.be.at.most(1);
  });

  it('stops (run() rejects) when agents fence it off as a stale attempt, logging no failure', async () => {
    const m = await cluster(wireJob({}, 1));
    for (const x of agents) x.minAmAttempt = 2;
    let err: unknown;
    await am(m, 1)
      .run()
      .catch((e) => (err = e));
    expect(String(err)).to.match(/superseded by a newer application master attempt/);
    expect(m.finished).to.equal(undefined);
    expect(entries(m).filter((e) => e.state === 'failed')).to.deep.equal([]);
  });

  it('re-runs the instances of a timing-out agent elsewhere (rerun, 0 ms) and stops the old worker', async () => {
    const spec = wireJob({ tasks: [{ ...wireJob().tasks![0]!, instances: 2 }], onAgentTimeout: 'rerun', rerunAfterMs: 0 });
    const m = await cluster(spec);
    const [n1, n2] = agents as [FakeAgent, FakeAgent];
    n1.runMs = 1500;
    n2.runMs = 1500;
    const a = am(m, 1);
    const running = a.run();
    await waitFor(() => plans().length === 2, 10_000, 'map planned');
    const onN1 = n1.plans[0]!.workerId;
    n2.runMs = 5;
    const c = connect(loadFuxiProto().AppMasterService, a.address);
    await c.AgentsTimedOut({ epoch: m.epoch, nodeIds: ['n1'] });
    c.close();
    const result = await running;
    expect(result.succeeded).to.equal(true);
    expect(n1.stopped).to.include(onN1);
    const rerun = onN1.replace(/\.1$/, '.2');
    expect(n2.plans.map((p) => p.workerId)).to.include(rerun);
    expect(n1.plans.map((p) => p.workerId)).to.not.include(rerun);
    expect(m.finished?.progress[0]).to.deep.include({ succeeded: 2, retries: 0 });
  });

  it('waits for a timing-out agent (wait) and loses nothing', async () => {
    const spec = wireJob({ tasks: [{ ...wireJob().tasks![0]!, instances: 2 }], onAgentTimeout: 'wait', rerunAfterMs: 0 });
    const m = await cluster(spec);
    for (const x of agents) x.runMs = 400;
    const a = am(m, 1);
    const running = a.run();
    await waitFor(() => plans().length === 2, 10_000, 'map planned');
    const c = connect(loadFuxiProto().AppMasterService, a.address);
    await c.AgentsTimedOut({ epoch: m.epoch, nodeIds: ['n1', 'n2'] });
    await c.AgentsTimedOut({ epoch: m.epoch, nodeIds: [], recoveredNodeIds: ['n1', 'n2'] });
    c.close();
    expect((await running).succeeded).to.equal(true);
    expect(plans()).to.have.length(2);
    expect(agents.flatMap((x) => x.stopped)).to.deep.equal([]);
  });
});
