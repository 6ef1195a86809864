/**
 * Network partitions inside a job (partitions.ts): broken links between the job's hosts give up the
 * fewest hosts (never the AM's), their instances run again once per partition as re-executions,
 * nothing else is touched; nodes cut from the master only are left alone; a heal makes given-up
 * hosts usable again and a later cut is a new partition.
 */
import { expect } from 'chai';
import { minCover } from '../partitions.js';
import { encodeEntry, encodeTopology } from '../snapshot.js';
import type { AmEffect, JobSpec } from '../types.js';
import { asg, deltasOf, ev, finishOf, Harness, mockJob, mockTask, planIds, plansOf, returnsOf, stopsOf } from './factories.js';

/** The AM runs on n0. */
const AM_HOST = 'n0';
const link = (a: string, b: string) => ({ a, b });
const stopsOn = (effects: AmEffect[], nodeId: string): string[] => effects.flatMap((e) => (e.kind === 'stop' && e.nodeId === nodeId ? e.workerIds : []));
const upstreamOf = (effects: AmEffect[], task: string) => JSON.parse(plansOf(effects).find((p) => p.task === task)!.command.env.FUXI_UPSTREAM!);

/**
 * map (`maps` instances) -> reduce (`reduces` instances, maxAttempts 1: any counted failure fails
 * the job). Every map ran and succeeded on the node `mapNode(i)` says, its slots went back; the
 * reducers run on the nodes `reduceNode(i)` says.
 */
function midRun(maps: number, mapNode: (i: number) => string, reduces: number, reduceNode: (i: number) => string): Harness {
  const h = new Harness({ nodeId: AM_HOST, returnSettleMs: 1e12 });
  const spec: JobSpec = mockJob([
    mockTask({ name: 'map', instances: maps }),
    mockTask({ name: 'reduce', instances: reduces, dependsOn: ['map'], maxAttempts: 1 }),
  ]);
  h.start(spec);
  const per = (n: number, node: (i: number) => string) => {
    const m = new Map<string, number>();
    for (let i = 0; i < n; i++) m.set(node(i), (m.get(node(i)) ?? 0) + 1);
    return m;
  };
  const mapSlots = per(maps, mapNode);
  expect(planIds(h.assign(...[...mapSlots].map(([n, k]) => asg('map', n, k))))).to.have.length(maps);
  for (let i = 0; i < maps; i++) h.succeed(mapNode(i), `map.${i}.1`);
  h.assign(...[...mapSlots].map(([n]) => asg('map', n, 0)));
  const fx = h.assign(...[...per(reduces, reduceNode)].map(([n, k]) => asg('reduce', n, k)));
  expect(planIds(fx)).to.have.length(reduces);
  for (let i = 0; i < reduces; i++) h.events(reduceNode(i), ev(`reduce.${i}.1`, 'running'));
  return h;
}

describe('DagAppMaster: network partitions inside a job', () => {
  it('W-W mid-run: a reducer host cut from a map-output host is given up; its reducer runs again once, nothing else is touched', () => {
    // map.0, map.1 on n1 and map.2, map.3 on n2 (2 outputs each); reduce.0 on n3 (1 running worker).
    const h = midRun(
      4,
      (i) => (i < 2 ? 'n1' : 'n2'),
      1,
      () => 'n3',
    );
    expect(h.am.placementConstraints()).to.deep.equal({ reach: ['n1', 'n2', 'n3'], avoid: [] });
    let fx = h.am.connectivityChanged([link('n3', 'n2')], [], h.now);
    // n3 weighs one instance, n2 two: n3 goes; its worker is stopped and its slot returned.
    expect(stopsOf(fx)).to.deep.equal(['reduce.0.1']);
    expect(stopsOn(fx, 'n3')).to.deep.equal(['reduce.0.1']);
    expect(returnsOf(fx)).to.deep.equal([{ suId: 'reduce', nodeId: 'n3', slots: 1 }]);
    expect(deltasOf(fx)).to.deep.equal([{ suId: 'reduce', location: '', delta: 1 }]);
    expect(planIds(fx)).to.deep.equal([]);
    expect(h.am.placementConstraints()).to.deep.equal({ reach: ['n1', 'n2'], avoid: ['n3'] });
    expect(h.progressOf('reduce')).to.deep.include({ pending: 1, running: 0, retries: 0, reexecutions: 1 });
    expect(h.progressOf('map')).to.deep.include({ succeeded: 4, reexecutions: 0 });
    // The same graph again (or any other input) changes nothing more.
    expect(h.am.connectivityChanged([link('n2', 'n3')], [], h.now)).to.deep.equal([]);
    expect(h.am.tick(h.now + 1000)).to.deep.equal([]);
    // The stopped worker's end is not a failure; a slot placed on n3 anyway goes back unused.
    expect(h.events('n3', ev('reduce.0.1', 'killed'))).to.deep.equal([]);
    expect(h.assign(asg('reduce', 'n3', 0))).to.deep.equal([]);
    fx = h.assign(asg('reduce', 'n3', 1));
    expect(planIds(fx)).to.deep.equal([]);
    expect(returnsOf(fx)).to.deep.equal([{ suId: 'reduce', nodeId: 'n3', slots: 1 }]);
    // A slot on a host that reaches every output: the reducer runs there (attempt 2, not counted).
    fx = h.assign(asg('reduce', 'n4', 1));
    expect(planIds(fx)).to.deep.equal(['reduce.0.2']);
    expect(upstreamOf(fx, 'reduce').map.hosts).to.deep.equal(['n1.addr:7071', 'n2.addr:7071']);
    expect(h.am.placementConstraints()).to.deep.equal({ reach: ['n1', 'n2', 'n4'], avoid: ['n3'] });
    expect(finishOf(h.succeed('n4', 'reduce.0.2'))).to.deep.include({ succeeded: true });
    expect(h.progressOf('reduce')).to.deep.include({ succeeded: 1, retries: 0, reexecutions: 1 });
  });

  it('W-W mid-run: a map-output host given up runs its outputs again; reducers cut from it run again at once (they could not fetch), once', () => {
    // map.0 on n1, map.1 on n2 (one output each); reduce.0 and reduce.1 both on n3.
    const h = midRun(
      2,
      (i) => `n${i + 1}`,
      2,
      () => 'n3',
    );
    let fx = h.am.connectivityChanged([link('n2', 'n3')], [], h.now);
    // n2 weighs one instance (an output), n3 two (running): n2 goes. The reducers on n3 read map.1
    // from n2, which they cannot reach: they are stopped now and wait for map.1 to run again.
    expect(stopsOn(fx, 'n3')).to.deep.equal(['reduce.0.1', 'reduce.1.1']);
    expect(returnsOf(fx)).to.deep.equal([{ suId: 'reduce', nodeId: 'n3', slots: 2 }]);
    expect(deltasOf(fx)).to.deep.equal([{ suId: 'map', location: '', delta: 1 }]);
    expect(h.progressOf('map')).to.deep.include({ succeeded: 1, pending: 1, reexecutions: 1 });
    expect(h.progressOf('reduce')).to.deep.include({ pending: 2, running: 0, retries: 0, reexecutions: 2 });
    expect(h.am.placementConstraints()).to.deep.equal({ reach: ['n1'], avoid: ['n2'] });
    // The stopped workers' ends are not failures (maxAttempts is 1).
    fx = h.events('n3', ev('reduce.0.1', 'killed'), ev('reduce.1.1', 'killed'));
    expect(finishOf(fx)).to.equal(undefined);
    // map.1 runs again on n4 and succeeds: the reducers ask for slots and get the new output's host.
    expect(planIds(h.assign(asg('map', 'n4', 1)))).to.deep.equal(['map.1.2']);
    fx = h.succeed('n4', 'map.1.2');
    expect(deltasOf(fx)).to.deep.equal([{ suId: 'reduce', location: '', delta: 2 }]);
    fx = h.assign(asg('map', 'n4', 0), asg('reduce', 'n4', 2));
    expect(planIds(fx)).to.deep.equal(['reduce.0.2', 'reduce.1.2']);
    expect(upstreamOf(fx, 'reduce').map).to.deep.equal({
      hosts: ['n1.addr:7071', 'n4.addr:7071'],
      nodes: ['n1', 'n4'],
      outputs: [
        [0, 'map.0.1'],
        [1, 'map.1.2'],
      ],
    });
    h.succeed('n4', 'reduce.0.2');
    expect(finishOf(h.succeed('n4', 'reduce.1.2'))).to.deep.include({ succeeded: true });
    expect(h.progressOf('map')).to.deep.include({ succeeded: 2, retries: 0, reexecutions: 1 });
    expect(h.progressOf('reduce')).to.deep.include({ succeeded: 2, retries: 0, reexecutions: 2 });
  });

  it('W-W mid-run: a reducer that fails reading an output that ran again (planned before it moved) is not counted', () => {
    // map.0 on n1, map.1 on n2; reduce.0 on n3 and reduce.1 on n4. n2 is cut from n1 only: n2 goes
    // (its one output) and neither reducer is cut from it, so both keep running.
    const h = midRun(
      2,
      (i) => `n${i + 1}`,
      2,
      (i) => `n${i + 3}`,
    );
    let fx = h.am.connectivityChanged([link('n1', 'n2')], [], h.now);
    expect(stopsOf(fx)).to.deep.equal([]);
    expect(h.progressOf('reduce')).to.deep.include({ running: 2, reexecutions: 0 });
    expect(h.progressOf('map')).to.deep.include({ pending: 1, reexecutions: 1 });
    // reduce.0 fails anyway (say its fetch from n2 broke): a re-execution, not a failure.
    fx = h.events('n3', ev('reduce.0.1', 'failed'));
    expect(finishOf(fx)).to.equal(undefined);
    expect(h.progressOf('reduce')).to.deep.include({ pending: 1, running: 1, retries: 0, reexecutions: 1 });
  });

  it("AM host cut from a worker host: the worker host is given up, never the AM's", () => {
    // Two running maps on n1, none elsewhere: n1 outweighs the AM host, yet n1 goes.
    const h = new Harness({ nodeId: AM_HOST, returnSettleMs: 1e12 });
    h.start(mockJob([mockTask({ instances: 3 })]));
    expect(planIds(h.assign(asg('map', 'n1', 2), asg('map', 'n2', 1)))).to.deep.equal(['map.0.1', 'map.1.1', 'map.2.1']);
    const fx = h.am.connectivityChanged([link(AM_HOST, 'n1')], [], h.now);
    expect(stopsOn(fx, 'n1')).to.deep.equal(['map.0.1', 'map.1.1']);
    expect(stopsOn(fx, 'n2')).to.deep.equal([]);
    expect(returnsOf(fx)).to.deep.equal([{ suId: 'map', nodeId: 'n1', slots: 2 }]);
    expect(deltasOf(fx)).to.deep.equal([{ suId: 'map', location: '', delta: 2 }]);
    expect(h.am.placementConstraints()).to.deep.equal({ reach: ['n2'], avoid: ['n1'] });
    expect(h.progressOf('map')).to.deep.include({ pending: 2, running: 1, retries: 0, reexecutions: 2 });
  });

  it('a broken link to a host that holds nothing the job still needs changes nothing', () => {
    // Single task: map.0's output on n1 is needed by no one; map.1 runs on n2.
    const h = new Harness({ nodeId: AM_HOST, returnSettleMs: 1e12 });
    h.start(mockJob([mockTask({ instances: 2 })]));
    h.assign(asg('map', 'n1', 1), asg('map', 'n2', 1));
    h.succeed('n1', 'map.0.1');
    h.assign(asg('map', 'n1', 0));
    expect(h.am.connectivityChanged([link('n1', 'n2'), link('n2', 'n9'), link(AM_HOST, 'n8')], [], h.now)).to.deep.equal([]);
    expect(h.am.placementConstraints()).to.deep.equal({ reach: ['n2'], avoid: [] });
    // Same with a downstream task that already finished: map's outputs are not needed any more.
    const g = midRun(
      2,
      (i) => `n${i + 1}`,
      1,
      () => 'n3',
    );
    g.succeed('n3', 'reduce.0.1');
    expect(g.am.result).to.deep.include({ succeeded: true });
    expect(g.am.connectivityChanged([link('n2', 'n3')], [], g.now)).to.deep.equal([]);
  });

  it('a node partitioned from the master (not from its peers) is not given up: its workers keep running', () => {
    const h = midRun(
      2,
      (i) => `n${i + 1}`,
      1,
      () => 'n3',
    );
    expect(h.am.connectivityChanged([], ['n3'], h.now)).to.deep.equal([]);
    expect(h.am.placementConstraints()).to.deep.equal({ reach: ['n1', 'n2', 'n3'], avoid: [] });
    expect(h.progressOf('reduce')).to.deep.include({ running: 1, reexecutions: 0 });
    // Also when a broken link touches it: the other end goes (n3 weighs less but stays). Its reducer
    // read map.1 from n2, which it cannot reach: that attempt alone runs again.
    const fx = h.am.connectivityChanged([link('n2', 'n3')], ['n3'], h.now);
    expect(stopsOf(fx)).to.deep.equal(['reduce.0.1']);
    expect(h.am.placementConstraints().avoid).to.deep.equal(['n2']);
    expect(h.progressOf('reduce')).to.deep.include({ running: 0, reexecutions: 1 });
    expect(h.progressOf('map')).to.deep.include({ pending: 1, reexecutions: 1 });
    // Between the AM host and a partitioned node nothing can be given up: left as it is.
    const g = midRun(
      2,
      (i) => `n${i + 1}`,
      1,
      () => 'n3',
    );
    expect(g.am.connectivityChanged([link(AM_HOST, 'n3')], ['n3'], g.now)).to.deep.equal([]);
    expect(g.am.placementConstraints().avoid).to.deep.equal([]);
  });

  it('a host timing out (isolated from everyone) is left to the timing-out policy', () => {
    const h = midRun(
      2,
      (i) => `n${i + 1}`,
      1,
      () => 'n3',
    );
    h.am.agentsTimedOut(['n3'], [], h.now);
    const isolated = [link(AM_HOST, 'n3'), link('n1', 'n3'), link('n2', 'n3')];
    expect(h.am.connectivityChanged(isolated, [], h.now)).to.deep.equal([]);
    expect(h.am.placementConstraints().avoid).to.deep.equal([]);
    expect(h.progressOf('reduce')).to.deep.include({ running: 1, reexecutions: 0 });
    expect(h.progressOf('map')).to.deep.include({ succeeded: 2, reexecutions: 0 });
  });

  it('a restarted AM takes the later of two logged successes of an instance as where its output is', () => {
    const spec = mockJob([mockTask({ instances: 2 }), mockTask({ name: 'reduce', dependsOn: ['map'] })]);
    const entry = (i: number, attempt: number, node: string) =>
      encodeEntry({ task: 'map', instance: i, attempt, nodeId: node, workerId: `map.${i}.${attempt}`, nodeAddress: `${node}.addr:7071`, state: 'succeeded' });
    const h = new Harness({ nodeId: AM_HOST });
    h.am.start(spec, { seq: 0, assignments: [] }, h.now, {
      snapshot: { topology: encodeTopology(spec), entries: [entry(0, 1, 'n1'), entry(1, 1, 'n2'), entry(1, 2, 'n4')] },
      workers: [],
      unlistedNodes: [],
    });
    expect(h.am.placementConstraints().reach).to.deep.equal(['n1', 'n4']);
    const fx = h.assign(asg('reduce', 'n5', 1));
    expect(upstreamOf(fx, 'reduce').map).to.deep.equal({
      hosts: ['n1.addr:7071', 'n4.addr:7071'],
      nodes: ['n1', 'n4'],
      outputs: [
        [0, 'map.0.1'],
        [1, 'map.1.2'],
      ],
    });
  });

  it('heal: given-up hosts are usable again; re-executions already started stay', () => {
    const h = midRun(
      4,
      (i) => (i < 2 ? 'n1' : 'n2'),
      1,
      () => 'n3',
    );
    h.am.connectivityChanged([link('n2', 'n3')], [], h.now);
    expect(planIds(h.assign(asg('reduce', 'n4', 1)))).to.deep.equal(['reduce.0.2']);
    // The link heals: nothing is undone, nothing stopped; n3 may be used again.
    expect(h.am.connectivityChanged([], [], h.now + 5000)).to.deep.equal([]);
    expect(h.am.placementConstraints()).to.deep.equal({ reach: ['n1', 'n2', 'n4'], avoid: [] });
    expect(h.am.workers().map((w) => [w.workerId, w.nodeId])).to.deep.equal([['reduce.0.2', 'n4']]);
    expect(h.progressOf('reduce')).to.deep.include({ running: 1, reexecutions: 1 });
    // A host stays given up while any broken link (even to a host the job does not use) touches it.
    const g = midRun(
      4,
      (i) => (i < 2 ? 'n1' : 'n2'),
      1,
      () => 'n3',
    );
    g.am.connectivityChanged([link('n2', 'n3'), link('n3', 'n9')], [], g.now);
    expect(g.am.connectivityChanged([link('n3', 'n9')], [], g.now)).to.deep.equal([]);
    expect(g.am.placementConstraints().avoid).to.deep.equal(['n3']);
    g.am.connectivityChanged([], [], g.now);
    expect(g.am.placementConstraints().avoid).to.deep.equal([]);
  });

  it('at most once per instance per partition; a cut after a heal is a new partition', () => {
    const h = midRun(
      4,
      (i) => (i < 2 ? 'n1' : 'n2'),
      1,
      () => 'n3',
    );
    h.am.connectivityChanged([link('n2', 'n3')], [], h.now);
    expect(planIds(h.assign(asg('reduce', 'n4', 1)))).to.deep.equal(['reduce.0.2']);
    h.events('n4', ev('reduce.0.2', 'running'));
    // Same partition, another cut: n4 (one reducer) is given up, but reduce.0 already ran again
    // once in this partition: it is left where it is.
    let fx = h.am.connectivityChanged([link('n2', 'n3'), link('n1', 'n4')], [], h.now);
    expect(stopsOf(fx)).to.deep.equal([]);
    expect(deltasOf(fx)).to.deep.equal([]);
    expect(h.am.placementConstraints().avoid).to.deep.equal(['n3', 'n4']);
    expect(h.progressOf('reduce')).to.deep.include({ running: 1, reexecutions: 1 });
    // Everything heals; then n4 is cut from n1: a new partition, reduce.0 may run again (once).
    h.am.connectivityChanged([], [], h.now);
    fx = h.am.connectivityChanged([link('n1', 'n4')], [], h.now);
    expect(stopsOn(fx, 'n4')).to.deep.equal(['reduce.0.2']);
    expect(returnsOf(fx)).to.deep.equal([{ suId: 'reduce', nodeId: 'n4', slots: 1 }]);
    expect(deltasOf(fx)).to.deep.equal([{ suId: 'reduce', location: '', delta: 1 }]);
    expect(h.progressOf('reduce')).to.deep.include({ pending: 1, retries: 0, reexecutions: 2 });
    expect(planIds(h.assign(asg('reduce', 'n5', 1)))).to.deep.equal(['reduce.0.3']);
    expect(finishOf(h.succeed('n5', 'reduce.0.3'))).to.deep.include({ succeeded: true });
  });

  it('a host with a broken link that starts holding work later is given up then', () => {
    // n3 is cut from n2 before it runs anything of the job: nothing happens until a reducer runs there.
    const h = new Harness({ nodeId: AM_HOST, returnSettleMs: 1e12 });
    h.start(mockJob([mockTask({ instances: 2 }), mockTask({ name: 'reduce', dependsOn: ['map'] })]));
    h.assign(asg('map', 'n1', 1), asg('map', 'n2', 1));
    h.succeed('n1', 'map.0.1');
    h.succeed('n2', 'map.1.1');
    h.assign(asg('map', 'n1', 0), asg('map', 'n2', 0));
    expect(h.am.connectivityChanged([link('n2', 'n3')], [], h.now)).to.deep.equal([]);
    // A master unaware of the cut places the reducer on n3: planned, then given up at once.
    const fx = h.assign(asg('reduce', 'n3', 1));
    expect(planIds(fx)).to.deep.equal([]);
    expect(returnsOf(fx)).to.deep.equal([{ suId: 'reduce', nodeId: 'n3', slots: 1 }]);
    expect(h.am.placementConstraints()).to.deep.equal({ reach: ['n1', 'n2'], avoid: ['n3'] });
  });
});

describe('minCover (which hosts to give up)', () => {
  const load = (entries: Record<string, [running: number, outputs: number]>) =>
    new Map(Object.entries(entries).map(([h, [running, outputs]]) => [h, { running, outputs }]));
  const any = () => true;

  it('takes the lighter end of a link; on a tie the one re-running fewer outputs, then by id', () => {
    expect(minCover([['a', 'b']], load({ a: [3, 0], b: [0, 2] }), any)).to.deep.equal(['b']);
    expect(minCover([['a', 'b']], load({ a: [1, 1], b: [2, 0] }), any)).to.deep.equal(['b']);
    expect(minCover([['a', 'b']], load({ a: [1, 0], b: [1, 0] }), any)).to.deep.equal(['a']);
  });

  it('gives up the hub of a star when it weighs less than its spokes, else the spokes', () => {
    const star: Array<[string, string]> = [
      ['h', 's1'],
      ['h', 's2'],
      ['h', 's3'],
    ];
    expect(minCover(star, load({ h: [2, 0], s1: [1, 0], s2: [1, 0], s3: [1, 0] }), any)).to.deep.equal(['h']);
    expect(minCover(star, load({ h: [4, 0], s1: [1, 0], s2: [1, 0], s3: [1, 0] }), any)).to.deep.equal(['s1', 's2', 's3']);
  });

  it('is exact where greedy is not, and takes the only end it may give up', () => {
    // Greedy would take b (three links) and then a, c: exact takes a and c (weight 2 < 3... 1+1 vs 1+1+1).
    const links: Array<[string, string]> = [
      ['a', 'b'],
      ['b', 'c'],
      ['a', 'd'],
      ['c', 'e'],
    ];
    expect(minCover(links, load({ a: [1, 0], b: [1, 0], c: [1, 0], d: [5, 0], e: [5, 0] }), any)).to.deep.equal(['a', 'c']);
    expect(minCover([['am', 'x']], load({ am: [0, 0], x: [9, 0] }), (h) => h !== 'am')).to.deep.equal(['x']);
  });
});
