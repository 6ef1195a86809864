/**
 * Partitions between the master and an agent (Table I cells involving the master; docs/
 * architecture.md, "Network partitions", "Master <-> agent"): a node the master cannot hear but that
 * peers it hears still reach is partitioned, not timing out or lost; its workers and slots are
 * kept, nothing new is placed there and its AMs are not told. The agents probe as the real ones
 * do, through their heartbeats (`Probing`): they take the targets the master sends, confirm them,
 * and report their unreachable peers as changes on the set the master acknowledged.
 */
import { expect } from 'chai';
import { StaleEpochError } from '@fuxi/common';
import type { ConnectivityDeltaInput } from '../connectivity.js';
import { DEFAULT_CONFIG } from '../master-core.js';
import type { GrantEntry, HeartbeatInput } from '../types.js';
import { asgnMap, grantMap, Harness, type HarnessOptions, mockNodeInfo, mockSpec, ofKind, EPOCH } from './core-factories.js';

const TIMING_OUT = DEFAULT_CONFIG.agentTimingOutMs;
const TIMEOUT = DEFAULT_CONFIG.agentTimeoutMs;
const STALL = DEFAULT_CONFIG.amStallTimeoutMs;
const NODES = ['n1', 'n2', 'n3'];
const PROBE_PORT = 7999;

/** What one agent's prober holds: the peers it cannot reach, and what the master acknowledged. */
interface Prober {
  unreachable: Set<string>;
  seq: number;
  /** The set the master acknowledged (at `acked`); undefined: it holds none, send the whole set. */
  ackedSet: Set<string> | undefined;
  acked: number;
  targetsVersion: number;
}

/** A harness whose agents probe: every heartbeat carries the agent's probe report and targets version. */
class Probing extends Harness {
  private readonly probers = new Map<string, Prober>();

  prober(nodeId: string): Prober {
    let p = this.probers.get(nodeId);
    if (!p) {
      p = { unreachable: new Set(), seq: 0, ackedSet: undefined, acked: 0, targetsVersion: 0 };
      this.probers.set(nodeId, p);
    }
    return p;
  }

  override heartbeat(nodeId: string, over: Partial<HeartbeatInput> = {}): ReturnType<Harness['heartbeat']> {
    const p = this.prober(nodeId);
    const sent = new Set(p.unreachable);
    let d: ConnectivityDeltaInput;
    if (!p.ackedSet) d = { seq: ++p.seq, baseSeq: 0, unreachable: [...sent].sort(), reachable: [] };
    else {
      const base = p.ackedSet;
      const unreachable = [...sent].filter((x) => !base.has(x)).sort();
      const reachable = [...base].filter((x) => !sent.has(x)).sort();
      if (unreachable.length + reachable.length > 0) p.seq++;
      d = { seq: p.seq, baseSeq: p.acked, unreachable, reachable };
    }
    const r = super.heartbeat(nodeId, { connectivity: d, probeTargetsVersion: p.targetsVersion, ...over });
    if (r.connectivityResync) p.ackedSet = undefined;
    else if (r.connectivitySeq === d.seq) [p.acked, p.ackedSet] = [d.seq, sent];
    if (r.probeTargets) p.targetsVersion = r.probeTargets.version;
    return r;
  }
}

/** `prober` cannot reach `unreachable` (and reaches its other targets) from now on; its next heartbeat says so. */
function report(h: Probing, prober: string, unreachable: string[]): void {
  h.prober(prober).unreachable = new Set(unreachable);
}

/** n1..n3 (racks r1..r3), probing each other, all reached; each agent holds and has confirmed its targets. */
function meshed(opts: HarnessOptions = {}): Probing {
  const h = new Probing({ nodes: NODES.map((nodeId, i) => ({ nodeId, rack: `r${i + 1}`, probePort: PROBE_PORT })), ...opts });
  h.run(3000);
  for (const p of NODES) expect([...(h.core.connectivity.probes.get(p) ?? [])].sort(), p).to.deep.equal(NODES.filter((n) => n !== p));
  return h;
}

/** `meshed()` with job-1's AM on n1, its map slots n2:1 n3:1 n1:1, the AM registered at am-job-1:9000. */
function cluster(opts: HarnessOptions = {}): Probing {
  const h = meshed(opts);
  h.start();
  h.ask('job-1', 3);
  expect(h.core.getJob('job-1')).to.include({ amNodeId: 'n1', amAttempt: 1 });
  expect(h.amSlots('job-1')).to.deep.equal({ 'map@n1': 1, 'map@n2': 1, 'map@n3': 1 });
  return h;
}

const allocations = (h: Harness) => Object.fromEntries(h.core.listNodes().map((n) => [n.info.nodeId, n.allocated]));
const stateOf = (h: Harness, nodeId: string) => h.core.listNodes().find((n) => n.info.nodeId === nodeId);
const openFaults = (h: Harness) => h.core.faults.open().map((e) => [e.kind, e.subject]);
const attemptsOf = (grants: readonly GrantEntry[], appId: string) => [...new Set(grants.filter((g) => g.appId === appId).map((g) => g.amAttempt))];

describe('partitions between the master and an agent', () => {
  it('a node the master cannot hear but its peers reach is partitioned: not timing out, never lost, slots kept, its AMs not told', () => {
    const h = cluster();
    const before = allocations(h);
    const version = h.core.connectivity.version;
    const effects = h.run(TIMING_OUT + 1000, { silentNodes: ['n3'] });

    expect(ofKind(effects, 'agentsTimedOut')).to.deep.equal([]);
    expect(stateOf(h, 'n3')).to.deep.include({ healthy: true, state: 'partitioned' });
    expect([...h.core.connectivity.partitioned]).to.deep.equal(['n3']);
    expect(h.core.connectivity.version).to.be.greaterThan(version);
    const st = h.core.clusterStatus(h.now);
    expect(st).to.deep.include({ fsmState: 'S3', nodesHealthy: 2, nodesTimingOut: 0, nodesLost: 0 });
    expect(st.connectivity.partitioned).to.deep.equal(['n3']);
    expect(st.openEvents.map((e) => [e.kind, e.subject, e.state])).to.deep.equal([['AGENT_PARTITIONED', 'n3', 'open']]);
    expect(st.openEvents[0]?.detail).to.contain('reached by n1, n2');
    // Table 3 row 3: the master keeps the node's grants for when it is heard again.
    expect(h.core.sourceUses().map((u) => [u.row, u.source, u.timing, u.subject])).to.deep.include([3, 'FMFullCap', 'after-reconnect', 'n3']);

    // Long past the agent timeout: still partitioned, nothing released, no AM told.
    const later = h.run(3 * TIMEOUT, { silentNodes: ['n3'] });
    expect(ofKind(later, 'agentsTimedOut')).to.deep.equal([]);
    expect(stateOf(h, 'n3')).to.deep.include({ healthy: true, state: 'partitioned' });
    expect(allocations(h)).to.deep.equal(before);
    expect(h.amSlots('job-1')).to.deep.equal({ 'map@n1': 1, 'map@n2': 1, 'map@n3': 1 });
    expect(h.core.getJob('job-1').amAttempt).to.equal(1);
    // Its slots still count against the request limit: the AM holds them, its worker runs.
    expect(h.core.units('job-1').find((u) => u.suId === 'map')).to.deep.include({ granted: 3, counted: 3 });

    // Nothing new is placed there: a request for n3 goes elsewhere.
    h.ask('job-1', 1, 'node:n3');
    expect(h.amSlots('job-1')['map@n3']).to.equal(1);
    expect(h.allocated('n3')).to.deep.equal(before.n3);
  });

  it('a node still reached by one peer stays partitioned; when no peer reaches it, it times out and is lost as today', () => {
    const h = cluster();
    h.run(TIMING_OUT + 1000, { silentNodes: ['n3'] });
    report(h, 'n1', ['n3']);
    h.run(2 * TIMEOUT, { silentNodes: ['n3'] });
    expect(stateOf(h, 'n3')?.state).to.equal('partitioned');
    expect(h.core.faults.open().find((e) => e.kind === 'AGENT_PARTITIONED')).to.not.equal(undefined);

    // n2 loses it too (full isolation, or it died): timing out, its AMs told.
    const lastVouchedAt = h.now;
    report(h, 'n2', ['n3']);
    const effects = h.run(1000, { silentNodes: ['n3'] });
    expect(ofKind(effects, 'agentsTimedOut').map((e) => [e.appId, e.nodeIds])).to.deep.equal([['job-1', ['n3']]]);
    expect(stateOf(h, 'n3')).to.deep.include({ healthy: true, state: 'timing out' });
    expect(h.core.connectivity.partitioned.size).to.equal(0);
    expect(openFaults(h)).to.deep.equal([['AGENT_TIMING', 'n3']]);
    expect(h.core.faults.history().find((e) => e.kind === 'AGENT_PARTITIONED')).to.deep.include({ state: 'resolved' });
    expect(h.core.faults.history().find((e) => e.kind === 'AGENT_PARTITIONED')?.detail).to.contain('no peer reaches it');
    // The agent stays S3 throughout: timing out is posted before partitioned is resolved.
    expect(h.core.faults.transitions().map((t) => `${t.from}->${t.to}`)).to.deep.equal(['S0->S3']);

    // Lost agentTimeoutMs after its last sign of life: the last tick at which a peer vouched for it.
    h.run(lastVouchedAt + TIMEOUT - h.now, { silentNodes: ['n3'] });
    expect(stateOf(h, 'n3')?.state).to.equal('timing out');
    h.run(1000, { silentNodes: ['n3'] });
    expect(stateOf(h, 'n3')).to.deep.include({ healthy: false, state: 'lost' });
    expect(h.amSlots('job-1')).to.deep.equal({ 'map@n1': 1, 'map@n2': 1 });
    expect(h.core.faults.state).to.equal('S0');
  });

  it('without connectivity awareness (the comparison baseline) a node its peers reach times out and is lost as before', () => {
    const h = cluster({ config: { connectivityAware: false } });
    const effects = h.run(TIMEOUT + 1000, { silentNodes: ['n3'] });
    expect(ofKind(effects, 'agentsTimedOut').map((e) => e.nodeIds)).to.deep.equal([['n3']]);
    expect(stateOf(h, 'n3')?.state).to.equal('lost');
    expect(h.core.connectivity.partitioned.size).to.equal(0);
  });

  it('a node whose peers cannot reach it either (a dead node) times out as today, never partitioned', () => {
    const h = cluster();
    // The peers notice within probeDetectionMs, before the master's detector suspects it.
    h.run(1000, { silentNodes: ['n3'] });
    report(h, 'n1', ['n3']);
    report(h, 'n2', ['n3']);
    const effects = h.run(TIMEOUT, { silentNodes: ['n3'] });
    expect(ofKind(effects, 'agentsTimedOut').map((e) => e.nodeIds)).to.deep.equal([['n3']]);
    expect(stateOf(h, 'n3')?.state).to.equal('lost');
    expect(h.core.faults.history().map((e) => e.kind)).to.deep.equal(['AGENT_TIMING']);
  });

  it('a node its detector suspects before its peers can vouch waits for their word: partitioned, never reported timing out', () => {
    // The detector suspects n3 at 2 s (silent past 1.5 s at a 500 ms tick); its peers vouch only by
    // heartbeats from 1 s + 2 s after its last one (they notice a dead node within 2 s).
    const h = cluster({ config: { agentTimingOutMs: 1500, probeDetectionMs: 2000 } });
    const early = h.run(2000, { silentNodes: ['n3'], step: 500 });
    expect(stateOf(h, 'n3')?.state).to.equal('ready');
    const late = h.run(1000, { silentNodes: ['n3'], step: 500 });
    expect(stateOf(h, 'n3')?.state).to.equal('partitioned');
    expect(ofKind([...early, ...late], 'agentsTimedOut')).to.deep.equal([]);
    expect(h.core.faults.history().map((e) => e.kind)).to.deep.equal(['AGENT_PARTITIONED']);
  });

  it('a timing-out node that a peer reaches again is partitioned: its AMs are told it recovered', () => {
    const h = cluster();
    report(h, 'n1', ['n3']);
    report(h, 'n2', ['n3']);
    const early = h.run(TIMING_OUT + 1000, { silentNodes: ['n3'] });
    expect(ofKind(early, 'agentsTimedOut').map((e) => [e.nodeIds, e.recoveredNodeIds])).to.deep.equal([[['n3'], []]]);
    expect(stateOf(h, 'n3')?.state).to.equal('timing out');

    // n2's probes get answers again (the cut was between n3 and everyone, and heals on n2's side).
    report(h, 'n2', []);
    const late = h.run(1000, { silentNodes: ['n3'] });
    expect(ofKind(late, 'agentsTimedOut').map((e) => [e.nodeIds, e.recoveredNodeIds])).to.deep.equal([[[], ['n3']]]);
    expect(stateOf(h, 'n3')?.state).to.equal('partitioned');
    expect(openFaults(h)).to.deep.equal([['AGENT_PARTITIONED', 'n3']]);
    expect(h.core.faults.history().find((e) => e.kind === 'AGENT_TIMING')?.detail).to.contain('reached by n2');
    expect(h.core.faults.transitions().map((t) => `${t.from}->${t.to}`)).to.deep.equal(['S0->S3']);
  });

  it('heard again, a partitioned node is healthy: schedulable, its grants resynced, its AMs not told anything', () => {
    const h = cluster();
    h.run(TIMING_OUT + 1000, { silentNodes: ['n3'] });
    const held = h.agents.get('n3')!;
    // The AM gives its slot on n3 back meanwhile: the push to n3 does not arrive.
    h.giveBack('job-1', [{ suId: 'map', nodeId: 'n3', slots: 1 }]);
    h.run(2 * TIMEOUT, { silentNodes: ['n3'] });

    const back = h.heartbeat('n3', { grantSeq: held.seq });
    expect(grantMap(back.full?.grants ?? [])).to.deep.equal({});
    expect(ofKind(back.effects, 'agentsTimedOut')).to.deep.equal([]);
    expect(stateOf(h, 'n3')).to.deep.include({ healthy: true, state: 'ready' });
    expect(h.core.connectivity.partitioned.size).to.equal(0);
    expect(h.core.clusterStatus(h.now)).to.deep.include({ fsmState: 'S0', nodesHealthy: 3 });
    expect(h.core.clusterStatus(h.now).connectivity.partitioned).to.deep.equal([]);
    expect(h.core.faults.history().map((e) => [e.kind, e.subject, e.state])).to.deep.equal([['AGENT_PARTITIONED', 'n3', 'resolved']]);
    expect(h.core.faults.history()[0]?.detail).to.contain('partition from the master healed');
    // Schedulable again.
    h.ask('job-1', 1, 'node:n3');
    expect(h.amSlots('job-1')['map@n3']).to.equal(1);
  });

  it('a partitioned agent that restarts and registers again is healthy and gets its grants', () => {
    const h = cluster();
    h.run(TIMING_OUT + 1000, { silentNodes: ['n3'] });
    const { effects } = h.core.registerAgent(mockNodeInfo({ nodeId: 'n3', rack: 'r3', probePort: PROBE_PORT }), EPOCH, h.now);
    expect(ofKind(effects, 'grants').map((g) => [g.nodeId, grantMap(g.grants)])).to.deep.equal([['n3', { 'job-1/map': 1 }]]);
    expect(ofKind(effects, 'agentsTimedOut')).to.deep.equal([]);
    expect(stateOf(h, 'n3')?.state).to.equal('ready');
    expect(h.core.connectivity.partitioned.size).to.equal(0);
    expect(h.core.faults.state).to.equal('S0');
  });

  it('an AM on a partitioned node is restarted elsewhere as a new attempt; its workers there are kept for the new AM to adopt', () => {
    const h = cluster();
    const before = allocations(h);
    // n1 and its AM go quiet for the master; n2 and n3 still reach n1.
    const effects = h.run(TIMING_OUT + 4000, { silentNodes: ['n1'], silentAms: ['job-1'] });
    expect(ofKind(effects, 'agentsTimedOut')).to.deep.equal([]);
    expect(stateOf(h, 'n1')?.state).to.equal('partitioned');
    const launches = ofKind(effects, 'launchAm').map((e) => [e.appId, e.attempt, e.nodeId]);
    expect(launches).to.have.length(1);
    expect(launches[0]?.slice(0, 2)).to.deep.equal(['job-1', 2]);
    expect(launches[0]?.[2]).to.not.equal('n1');
    const amNode = String(launches[0]?.[2]);
    // The old AM is stopped (when the stop reaches n1, or by its revoked grant when n1 is heard).
    expect(ofKind(effects, 'stopWorkers').map((s) => [s.nodeId, s.workerIds])).to.deep.equal([['n1', ['am.1']]]);
    // The app keeps its map slot on n1; the AM slot moved.
    expect(h.allocated('n1')).to.deep.equal({ cpuMilli: before.n1!.cpuMilli - 500, memoryMb: before.n1!.memoryMb - 512 });
    expect(grantMap(h.agents.get('n1')?.grants ?? [])).to.deep.equal({ 'job-1/map': 1 });
    for (const n of NODES) expect(attemptsOf(h.agents.get(n)?.grants ?? [], 'job-1'), n).to.deep.equal([2]);
    expect(h.core.faults.state).to.equal('S2S3');

    // The new attempt registers and is handed every slot, n1's too: it adopts the worker there.
    const reg = h.registerApp('job-1', 2, `${amNode}:9100`);
    expect(asgnMap(reg.assignments)).to.deep.equal({ 'map@n1': 1, 'map@n2': 1, 'map@n3': 1 });
    expect(openFaults(h)).to.deep.equal([['AGENT_PARTITIONED', 'n1']]);
    // The old attempt is fenced.
    expect(() => h.core.updateRequests({ appId: 'job-1', attempt: 1, seq: 99, units: [], deltas: [], assignmentSeq: 0, progress: [] }, h.now)).to.throw(
      StaleEpochError,
    );

    // n1 is heard again: its full table has no AM slot (its agent stops the old AM) and names attempt 2.
    const back = h.heartbeat('n1', { grantSeq: 0 });
    expect(grantMap(back.full?.grants ?? [])).to.deep.equal({ 'job-1/map': 1 });
    expect(attemptsOf(back.full?.grants ?? [], 'job-1')).to.deep.equal([2]);
    expect(h.core.faults.state).to.equal('S0');
  });

  it('an AM on a partitioned node is replaced three AM heartbeat intervals after it fell silent, not after the stall timeout', () => {
    const h = cluster();
    const t0 = h.now;
    let launchedAt = -1;
    for (let t = 0; t < STALL && launchedAt < 0; t += 100) {
      const effects = h.run(100, { silentNodes: ['n1'], silentAms: ['job-1'] });
      if (ofKind(effects, 'launchAm').length > 0) launchedAt = h.now - t0;
    }
    expect(stateOf(h, 'n1')?.state).to.equal('partitioned');
    // Partitioned after the agent timing-out detection (3 s here); the AM, silent as long, goes then.
    expect(launchedAt)
      .to.be.greaterThan(0)
      .and.at.most(DEFAULT_CONFIG.agentTimingOutMs + 3 * DEFAULT_CONFIG.amHeartbeatIntervalMs + 1000);
    expect(h.core.getJob('job-1')?.amAttempt).to.equal(2);
  });

  it('an AM still heard on a partitioned node is kept', () => {
    const h = cluster();
    h.run(10_000, { silentNodes: ['n1'] });
    expect(stateOf(h, 'n1')?.state).to.equal('partitioned');
    expect(h.core.getJob('job-1')?.amAttempt).to.equal(1);
  });

  it('an AM launch that could not reach its agent does not fail the job: the attempt is replaced elsewhere when the node is found partitioned', () => {
    const h = meshed();
    const { effects } = h.submit();
    expect(ofKind(effects, 'launchAm').map((e) => [e.attempt, e.nodeId])).to.deep.equal([[1, 'n1']]);
    // The master's link to n1 was cut just before: the shell's launch calls go unanswered.
    expect(h.core.amLaunchFailed('job-1', 1, 'connect ECONNREFUSED', h.now, true)).to.deep.equal([]);
    expect(h.core.getJob('job-1')).to.include({ state: 'submitted', amAttempt: 1, amNodeId: 'n1' });

    const later = h.run(TIMING_OUT + 1000, { silentNodes: ['n1'] });
    expect(stateOf(h, 'n1')?.state).to.equal('partitioned');
    const launches = ofKind(later, 'launchAm');
    expect(launches.map((e) => e.attempt)).to.deep.equal([2]);
    expect(launches[0]?.nodeId).to.not.equal('n1');
    expect(h.core.faults.history().find((e) => e.kind === 'AM_CRASH')?.detail).to.contain('n1 is partitioned from the master');
    h.registerApp('job-1');
    expect(h.core.getJob('job-1')).to.include({ state: 'running', amAttempt: 2 });
  });

  it('an AM launch that could not reach a node no longer healthy is replaced at once; one its agent refused still fails the job', () => {
    const h = meshed();
    h.submit();
    // n1 is cut from everyone: timing out, the attempt placed there still launching.
    report(h, 'n2', ['n1']);
    report(h, 'n3', ['n1']);
    h.run(TIMING_OUT + 1000, { silentNodes: ['n1'] });
    expect(stateOf(h, 'n1')?.state).to.equal('timing out');
    expect(h.core.getJob('job-1')).to.include({ state: 'submitted', amAttempt: 1, amNodeId: 'n1' });
    const effects = h.core.amLaunchFailed('job-1', 1, 'deadline exceeded', h.now, true);
    expect(ofKind(effects, 'launchAm').map((e) => e.attempt)).to.deep.equal([2]);
    expect(ofKind(effects, 'launchAm')[0]?.nodeId).to.not.equal('n1');
    expect(h.core.faults.history().find((e) => e.kind === 'AM_CRASH')?.detail).to.contain('could not be reached');
    h.core.amLaunchFailed('job-1', 2, 'no such command', h.now);
    expect(h.core.getJob('job-1')).to.include({ state: 'failed' });
  });

  it('nothing new is placed on a partitioned node, not even an AM, though it is the least loaded', () => {
    const h = meshed();
    h.start(mockSpec({ id: 'busy' }));
    h.ask('busy', 4, 'node:n2');
    h.ask('busy', 4, 'node:n3');
    expect(h.core.getJob('busy').amNodeId).to.equal('n1');
    h.run(TIMING_OUT + 1000, { silentNodes: ['n1'], silentAms: ['busy'] });
    expect(stateOf(h, 'n1')?.state).to.equal('partitioned');
    const { effects } = h.submit(mockSpec({ id: 'job-2' }));
    expect(ofKind(effects, 'launchAm').map((e) => e.nodeId)).to.have.length(1);
    expect(ofKind(effects, 'launchAm')[0]?.nodeId).to.not.equal('n1');
  });
});
