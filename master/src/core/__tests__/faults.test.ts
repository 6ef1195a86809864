/**
 * Failures other than the master's own, and the fault board that follows them (paper sections
 * 4.1.2, 4.1.3, 4.2; docs/design.md, "Failover"): AM crash and AM timing failure (a new attempt, on the
 * same node when it can, every slot kept), agent timing failure (reserved, AMs told, back with
 * nothing lost, or lost after the agent timeout), and the system FSM states these produce.
 */
import { expect } from 'chai';
import { res, StaleEpochError, ZERO } from '@fuxi/common';
import { DEFAULT_CONFIG } from '../master-core.js';
import { STORE_WRITE_LIMITS, STORED_KEYS_KEPT, storeWrites } from '../store-ops.js';
import { AM_SU } from '@fuxi/common';
import type { Effect, GrantEntry, JobRecord } from '../types.js';
import {
  AM_RES,
  amReport,
  asgnMap,
  EPOCH,
  grantMap,
  Harness,
  type HarnessOptions,
  indexOfKind,
  mockNodeInfo,
  mockSpec,
  ofKind,
  SLOT,
} from './core-factories.js';

const TIMING_OUT = DEFAULT_CONFIG.agentTimingOutMs;
const TIMEOUT = DEFAULT_CONFIG.agentTimeoutMs;

/** job-1: AM on n1, map slots n1:1 n2:2 (n1 rack r1, n2 rack r2), AM registered at am-job-1:9000. */
function busy(opts: HarnessOptions = {}): Harness {
  const h = new Harness({
    nodes: [
      { nodeId: 'n1', rack: 'r1' },
      { nodeId: 'n2', rack: 'r2' },
    ],
    ...opts,
  });
  h.start();
  h.ask('job-1', 3);
  expect(h.core.getJob('job-1')).to.include({ amNodeId: 'n1', amAttempt: 1 });
  expect(h.amSlots('job-1')).to.deep.equal({ 'map@n1': 1, 'map@n2': 2 });
  return h;
}

/** a: AM on n1, map n1:2 n2:1 (and a task `big`). b: AM on n2 and nothing else. Both registered. */
function twoApps(opts: HarnessOptions = {}): Harness {
  const h = new Harness({
    nodes: [
      { nodeId: 'n1', rack: 'r1' },
      { nodeId: 'n2', rack: 'r2' },
    ],
    ...opts,
  });
  // App a also has a task `big` whose 6-core slots fit one node only.
  const task = (name: string, instances: number, cpu: number) => ({ name, instances, resources: { cpu, memory: 1024 }, command: ['true'] });
  h.submit(mockSpec({ id: 'a', tasks: [task('map', 200, 1), task('big', 1, 6)] }));
  h.submit(mockSpec({ id: 'b' }));
  h.registerApp('a');
  h.registerApp('b');
  h.ask('a', 3);
  expect([h.core.getJob('a').amNodeId, h.core.getJob('b').amNodeId]).to.deep.equal(['n1', 'n2']);
  expect(h.amSlots('a')).to.deep.equal({ 'map@n1': 2, 'map@n2': 1 });
  return h;
}

const allocations = (h: Harness) => Object.fromEntries(h.core.listNodes().map((n) => [n.info.nodeId, n.allocated]));
const attemptsOf = (grants: readonly GrantEntry[], appId: string) => [...new Set(grants.filter((g) => g.appId === appId).map((g) => g.amAttempt))];
const openFaults = (h: Harness) => h.core.faults.open().map((e) => [e.kind, e.subject, e.state]);
const storedJob = (effects: readonly Effect[], jobId: string): JobRecord | undefined =>
  ofKind(effects, 'store')
    .flatMap((s) => s.ops)
    .filter((o) => o.type === 'put' && o.key === `jobs/${jobId}`)
    .map((o) => (o.type === 'put' ? (JSON.parse(o.value) as JobRecord) : undefined))
    .at(-1);
const dies = (h: Harness, nodeId: string, appId: string, over: Parameters<typeof amReport>[1] = {}) =>
  h.heartbeat(nodeId, { amWorkers: [amReport(appId, { amAttempt: h.core.getJob(appId).amAttempt, state: 'failed', exitCode: 137, ...over })] });

describe('AM failover', () => {
  describe('AM crash', () => {
    it('restarts a crashed AM on its node: attempt 2 reuses the AM slot, grants re-pushed with amAttempt 2, the old AM stopped', () => {
      const h = busy();
      const before = allocations(h);
      const tables = { n1: grantMap(h.agents.get('n1')?.grants ?? []), n2: grantMap(h.agents.get('n2')?.grants ?? []) };
      h.advance(10);
      const r = dies(h, 'n1', 'job-1', { exitCode: 137, message: 'OOM killed' });

      expect(ofKind(r.effects, 'launchAm')).to.deep.equal([
        { kind: 'launchAm', appId: 'job-1', attempt: 2, nodeId: 'n1', address: 'n1:7001', resource: AM_RES, epoch: EPOCH },
      ]);
      const stops = ofKind(r.effects, 'stopWorkers');
      expect(stops.map((s) => [s.nodeId, s.appId, s.workerIds])).to.deep.equal([['n1', 'job-1', ['am.1']]]);
      expect(stops[0]?.reason).to.contain('exit code 137').and.to.contain('OOM killed');
      // Every node holding the app gets its table again, naming attempt 2, with the same slots.
      const grants = ofKind(r.effects, 'grants');
      expect(grants.map((g) => g.nodeId).sort()).to.deep.equal(['n1', 'n2']);
      for (const g of grants) {
        expect(attemptsOf(g.grants, 'job-1'), g.nodeId).to.deep.equal([2]);
        expect(grantMap(g.grants), g.nodeId).to.deep.equal(tables[g.nodeId as 'n1' | 'n2']);
      }
      // The agent holds the new attempt's grant before it is asked to start the new AM.
      expect(indexOfKind(r.effects, 'grants')).to.be.lessThan(indexOfKind(r.effects, 'launchAm'));
      expect(ofKind(r.effects, 'assignments')).to.deep.equal([]);
      // The app keeps every slot: its workers keep running.
      expect(allocations(h)).to.deep.equal(before);
      expect(h.core.getJob('job-1')).to.include({ state: 'running', amAttempt: 2, amNodeId: 'n1', amAddress: '' });
      // metaAM: the new attempt is hard state before it is launched.
      expect(storedJob(r.effects, 'job-1')).to.include({ amAttempt: 2, amNodeId: 'n1' });
      expect(indexOfKind(r.effects, 'store')).to.be.lessThan(indexOfKind(r.effects, 'launchAm'));
    });

    it('fences the old attempt and hands the new one the slots the app holds', () => {
      const h = busy();
      dies(h, 'n1', 'job-1');
      expect(() => h.core.updateRequests({ appId: 'job-1', attempt: 1, seq: 99, units: [], deltas: [], assignmentSeq: 0, progress: [] }, h.now)).to.throw(
        StaleEpochError,
      );
      expect(() => h.core.registerApp('job-1', 1, 'old:1', h.now)).to.throw(StaleEpochError);
      // The stopped old AM is reported killed: that is attempt 1, not the current one.
      expect(h.heartbeat('n1', { amWorkers: [amReport('job-1', { amAttempt: 1, state: 'killed', signal: 'SIGTERM' })] }).effects).to.deep.equal([]);
      expect(h.core.getJob('job-1').amAttempt).to.equal(2);

      const reg = h.registerApp('job-1', 2, 'n1:9100');
      expect(asgnMap(reg.assignments)).to.deep.equal({ 'map@n1': 1, 'map@n2': 2 });
      expect(h.core.getJob('job-1')).to.include({ state: 'running', amAddress: 'n1:9100' });
      // UpdateRequests seqs are per attempt: the new AM starts again from 1.
      const more = h.request('job-1', [], { seq: 1, assignmentSeq: reg.seq, units: [] });
      expect(more.full).to.equal(undefined);
      const asked = h.ask('job-1', 1);
      expect(ofKind(asked.effects, 'assignments').map((e) => e.address)).to.deep.equal(['n1:9100']);
      expect(attemptsOf(h.agents.get('n2')?.grants ?? [], 'job-1')).to.deep.equal([2]);
    });

    it('restarts the AM on another node when its node is lost; the slots elsewhere are kept', () => {
      const h = busy();
      const effects = h.run(TIMEOUT + 1000, { silentNodes: ['n1'] });
      const n1 = h.core.listNodes().find((n) => n.info.nodeId === 'n1');
      expect(n1).to.deep.include({ healthy: false, allocated: ZERO });
      expect(ofKind(effects, 'launchAm').map((e) => [e.appId, e.attempt, e.nodeId])).to.deep.equal([['job-1', 2, 'n2']]);
      expect(h.core.getJob('job-1')).to.include({ state: 'running', amAttempt: 2, amNodeId: 'n2' });
      expect(grantMap(h.agents.get('n2')?.grants ?? [])).to.deep.equal({ 'job-1/__am__': 1, 'job-1/map': 2 });
      expect(attemptsOf(h.agents.get('n2')?.grants ?? [], 'job-1')).to.deep.equal([2]);
      expect(h.allocated('n2')).to.deep.equal(res(2500, 2560));
      // The new AM learns the app's slots (n1's are gone) when it registers.
      expect(asgnMap(h.registerApp('job-1').assignments)).to.deep.equal({ 'map@n2': 2 });
      // If n1 comes back, its table is empty: the agent stops the old AM and its workers there.
      expect(h.heartbeat('n1').full?.grants).to.deep.equal([]);
    });

    it('restarts the AM on another node when its node is timing out (AM stall); the timing-out node keeps the app slots reserved', () => {
      const h = busy({ config: { amStallTimeoutMs: TIMING_OUT + 2000 } });
      // n1 goes quiet, and with it the AM: first n1 is timing out, then the AM stalls.
      const effects = h.run(TIMING_OUT + 3000, { silentNodes: ['n1'], silentAms: ['job-1'] });
      expect(ofKind(effects, 'agentsTimedOut').map((e) => [e.appId, e.nodeIds])).to.deep.equal([['job-1', ['n1']]]);
      expect(ofKind(effects, 'launchAm').map((e) => [e.appId, e.attempt, e.nodeId])).to.deep.equal([['job-1', 2, 'n2']]);
      expect(ofKind(effects, 'stopWorkers').map((s) => [s.nodeId, s.workerIds])).to.deep.equal([['n1', ['am.1']]]);
      // The AM slot moved; the map slot on n1 stays reserved (its worker may well be running).
      expect(h.allocated('n1')).to.deep.equal(SLOT);
      expect(grantMap(h.agents.get('n1')?.grants ?? [])).to.deep.equal({ 'job-1/map': 1 });
      expect(grantMap(h.agents.get('n2')?.grants ?? [])).to.deep.equal({ 'job-1/__am__': 1, 'job-1/map': 2 });
      expect(h.core.getJob('job-1')).to.include({ amAttempt: 2, amNodeId: 'n2' });

      // n1 is back before the agent timeout: nothing was lost.
      h.heartbeat('n1');
      expect(asgnMap(h.registerApp('job-1').assignments)).to.deep.equal({ 'map@n1': 1, 'map@n2': 2 });
    });

    it('fails the job at the maxAmAttempts-th AM death, naming the exit signal, and releases everything', () => {
      const h = busy({ config: { maxAmAttempts: 2 } });
      dies(h, 'n1', 'job-1');
      h.registerApp('job-1');
      h.advance(10);
      const r = dies(h, 'n1', 'job-1', { state: 'killed', exitCode: -1, signal: 'SIGSEGV' });
      const job = h.core.getJob('job-1');
      expect(job).to.include({ state: 'failed', amAttempt: 2, finishedAtMs: h.now });
      expect(job.message).to.contain('signal SIGSEGV').and.to.contain('no AM attempts left (2)');
      expect(ofKind(r.effects, 'launchAm')).to.deep.equal([]);
      // The app's workers everywhere are stopped (not just the AM), and its AM state deleted.
      expect(ofKind(r.effects, 'stopWorkers').map((s) => [s.nodeId, s.workerIds])).to.have.deep.members([
        ['n1', undefined],
        ['n2', undefined],
      ]);
      // Its AM saved no state: there is nothing to delete, and nothing is listed.
      expect(ofKind(r.effects, 'deletePrefix')).to.deep.equal([]);
      expect(ofKind(r.effects, 'store').flatMap((s) => s.ops.filter((o) => o.type === 'del'))).to.deep.equal([]);
      expect(storedJob(r.effects, 'job-1')?.state).to.equal('failed');
      expect(h.totalAllocated()).to.deep.equal(ZERO);
      expect(h.core.faults.state).to.equal('S0');
      expect(h.core.faults.history().map((e) => [e.kind, e.state])).to.deep.equal([
        ['AM_CRASH', 'resolved'],
        ['AM_CRASH', 'resolved'],
      ]);
    });

    it('counts a lost AM node against maxAmAttempts too', () => {
      const h = busy({ config: { maxAmAttempts: 1 } });
      h.run(TIMEOUT + 1000, { silentNodes: ['n1'] });
      const job = h.core.getJob('job-1');
      expect(job.state).to.equal('failed');
      expect(job.message).to.contain('n1').and.to.contain('lost').and.to.contain('no AM attempts left (1)');
      expect(h.totalAllocated()).to.deep.equal(ZERO);
    });

    it('drops the old attempt outstanding requests: the new attempt asks again itself', () => {
      const h = new Harness({ nodes: [{ nodeId: 'n1', capacity: res(2500, 8192) }] });
      h.start();
      h.ask('job-1', 5); // 2 placed beside the AM, 3 outstanding
      expect(h.amSlots('job-1')).to.deep.equal({ 'map@n1': 2 });
      dies(h, 'n1', 'job-1');
      const reg = h.addNode({ nodeId: 'n2' });
      expect(ofKind(reg, 'grants').flatMap((g) => g.grants)).to.deep.equal([]);
      expect(h.allocated('n2')).to.deep.equal(ZERO);
      h.registerApp('job-1');
      h.ask('job-1', 1);
      expect(asgnMap(h.registerApp('job-1').assignments)).to.deep.equal({ 'map@n1': 2, 'map@n2': 1 });
    });

    it('restarts an AM that died before it registered', () => {
      const h = new Harness({ nodes: [{ nodeId: 'n1' }] });
      h.submit();
      const r = dies(h, 'n1', 'job-1', { exitCode: 1, message: 'bad flag' });
      expect(ofKind(r.effects, 'launchAm').map((e) => [e.attempt, e.nodeId])).to.deep.equal([[2, 'n1']]);
      expect(h.core.getJob('job-1')).to.include({ state: 'submitted', amAttempt: 2 });
      h.registerApp('job-1');
      expect(h.core.getJob('job-1').state).to.equal('running');
    });
  });

  describe('AM timing failure (stall)', () => {
    const STALL = 5000;

    it('replaces an AM silent past amStallTimeoutMs with a new attempt and stops the old one', () => {
      const h = busy({ config: { amStallTimeoutMs: STALL } });
      const before = allocations(h);
      // Exactly at the timeout it is not stalled yet.
      expect(ofKind(h.run(STALL, { silentAms: ['job-1'] }), 'launchAm')).to.deep.equal([]);
      const effects = h.run(1000, { silentAms: ['job-1'] });
      expect(ofKind(effects, 'launchAm').map((e) => [e.attempt, e.nodeId])).to.deep.equal([[2, 'n1']]);
      expect(ofKind(effects, 'stopWorkers').map((s) => [s.nodeId, s.workerIds])).to.deep.equal([['n1', ['am.1']]]);
      expect(attemptsOf(h.agents.get('n2')?.grants ?? [], 'job-1')).to.deep.equal([2]);
      expect(allocations(h)).to.deep.equal(before);
      expect(openFaults(h)).to.deep.equal([['AM_TIMING', 'job-1', 'recovering']]);
      expect(h.core.faults.state).to.equal('S2');
      // The old AM wakes up: it is fenced.
      expect(() => h.core.returnSlots({ appId: 'job-1', attempt: 1, seq: 50, returns: [{ suId: 'map', nodeId: 'n2', slots: 2 }] }, h.now)).to.throw(
        StaleEpochError,
      );
      expect(allocations(h)).to.deep.equal(before);
      h.registerApp('job-1');
      expect(h.core.faults.state).to.equal('S0');
      expect(h.core.faults.history().at(-1)).to.deep.include({ kind: 'AM_TIMING', subject: 'job-1', state: 'resolved' });
      // The new attempt is watched like the first: quiet again, replaced again.
      expect(ofKind(h.run(STALL + 1000, { silentAms: ['job-1'] }), 'launchAm').map((e) => e.attempt)).to.deep.equal([3]);
    });

    it('does not stall an AM that keeps calling in', () => {
      const h = busy({ config: { amStallTimeoutMs: STALL } });
      const effects = h.run(10 * STALL);
      expect(ofKind(effects, 'launchAm')).to.deep.equal([]);
      expect(h.core.getJob('job-1').amAttempt).to.equal(1);
      expect(h.core.faults.history()).to.deep.equal([]);
    });

    it('never stalls an AM with amStallTimeoutMs 0', () => {
      const h = busy({ config: { amStallTimeoutMs: 0 } });
      const effects = h.run(20 * DEFAULT_CONFIG.amStallTimeoutMs, { silentAms: ['job-1'], step: 2000 });
      expect(effects).to.deep.equal([]);
      expect(h.core.getJob('job-1')).to.include({ state: 'running', amAttempt: 1 });
      expect(h.core.faults.state).to.equal('S0');
    });
  });
});

describe('agent timing failure', () => {
  it('keeps a late agent slots reserved, makes it unschedulable and tells the AMs holding slots there', () => {
    const h = twoApps();
    const before = allocations(h);
    // Exactly at the threshold it is not late yet.
    expect(h.run(TIMING_OUT, { silentNodes: ['n2'] })).to.deep.equal([]);
    const effects = h.run(1000, { silentNodes: ['n2'] });
    // a holds a task slot on n2 and is told; b holds only its AM there and is not.
    expect(ofKind(effects, 'agentsTimedOut')).to.deep.equal([
      { kind: 'agentsTimedOut', appId: 'a', address: 'am-a:9000', epoch: EPOCH, nodeIds: ['n2'], recoveredNodeIds: [] },
    ]);
    expect(effects.filter((e) => e.kind !== 'agentsTimedOut')).to.deep.equal([]);
    expect(allocations(h)).to.deep.equal(before);
    expect(h.core.listNodes().map((n) => n.healthy)).to.deep.equal([true, true]);
    expect(h.amSlots('a')).to.deep.equal({ 'map@n1': 2, 'map@n2': 1 });
    const st = h.core.clusterStatus(h.now);
    expect(st).to.deep.include({ fsmState: 'S3', nodesHealthy: 1, nodesTimingOut: 1, nodesLost: 0, appsRunning: 2 });
    expect(st.openEvents.map((e) => [e.kind, e.subject, e.state])).to.deep.equal([['AGENT_TIMING', 'n2', 'open']]);

    // Not schedulable: a request for n2 goes elsewhere; one that fits only there waits.
    h.ask('a', 1, 'node:n2');
    expect(h.amSlots('a')).to.deep.equal({ 'map@n1': 3, 'map@n2': 1 });
    h.ask('a', 1, '', 'big', res(6000, 1024));
    expect(h.amSlots('a')).to.deep.equal({ 'map@n1': 3, 'map@n2': 1 });
    expect(h.allocated('n2')).to.deep.equal(before.n2);
    // Told once; b's AM on n2 is not restarted (it still calls in).
    expect(ofKind(h.run(3000, { silentNodes: ['n2'] }), 'agentsTimedOut')).to.deep.equal([]);
    expect(h.core.getJob('b').amAttempt).to.equal(1);
  });

  it('an agent back before agentTimeoutMs loses nothing: AMs told it recovered, and it is schedulable again', () => {
    const h = twoApps();
    h.run(TIMING_OUT + 1000, { silentNodes: ['n2'] });
    h.ask('a', 1, '', 'big', res(6000, 1024)); // fits only on n2: waits
    const before = allocations(h);
    h.advance(TIMEOUT - TIMING_OUT - 2000);
    const back = h.heartbeat('n2');
    expect(ofKind(back.effects, 'agentsTimedOut')).to.deep.equal([
      { kind: 'agentsTimedOut', appId: 'a', address: 'am-a:9000', epoch: EPOCH, nodeIds: [], recoveredNodeIds: ['n2'] },
    ]);
    // What waited is placed there now; everything that was there still is.
    expect(h.amSlots('a')).to.deep.equal({ 'map@n1': 2, 'map@n2': 1, 'big@n2': 1 });
    expect(h.allocated('n2')).to.deep.equal(res(before.n2!.cpuMilli + 6000, before.n2!.memoryMb + 1024));
    expect(h.allocated('n1')).to.deep.equal(before.n1);
    expect(h.core.clusterStatus(h.now)).to.deep.include({ fsmState: 'S0', nodesHealthy: 2, nodesTimingOut: 0, nodesLost: 0 });
    expect(h.core.faults.history().map((e) => [e.kind, e.subject, e.state])).to.deep.equal([['AGENT_TIMING', 'n2', 'resolved']]);
    expect(h.core.faults.history()[0]?.detail).to.contain('back before it was lost');
    expect([h.core.getJob('a').amAttempt, h.core.getJob('b').amAttempt]).to.deep.equal([1, 1]);
  });

  it('an agent restarting while timing out gets its full table at once, and its AMs are told it is back', () => {
    const h = twoApps();
    h.run(TIMING_OUT + 1000, { silentNodes: ['n2'] });
    const held = h.agents.get('n2')?.grants;
    const { effects } = h.core.registerAgent(mockNodeInfo({ nodeId: 'n2', rack: 'r2' }), EPOCH, h.now);
    expect(ofKind(effects, 'grants').map((g) => [g.nodeId, grantMap(g.grants)])).to.deep.equal([['n2', grantMap(held ?? [])]]);
    expect(ofKind(effects, 'agentsTimedOut').map((e) => [e.appId, e.nodeIds, e.recoveredNodeIds])).to.deep.equal([['a', [], ['n2']]]);
    expect(h.core.clusterStatus(h.now)).to.deep.include({ fsmState: 'S0', nodesTimingOut: 0 });
  });

  it('is lost after agentTimeoutMs: its slots are released, its AMs get tables without it, an AM there restarts', () => {
    const h = twoApps();
    const effects = h.run(TIMEOUT + 1000, { silentNodes: ['n2'] });
    expect(ofKind(effects, 'agentsTimedOut').map((e) => e.nodeIds)).to.deep.equal([['n2']]);
    expect(h.core.listNodes().find((n) => n.info.nodeId === 'n2')).to.deep.include({ healthy: false, allocated: ZERO });
    expect(h.amSlots('a')).to.deep.equal({ 'map@n1': 2 });
    expect(ofKind(effects, 'launchAm').map((e) => [e.appId, e.attempt, e.nodeId])).to.deep.equal([['b', 2, 'n1']]);
    const st = h.core.clusterStatus(h.now);
    expect(st).to.deep.include({ fsmState: 'S2', nodesHealthy: 1, nodesTimingOut: 0, nodesLost: 1 });
    expect(st.openEvents.map((e) => [e.kind, e.subject])).to.deep.equal([['AM_CRASH', 'b']]);
    expect(h.core.faults.history().find((e) => e.kind === 'AGENT_TIMING')?.detail).to.contain('lost');
    h.registerApp('b');
    expect(h.core.faults.state).to.equal('S0');
  });
});

describe('fault FSM states of the master core', () => {
  /** A new leader (epoch 8) takes over busy()'s cluster 1 s later. */
  function failover(config: HarnessOptions['config'] = {}): { old: Harness; h: Harness } {
    const old = busy();
    const h = new Harness({ epoch: '8', now: old.now + 1000, config: { recoveryDeadlineMs: 3000, ...config } });
    h.takeOver(old);
    return { old, h };
  }

  it('S1 while aggregating after loadHardState; S0 once every agent and AM has reported', () => {
    const { h } = failover();
    const st = h.core.clusterStatus(h.now);
    expect(st.fsmState).to.equal('S1');
    expect(st.openEvents.map((e) => [e.kind, e.subject, e.state])).to.deep.equal([['FM_CRASH', '', 'recovering']]);
    expect(st.recovery).to.deep.include({ phase: 'aggregating', agentsReported: 0, agentsExpected: 2, appsReported: 0, appsExpected: 1, startedAtMs: h.now });
    h.agentReports({ nodeId: 'n1', rack: 'r1' });
    h.agentReports({ nodeId: 'n2', rack: 'r2' });
    expect(h.core.faults.state).to.equal('S1');
    h.advance(20);
    const done = h.appReports('job-1');
    expect(ofKind(done, 'recovered')).to.have.length(1);
    const after = h.core.clusterStatus(h.now);
    expect(after).to.deep.include({ fsmState: 'S0', openEvents: [], nodesHealthy: 2 });
    expect(after.recovery).to.deep.include({ phase: 'recovered', agentsReported: 2, appsReported: 1, finishedAtMs: h.now });
    expect(h.core.faults.transitions().map((t) => [t.from, t.to])).to.deep.equal([
      ['S0', 'S1'],
      ['S1', 'S0'],
    ]);
  });

  it('row 13: an AM that dies while an agent has not reported is restarted only once that agent reports', () => {
    const { h } = failover();
    h.agentReports({ nodeId: 'n1', rack: 'r1' });
    // The AM dies during the failover (an agent reports it), n2 stays silent.
    const fx = h.heartbeat('n1', { amWorkers: [amReport('job-1', { amAttempt: 1, state: 'failed', exitCode: 137 })] }).effects;
    expect(ofKind(fx, 'launchAm')).to.be.empty;
    h.advance(3000);
    const closed = h.tick();
    expect(ofKind(closed, 'launchAm'), 'no new attempt while n2 may run its workers').to.be.empty;
    expect(h.core.getJob('job-1').amAttempt).to.equal(1);
    // n2 reports: its grants are adopted, then the new attempt starts and will see them.
    h.advance(500);
    const back = h.agentReports({ nodeId: 'n2', rack: 'r2' });
    const launches = ofKind(back, 'launchAm');
    expect(launches.map((l) => l.attempt)).to.deep.equal([2]);
    expect(h.core.getJob('job-1').state).to.equal('running');
  });

  it('S5 when a roster agent did not report after a failover; S0 once it reports', () => {
    const { old, h } = failover();
    h.agentReports({ nodeId: 'n1', rack: 'r1' });
    h.appReports('job-1');
    expect(h.core.faults.state).to.equal('S1');
    h.advance(3000);
    const fx = h.tick(); // the window closes at the deadline without n2
    expect(ofKind(fx, 'recovered')[0]).to.deep.include({ agentsMissing: 1, appsMissing: 0 });
    const st = h.core.clusterStatus(h.now);
    expect(st.fsmState).to.equal('S5');
    expect(st.openEvents.map((e) => [e.kind, e.subject])).to.deep.equal([
      ['FM_CRASH', ''],
      ['AGENT_TIMING', 'n2'],
    ]);
    expect(h.core.faults.sources().map((s) => s.source)).to.deep.equal(['AMFullResReq', 'AMFullAsgnedRes']); // Table 3 row 10
    expect(st.recovery.phase).to.equal('recovered');
    expect(st.nodesTimingOut).to.equal(1);
    // n2 reports late: its grants are adopted, the failover is complete.
    h.advance(2000);
    h.agentReports({ nodeId: 'n2', rack: 'r2' }, old.agents.get('n2')?.grants);
    expect(h.core.clusterStatus(h.now)).to.deep.include({ fsmState: 'S0', openEvents: [], nodesTimingOut: 0, nodesHealthy: 2 });
    expect(h.core.faults.transitions().map((t) => t.to)).to.deep.equal(['S1', 'S5', 'S1', 'S0']);
    expect(h.allocated('n2')).to.deep.equal(old.allocated('n2'));
  });

  it('S5 until a roster agent that never reports is lost, then S0', () => {
    const { h } = failover();
    h.agentReports({ nodeId: 'n1', rack: 'r1' });
    h.appReports('job-1');
    h.run(3000, { silentNodes: ['n2'] });
    expect(h.core.faults.state).to.equal('S5');
    h.run(TIMEOUT + 1000, { silentNodes: ['n2'] });
    expect(h.core.clusterStatus(h.now)).to.deep.include({ fsmState: 'S0', nodesLost: 1, nodesTimingOut: 0 });
    expect(h.amSlots('job-1')).to.deep.equal({ 'map@n1': 1 });
  });

  it('S4 when an AM did not report after a failover (MockSU); S0 once it reports', () => {
    const { h } = failover();
    h.agentReports({ nodeId: 'n1', rack: 'r1' });
    h.agentReports({ nodeId: 'n2', rack: 'r2' });
    h.advance(3000);
    expect(ofKind(h.tick(), 'recovered')[0]).to.deep.include({ agentsMissing: 0, appsMissing: 1 });
    expect(h.core.faults.state).to.equal('S4');
    expect(openFaults(h)).to.deep.equal([
      ['FM_CRASH', '', 'recovering'],
      ['AM_TIMING', 'job-1', 'open'],
    ]);
    h.advance(1000);
    h.appReports('job-1');
    expect(h.core.faults.state).to.equal('S0');
  });

  it('S3 while an agent times out, back to S0 when it heartbeats', () => {
    const h = busy();
    h.run(TIMING_OUT + 1000, { silentNodes: ['n2'] });
    expect(h.core.faults.state).to.equal('S3');
    expect(h.core.faults.sources()).to.deep.equal([{ source: 'FMFullCap', timing: 'after-reconnect' }]); // Table 3 row 3
    h.heartbeat('n2');
    expect(h.core.faults.state).to.equal('S0');
    expect(h.core.faults.transitions().map((t) => [t.from, t.to])).to.deep.equal([
      ['S0', 'S3'],
      ['S3', 'S0'],
    ]);
  });

  it('S2 after an AM crash until the new attempt registers', () => {
    const h = busy();
    dies(h, 'n1', 'job-1', { exitCode: 2 });
    const st = h.core.clusterStatus(h.now);
    expect(st.fsmState).to.equal('S2');
    expect(st.openEvents.map((e) => [e.kind, e.subject, e.state])).to.deep.equal([['AM_CRASH', 'job-1', 'recovering']]);
    expect(st.openEvents[0]?.detail).to.contain('exit code 2');
    expect(st.appsRunning).to.equal(0);
    expect(h.core.faults.sources()).to.deep.equal([{ source: 'FMFullAsgnedRes', timing: 'now' }]); // Table 3 row 4
    h.run(2000); // agents heartbeat meanwhile: still S2
    expect(h.core.faults.state).to.equal('S2');
    h.registerApp('job-1');
    expect(h.core.clusterStatus(h.now)).to.deep.include({ fsmState: 'S0', openEvents: [], appsRunning: 1 });
    expect(h.core.faults.history()[0]?.detail).to.contain('attempt 2 registered');
  });

  it('S2S3 when an AM crashes while an agent is timing out', () => {
    const h = busy();
    h.run(TIMING_OUT + 1000, { silentNodes: ['n2'] });
    dies(h, 'n1', 'job-1');
    expect(h.core.faults.state).to.equal('S2S3');
    h.heartbeat('n2');
    expect(h.core.faults.state).to.equal('S2');
    h.registerApp('job-1');
    expect(h.core.faults.state).to.equal('S0');
  });
});

describe('AM snapshot (hard state of the AM)', () => {
  const save = (h: Harness, req: { topology?: string; seq: number; entries: string[]; attempt?: number }) =>
    h.core.saveAppSnapshot(
      { appId: 'job-1', attempt: req.attempt ?? h.core.getJob('job-1').amAttempt, topology: req.topology ?? '', seq: req.seq, entries: req.entries },
      h.now,
    );

  it('writes the topology once and log entries idempotently by seq', () => {
    const h = busy();
    expect(save(h, { topology: '{"tasks":1}', seq: 0, entries: [] })).to.deep.equal([
      { kind: 'store', ops: [{ type: 'put', key: 'apps/job-1/topology', value: '{"tasks":1}' }] },
    ]);
    expect(save(h, { topology: '{"tasks":2}', seq: 0, entries: [] })).to.deep.equal([]);
    const first = save(h, { seq: 1, entries: ['{"i":0}', '{"i":1}'] });
    expect(first).to.deep.equal([
      {
        kind: 'store',
        ops: [
          { type: 'put', key: 'apps/job-1/log/0001-000000000001-000000', value: '{"i":0}' },
          { type: 'put', key: 'apps/job-1/log/0001-000000000001-000001', value: '{"i":1}' },
        ],
      },
    ]);
    expect(save(h, { seq: 1, entries: ['{"i":0}', '{"i":1}'] })).to.deep.equal([]);
    expect(ofKind(save(h, { seq: 2, entries: ['{"i":2}'] }), 'store')[0]?.ops.map((o) => o.key)).to.deep.equal(['apps/job-1/log/0001-000000000002-000000']);
    expect(() => save(h, { seq: 3, entries: ['x'], attempt: 2 })).to.throw(StaleEpochError);
  });

  it('takes a new AM attempt log from seq 1 again (seqs are per attempt), after the old one', () => {
    const h = busy();
    save(h, { seq: 1, entries: ['a'] });
    save(h, { seq: 2, entries: ['b'] });
    dies(h, 'n1', 'job-1');
    h.registerApp('job-1');
    const r = save(h, { seq: 1, entries: ['c'] });
    const keys = ofKind(r, 'store').flatMap((s) => s.ops.map((o) => o.key));
    expect(keys).to.deep.equal(['apps/job-1/log/0002-000000000001-000000']);
    expect(keys[0]! > 'apps/job-1/log/0001-000000000002-000000').to.equal(true);
  });

  it('keeps the AM alive (a save is contact) and deletes its state when the job ends', () => {
    const h = busy({ config: { amStallTimeoutMs: 5000 } });
    for (let i = 1; i <= 5; i++) {
      h.run(2000, { silentAms: ['job-1'] });
      save(h, { seq: i, entries: [`e${i}`] });
    }
    expect(h.core.getJob('job-1').amAttempt).to.equal(1);
    for (const end of ['finish', 'kill'] as const) {
      const x = busy();
      save(x, { topology: '{"tasks":1}', seq: 1, entries: ['a', 'b'] });
      dies(x, 'n1', 'job-1');
      x.registerApp('job-1');
      save(x, { seq: 1, entries: ['c'] });
      const effects = end === 'finish' ? x.finish('job-1', true) : x.kill('job-1');
      // This master made every write of the app's state: exactly those keys go, none is listed.
      expect(ofKind(effects, 'deletePrefix'), end).to.deep.equal([]);
      const dels = ofKind(effects, 'store').flatMap((e) => e.ops.filter((o) => o.type === 'del').map((o) => o.key));
      expect(dels, end).to.have.members([
        'apps/job-1/topology',
        'apps/job-1/log/0001-000000000001-000000',
        'apps/job-1/log/0001-000000000001-000001',
        'apps/job-1/log/0002-000000000001-000000',
      ]);
      expect(dels.length, end).to.equal(4);
    }
  });

  it("cuts a save of many entries, and the deletion of an app's many keys, into writes the store takes (etcd: 128 keys)", () => {
    const h = busy();
    // An AM restarted after 200 instances finished logs them all in one call.
    const writes = ofKind(save(h, { topology: '{"tasks":1}', seq: 1, entries: Array.from({ length: 200 }, (_, i) => `e${i}`) }), 'store');
    expect(writes.map((w) => w.ops.length)).to.deep.equal([128, 73]);
    const keys = writes.flatMap((w) => w.ops.map((o) => o.key));
    expect(keys[0]).to.equal('apps/job-1/topology');
    expect(keys.slice(1)).to.deep.equal(Array.from({ length: 200 }, (_, i) => `apps/job-1/log/0001-000000000001-${String(i).padStart(6, '0')}`));
    // Its 201 keys (fewer than a master keeps) go at its end, in writes of at most 128 deletes.
    const dels = ofKind(h.finish('job-1', true), 'store').filter((w) => w.ops.every((o) => o.type === 'del'));
    expect(dels.map((w) => w.ops.length)).to.deep.equal([128, 73]);
    expect(new Set(dels.flatMap((w) => w.ops.map((o) => o.key)))).to.deep.equal(new Set(keys));
  });

  it('storeWrites keeps each write within the operations and the bytes of the limits, in order', () => {
    const ops = Array.from({ length: 5 }, (_, i) => ({ type: 'put' as const, key: `k${i}`, value: 'v'.repeat(40) }));
    expect(storeWrites(ops, { maxOps: 2, maxBytes: 1000 }).map((w) => w.ops.map((o) => o.key))).to.deep.equal([['k0', 'k1'], ['k2', 'k3'], ['k4']]);
    expect(storeWrites(ops, { maxOps: 10, maxBytes: 90 }).map((w) => w.ops.map((o) => o.key))).to.deep.equal([['k0', 'k1'], ['k2', 'k3'], ['k4']]);
    // One operation over the bytes alone is a write of its own.
    expect(
      storeWrites([{ type: 'put', key: 'big', value: 'x'.repeat(200) }, ...ops.slice(0, 1)], { maxOps: 10, maxBytes: 90 }).map((w) => w.ops.length),
    ).to.deep.equal([1, 1]);
    expect(storeWrites([])).to.deep.equal([]);
    expect(STORE_WRITE_LIMITS.maxOps).to.equal(128);
  });

  it('lists the prefix at the end of an app whose state has more keys than a master keeps', () => {
    const h = busy();
    save(h, { seq: 1, entries: Array.from({ length: STORED_KEYS_KEPT + 1 }, (_, i) => `e${i}`) });
    const effects = h.finish('job-1', true);
    expect(ofKind(effects, 'deletePrefix')).to.deep.equal([{ kind: 'deletePrefix', prefix: 'apps/job-1/' }]);
    expect(ofKind(effects, 'store').flatMap((e) => e.ops.filter((o) => o.type === 'del'))).to.deep.equal([]);
  });
});

describe('grants name the AM attempt', () => {
  it('every grant of an app carries its current attempt, and AM_SU grants too', () => {
    const h = busy();
    for (const id of ['n1', 'n2']) expect(attemptsOf(h.agents.get(id)?.grants ?? [], 'job-1'), id).to.deep.equal([1]);
    dies(h, 'n1', 'job-1');
    h.registerApp('job-1');
    h.ask('job-1', 2);
    for (const id of ['n1', 'n2']) expect(attemptsOf(h.agents.get(id)?.grants ?? [], 'job-1'), id).to.deep.equal([2]);
    expect(h.agents.get('n1')?.grants.find((g) => g.suId === AM_SU)?.amAttempt).to.equal(2);
  });
});
