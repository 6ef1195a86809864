/**
 * The AM shell across master failovers, against fake masters and agents on loopback (port 0).
 */
import { expect } from 'chai';
import { nullLogger } from '@fuxi/common';
import { loadFuxiProto, type JobSpec, type TaskSpec } from '@fuxi/proto';
import { connect, RpcError } from '@fuxi/rpc';
import { AppMaster } from '../app-master.js';
import { FakeAgent, FakeMaster, wireJob } from './fakes.js';

async function waitFor(cond: () => boolean, ms = 10_000, what = 'condition'): Promise<void> {
  const until = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function rpcError(p: Promise<unknown>): Promise<RpcError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof RpcError) return e;
    throw e;
  }
  throw new Error('expected the call to fail');
}

/** map x2 -> reduce x2 -> final x1. */
function threeStages(): JobSpec {
  const base = wireJob().tasks![0]!;
  const task = (name: string, instances: number, dependsOn: string[]): TaskSpec => ({ ...base, name, instances, dependsOn });
  return wireJob({ tasks: [task('map', 2, []), task('reduce', 2, ['map']), task('final', 1, ['reduce'])] });
}

describe('AppMaster shell across master failovers (fake masters and agents on loopback)', function () {
  this.timeout(30_000);
  const proto = loadFuxiProto();
  let masters: FakeMaster[] = [];
  let agents: FakeAgent[] = [];

  async function cluster(spec: JobSpec, n = 1): Promise<FakeMaster[]> {
    agents = await Promise.all(['n1', 'n2'].map((id) => new FakeAgent(id).start()));
    masters = await Promise.all(Array.from({ length: n }, () => new FakeMaster(spec, agents).start()));
    for (const a of agents) a.master = masters[0];
    return masters;
  }

  /** Every AM a test made: stopped after it, whatever happened (a live one keeps retrying its master). */
  const ams: AppMaster[] = [];
  const am = (ms: FakeMaster[]) => {
    const a = new AppMaster({ masters: ms.map((m) => m.address), appId: 'app-1', amAttempt: 1, nodeId: 'n1', log: nullLogger, deadlineMs: 3000 });
    ams.push(a);
    return a;
  };
  const plans = (task?: string) => agents.flatMap((x) => x.plans).filter((p) => !task || p.task === task);
  /** UpdateRequests a master received after its first ReportAppState. */
  const afterReport = (m: FakeMaster) => m.requests.slice(m.calls.slice(0, m.calls.indexOf('ReportAppState')).filter((c) => c === 'UpdateRequests').length);

  afterEach(async () => {
    await Promise.all(ams.splice(0).map((a) => a.stop().catch(() => undefined)));
    await Promise.all(masters.map((m) => m.stop()));
    await Promise.all(agents.map((a) => a.stop()));
    masters = [];
    agents = [];
  });

  it('rides out the death of its master: reports its state to the next one, then carries on there', async () => {
    const [m1, m2] = await cluster(wireJob(), 2);
    for (const x of agents) x.runMs = 300;
    const a = am([m1!, m2!]);
    const running = a.run();
    await waitFor(() => plans('map').length === 4, 10_000, 'map planned');
    const lastSeqAtM1 = Math.max(...m1!.requests.map((r) => Number(r.seq)));
    // m2 takes over with the assignment table rebuilt from the agents, and epoch 2.
    m2!.becomeNewLeader('2', m1!.asgn);
    for (const x of agents) x.master = m2;
    await m1!.stop();

    const result = await running;
    expect(result).to.deep.equal({ succeeded: true, message: '2 tasks succeeded' });
    expect(m2!.finished?.succeeded).to.equal(true);
    expect(a.masterEpoch).to.equal('2');
    // The first call that reached m2 was answered "report your state": the report came next.
    expect(m2!.calls.slice(0, 2)).to.deep.equal(['UpdateRequests', 'ReportAppState']);
    expect(m2!.reports).to.have.length(1);
    const rep = m2!.reports[0]!;
    expect([rep.appId, rep.amAttempt, rep.address]).to.deep.equal(['app-1', 1, a.address]);
    expect(rep.units.map((u) => [u.suId, u.resource?.cpuMilli])).to.deep.equal([['map', 100]]);
    expect(rep.assignments.length).to.be.greaterThan(0);
    expect(rep.assignments.every((x) => x.suId === 'map' && x.slots > 0 && x.nodeAddress !== '')).to.equal(true);
    // Request seqs go on from where m1 left them (a retried one may repeat its seq once).
    const seqs = m2!.requests.map((r) => Number(r.seq));
    expect(seqs[0]).to.be.at.least(lastSeqAtM1);
    expect(seqs.slice(1).every((q, i) => q > seqs[i]!)).to.equal(true);
    expect(afterReport(m2!).some((r) => r.deltas.some((d) => d.suId === 'reduce' && d.delta > 0))).to.equal(true);
    expect(m2!.placed.get('reduce')).to.equal(2);
    expect(agents.flatMap((x) => x.violations)).to.deep.equal([]);
    expect(agents.flatMap((x) => x.stopped)).to.deep.equal([]);
  });

  it('takes an answered state report for a heartbeat: none goes right behind it, the next one an interval later', async () => {
    const [m1] = await cluster(wireJob(), 1);
    // The master serves the assignment stream: a refused one has the AM heartbeat at a random
    // moment of the next second, which is not what this test is about.
    m1!.streams = true;
    for (const x of agents) x.runMs = 60_000;
    const a = am([m1!]);
    const running = a.run().catch(() => undefined);
    await waitFor(() => plans('map').length > 0, 10_000, 'map planned');
    // A new leader asks for the report in its next answer, and takes 300 ms to answer it: six
    // heartbeat intervals (50 ms) pass meanwhile.
    m1!.delayReportMs = 300;
    m1!.becomeNewLeader('2');
    await waitFor(() => m1!.reports.length === 1, 10_000, 'the report');
    const i = m1!.calls.indexOf('ReportAppState');
    const answeredAt = m1!.callTimes[i]! + 300;
    // The heartbeats: UpdateRequests that carry no request (those that do go whenever the core asks).
    const heartbeatsAfter = () =>
      m1!.calls
        .flatMap((c, k) => (c === 'UpdateRequests' ? [k] : []))
        .filter((k, n) => k > i && m1!.requests[n]!.deltas.length === 0 && m1!.requests[n]!.units.length === 0);
    await waitFor(() => heartbeatsAfter().length > 0, 10_000, 'a heartbeat after the report');
    const next = heartbeatsAfter()[0]!;
    expect(m1!.callTimes[next]! - answeredAt).to.be.at.least(40);
    await a.stop();
    await running;
  });

  it('once its assignment stream is cut, the next master call it makes is its state report (a heartbeat falling due goes as the report)', async () => {
    const [m1] = await cluster(wireJob(), 1);
    m1!.streams = true;
    for (const x of agents) x.runMs = 60_000;
    const a = am([m1!]);
    const running = a.run().catch(() => undefined);
    await waitFor(() => m1!.calls.includes('WatchAssignments') && plans('map').length > 0, 10_000, 'the stream open and map planned');
    // The stream is cut (the master may have died: the AM cannot tell yet). This master does not
    // ask for the report: only the AM's own wish makes it.
    const from = m1!.calls.length;
    m1!.cutStreams();
    await waitFor(() => m1!.reports.length === 1, 10_000, 'the report');
    // Heartbeats fall due every 50 ms, well within the report's jitter (up to 1 s): none went
    // ahead of the report, but for one or two sent before the AM saw the cut.
    const after = m1!.calls.slice(from).filter((c) => c !== 'WatchAssignments');
    expect(after.indexOf('ReportAppState')).to.be.within(0, 2);
    await a.stop();
    await running;
  });

  it('reports units, outstanding requests and assignments before any further delta, and never counts a queued delta twice', async () => {
    const [m] = await cluster(threeStages());
    for (const x of agents) x.runMs = 400;
    const a = am([m!]);
    const running = a.run();
    await waitFor(() => plans('map').length === 2, 10_000, 'map planned');
    // A new leader at the same address (restart in place), slow to answer: map finishes meanwhile,
    // so the AM queues its reduce request before it learns it must report.
    m!.becomeNewLeader('2');
    m!.delayNextAnswerMs = 1000;
    await waitFor(() => m!.reports.length === 1, 10_000, 'the state report');
    const rep = m!.reports[0]!;
    expect(m!.calls[m!.calls.indexOf('ReportAppState') - 1]).to.equal('UpdateRequests');
    expect([rep.appId, rep.amAttempt, rep.address]).to.deep.equal(['app-1', 1, a.address]);
    expect(rep.units.map((u) => u.suId)).to.deep.equal(['map', 'reduce']);
    expect(rep.requests).to.deep.equal([{ suId: 'reduce', location: '', count: 2 }]);
    expect(rep.assignments.map((x) => [x.suId, x.nodeId, x.slots])).to.deep.equal([
      ['map', 'n1', 1],
      ['map', 'n2', 1],
    ]);

    const result = await running;
    expect(result).to.deep.equal({ succeeded: true, message: '3 tasks succeeded' });
    expect(m!.reports).to.have.length(1);
    const after = afterReport(m!);
    // The reduce delta queued before the report was not sent again; later deltas went on as usual.
    expect(after.flatMap((r) => r.deltas).filter((d) => d.suId === 'reduce' && d.delta > 0)).to.deep.equal([]);
    expect(after.flatMap((r) => r.deltas)).to.deep.include({ suId: 'final', location: '', delta: 1 });
    expect(after.flatMap((r) => r.units.map((u) => u.suId))).to.deep.equal(['final']);
    expect(m!.placed.get('reduce')).to.equal(2);
    expect(m!.placed.get('final')).to.equal(1);
    // Every request after the report carries the applied assignment seq in the new master's numbering.
    expect(after.every((r) => Number(r.assignmentSeq) <= m!.seq)).to.equal(true);
    expect(agents.flatMap((x) => x.violations)).to.deep.equal([]);
    expect(agents.flatMap((x) => x.stopped)).to.deep.equal([]);
  });

  it('refuses pushes from an older master epoch (FAILED_PRECONDITION) and keeps its slots', async () => {
    const [m] = await cluster(wireJob({ tasks: [wireJob().tasks![0]!] }));
    m!.epoch = '3';
    for (const x of agents) x.runMs = 500;
    const a = am([m!]);
    const running = a.run();
    await waitFor(() => plans('map').length === 4, 10_000, 'map planned');
    const c = connect(proto.AppMasterService, a.address);
    // An empty full table from a deposed master would take every slot away.
    const e1 = await rpcError(c.UpdateAssignments({ epoch: '2', seq: '100', full: true, assignments: [] }));
    expect(e1.code).to.equal('FAILED_PRECONDITION');
    expect(e1.message).to.match(/stale epoch/);
    const e2 = await rpcError(c.AgentsTimedOut({ epoch: '2', nodeIds: ['n1'] }));
    expect(e2.code).to.equal('FAILED_PRECONDITION');
    // The current master's pushes are still accepted.
    await c.AgentsTimedOut({ epoch: '3', nodeIds: [] });
    c.close();
    expect((await running).succeeded).to.equal(true);
    expect(a.masterEpoch).to.equal('3');
    expect(agents.flatMap((x) => x.stopped)).to.deep.equal([]);
    expect(m!.finished?.progress[0]?.retries).to.equal(0);
  });

  it('ignores answers from a deposed master and retries the call at another one', async () => {
    const [good, deposed] = await cluster(wireJob(), 2);
    good!.epoch = '3';
    deposed!.epoch = '2';
    for (const x of agents) x.runMs = 300;
    const a = am([good!, deposed!]);
    const running = a.run();
    await waitFor(() => plans('map').length === 4, 10_000, 'map planned');
    good!.down = true; // no leader for a moment: calls move on to the deposed master
    await waitFor(() => deposed!.requests.length >= 2, 10_000, 'calls answered by the deposed master');
    good!.down = false;
    const result = await running;
    expect(result.succeeded).to.equal(true);
    expect(good!.finished?.succeeded).to.equal(true);
    expect(a.masterEpoch).to.equal('3');
    expect(deposed!.reports).to.have.length(0);
    expect(good!.reports).to.have.length(0);
    expect(agents.flatMap((x) => x.stopped)).to.deep.equal([]);
    expect(good!.finished?.progress.every((p) => p.retries === 0)).to.equal(true);
  });
});
