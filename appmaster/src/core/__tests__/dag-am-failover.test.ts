/**
 * The DAG AM core across its own failover (restart with a snapshot and the agents' worker lists)
 * and across agent timing failures (the `wait` / `rerun` policy, with a fake clock).
 */
import { expect } from 'chai';
import { decodeEntry, encodeEntry, encodeTopology, type SnapshotEntry } from '../snapshot.js';
import type { AmEffect, JobSpec, ListedWorker, Recovery, WorkerState } from '../types.js';
import { asg, deltasOf, ev, finishOf, Harness, mockJob, mockTask, planIds, plansOf, returnsOf, stopsOf } from './factories.js';

const snapshotsOf = (effects: AmEffect[]) => effects.filter((e): e is Extract<AmEffect, { kind: 'snapshot' }> => e.kind === 'snapshot');
const entriesOf = (effects: AmEffect[]): SnapshotEntry[] => snapshotsOf(effects).flatMap((e) => e.entries.map((x) => decodeEntry(x)!));
const stopsOn = (effects: AmEffect[], nodeId: string): string[] => effects.flatMap((e) => (e.kind === 'stop' && e.nodeId === nodeId ? e.workerIds : []));

/** A worker as an agent on `nodeId` lists it. */
function listed(workerId: string, nodeId: string, state: WorkerState, over: Partial<ListedWorker> = {}): ListedWorker {
  return { ...ev(workerId, state), nodeId, ...over };
}

function done(task: string, instance: number, attempt = 1, nodeId = 'n1'): string {
  return encodeEntry({ task, instance, attempt, nodeId, workerId: `${task}.${instance}.${attempt}`, state: 'succeeded' });
}

function recovery(spec: JobSpec, entries: string[], workers: ListedWorker[] = [], unlistedNodes: string[] = [], topology = encodeTopology(spec)): Recovery {
  return { snapshot: { topology, entries }, workers, unlistedNodes };
}

/** A restarted core (attempt > 1): `held` from RegisterApp, then the recovery. */
function restart(
  spec: JobSpec,
  held: ReturnType<typeof asg>[],
  rec: Recovery,
  opts: ConstructorParameters<typeof Harness>[0] = {},
): { h: Harness; fx: AmEffect[] } {
  const h = new Harness(opts);
  h.seq = 4;
  const fx = h.am.start(spec, { seq: h.seq, assignments: held }, h.now, rec);
  return { h, fx };
}

describe('DagAppMaster: snapshot (hard state)', () => {
  it('writes the topology first, then one entry per instance that finished', () => {
    const h = new Harness();
    const spec = mockJob([mockTask({ instances: 2 }), mockTask({ name: 'reduce', dependsOn: ['map'] })]);
    let fx = h.start(spec);
    expect(fx[0]).to.deep.equal({ kind: 'snapshot', topology: encodeTopology(spec), entries: [] });
    expect(JSON.parse(encodeTopology(spec))).to.deep.equal({
      v: 1,
      job: 'job-1',
      tasks: [
        { name: 'map', instances: 2, dependsOn: [] },
        { name: 'reduce', instances: 1, dependsOn: ['map'] },
      ],
    });
    h.assign(asg('map', 'n1', 1), asg('map', 'n2', 1));
    expect(snapshotsOf(h.events('n1', ev('map.0.1', 'running')))).to.deep.equal([]);
    fx = h.succeed('n1', 'map.0.1');
    expect(entriesOf(fx)).to.deep.equal([
      { task: 'map', instance: 0, attempt: 1, nodeId: 'n1', workerId: 'map.0.1', nodeAddress: 'n1.addr:7071', state: 'succeeded' },
    ]);
    // The entry goes out before the request for the next task (same step, one FIFO queue in the shell).
    fx = h.succeed('n2', 'map.1.1');
    expect(fx.map((e) => e.kind)).to.deep.equal(['snapshot', 'return', 'request']);
    // A repeated event adds nothing.
    expect(h.succeed('n2', 'map.1.1')).to.deep.equal([]);
  });

  it('logs a failure for good with the message the job failed with', () => {
    const h = new Harness();
    h.start(mockJob([mockTask({ maxAttempts: 1 })]));
    h.assign(asg('map', 'n1', 1));
    const fx = h.events('n1', ev('map.0.1', 'failed', { exitCode: 2 }));
    expect(entriesOf(fx)).to.deep.equal([
      {
        task: 'map',
        instance: 0,
        attempt: 1,
        nodeId: 'n1',
        workerId: 'map.0.1',
        state: 'failed',
        message: 'task "map" instance 0 failed after 1 attempt: exit code 2',
      },
    ]);
  });

  it('decodes only entries it can read', () => {
    expect(decodeEntry('nope')).to.equal(undefined);
    expect(decodeEntry('{"task":"map","instance":-1,"attempt":1,"state":"succeeded"}')).to.equal(undefined);
    expect(decodeEntry('{"task":"map","instance":0,"attempt":1,"state":"running"}')).to.equal(undefined);
    expect(decodeEntry('{"task":"map","instance":0,"attempt":1,"state":"succeeded"}')).to.deep.equal({
      task: 'map',
      instance: 0,
      attempt: 1,
      nodeId: '',
      workerId: '',
      state: 'succeeded',
    });
  });
});

describe('DagAppMaster: restart (AM failover)', () => {
  const three = () => mockJob([mockTask({ instances: 3 })]);

  it('does not run instances the snapshot logs as done; their slot goes to the rest or back', () => {
    const spec = three();
    const { h, fx } = restart(spec, [asg('map', 'n1', 2)], recovery(spec, [done('map', 0), done('map', 1)]));
    expect(planIds(fx)).to.deep.equal(['map.2.1']);
    expect(returnsOf(fx)).to.deep.equal([{ suId: 'map', nodeId: 'n1', slots: 1 }]);
    expect(deltasOf(fx)).to.deep.equal([]);
    // The topology is there already: not written again; nothing new to log.
    expect(snapshotsOf(fx)).to.deep.equal([]);
    expect(h.progressOf('map')).to.deep.include({ succeeded: 2, running: 1, pending: 0 });
    expect(finishOf(h.succeed('n1', 'map.2.1'))).to.deep.include({ succeeded: true });
  });

  it('adopts running workers of the earlier attempt: not started again, they keep their slots, polled until they end', () => {
    const spec = three();
    const rec = recovery(spec, [done('map', 0)], [listed('map.1.1', 'n1', 'running'), listed('map.2.2', 'n2', 'pending'), listed('map.2.1', 'n1', 'failed')]);
    const { h, fx } = restart(spec, [asg('map', 'n1', 1), asg('map', 'n2', 1)], rec);
    expect(planIds(fx)).to.deep.equal([]);
    expect(returnsOf(fx)).to.deep.equal([]);
    expect(deltasOf(fx)).to.deep.equal([]);
    expect(stopsOf(fx)).to.deep.equal([]);
    expect(h.am.workers().map((w) => [w.workerId, w.nodeId, w.started])).to.deep.equal([
      ['map.1.1', 'n1', true],
      ['map.2.2', 'n2', false],
    ]);
    expect(h.am.nodesToPoll()).to.deep.equal(['n1', 'n2']);
    expect(h.progressOf('map')).to.deep.include({ succeeded: 1, running: 2, retries: 0 });
    // A poll of n1: map.1.1 is done; n2 still lists map.2.2 running.
    let out = h.am.workersListed('n1', [listed('map.1.1', 'n1', 'succeeded'), listed('map.2.1', 'n1', 'failed')], h.now);
    expect(entriesOf(out).map((e) => e.workerId)).to.deep.equal(['map.1.1']);
    expect(returnsOf(out)).to.deep.equal([{ suId: 'map', nodeId: 'n1', slots: 1 }]);
    expect(h.am.nodesToPoll()).to.deep.equal(['n2']);
    expect(h.am.workersListed('n2', [listed('map.2.2', 'n2', 'running')], h.now)).to.deep.equal([]);
    out = h.events('n2', ev('map.2.2', 'succeeded'));
    expect(finishOf(out)).to.deep.include({ succeeded: true });
    expect(h.am.nodesToPoll()).to.deep.equal([]);
  });

  it('counts instances that finished while it was down and returns their slots when no pending instance can use them', () => {
    const spec = three();
    const rec = recovery(spec, [done('map', 0)], [listed('map.1.1', 'n1', 'succeeded'), listed('map.2.1', 'n2', 'running')]);
    const { h, fx } = restart(spec, [asg('map', 'n1', 1), asg('map', 'n2', 1)], rec);
    expect(entriesOf(fx)).to.deep.equal([
      { task: 'map', instance: 1, attempt: 1, nodeId: 'n1', workerId: 'map.1.1', nodeAddress: 'n1.addr:7071', state: 'succeeded' },
    ]);
    expect(returnsOf(fx)).to.deep.equal([{ suId: 'map', nodeId: 'n1', slots: 1 }]);
    expect(planIds(fx)).to.deep.equal([]);
    expect(h.progressOf('map')).to.deep.include({ succeeded: 2, running: 1 });

    // With instances still pending, the freed slot is theirs instead.
    const four = mockJob([mockTask({ instances: 4 })]);
    const again = restart(four, [asg('map', 'n1', 1)], recovery(four, [], [listed('map.0.1', 'n1', 'succeeded')]));
    expect(planIds(again.fx)).to.deep.equal(['map.1.1']);
    expect(returnsOf(again.fx)).to.deep.equal([]);
    expect(deltasOf(again.fx)).to.deep.equal([{ suId: 'map', location: '', delta: 2 }]);
  });

  it('finishes at once when everything finished while it was down', () => {
    const spec = three();
    const rec = recovery(spec, [done('map', 0), done('map', 1)], [listed('map.2.1', 'n1', 'succeeded')]);
    const { fx } = restart(spec, [asg('map', 'n1', 1)], rec);
    expect(fx.map((e) => e.kind)).to.deep.equal(['snapshot', 'return', 'finish']);
    expect(finishOf(fx)).to.deep.equal({ kind: 'finish', succeeded: true, message: '1 task succeeded' });
  });

  it('retries instances that failed while it was down, above every attempt number seen', () => {
    const spec = mockJob([mockTask({ instances: 2, maxAttempts: 5 })]);
    const rec = recovery(spec, [], [listed('map.0.3', 'n1', 'failed', { exitCode: 7 }), listed('map.0.2', 'n2', 'killed'), listed('map.1.1', 'n2', 'running')]);
    const { h, fx } = restart(spec, [asg('map', 'n1', 1), asg('map', 'n2', 1)], rec);
    // map.0 failed on n1 (and n2): the free n1 slot goes back, a fresh one is asked for anywhere.
    expect(planIds(fx)).to.deep.equal([]);
    expect(returnsOf(fx)).to.deep.equal([{ suId: 'map', nodeId: 'n1', slots: 1 }]);
    expect(deltasOf(fx)).to.deep.equal([{ suId: 'map', location: '', delta: 1 }]);
    expect(h.progressOf('map')).to.deep.include({ pending: 1, running: 1, retries: 1 });
    const out = h.assign(asg('map', 'n3', 1));
    expect(planIds(out)).to.deep.equal(['map.0.4']);
  });

  it('fails the job when an instance failed while it was down with no attempts left', () => {
    const spec = mockJob([mockTask({ instances: 2, maxAttempts: 2 })]);
    const rec = recovery(spec, [], [listed('map.0.2', 'n1', 'failed', { exitCode: 3 }), listed('map.1.1', 'n2', 'running')]);
    const { fx } = restart(spec, [asg('map', 'n1', 1), asg('map', 'n2', 1)], rec);
    expect(finishOf(fx)?.message).to.equal('task "map" instance 0 failed after 2 attempts: exit code 3 while the application master was down');
    expect(stopsOf(fx)).to.deep.equal(['map.1.1']);
  });

  it('fails the job again when the snapshot logs a failure for good', () => {
    const spec = three();
    const failed = encodeEntry({
      task: 'map',
      instance: 2,
      attempt: 3,
      nodeId: 'n2',
      workerId: 'map.2.3',
      state: 'failed',
      message: 'task "map" instance 2 failed after 3 attempts: exit code 1',
    });
    const { fx } = restart(spec, [asg('map', 'n1', 1)], recovery(spec, [done('map', 0), failed], [listed('map.1.1', 'n1', 'running')]));
    expect(finishOf(fx)).to.deep.equal({ kind: 'finish', succeeded: false, message: 'task "map" instance 2 failed after 3 attempts: exit code 1' });
    expect(stopsOf(fx)).to.deep.equal(['map.1.1']);
    expect(returnsOf(fx)).to.deep.equal([{ suId: 'map', nodeId: 'n1', slots: 1 }]);
  });

  it('ignores the log of a snapshot about another task graph, writes the topology when there is none', () => {
    const spec = three();
    const other = mockJob([mockTask({ instances: 5 })]);
    let r = restart(spec, [asg('map', 'n1', 1)], recovery(spec, [done('map', 0)], [], [], encodeTopology(other)));
    expect(planIds(r.fx)).to.deep.equal(['map.0.1']);
    r = restart(spec, [asg('map', 'n1', 1)], recovery(spec, [done('map', 0)], [], [], ''));
    expect(snapshotsOf(r.fx)[0]?.topology).to.equal(encodeTopology(spec));
    expect(planIds(r.fx)).to.deep.equal(['map.1.1']);
  });

  it('infers done dependencies from a later task that has workers', () => {
    const spec = mockJob([mockTask({ instances: 2 }), mockTask({ name: 'reduce', instances: 1, dependsOn: ['map'] })]);
    const { h, fx } = restart(spec, [asg('reduce', 'n1', 1)], recovery(spec, [done('map', 0)], [listed('reduce.0.1', 'n1', 'running')]));
    expect(entriesOf(fx).map((e) => [e.task, e.instance])).to.deep.equal([['map', 1]]);
    expect(planIds(fx)).to.deep.equal([]);
    expect(deltasOf(fx)).to.deep.equal([]);
    expect(h.progressOf('map')).to.deep.include({ succeeded: 2 });
    expect(finishOf(h.succeed('n1', 'reduce.0.1'))).to.deep.include({ succeeded: true });
  });

  it('keeps the slots of an agent that did not answer, waits for them, and adopts its workers when it does', () => {
    const spec = mockJob([mockTask({ instances: 2 })]);
    const { h, fx } = restart(spec, [asg('map', 'n1', 1), asg('map', 'n2', 1)], recovery(spec, [], [], ['n1']));
    // Nothing known on n1: map.0 goes to n2; n1's slot is neither used nor returned, and map.1
    // waits for it (the task holds as many slots as it has instances: the master would refuse more).
    expect(planIds(fx)).to.deep.equal(['map.0.1']);
    expect(returnsOf(fx)).to.deep.equal([]);
    expect(deltasOf(fx)).to.deep.equal([]);
    expect(h.am.nodesToPoll()).to.deep.equal(['n1']);
    // n1 answers: map.1.1 runs there (adopted) and an older map.0.1 too (the same worker id as
    // ours on n2: kept as a shadow, told apart by its node).
    let out = h.am.workersListed('n1', [listed('map.1.1', 'n1', 'running'), listed('map.0.1', 'n1', 'running')], h.now);
    expect(deltasOf(out)).to.deep.equal([]);
    expect(planIds(out)).to.deep.equal([]);
    expect(h.am.workers().map((w) => [w.workerId, w.nodeId])).to.deep.equal([
      ['map.0.1', 'n2'],
      ['map.0.1', 'n1'],
      ['map.1.1', 'n1'],
    ]);
    // The shadow on n1 wins: ours on n2 is stopped and its slot goes back.
    out = h.events('n1', ev('map.0.1', 'succeeded'));
    expect(stopsOn(out, 'n2')).to.deep.equal(['map.0.1']);
    expect(returnsOf(out)).to.deep.equal([{ suId: 'map', nodeId: 'n2', slots: 1 }]);
    // Its late KILLED is ignored.
    expect(h.events('n2', ev('map.0.1', 'killed'))).to.deep.equal([]);
    expect(finishOf(h.am.workersListed('n1', [listed('map.1.1', 'n1', 'succeeded')], h.now))).to.deep.include({ succeeded: true });
  });

  it('counts an adopted worker its agent no longer lists as a failed attempt', () => {
    const spec = mockJob([mockTask({ instances: 1 })]);
    const { h } = restart(spec, [asg('map', 'n1', 1)], recovery(spec, [], [listed('map.0.1', 'n1', 'running')]));
    const out = h.am.workersListed('n1', [], h.now);
    expect(h.progressOf('map')).to.deep.include({ running: 0, pending: 1, retries: 1 });
    expect(returnsOf(out)).to.deep.equal([{ suId: 'map', nodeId: 'n1', slots: 1 }]);
    expect(deltasOf(out)).to.deep.equal([{ suId: 'map', location: '', delta: 1 }]);
  });

  it('stops running duplicates of an instance already logged as done', () => {
    const spec = three();
    const { fx } = restart(spec, [asg('map', 'n1', 1)], recovery(spec, [done('map', 0)], [listed('map.0.2', 'n1', 'running')]));
    expect(stopsOn(fx, 'n1')).to.deep.equal(['map.0.2']);
    expect(planIds(fx)).to.deep.equal(['map.1.1']);
  });
});

describe('DagAppMaster: agent timing failures', () => {
  /** map x2 running on n1 and n2 (started), with the given policy. */
  function running(over: Partial<JobSpec> = {}): Harness {
    const h = new Harness({ returnSettleMs: 1e12 });
    h.start(mockJob([mockTask({ instances: 2 })], over));
    expect(planIds(h.assign(asg('map', 'n1', 1), asg('map', 'n2', 1)))).to.deep.equal(['map.0.1', 'map.1.1']);
    h.events('n1', ev('map.0.1', 'running'));
    h.events('n2', ev('map.1.1', 'running'));
    return h;
  }

  it('rerun: keeps the workers until rerunAfterMs, then re-runs them elsewhere; the new attempt wins', () => {
    const h = running({ onAgentTimeout: 'rerun', rerunAfterMs: 30_000 });
    const t0 = h.now;
    expect(h.am.agentsTimedOut(['n1'], [], t0)).to.deep.equal([]);
    expect(h.am.timingOutNodes()).to.deep.equal([{ nodeId: 'n1', since: t0 }]);
    // Listed again: the clock does not restart.
    expect(h.am.agentsTimedOut(['n1'], [], t0 + 10_000)).to.deep.equal([]);
    expect(h.am.tick(t0 + 29_999)).to.deep.equal([]);
    let fx = h.am.tick(t0 + 30_000);
    expect(stopsOn(fx, 'n1')).to.deep.equal(['map.0.1']);
    expect(deltasOf(fx)).to.deep.equal([{ suId: 'map', location: '', delta: 1 }]);
    expect(returnsOf(fx)).to.deep.equal([]);
    expect(h.progressOf('map')).to.deep.include({ pending: 1, running: 1, retries: 0 });
    expect(h.am.tick(t0 + 60_000)).to.deep.equal([]);
    h.now = t0 + 31_000;
    fx = h.assign(asg('map', 'n3', 1));
    expect(planIds(fx)).to.deep.equal(['map.0.2']);
    expect(h.am.workers().map((w) => [w.workerId, w.nodeId])).to.deep.equal([
      ['map.0.2', 'n3'],
      ['map.0.1', 'n1'],
      ['map.1.1', 'n2'],
    ]);
    fx = h.succeed('n3', 'map.0.2');
    expect(entriesOf(fx).map((e) => e.workerId)).to.deep.equal(['map.0.2']);
    expect(stopsOn(fx, 'n1')).to.deep.equal(['map.0.1']);
    // The old attempt's result is ignored.
    expect(h.events('n1', ev('map.0.1', 'succeeded'))).to.deep.equal([]);
    expect(finishOf(h.succeed('n2', 'map.1.1'))).to.deep.include({ succeeded: true });
  });

  it('rerun: if the old worker reports success first, it is used and the new one stopped', () => {
    const h = running({ rerunAfterMs: 1000 });
    h.am.agentsTimedOut(['n1'], [], h.now);
    h.am.tick(h.now + 1000);
    expect(planIds(h.assign(asg('map', 'n3', 1)))).to.deep.equal(['map.0.2']);
    const fx = h.events('n1', ev('map.0.1', 'succeeded'));
    expect(entriesOf(fx).map((e) => e.workerId)).to.deep.equal(['map.0.1']);
    expect(stopsOn(fx, 'n3')).to.deep.equal(['map.0.2']);
    expect(returnsOf(fx)).to.deep.equal([{ suId: 'map', nodeId: 'n3', slots: 1 }]);
    expect(h.progressOf('map')).to.deep.include({ succeeded: 1, running: 1 });
    expect(h.events('n3', ev('map.0.2', 'killed'))).to.deep.equal([]);
  });

  it('rerun: a re-run does not use up an attempt; 0 ms re-runs at once', () => {
    const h = running({ rerunAfterMs: 0 });
    let fx = h.am.agentsTimedOut(['n1'], [], h.now);
    expect(stopsOn(fx, 'n1')).to.deep.equal(['map.0.1']);
    expect(planIds(h.assign(asg('map', 'n3', 1)))).to.deep.equal(['map.0.2']);
    fx = h.events('n3', ev('map.0.2', 'failed'));
    expect(finishOf(fx)).to.equal(undefined);
    expect(h.progressOf('map')).to.deep.include({ retries: 1 });
  });

  it('wait: keeps the workers however long the node times out', () => {
    const h = running({ onAgentTimeout: 'wait', rerunAfterMs: 1000 });
    expect(h.am.agentsTimedOut(['n1'], [], h.now)).to.deep.equal([]);
    expect(h.am.tick(h.now + 3_600_000)).to.deep.equal([]);
    expect(h.progressOf('map')).to.deep.include({ running: 2, pending: 0 });
    expect(finishOf([...h.succeed('n1', 'map.0.1'), ...h.succeed('n2', 'map.1.1')])).to.deep.include({ succeeded: true });
  });

  it('an agent back before the threshold loses nothing', () => {
    const h = running({ rerunAfterMs: 30_000 });
    const t0 = h.now;
    h.am.agentsTimedOut(['n1'], [], t0);
    expect(h.am.agentsTimedOut([], ['n1'], t0 + 20_000)).to.deep.equal([]);
    expect(h.am.timingOutNodes()).to.deep.equal([]);
    expect(h.am.tick(t0 + 120_000)).to.deep.equal([]);
    const fx = h.succeed('n1', 'map.0.1');
    expect(stopsOf(fx)).to.deep.equal([]);
    expect(h.progressOf('map')).to.deep.include({ succeeded: 1, running: 1, retries: 0 });
  });

  it('plans nothing on a timing-out node and sends the stops it missed when it is back', () => {
    const h = running({ rerunAfterMs: 5000 });
    h.am.agentsTimedOut(['n1'], [], h.now);
    h.am.tick(h.now + 5000); // map.0.1 replaced, stop sent (unheard)
    // A new slot on n1 is not used for the pending map.0 (nor returned): the request stands.
    let fx = h.assign(asg('map', 'n1', 2));
    expect(planIds(fx)).to.deep.equal([]);
    expect(returnsOf(fx)).to.deep.equal([]);
    expect(h.am.outstandingRequests()).to.deep.equal([{ suId: 'map', location: '', count: 1 }]);
    // n1 is back: the stop goes again, and its free slot takes map.0.
    fx = h.am.agentsTimedOut([], ['n1'], h.now + 6000);
    expect(stopsOn(fx, 'n1')).to.deep.equal(['map.0.1']);
    expect(plansOf(fx).map((p) => [p.workerId])).to.deep.equal([['map.0.2']]);
    expect(deltasOf(fx)).to.deep.equal([{ suId: 'map', location: '', delta: -1 }]);
    expect(fx.find((e) => e.kind === 'plan')).to.deep.include({ nodeId: 'n1' });
  });

  it('asks for no more slots than instances, not counting those on a timing-out node; and waits for the node once it is back', () => {
    const h = running({ rerunAfterMs: 0 });
    // map.0 re-runs elsewhere while its old attempt keeps the n1 slot: n1's slot does not count.
    let fx = h.am.agentsTimedOut(['n1'], [], h.now);
    expect(deltasOf(fx)).to.deep.equal([{ suId: 'map', location: '', delta: 1 }]);
    // n1 is back before the new slot came: with n1's slot, map holds as many as it has instances.
    fx = h.am.agentsTimedOut([], ['n1'], h.now);
    expect(stopsOn(fx, 'n1')).to.deep.equal(['map.0.1']);
    expect(deltasOf(fx)).to.deep.equal([{ suId: 'map', location: '', delta: -1 }]);
    // The old attempt ends (stopped): map.0, which avoids n1 now, gives the slot back and asks for one.
    fx = h.events('n1', ev('map.0.1', 'killed'));
    expect(returnsOf(fx)).to.deep.equal([{ suId: 'map', nodeId: 'n1', slots: 1 }]);
    expect(deltasOf(fx)).to.deep.equal([{ suId: 'map', location: '', delta: 1 }]);
  });

  it('forgets a timing-out node once it holds none of our slots (lost): slots placed there later are not held back', () => {
    const h = running({ onAgentTimeout: 'wait' });
    h.am.agentsTimedOut(['n1'], [], h.now);
    // Lost: the master released its slot; map.0 runs again elsewhere.
    let fx = h.assign(asg('map', 'n1', 0));
    expect(h.am.timingOutNodes()).to.deep.equal([]);
    expect(deltasOf(fx)).to.deep.equal([{ suId: 'map', location: '', delta: 1 }]);
    // The agent came back (no notice says so) and gets a slot: it is a node like any other (map.0,
    // which lost its slot there, prefers another and gives it back; nothing is held back there).
    fx = h.assign(asg('map', 'n1', 1));
    expect(returnsOf(fx)).to.deep.equal([{ suId: 'map', nodeId: 'n1', slots: 1 }]);
  });

  it('takes back a request the master refused and asks again at its next input', () => {
    const h = running({ rerunAfterMs: 0 });
    const fx = h.am.agentsTimedOut(['n1'], [], h.now);
    const req = fx.find((e) => e.kind === 'request')!;
    if (req.kind !== 'request') throw new Error('no request');
    h.am.requestRefused(req.units, req.deltas);
    expect(h.am.outstandingRequests()).to.deep.equal([]);
    expect(deltasOf(h.am.tick(h.now + 1))).to.deep.equal([{ suId: 'map', location: '', delta: 1 }]);
  });

  it('the master taking a timing-out node away drops its replaced attempts quietly', () => {
    const h = running({ rerunAfterMs: 0 });
    h.am.agentsTimedOut(['n1'], [], h.now);
    expect(planIds(h.assign(asg('map', 'n3', 1)))).to.deep.equal(['map.0.2']);
    const fx = h.assign(asg('map', 'n1', 0));
    expect(h.progressOf('map')).to.deep.include({ running: 2, retries: 0 });
    expect(deltasOf(fx)).to.deep.equal([]);
    expect(h.am.workers().map((w) => w.workerId)).to.deep.equal(['map.0.2', 'map.1.1']);
  });
});

describe('DagAppMaster: where upstream outputs are (FUXI_UPSTREAM)', () => {
  const spec = () => mockJob([mockTask({ instances: 2 }), mockTask({ name: 'reduce', dependsOn: ['map'] })]);
  const upstreamOf = (effects: AmEffect[]) => JSON.parse(plansOf(effects).find((p) => p.task === 'reduce')!.command.env.FUXI_UPSTREAM!);

  it("gives a dependent task's workers the agent and worker of every upstream instance", () => {
    const h = new Harness();
    h.start(spec());
    h.assign(asg('map', 'n1', 1), asg('map', 'n2', 1));
    h.succeed('n1', 'map.0.1');
    h.succeed('n2', 'map.1.1');
    const fx = h.assign(asg('map', 'n1', 1), asg('map', 'n2', 1), asg('reduce', 'n2', 1));
    expect(upstreamOf(fx)).to.deep.equal({
      map: {
        hosts: ['n1.addr:7071', 'n2.addr:7071'],
        nodes: ['n1', 'n2'],
        outputs: [
          [0, 'map.0.1'],
          [1, 'map.1.1'],
        ],
      },
    });
    expect(plansOf(fx).filter((p) => p.task === 'map')).to.deep.equal([]);
  });

  it('knows them after a restart from the snapshot, also for nodes that no longer hold its slots', () => {
    const s = spec();
    const entry = (i: number, node: string) =>
      encodeEntry({ task: 'map', instance: i, attempt: 1, nodeId: node, workerId: `map.${i}.1`, nodeAddress: `${node}.addr:7071`, state: 'succeeded' });
    const { h } = restart(s, [], recovery(s, [entry(0, 'n5'), entry(1, 'n6')]));
    const fx = h.assign(asg('reduce', 'n1', 1));
    expect(upstreamOf(fx)).to.deep.equal({
      map: {
        hosts: ['n5.addr:7071', 'n6.addr:7071'],
        nodes: ['n5', 'n6'],
        outputs: [
          [0, 'map.0.1'],
          [1, 'map.1.1'],
        ],
      },
    });
  });
});
