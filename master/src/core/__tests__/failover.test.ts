/**
 * Master failover by soft-state inference (paper sections 4.1-4.2, Algorithms 1 and 2): a new
 * master loads hard state, aggregates the agents' grants and the AMs' requests, then recovers.
 */
import { expect } from 'chai';
import { nullLogger, res, StaleEpochError, FailedPreconditionError } from '@fuxi/common';
import { DEFAULT_CONFIG, MasterCore } from '../master-core.js';
import { AM_SU } from '@fuxi/common';
import type { Effect, GrantEntry, JobRecord } from '../types.js';
import { asgnMap, delta, EPOCH, grantMap, Harness, mockNodeInfo, mockSpec, ofKind, SLOT, unit } from './core-factories.js';

const NEW_EPOCH = '8';
const CONFIG = { ...DEFAULT_CONFIG, recoveryDeadlineMs: 3000, amTimeoutMs: 20_000, agentTimeoutMs: 10_000 };

/** A running cluster under the old master: nodes n1, n2; job-1 with 4 map slots spread over both. */
function oldCluster(): Harness {
  const h = new Harness({ nodes: [{ nodeId: 'n1' }, { nodeId: 'n2' }] });
  h.start(mockSpec({ id: 'job-1', tasks: [{ name: 'map', instances: 4, resources: { cpu: 1, memory: 1024 }, command: ['true'] }] }));
  h.ask('job-1', 4);
  return h;
}

interface Takeover {
  core: MasterCore;
  /** What each agent holds, from the old master. */
  held: Map<string, GrantEntry[]>;
  /** What the AM holds: slots per `su@node`. */
  amHeld: Record<string, number>;
  effects: Effect[];
}

/** A new master (epoch 8) loads the old one's hard state; the agents and the AM still run. */
function takeOver(old: Harness, now = 100_000): Takeover {
  const jobs = old.core.listJobs().map((j) => JSON.parse(JSON.stringify(j)) as JobRecord);
  const roster = old.core.listNodes().map((n) => ({ nodeId: n.info.nodeId, address: n.info.address }));
  const core = new MasterCore(NEW_EPOCH, CONFIG, nullLogger);
  const effects = core.loadHardState(jobs, roster, now);
  const held = new Map([...old.agents].map(([id, v]) => [id, v.grants]));
  const amHeld = Object.fromEntries(old.ams.get('job-1')?.slots ?? []);
  return { core, held, amHeld, effects };
}

function agentReports(t: Takeover, nodeId: string, now: number, grants = t.held.get(nodeId) ?? []): Effect[] {
  const reg = t.core.registerAgent(mockNodeInfo({ nodeId }), NEW_EPOCH, now);
  expect(reg.reportState, `${nodeId} asked for its state`).to.equal(true);
  return [...reg.effects, ...t.core.reportAgentState({ nodeId, epoch: NEW_EPOCH, grants }, now)];
}

function amReports(
  t: Takeover,
  now: number,
  over: { claims?: Record<string, number>; requests?: Array<{ suId: string; location: string; count: number }> } = {},
): Effect[] {
  const claims = over.claims ?? t.amHeld;
  return t.core.reportAppState(
    {
      appId: 'job-1',
      attempt: 1,
      address: 'am-job-1:9000',
      units: [unit('map', SLOT)],
      requests: over.requests ?? [],
      assignments: Object.entries(claims).map(([k, slots]) => {
        const [suId, nodeId] = k.split('@') as [string, string];
        return { suId, nodeId, slots };
      }),
    },
    now,
  );
}

const recovered = (effects: Effect[]) => ofKind(effects, 'recovered');

describe('master failover (soft-state inference)', () => {
  it('lists the prefix of an app it rebuilt when that job ends: the old master wrote its state, the new one cannot know the keys', () => {
    const old = oldCluster();
    const t = takeOver(old);
    agentReports(t, 'n1', 100_010);
    agentReports(t, 'n2', 100_020);
    amReports(t, 100_030);
    const effects = t.core.finishApp({ appId: 'job-1', attempt: 1, succeeded: true, message: 'done', progress: [] }, 100_040);
    expect(ofKind(effects, 'deletePrefix')).to.deep.equal([{ kind: 'deletePrefix', prefix: 'apps/job-1/' }]);
  });

  it('rebuilds every grant from the agents and closes the window as soon as all have reported', () => {
    const old = oldCluster();
    const t = takeOver(old);
    expect(t.core.isRecovering).to.equal(true);
    expect(recovered(t.effects)).to.be.empty;
    const e1 = agentReports(t, 'n1', 100_010);
    // The agent gets its own table back under the new epoch: nothing revoked, nothing killed.
    const push1 = ofKind(e1, 'grants').at(-1)!;
    expect(push1).to.include({ nodeId: 'n1', epoch: NEW_EPOCH, full: true });
    expect(grantMap(push1.grants)).to.deep.equal(grantMap(t.held.get('n1')!));
    expect(recovered(e1)).to.be.empty;
    const e2 = agentReports(t, 'n2', 100_020);
    expect(recovered(e2)).to.be.empty; // the AM has not reported yet
    const e3 = amReports(t, 100_030);
    const rec = recovered(e3);
    expect(rec).to.have.length(1);
    expect(rec[0]).to.deep.include({ aggregationMs: 30, agentsMissing: 0, appsMissing: 0, agentsReported: 2, appsReported: 1 });
    expect(t.core.isRecovering).to.equal(false);
    // The AM's table is exactly what it held.
    const asg = ofKind(e3, 'assignments').at(-1)!;
    expect(asgnMap(asg.assignments)).to.deep.equal(t.amHeld);
    expect(asg.epoch).to.equal(NEW_EPOCH);
    // Allocations match the old master's, node by node.
    for (const n of old.core.listNodes()) {
      expect(t.core.listNodes().find((x) => x.info.nodeId === n.info.nodeId)?.allocated).to.deep.equal(n.allocated);
    }
    t.core.checkInvariants();
  });

  it("takes the grant table sent with a registration as the agent's report, and answers with its own table instead of pushing it", () => {
    const old = oldCluster();
    const t = takeOver(old);
    const reg = t.core.registerAgent(mockNodeInfo({ nodeId: 'n1' }), NEW_EPOCH, 100_010, t.held.get('n1'));
    expect(reg.reportState, 'no separate report is asked for').to.equal(false);
    expect(reg.adopted, 'the answer carries the table').to.not.equal(undefined);
    expect(grantMap(reg.adopted!.grants)).to.deep.equal(grantMap(t.held.get('n1')!));
    expect(
      ofKind(reg.effects, 'grants').filter((g) => g.nodeId === 'n1'),
      'not pushed as well',
    ).to.be.empty;
    // The agent's heartbeat with the answer's seq needs no table; the rest of the failover is as before.
    expect(
      t.core.heartbeat(
        { nodeId: 'n1', epoch: NEW_EPOCH, grantSeq: reg.adopted!.seq, used: { cpuMilli: 0, memoryMb: 0 }, running: 0, pending: 0, amWorkers: [] },
        100_011,
      ).full,
    ).to.equal(undefined);
    agentReports(t, 'n2', 100_020);
    const rec = recovered(amReports(t, 100_030));
    expect(rec[0]).to.deep.include({ agentsMissing: 0, appsMissing: 0, agentsReported: 2 });
    for (const n of old.core.listNodes()) expect(t.core.listNodes().find((x) => x.info.nodeId === n.info.nodeId)?.allocated).to.deep.equal(n.allocated);
    t.core.checkInvariants();
  });

  it('ignores a grant table sent with a registration when it wants no report (a master not rebuilding its state)', () => {
    const h = new Harness({ nodes: [{ nodeId: 'n1' }] });
    const bogus: GrantEntry[] = [{ appId: 'nope', suId: 'map', slots: 3, resource: SLOT }];
    const reg = h.core.registerAgent(mockNodeInfo({ nodeId: 'n9' }), EPOCH, h.now, bogus);
    expect(reg.adopted).to.equal(undefined);
    expect(reg.reportState).to.equal(false);
    expect(h.core.listNodes().find((n) => n.info.nodeId === 'n9')?.allocated).to.deep.equal({ cpuMilli: 0, memoryMb: 0 });
    h.core.checkInvariants();
  });

  it('a job loaded from the record its submission wrote (attempt 0, AM not placed) starts attempt 1', () => {
    const old = oldCluster();
    const sub = old.core.submitJob(mockSpec({ id: 'job-3' }), 50_000);
    // The store holds what the submission wrote (the attempt is counted in memory afterwards).
    const op = ofKind(sub.effects, 'store')[0]!.ops[0]!;
    const written = JSON.parse(op.type === 'put' ? op.value : '{}') as JobRecord;
    expect(written.amAttempt).to.equal(0);
    const jobs = old.core.listJobs().map((j) => (j.jobId === 'job-3' ? written : (JSON.parse(JSON.stringify(j)) as JobRecord)));
    const roster = old.core.listNodes().map((n) => ({ nodeId: n.info.nodeId, address: n.info.address }));
    const core = new MasterCore(NEW_EPOCH, CONFIG, nullLogger);
    core.loadHardState(jobs, roster, 100_000);
    const t: Takeover = {
      core,
      held: new Map([...old.agents].map(([id, v]) => [id, v.grants])),
      amHeld: Object.fromEntries(old.ams.get('job-1')?.slots ?? []),
      effects: [],
    };
    agentReports(t, 'n1', 100_010);
    agentReports(t, 'n2', 100_020);
    const launches = ofKind(amReports(t, 100_030), 'launchAm');
    expect(launches.map((l) => [l.appId, l.attempt])).to.deep.equal([['job-3', 1]]);
    expect(core.getJob('job-3').amAttempt).to.equal(1);
  });

  it('accepts submissions during aggregation and schedules them only after recovery', () => {
    const old = oldCluster();
    const t = takeOver(old);
    const sub = t.core.submitJob(mockSpec({ id: 'job-2' }), 100_001);
    expect(sub.result.created).to.equal(true);
    expect(ofKind(sub.effects, 'store')).to.have.length(1);
    expect(ofKind(sub.effects, 'launchAm')).to.be.empty;
    agentReports(t, 'n1', 100_010);
    agentReports(t, 'n2', 100_020);
    const done = amReports(t, 100_030);
    expect(ofKind(done, 'launchAm').map((l) => l.appId)).to.deep.equal(['job-2']);
  });

  it('Algorithm 1: an agent that does not report keeps what the AM claims on it reserved, and the AM is told', () => {
    const old = oldCluster();
    const t = takeOver(old);
    agentReports(t, 'n1', 100_010);
    amReports(t, 100_020);
    expect(t.core.isRecovering).to.equal(true);
    // The window closes at the deadline.
    expect(recovered(t.core.tick(102_000))).to.be.empty;
    const fx = t.core.tick(103_000);
    expect(recovered(fx)[0]).to.deep.include({ agentsMissing: 1, appsMissing: 0 });
    const notice = ofKind(fx, 'agentsTimedOut');
    expect(notice).to.deep.equal([{ kind: 'agentsTimedOut', appId: 'job-1', address: 'am-job-1:9000', epoch: NEW_EPOCH, nodeIds: ['n2'] }]);
    // n2 gets nothing new and no grant push (AM claims are never sent to agents as grants).
    expect(ofKind(fx, 'grants').filter((g) => g.nodeId === 'n2')).to.be.empty;
    const n2 = t.core.listNodes().find((n) => n.info.nodeId === 'n2')!;
    expect(n2.healthy).to.equal(false);
    // The claimed slots stay in the AM's table until n2 is declared lost.
    const upd = t.core.updateRequests({ appId: 'job-1', attempt: 1, seq: 1, units: [], deltas: [], assignmentSeq: -1, progress: [] }, 103_100);
    expect(asgnMap(upd.full!.assignments)).to.deep.equal(t.amHeld);
    // Silent past the agent timeout (n1 heartbeating): lost; the AM's table drops n2.
    t.core.heartbeat(
      { nodeId: 'n1', epoch: NEW_EPOCH, grantSeq: -1, used: { cpuMilli: 0, memoryMb: 0 }, running: 0, pending: 0, amWorkers: [] },
      103_000 + CONFIG.agentTimeoutMs,
    );
    const lost = t.core.tick(103_000 + CONFIG.agentTimeoutMs + 1);
    const asg = ofKind(lost, 'assignments').at(-1)!;
    expect(Object.keys(asgnMap(asg.assignments)).some((k) => k.endsWith('@n2'))).to.equal(false);
  });

  it('Algorithm 1: an agent that reports late replaces the AM claims with its own grants', () => {
    const old = oldCluster();
    const t = takeOver(old);
    agentReports(t, 'n1', 100_010);
    amReports(t, 100_020);
    t.core.tick(103_000);
    const late = agentReports(t, 'n2', 105_000);
    const push = ofKind(late, 'grants').at(-1)!;
    expect(grantMap(push.grants)).to.deep.equal(grantMap(t.held.get('n2')!));
    // The agent holds what the AM claimed: the AM's table is unchanged, so none is pushed.
    expect(ofKind(late, 'assignments')).to.be.empty;
    const upd = t.core.updateRequests({ appId: 'job-1', attempt: 1, seq: 1, units: [], deltas: [], assignmentSeq: -1, progress: [] }, 105_001);
    expect(asgnMap(upd.full!.assignments)).to.deep.equal(t.amHeld);
    // The AM was told n2 was missing: it is told n2 is back, or its policy re-runs n2's work later.
    expect(ofKind(late, 'agentsTimedOut')).to.deep.equal([
      { kind: 'agentsTimedOut', appId: 'job-1', address: 'am-job-1:9000', epoch: NEW_EPOCH, nodeIds: [], recoveredNodeIds: ['n2'] },
    ]);
    t.core.checkInvariants();
  });

  it('Algorithm 1: an agent that reports late holding less than the AM claimed: the AM gets the corrected table', () => {
    const old = oldCluster();
    const t = takeOver(old);
    agentReports(t, 'n1', 100_010);
    amReports(t, 100_020);
    t.core.tick(103_000);
    const held = t.held
      .get('n2')!
      .map((g) => (g.suId === 'map' ? { ...g, slots: g.slots - 1 } : g))
      .filter((g) => g.slots > 0);
    const late = agentReports(t, 'n2', 105_000, held);
    const asg = ofKind(late, 'assignments').at(-1)!;
    const want: Record<string, number> = { ...t.amHeld, 'map@n2': (t.amHeld['map@n2'] ?? 0) - 1 };
    if (want['map@n2'] === 0) delete want['map@n2'];
    expect(asgnMap(asg.assignments)).to.deep.equal(want);
    t.core.checkInvariants();
  });

  it('Algorithm 2: an app whose AM does not report keeps its granted resources as a MockSU, released after the AM timeout', () => {
    const old = oldCluster();
    const t = takeOver(old);
    agentReports(t, 'n1', 100_010);
    agentReports(t, 'n2', 100_020);
    const fx = t.core.tick(103_000);
    expect(recovered(fx)[0]).to.deep.include({ agentsMissing: 0, appsMissing: 1 });
    const before = t.core.listNodes().map((n) => n.allocated);
    // Nobody else may take the MockSU's resources.
    t.core.submitJob(mockSpec({ id: 'job-2', am: { cpu: 7, memory: 1024 } }), 103_001);
    expect(t.core.getJob('job-2').amNodeId).to.equal('');
    expect(t.core.listNodes().map((n) => n.allocated)).to.deep.equal(before);
    // The AM comes back in time: its real units replace the MockSU, nothing moves.
    const back = amReports(t, 110_000);
    expect(asgnMap(ofKind(back, 'assignments').at(-1)!.assignments)).to.deep.equal(t.amHeld);
    expect(t.core.getJob('job-1').state).to.equal('running');
  });

  it('Algorithm 2: the MockSU is released (job failed, workers stopped) when the AM never comes back', () => {
    const old = oldCluster();
    const t = takeOver(old);
    agentReports(t, 'n1', 100_010);
    agentReports(t, 'n2', 100_020);
    t.core.tick(103_000);
    const hb = (nodeId: string, now: number) =>
      t.core.heartbeat({ nodeId, epoch: NEW_EPOCH, grantSeq: 1, used: SLOT, running: 2, pending: 0, amWorkers: [] }, now);
    for (let now = 105_000; now < 103_000 + CONFIG.amTimeoutMs; now += 5000) {
      hb('n1', now);
      hb('n2', now);
      expect(t.core.tick(now)).to.be.empty;
    }
    expect(t.core.getJob('job-1').state).to.equal('running');
    const fx = t.core.tick(103_000 + CONFIG.amTimeoutMs + 1);
    expect(t.core.getJob('job-1').state).to.equal('failed');
    expect(t.core.getJob('job-1').message).to.match(/did not report/);
    expect(
      ofKind(fx, 'stopWorkers')
        .map((s) => s.nodeId)
        .sort(),
    ).to.deep.equal(['n1', 'n2']);
    for (const n of t.core.listNodes()) expect(n.allocated).to.deep.equal({ cpuMilli: 0, memoryMb: 0 });
  });

  it('both missing: the agent is timing out and the app runs on a MockSU', () => {
    const old = oldCluster();
    const t = takeOver(old);
    agentReports(t, 'n1', 100_010);
    const fx = t.core.tick(103_000);
    expect(recovered(fx)[0]).to.deep.include({ agentsMissing: 1, appsMissing: 1 });
    // The MockSU holds what n1 reported; nothing is believed on n2 (no claims without the AM).
    const n1 = t.core.listNodes().find((n) => n.info.nodeId === 'n1')!;
    expect(n1.allocated).to.deep.equal(old.core.listNodes().find((n) => n.info.nodeId === 'n1')!.allocated);
    // Both come back: everything as before.
    agentReports(t, 'n2', 104_000);
    const back = amReports(t, 104_100);
    expect(asgnMap(ofKind(back, 'assignments').at(-1)!.assignments)).to.deep.equal(t.amHeld);
    t.core.checkInvariants();
  });

  it('an AM claiming more than the agents granted gets what the agents hold (AM numbers never create grants)', () => {
    const old = oldCluster();
    const t = takeOver(old);
    agentReports(t, 'n1', 100_010);
    agentReports(t, 'n2', 100_020);
    const inflated = Object.fromEntries(Object.entries(t.amHeld).map(([k, v]) => [k, v + 5]));
    inflated['map@n3'] = 4; // a node that does not even exist
    const fx = amReports(t, 100_030, { claims: inflated });
    expect(asgnMap(ofKind(fx, 'assignments').at(-1)!.assignments)).to.deep.equal(t.amHeld);
    for (const g of ofKind(fx, 'grants')) expect(grantMap(g.grants)).to.deep.equal(grantMap(t.held.get(g.nodeId)!));
  });

  it('adopts an AM report that breaks the request limits without what breaks them, and recovers (never refuses it)', () => {
    const old = oldCluster(); // map: 4 instances (5 slots at most), all 4 granted
    const t = takeOver(old);
    agentReports(t, 'n1', 100_010);
    agentReports(t, 'n2', 100_020);
    // Reported a while after the agents (their slots count again): room for one more map slot.
    const fx = t.core.reportAppState(
      {
        appId: 'job-1',
        attempt: 1,
        address: 'am-job-1:9000',
        units: [unit('map', res(4000, 1024), 7), unit('reduce', SLOT)],
        requests: [
          { suId: 'map', location: '', count: 6 },
          { suId: 'reduce', location: '', count: 2 },
        ],
        assignments: Object.entries(t.amHeld).map(([k, slots]) => ({ suId: k.split('@')[0]!, nodeId: k.split('@')[1]!, slots })),
      },
      111_000,
    );
    expect(recovered(fx)).to.have.length(1);
    expect(t.core.isRecovering).to.equal(false);
    expect(t.core.units('job-1').map((u) => [u.suId, u.resource, u.priority, u.granted + u.outstanding])).to.deep.equal([
      [AM_SU, res(500, 512), 1_000_000, 1],
      ['map', SLOT, 0, 5],
    ]);
    t.core.checkInvariants();
  });

  it('rejects reported grants it never made: unknown app, a finished app, more than the node holds, a wrong epoch', () => {
    const old = oldCluster();
    old.start(mockSpec({ id: 'done' }));
    old.finish('done', true);
    const t = takeOver(old);
    const real = t.held.get('n1')!;
    const bogus: GrantEntry[] = [
      ...real,
      { appId: 'ghost', suId: 'map', slots: 1, resource: SLOT },
      { appId: 'done', suId: 'map', slots: 1, resource: SLOT },
      { appId: 'job-1', suId: 'huge', slots: 100, resource: SLOT },
    ];
    t.core.registerAgent(mockNodeInfo({ nodeId: 'n1' }), NEW_EPOCH, 100_005);
    expect(() => t.core.reportAgentState({ nodeId: 'n1', epoch: EPOCH, grants: real }, 100_006)).to.throw(StaleEpochError);
    const fx = t.core.reportAgentState({ nodeId: 'n1', epoch: NEW_EPOCH, grants: bogus }, 100_010);
    const push = ofKind(fx, 'grants').at(-1)!;
    expect(grantMap(push.grants)).to.deep.equal(grantMap(real));
    t.core.checkInvariants();
  });

  it('an unreported app gets report_state and nothing it asks is applied until it reports', () => {
    const old = oldCluster();
    const t = takeOver(old);
    agentReports(t, 'n1', 100_010);
    agentReports(t, 'n2', 100_020);
    const r = t.core.updateRequests(
      { appId: 'job-1', attempt: 1, seq: 9, units: [unit()], deltas: [delta('map', 3)], assignmentSeq: 0, progress: [] },
      100_030,
    );
    expect(r.reportState).to.equal(true);
    expect(r.effects).to.be.empty;
    // Returns are applied at once (a finished AM must not wait on its report to give slots back).
    const held = grantMap(t.held.get('n1')!)['job-1/map']!;
    const ret = t.core.returnSlots({ appId: 'job-1', attempt: 1, seq: 1, returns: [{ suId: 'map', nodeId: 'n1', slots: 1 }] }, 100_031);
    expect(grantMap(ofKind(ret, 'grants').at(-1)!.grants)['job-1/map'] ?? 0).to.equal(held - 1);
    expect(() => t.core.reportAppState({ appId: 'job-1', attempt: 2, address: '', units: [], requests: [], assignments: [] }, 100_032)).to.throw(
      StaleEpochError,
    );
    // The report carries the outstanding requests (including what the ignored delta asked).
    amReports(t, 100_040, { requests: [{ suId: 'map', location: '', count: 3 }] });
    expect(t.core.isRecovering).to.equal(false);
    // After recovery the next UpdateRequests is applied normally, its seq above the old ones.
    const after = t.core.updateRequests(
      { appId: 'job-1', attempt: 1, seq: 10, units: [], deltas: [delta('map', -3)], assignmentSeq: -1, progress: [] },
      100_050,
    );
    expect(after.reportState).to.equal(undefined);
  });

  it('adopts an AM slot reported by an agent and never launches a second AM of the same attempt', () => {
    const h = new Harness({ nodes: [{ nodeId: 'n1' }] });
    h.submit(mockSpec({ id: 'job-1' })); // placed and launching, not registered yet
    const t = takeOver(h);
    // Hard state says where the AM went; the agent has its slot.
    const fx = agentReports(t, 'n1', 100_010);
    expect(ofKind(fx, 'launchAm')).to.be.empty;
    const reg = t.core.registerApp('job-1', 1, 'am:1', 100_020);
    const all = [...reg.effects, ...t.core.tick(104_000)];
    expect(ofKind(all, 'launchAm')).to.be.empty;
    expect(grantMap(ofKind(fx, 'grants').at(-1)!.grants)).to.deep.equal({ [`job-1/${AM_SU}`]: 1 });
  });

  it('slots an AM returns before their agent reported are not adopted when it does', () => {
    const old = oldCluster();
    const t = takeOver(old);
    agentReports(t, 'n1', 100_010);
    const onN2 = grantMap(t.held.get('n2')!)['job-1/map']!;
    t.core.returnSlots({ appId: 'job-1', attempt: 1, seq: 1, returns: [{ suId: 'map', nodeId: 'n2', slots: 1 }] }, 100_020);
    const fx = agentReports(t, 'n2', 100_030);
    const push = ofKind(fx, 'grants').at(-1)!;
    expect(grantMap(push.grants)['job-1/map'] ?? 0).to.equal(onN2 - 1);
    t.core.checkInvariants();
  });

  it('an agent must register with the new master before reporting', () => {
    const t = takeOver(oldCluster());
    expect(() => t.core.reportAgentState({ nodeId: 'n1', epoch: NEW_EPOCH, grants: [] }, 100_001)).to.throw(FailedPreconditionError);
    // Heartbeats of roster agents that have not registered yet are told to register.
    expect(t.core.heartbeat({ nodeId: 'n1', epoch: EPOCH, grantSeq: 3, used: SLOT, running: 1, pending: 0, amWorkers: [] }, 100_002).reregister).to.equal(true);
  });
});
