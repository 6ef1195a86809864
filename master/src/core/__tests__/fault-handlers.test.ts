/**
 * The fault FSM drives recovery: the handlers subscribed to the dispatcher act, and each uses only
 * the soft-state sources that the Table 3 row of its failure combination allows. Each test pins
 * one row (or a combination of rows) by the sources recorded in `sourceUses()`.
 */
import { expect } from 'chai';
import { AM_SU, nullLogger } from '@fuxi/common';
import { DEFAULT_CONFIG, MasterCore, type SourceUse } from '../master-core.js';
import type { GrantEntry, JobRecord } from '../types.js';
import { amReport, Harness, mockNodeInfo, mockSpec, ofKind, SLOT, unit } from './core-factories.js';

const NEW_EPOCH = '8';
const CONFIG = { ...DEFAULT_CONFIG, recoveryDeadlineMs: 3000, amTimeoutMs: 20_000, agentTimeoutMs: 10_000, agentTimingOutMs: 3000 };

function cluster(): Harness {
  const h = new Harness({ nodes: [{ nodeId: 'n1' }, { nodeId: 'n2' }], config: CONFIG });
  h.start(mockSpec({ id: 'job-1', tasks: [{ name: 'map', instances: 4, resources: { cpu: 1, memory: 1024 }, command: ['true'] }] }));
  h.ask('job-1', 4);
  return h;
}

function takeOver(
  old: Harness,
  now = 100_000,
): { core: MasterCore; held: Map<string, GrantEntry[]>; claims: Array<{ suId: string; nodeId: string; slots: number }> } {
  const jobs = old.core.listJobs().map((j) => JSON.parse(JSON.stringify(j)) as JobRecord);
  const roster = old.core.listNodes().map((n) => ({ nodeId: n.info.nodeId, address: n.info.address }));
  const core = new MasterCore(NEW_EPOCH, CONFIG, nullLogger);
  core.loadHardState(jobs, roster, now);
  const held = new Map([...old.agents].map(([id, v]) => [id, v.grants]));
  const claims = [...(old.ams.get('job-1')?.slots ?? [])].map(([k, slots]) => {
    const [suId, nodeId] = k.split('@') as [string, string];
    return { suId, nodeId, slots };
  });
  return { core, held, claims };
}

function report(core: MasterCore, nodeId: string, grants: GrantEntry[], now: number): void {
  core.registerAgent(mockNodeInfo({ nodeId }), NEW_EPOCH, now);
  core.reportAgentState({ nodeId, epoch: NEW_EPOCH, grants }, now);
}

function amReports(core: MasterCore, claims: Array<{ suId: string; nodeId: string; slots: number }>, now: number): void {
  core.reportAppState({ appId: 'job-1', attempt: 1, address: 'am-job-1:9000', units: [unit('map', SLOT)], requests: [], assignments: claims }, now);
}

const uses = (core: MasterCore, pred: (u: SourceUse) => boolean = () => true) =>
  core
    .sourceUses()
    .filter(pred)
    .map((u) => `${u.row} ${u.source} ${u.timing} ${u.subject}`);

describe('fault FSM handlers and Table 3 rows', () => {
  it('row 1 (FM crash): the window asks agents (FAFullCap) and AMs (AMFullResReq); both are used now', () => {
    const t = takeOver(cluster());
    expect(t.core.faults.state).to.equal('S1');
    report(t.core, 'n1', t.held.get('n1')!, 100_010);
    amReports(
      t.core,
      t.claims.filter((c) => c.nodeId === 'n1'),
      100_020,
    );
    report(t.core, 'n2', t.held.get('n2')!, 100_030);
    expect(uses(t.core)).to.deep.equal(['1 FAFullCap now ', '1 AMFullResReq now ', '1 FAFullCap now n1', '1 AMFullResReq now job-1', '1 FAFullCap now n2']);
    expect(t.core.isRecovering).to.equal(false);
  });

  it('row 10 (FM crash + agent timing): claims on an agent not heard yet come from the AM (AMFullAsgnedRes), and the agent wins when it reports', () => {
    const t = takeOver(cluster());
    report(t.core, 'n1', t.held.get('n1')!, 100_010);
    amReports(t.core, t.claims, 100_020);
    expect(uses(t.core, (u) => u.source === 'AMFullAsgnedRes')).to.deep.equal(['10 AMFullAsgnedRes now job-1']);
    // The window closes without n2: Algorithm 1 keeps the AM's claims on it reserved (row 10).
    const closed = t.core.tick(103_100);
    expect(t.core.faults.state).to.equal('S5');
    expect(ofKind(closed, 'agentsTimedOut').map((e) => e.nodeIds)).to.deep.equal([['n2']]);
    expect(uses(t.core, (u) => u.subject === 'n2')).to.deep.equal(['10 AMFullAsgnedRes now n2']);
    // n2 comes back: its own grants replace the claims, used after reconnect.
    report(t.core, 'n2', t.held.get('n2')!, 104_000);
    expect(uses(t.core, (u) => u.subject === 'n2').at(-1)).to.equal('1 FAFullCap after-reconnect n2');
    expect(t.core.faults.state).to.equal('S0');
  });

  it('row 8 (FM crash + AM timing): an AM missing from the window keeps its granted slots as a MockSU (FAFullCap), its requests come after reconnect', () => {
    const t = takeOver(cluster());
    report(t.core, 'n1', t.held.get('n1')!, 100_010);
    report(t.core, 'n2', t.held.get('n2')!, 100_020);
    t.core.tick(103_100);
    expect(t.core.faults.state).to.equal('S4');
    expect(uses(t.core, (u) => u.subject === 'job-1')).to.deep.equal(['8 FAFullCap now job-1']);
    amReports(t.core, t.claims, 104_000);
    expect(uses(t.core, (u) => u.subject === 'job-1').at(-1)).to.equal('1 AMFullResReq after-reconnect job-1');
    expect(t.core.faults.state).to.equal('S0');
  });

  it('S6 (FM crash + AM timing + agent timing, rows 11-12): nothing is taken from an AM whose agent has not reported', () => {
    const t = takeOver(cluster());
    report(t.core, 'n1', t.held.get('n1')!, 100_010);
    t.core.tick(103_100);
    expect(t.core.faults.state).to.equal('S6');
    // Neither the missing AM nor the missing agent gave anything; the MockSU holds only n1's grants.
    expect(uses(t.core, (u) => u.source === 'AMFullAsgnedRes' && u.subject === 'job-1')).to.deep.equal([]);
    expect(uses(t.core, (u) => u.source === 'AMFullResReq' && u.subject === 'job-1')).to.deep.equal([]);
    // The agent reconnects first: its grants are used after reconnect.
    report(t.core, 'n2', t.held.get('n2')!, 104_000);
    expect(uses(t.core, (u) => u.subject === 'n2').at(-1)).to.equal('1 FAFullCap after-reconnect n2');
    expect(t.core.faults.state).to.equal('S4');
  });

  it('row 2 (agent crash): a restarted agent gets the master’s grants (FMFullCap)', () => {
    const h = cluster();
    const effects = h.addNode({ nodeId: 'n1' });
    expect(ofKind(effects, 'grants').map((e) => e.nodeId)).to.deep.equal(['n1']);
    expect(uses(h.core)).to.deep.equal(['2 FMFullCap now n1']);
  });

  it('row 3 (agent timing): the master keeps the grants (FMFullCap) and the agent reconciles after reconnect', () => {
    const h = cluster();
    h.advance(3500);
    h.heartbeat('n2');
    const e = h.core.tick(h.now);
    expect(h.core.nodeStatus('n1')?.status).to.equal('timing-out');
    expect(ofKind(e, 'agentsTimedOut').map((x) => x.nodeIds)).to.deep.equal([['n1']]);
    h.advance(100);
    h.heartbeat('n1');
    expect(h.core.nodeStatus('n1')?.status).to.equal('healthy');
    expect(uses(h.core, (u) => u.subject === 'n1')).to.deep.equal(['3 FMFullCap after-reconnect n1', '3 FMFullCap after-reconnect n1']);
  });

  it('row 4 (AM crash): the AM_CRASH handler restarts the AM, which gets the master’s assignments (FMFullAsgnedRes)', () => {
    const h = cluster();
    const amNode = h.core.getJob('job-1').amNodeId;
    const e = h.heartbeat(amNode, { amWorkers: [amReport('job-1', { state: 'failed', exitCode: 1 })] }).effects;
    expect(ofKind(e, 'launchAm').map((x) => x.attempt)).to.deep.equal([2]);
    expect(uses(h.core)).to.deep.equal(['4 FMFullAsgnedRes now job-1']);
    // A second crash before the new attempt registers restarts it again (the fault is posted anew).
    const again = h.heartbeat(amNode, { amWorkers: [amReport('job-1', { state: 'failed', exitCode: 1, amAttempt: 2 })] }).effects;
    expect(ofKind(again, 'launchAm').map((x) => x.attempt)).to.deep.equal([3]);
  });

  it('row 13 (FM crash + AM crash + agent timing): the restarted AM waits until every agent has reported', () => {
    const t = takeOver(cluster());
    report(t.core, 'n1', t.held.get('n1')!, 100_010);
    amReports(t.core, t.claims, 100_020);
    t.core.tick(103_100);
    const amNode = t.core.getJob('job-1').amNodeId;
    expect(amNode).to.equal('n1');
    const e = t.core.heartbeat(
      { nodeId: 'n1', epoch: NEW_EPOCH, grantSeq: 0, used: SLOT, running: 1, pending: 0, amWorkers: [amReport('job-1', { state: 'failed', exitCode: 1 })] },
      103_200,
    ).effects;
    expect(ofKind(e, 'launchAm')).to.deep.equal([]);
    expect(uses(t.core, (u) => u.subject === 'job-1').at(-1)).to.equal('13 AMFullAsgnedRes now job-1');
    report(t.core, 'n2', t.held.get('n2')!, 104_000);
    expect(t.core.getJob('job-1').amAttempt).to.equal(2);
  });

  it('sends the effects of one input in the written order: store, grants, launches, AM messages, stops', () => {
    const h = cluster();
    const kinds = h.core.killJob('job-1', 'test', h.now).map((e) => e.kind);
    const rank = ['store', 'deletePrefix', 'grants', 'launchAm', 'assignments', 'agentsTimedOut', 'stopWorkers', 'jobChanged', 'recovered'];
    const order = (k: string) => (k === 'deletePrefix' ? 0 : rank.indexOf(k));
    expect(kinds.map(order)).to.deep.equal([...kinds.map(order)].sort((a, b) => a - b));
    expect(kinds).to.include.members(['store', 'grants', 'stopWorkers', 'jobChanged']);
    expect(kinds.filter((k) => k === 'jobChanged')).to.have.length(1);
    void AM_SU;
  });
});
