/**
 * The AM shell in a network partition (fake master and agents on loopback): it sends the
 * connectivity version it holds, hands the master's graph to the core, and sends the placement
 * constraints that follow (UpdateRequests, ReportAppState).
 */
import { expect } from 'chai';
import { nullLogger } from '@fuxi/common';
import { AppMaster } from '../app-master.js';
import { FakeAgent, FakeMaster, wireJob } from './fakes.js';

async function waitFor(cond: () => boolean, ms = 15_000, what = 'condition'): Promise<void> {
  const until = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('AppMaster shell: network partitions', () => {
  let master: FakeMaster | undefined;
  let agents: FakeAgent[] = [];

  afterEach(async () => {
    await master?.stop();
    await Promise.all(agents.map((a) => a.stop()));
    master = undefined;
    agents = [];
  });

  it('gives up a worker host cut from its own host: stops its workers, returns their slots, asks again avoiding it', async () => {
    agents = await Promise.all(['n1', 'n2'].map((id) => new FakeAgent(id).start()));
    for (const a of agents) a.runMs = 1500; // still running when the link breaks
    const m = await new FakeMaster(wireJob({ tasks: [wireJob().tasks![0]!] }), agents).start();
    master = m;
    for (const a of agents) a.master = m;
    const am = new AppMaster({ masters: [m.address], appId: 'app-1', amAttempt: 1, nodeId: 'n0', log: nullLogger, deadlineMs: 3000 });
    const run = am.run();
    const [n1, n2] = agents as [FakeAgent, FakeAgent];
    await waitFor(() => n1.plans.length === 2 && n2.plans.length === 2, 15_000, 'two maps planned on each node');
    expect(m.requests.every((r) => r.connectivityVersion === '0')).to.equal(true);

    // The AM's host n0 cannot reach n2 any more.
    m.connectivity = { version: '7', brokenLinks: [{ a: 'n2', b: 'n0', sinceMs: '1' }], partitionedFromMaster: [] };
    await waitFor(() => m.constraints.avoid.includes('n2'), 15_000, 'the constraints to avoid n2');
    await waitFor(() => n2.stopped.length === 2, 15_000, "n2's workers stopped");
    expect([...n2.stopped].sort()).to.deep.equal(n2.plans.map((p) => p.workerId).sort());
    // The return goes on the master's queue, the stops straight to the agent: either may land first.
    await waitFor(() => m.returns.some((r) => r.returns.some((x) => x.nodeId === 'n2')), 15_000, "n2's slots returned");
    expect(m.returns.flatMap((r) => r.returns).filter((r) => r.nodeId === 'n2')).to.deep.equal([{ suId: 'map', nodeId: 'n2', slots: 2 }]);
    expect(m.requests.some((r) => r.connectivityVersion === '7')).to.equal(true);
    expect(m.constraints).to.deep.equal({ reach: ['n1'], avoid: ['n2'] });

    // A new leader rebuilding its state gets the constraints with the AM's report.
    m.becomeNewLeader('2');
    await waitFor(() => m.reports.length > 0, 15_000, 'a state report');
    expect(m.reports[0]!.constraints).to.deep.equal({ reach: ['n1'], avoid: ['n2'] });

    const result = await run;
    expect(result.succeeded).to.equal(true);
    // The two instances ran again on n1, as re-executions (not retries); nothing new went to n2.
    expect(n2.plans.every((p) => p.attempt === 1)).to.equal(true);
    expect(n1.plans.filter((p) => p.attempt === 2)).to.have.length(2);
    expect(m.finished?.progress.map((p) => [p.name, p.succeeded, p.retries, p.reexecutions])).to.deep.equal([['map', 4, 0, 2]]);
    // Constraints went only when they changed: never the same twice in a row. (The same set may
    // come back after a change and go again, and a call that failed is sent again.)
    const sent = m.requests.filter((r) => r.constraints).map((r) => JSON.stringify(r.constraints));
    expect(sent.length).to.be.greaterThan(0);
    expect(sent.filter((c, i) => i > 0 && c === sent[i - 1])).to.deep.equal([]);
  });

  it('gives up a worker host cut from another worker host: its slots go back only once its agent has heard of the stops', async () => {
    agents = await Promise.all(['n1', 'n2'].map((id) => new FakeAgent(id).start()));
    for (const a of agents) a.runMs = 1500;
    const m = await new FakeMaster(wireJob({ tasks: [wireJob().tasks![0]!] }), agents).start();
    master = m;
    for (const a of agents) a.master = m;
    const am = new AppMaster({ masters: [m.address], appId: 'app-1', amAttempt: 1, nodeId: 'n0', log: nullLogger, deadlineMs: 3000 });
    const run = am.run();
    await waitFor(() => agents.every((a) => a.plans.length === 2), 15_000, 'two maps planned on each node');
    // A slow agent: each StopWorkers is answered 300 ms after it arrives. Were the slots returned
    // first, the agent would enforce the shrunk grant on its newest workers, whichever they are.
    for (const a of agents) a.stopDelayMs = 300;
    // The AM's host reaches both; n1 and n2 cannot reach each other: one of them is given up.
    m.connectivity = { version: '8', brokenLinks: [{ a: 'n1', b: 'n2', sinceMs: '1' }], partitionedFromMaster: [] };
    await waitFor(() => m.returns.some((r) => r.returns.length > 0), 15_000, 'slots returned');
    const givenUp = agents.find((a) => a.stopped.length > 0)!;
    expect(givenUp.stopsAnsweredAt.length).to.be.greaterThan(0);
    const returnedAt = m.callTimes[m.calls.indexOf('ReturnSlots')]!;
    expect(m.returns[0]!.returns.every((r) => r.nodeId === givenUp.nodeId)).to.equal(true);
    expect(returnedAt).to.be.at.least(Math.min(...givenUp.stopsAnsweredAt));
    expect((await run).succeeded).to.equal(true);
  });

  it('a job with network: independent ignores the graph and sends no constraints', async () => {
    agents = await Promise.all(['n1', 'n2'].map((id) => new FakeAgent(id).start()));
    for (const a of agents) a.runMs = 300;
    const m = await new FakeMaster(wireJob({ tasks: [wireJob().tasks![0]!], network: 'independent' }), agents).start();
    master = m;
    for (const a of agents) a.master = m;
    m.connectivity = { version: '7', brokenLinks: [{ a: 'n2', b: 'n0', sinceMs: '1' }], partitionedFromMaster: [] };
    const result = await new AppMaster({ masters: [m.address], appId: 'app-1', amAttempt: 1, nodeId: 'n0', log: nullLogger, deadlineMs: 3000 }).run();
    expect(result.succeeded).to.equal(true);
    expect(agents.flatMap((a) => a.stopped)).to.deep.equal([]);
    expect(m.requests.some((r) => r.constraints)).to.equal(false);
    expect(m.finished?.progress.map((p) => p.reexecutions)).to.deep.equal([0]);
    // The version is still acknowledged: the graph is not sent with every answer.
    expect(m.requests.filter((r) => r.connectivityVersion === '7').length).to.be.greaterThan(0);
  });
});
