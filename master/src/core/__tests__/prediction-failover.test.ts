/**
 * Failure prediction across a master failover: the blacklist is soft state, so a new leader starts
 * without the per-job blocks of its predecessor's verdicts; the AM reports the hosts the verdicts
 * moved its attempts off (ReportAppState `predicted_bad_hosts`) and the new leader blocks them for
 * the job again, so a running job's moved-off hosts stay avoided.
 */
import { expect } from 'chai';
import { nullLogger } from '@fuxi/common';
import { DEFAULT_CONFIG, MasterCore } from '../master-core.js';
import type { Effect, JobRecord } from '../types.js';
import { asgnMap, Harness, mockNodeInfo, mockSpec, ofKind, SLOT, unit } from './core-factories.js';

const NEW_EPOCH = '8';
const NODES = ['n1', 'n2', 'n3', 'n4'];

/** The old leader: four 8-core nodes, job-1 (prediction on unless `off`) holding 4 map slots. */
function oldCluster(off = false): Harness {
  const h = new Harness({ nodes: NODES.map((nodeId) => ({ nodeId })) });
  h.start(
    mockSpec({
      tasks: [{ name: 'map', instances: 40, resources: { cpu: 1, memory: 1024 }, command: ['true'] }],
      ...(off ? { failurePrediction: 'off' } : {}),
    }),
  );
  h.ask('job-1', 4);
  return h;
}

/**
 * A new leader loads the old one's hard state, every agent reports its grants, then the AM reports
 * 20 outstanding map slots and, if given, the hosts prediction moved its attempts off. Returns the
 * new core and the new map slots per node (the AM's last table less what it held).
 */
function failOver(old: Harness, predictedBadHosts: string[] | undefined, amFirst = false): { core: MasterCore; slots: Record<string, number> } {
  const now = 100_000;
  const jobs = old.core.listJobs().map((j) => JSON.parse(JSON.stringify(j)) as JobRecord);
  const roster = old.core.listNodes().map((n) => ({ nodeId: n.info.nodeId, address: n.info.address }));
  const core = new MasterCore(NEW_EPOCH, { ...DEFAULT_CONFIG, recoveryDeadlineMs: 3000 }, nullLogger);
  core.loadHardState(jobs, roster, now);
  const effects: Effect[] = [];
  const agentsReport = (): void => {
    for (const nodeId of NODES) {
      core.registerAgent(mockNodeInfo({ nodeId }), NEW_EPOCH, now + 10);
      effects.push(...core.reportAgentState({ nodeId, epoch: NEW_EPOCH, grants: old.agents.get(nodeId)?.grants ?? [] }, now + 10));
    }
  };
  if (!amFirst) agentsReport();
  const held = Object.fromEntries(old.ams.get('job-1')?.slots ?? []);
  effects.push(
    ...core.reportAppState(
      {
        appId: 'job-1',
        attempt: 1,
        address: 'am-job-1:9000',
        units: [unit('map', SLOT)],
        requests: [{ suId: 'map', location: '', count: 20 }],
        assignments: Object.entries(held).map(([k, slots]) => {
          const [suId = '', nodeId = ''] = k.split('@');
          return { suId, nodeId, slots };
        }),
        ...(predictedBadHosts ? { predictedBadHosts } : {}),
      },
      now + 20,
    ),
  );
  if (amFirst) agentsReport();
  // New slots: the AM's last table less what it held before the failover.
  const table = asgnMap(ofKind(effects, 'assignments').at(-1)?.assignments ?? []);
  const slots: Record<string, number> = {};
  for (const [k, n] of Object.entries(table)) {
    const [suId, nodeId = ''] = k.split('@');
    if (suId === 'map') slots[nodeId] = (slots[nodeId] ?? 0) + n - (held[k] ?? 0);
  }
  return { core, slots };
}

describe('failure prediction after a master failover', () => {
  it('blocks for the job again the hosts its AM reports prediction moved attempts off: none of its new slots go there', () => {
    const { core, slots } = failOver(oldCluster(), ['n2', 'gone']);
    expect(core.isRecovering).to.equal(false);
    expect(slots['n2'] ?? 0).to.equal(0);
    expect((slots['n1'] ?? 0) + (slots['n3'] ?? 0) + (slots['n4'] ?? 0)).to.equal(20);
    const n2 = core.listNodes().find((n) => n.info.nodeId === 'n2');
    expect(n2?.prediction).to.include({ level: 'job' });
    expect(n2?.prediction?.jobs).to.deep.equal(['job-1']);
    // A host the new leader does not know is dropped, not kept.
    expect(core.listNodes().map((n) => n.info.nodeId)).to.not.include('gone');
  });

  it('keeps the block when the AM reports before the agents (the roster knows the host)', () => {
    const { core, slots } = failOver(oldCluster(), ['n2'], true);
    expect(core.isRecovering).to.equal(false);
    expect(slots['n2'] ?? 0).to.equal(0);
    expect((slots['n1'] ?? 0) + (slots['n3'] ?? 0) + (slots['n4'] ?? 0)).to.equal(20);
  });

  it('without the report, the host gets new slots again (what the report prevents)', () => {
    const { slots } = failOver(oldCluster(), undefined);
    expect(slots['n2'] ?? 0).to.be.greaterThan(0);
  });

  it('never blocks a host for a job with failurePrediction off', () => {
    const { core } = failOver(oldCluster(true), ['n2']);
    expect(core.listNodes().find((n) => n.info.nodeId === 'n2')?.prediction).to.equal(undefined);
  });
});
