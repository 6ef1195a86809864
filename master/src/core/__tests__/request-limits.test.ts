/**
 * The rule of what an AM may ask for (request-limits.ts), on a bare MasterState: which units and
 * deltas `checkUpdate` refuses and with which field, how it counts an SU's slots (nodes timing out
 * and just back apart), that it never changes anything, and how `sanitizeReport` clamps a state
 * report instead. Also the ledger's `applyDelta`, whose cancellations spill over to other locations.
 */
import { expect } from 'chai';
import { AM_SU, InvalidArgumentError, nullLogger, res, type Logger } from '@fuxi/common';
import { newApp } from '../jobs.js';
import { applyDelta } from '../ledger.js';
import { DEFAULT_CONFIG, MasterState, type AppState, type MasterCoreConfig, type NodeState, type NodeStatus } from '../master-state.js';
import { backGraceMs, checkJobInputs, checkUpdate, countedSlots, DEFAULT_JOB_INPUT_LIMITS, sanitizeReport, slotLimit } from '../request-limits.js';
import type { RequestDelta, UnitConfig } from '../types.js';
import { mockNodeInfo, mockSpec } from './core-factories.js';

const SLOT = res(1000, 1024);

/** Job `job-1` (priority 2): task `map` (20 x 1 core / 1 GiB), task `hot` (4, its own priority 9). */
function spec() {
  return mockSpec({
    priority: 2,
    tasks: [
      { name: 'map', instances: 20, resources: { cpu: 1, memory: 1024 }, command: ['true'] },
      { name: 'hot', instances: 4, resources: { cpu: '500m', memory: 2048 }, command: ['true'], priority: 9 },
    ],
  });
}

function world(config: Partial<MasterCoreConfig> = {}, log: Logger = nullLogger): { st: MasterState; app: AppState } {
  const st = new MasterState('1', { ...DEFAULT_CONFIG, ...config }, log);
  st.now = 100_000;
  const job = {
    jobId: 'job-1',
    spec: spec(),
    state: 'running' as const,
    message: '',
    submittedAtMs: 0,
    finishedAtMs: 0,
    submitSeq: 1,
    amAttempt: 1,
    amNodeId: 'n1',
    amAddress: 'am:1',
    progress: [],
  };
  const app = newApp(job, 'running', true, st.now);
  st.apps.set(app.appId, app);
  return { st, app };
}

function addNode(st: MasterState, nodeId: string, status: NodeStatus = 'healthy', backAtMs?: number): NodeState {
  const node: NodeState = {
    info: mockNodeInfo({ nodeId }),
    status,
    lastHeartbeatMs: st.now,
    allocated: res(0, 0),
    grantSeq: 0,
    grants: new Map(),
    runningWorkers: 0,
    reported: status !== 'unreported' && status !== 'missing',
    ...(backAtMs !== undefined ? { backAtMs } : {}),
  };
  st.nodes.set(nodeId, node);
  return node;
}

/** Declares `suId` at the master with `granted` slots per node and `outstanding` slots asked for anywhere. */
function declare(app: AppState, suId: string, granted: Record<string, number> = {}, outstanding = 0): void {
  app.sus.set(suId, {
    suId,
    resource: SLOT,
    priority: 2,
    requests: new Map(outstanding > 0 ? [['', outstanding]] : []),
    asgn: new Map(Object.entries(granted)),
    granted: Object.values(granted).reduce((a, b) => a + b, 0),
  });
}

const unit = (suId = 'map', resource = SLOT, priority = 0): UnitConfig => ({ suId, resource, priority });
const delta = (suId: string, n: number, location = ''): RequestDelta => ({ suId, location, delta: n });

function refused(f: () => unknown, field: string): InvalidArgumentError {
  try {
    f();
  } catch (e) {
    expect(e).to.be.instanceOf(InvalidArgumentError);
    expect((e as InvalidArgumentError).field).to.equal(field);
    return e as InvalidArgumentError;
  }
  return expect.fail(`expected an InvalidArgumentError on ${field}`);
}

describe('request limits (request-limits.ts)', () => {
  describe('slotLimit', () => {
    it('is the instances plus speculationAllowance of them, rounded up, at least one slot', () => {
      const { st } = world();
      expect([1, 4, 10, 20, 25, 1000].map((instances) => slotLimit(st, { instances }))).to.deep.equal([2, 5, 11, 22, 28, 1100]);
      const none = world({ speculationAllowance: 0 }).st;
      expect(slotLimit(none, { instances: 50 })).to.equal(51);
      const half = world({ speculationAllowance: 0.5 }).st;
      expect(slotLimit(half, { instances: 20 })).to.equal(30);
    });
  });

  describe('checkUpdate: units', () => {
    it("takes units of the job's tasks, no larger than a task's slot and no higher than its priority", () => {
      const { st, app } = world();
      checkUpdate(st, app, [unit('map', SLOT, 2), unit('map', res(500, 512), -3), unit('hot', res(500, 2048), 9)], []);
    });

    it('refuses a unit of no task, naming the tasks, and the reserved AM unit', () => {
      const { st, app } = world();
      expect(refused(() => checkUpdate(st, app, [unit('reduce')], []), 'units.suId').reason).to.equal(
        '"reduce" is not a task of job "job-1" (tasks: map, hot)',
      );
      expect(refused(() => checkUpdate(st, app, [unit(AM_SU)], []), 'units.suId').reason).to.match(/reserved/);
    });

    it('refuses a slot larger than the task declares, naming the dimension and both numbers', () => {
      const { st, app } = world();
      const cpu = refused(() => checkUpdate(st, app, [unit('map', res(1001, 1024))], []), 'units[map].resource.cpuMilli');
      expect(cpu.reason).to.equal('1001 is more than task "map" declares per instance (1000, tasks[0].resources)');
      const mem = refused(() => checkUpdate(st, app, [unit('hot', res(500, 4096), 9)], []), 'units[hot].resource.memoryMb');
      expect(mem.reason).to.equal('4096 is more than task "hot" declares per instance (2048, tasks[1].resources)');
      refused(() => checkUpdate(st, app, [unit('map', res(0, 1024))], []), 'units[map].resource');
    });

    it("refuses a priority above the task's (its own, else the job's)", () => {
      const { st, app } = world();
      expect(refused(() => checkUpdate(st, app, [unit('map', SLOT, 3)], []), 'units[map].priority').reason).to.equal(
        '3 is above the job\'s priority (task "map" sets none), 2',
      );
      expect(refused(() => checkUpdate(st, app, [unit('hot', res(500, 2048), 10)], []), 'units[hot].priority').reason).to.equal(
        '10 is above task "hot"\'s priority, 9',
      );
    });
  });

  describe('checkUpdate: deltas', () => {
    it('refuses deltas of no task, of undeclared units and of bad locations', () => {
      const { st, app } = world();
      declare(app, 'map');
      // A unit the master made itself from agents' grants (a MockSU) is no task's either.
      declare(app, 'ghost');
      refused(() => checkUpdate(st, app, [], [delta('ghost', 1)]), 'deltas.suId');
      refused(() => checkUpdate(st, app, [], [delta(AM_SU, 1)]), 'deltas.suId');
      expect(refused(() => checkUpdate(st, app, [], [delta('hot', 1)]), 'deltas.suId').reason).to.match(/not declared/);
      checkUpdate(st, app, [unit('hot', res(500, 2048))], [delta('hot', 1)]);
      refused(() => checkUpdate(st, app, [], [delta('map', 1, 'host:n1')]), 'deltas.location');
    });

    it('refuses a call that would take outstanding plus granted slots above the limit, naming both', () => {
      const { st, app } = world();
      addNode(st, 'n1');
      declare(app, 'map', { n1: 15 }, 5);
      checkUpdate(st, app, [], [delta('map', 2)]); // 15 + 7 = 22: the limit
      const e = refused(() => checkUpdate(st, app, [], [delta('map', 1), delta('map', 2, 'node:n1')]), 'deltas.delta');
      expect(e.reason).to.equal(
        'schedule unit "map" would have 8 slots outstanding and 15 granted; task "map" allows 22 (20 instances + 2 speculation allowance, speculationAllowance)',
      );
      // A unit declared in the same call starts from nothing.
      checkUpdate(st, app, [unit('hot', res(500, 2048))], [delta('hot', 5)]);
      refused(() => checkUpdate(st, app, [unit('hot', res(500, 2048))], [delta('hot', 6)]), 'deltas.delta');
    });

    it('never refuses a call that asks for no more, however far over the limit the unit is', () => {
      const { st, app } = world();
      addNode(st, 'n1');
      declare(app, 'map', { n1: 30 }, 4);
      checkUpdate(st, app, [], [delta('map', -1)]);
      checkUpdate(st, app, [], [delta('map', 2, 'node:n1'), delta('map', -2)]);
      checkUpdate(st, app, [unit('map', SLOT, 1)], []);
      refused(() => checkUpdate(st, app, [], [delta('map', 1)]), 'deltas.delta');
    });

    it('does not count slots on nodes timing out, missing or unreported, nor on a node back for less than the grace', () => {
      const { st, app } = world();
      addNode(st, 'ok');
      addNode(st, 'late', 'timing-out');
      addNode(st, 'gone', 'missing');
      addNode(st, 'quiet', 'unreported');
      addNode(st, 'back', 'healthy', st.now - 1000);
      declare(app, 'map', { ok: 10, late: 6, gone: 3, quiet: 2, back: 4 });
      expect(countedSlots(st, app.sus.get('map')!)).to.equal(10);
      checkUpdate(st, app, [], [delta('map', 12)]);
      st.now += backGraceMs(st);
      expect(countedSlots(st, app.sus.get('map')!)).to.equal(14);
      refused(() => checkUpdate(st, app, [], [delta('map', 12)]), 'deltas.delta');
    });

    it('changes nothing, refused or not', () => {
      const { st, app } = world();
      addNode(st, 'n1');
      declare(app, 'map', { n1: 2 }, 3);
      const before = JSON.stringify([...app.sus.values()].map((su) => [su.suId, su.priority, [...su.requests], [...su.asgn]]));
      checkUpdate(st, app, [unit('map', SLOT, 1), unit('hot', res(500, 2048))], [delta('map', 4), delta('hot', 1)]);
      refused(() => checkUpdate(st, app, [], [delta('map', 30)]), 'deltas.delta');
      expect(JSON.stringify([...app.sus.values()].map((su) => [su.suId, su.priority, [...su.requests], [...su.asgn]]))).to.equal(before);
    });
  });

  describe('sanitizeReport', () => {
    it('drops what names no task and clamps slots, priorities and request counts, with one warning', () => {
      const warnings: Array<Record<string, unknown>> = [];
      const log: Logger = { ...nullLogger, warn: (o) => warnings.push(o as Record<string, unknown>), child: () => log };
      const { st, app } = world({}, log);
      addNode(st, 'n1');
      declare(app, 'map', { n1: 16 });
      const clean = sanitizeReport(st, app, {
        units: [unit('map', res(2000, 512), 5), unit('reduce'), unit(AM_SU), unit('hot', res(500, 2048), 9)],
        requests: [
          { suId: 'map', location: 'node:n1', count: 3 },
          { suId: 'map', location: '', count: 4 },
          { suId: 'map', location: 'rack:r1', count: 2 },
          { suId: 'reduce', location: '', count: 7 },
          { suId: 'hot', location: 'bogus', count: 1 },
          { suId: 'hot', location: '', count: 2 },
          { suId: 'hot', location: '', count: 0 },
        ],
      });
      expect(clean.units).to.deep.equal([unit('map', res(1000, 512), 2), unit('hot', res(500, 2048), 9)]);
      // map: 16 granted leave room for 6 of the 9 asked for: anywhere is cut first (as AMs cancel).
      expect(clean.requests).to.deep.equal([
        { suId: 'map', location: 'node:n1', count: 3 },
        { suId: 'map', location: '', count: 1 },
        { suId: 'map', location: 'rack:r1', count: 2 },
        { suId: 'hot', location: '', count: 2 },
      ]);
      expect(warnings).to.have.length(1);
      expect(warnings[0]?.changes).to.have.length(7);
    });

    it('keeps a report within the limits as it is, silently', () => {
      const warnings: unknown[] = [];
      const log: Logger = { ...nullLogger, warn: (o) => warnings.push(o), child: () => log };
      const { st, app } = world({}, log);
      const report = { units: [unit('map', SLOT, 2)], requests: [{ suId: 'map', location: '', count: 22 }] };
      expect(sanitizeReport(st, app, report)).to.deep.equal(report);
      expect(warnings).to.deep.equal([]);
    });
  });
});

describe('request deltas (ledger applyDelta)', () => {
  it('adds at the location; a cancellation larger than its location spills over, anywhere first, then racks, then nodes', () => {
    const m = new Map<string, number>();
    applyDelta(m, 'node:n1', 2);
    applyDelta(m, 'rack:r1', 1);
    applyDelta(m, '', 1);
    applyDelta(m, 'node:n0', 1);
    applyDelta(m, 'node:n1', -3);
    expect([...m]).to.deep.equal([
      ['rack:r1', 1],
      ['node:n0', 1],
    ]);
    applyDelta(m, 'rack:r9', -5);
    expect([...m]).to.deep.equal([]);
    applyDelta(m, '', 0);
    expect(m.size).to.equal(0);
  });
});

describe('job input limits (request-limits.ts checkJobInputs)', () => {
  const job = (env: Record<string, string>, taskEnv: Record<string, string>, instances = [1]) => {
    const s = mockSpec();
    s.env = env;
    s.tasks = instances.map((n, i) => ({ ...s.tasks[0]!, name: `t${i}`, instances: n, command: { argv: ['true'], env: taskEnv, cwd: '' } }));
    return s;
  };
  const L = { maxEnvBytes: 100, maxEnvVars: 3, maxInstancesPerJob: 10 };

  it('takes a job within every limit', () => {
    checkJobInputs(job({ A: '1' }, { B: '2' }, [5, 5]), L);
    checkJobInputs(job({}, {}, [1]), DEFAULT_JOB_INPUT_LIMITS);
  });

  it('refuses too many variables (job env and task env together), naming the field and the key', () => {
    expect(refused(() => checkJobInputs(job({ A: '1', B: '2' }, { C: '3', D: '4' }), L), 'tasks[0].env').message).to.match(
      /4 environment variables; the limit is 3 \(maxEnvVars\)/,
    );
    expect(refused(() => checkJobInputs(job({ A: '1', B: '2', C: '3', D: '4' }, {}), L), 'env').message).to.match(/maxEnvVars/);
  });

  it('refuses too many bytes of environment', () => {
    expect(refused(() => checkJobInputs(job({ A: 'x'.repeat(200) }, {}), L), 'env').message).to.match(
      /203 bytes of environment; the limit is 100 \(maxEnvBytes\)/,
    );
  });

  it('refuses too many instances over all tasks', () => {
    expect(refused(() => checkJobInputs(job({}, {}, [6, 5]), L), 'tasks').message).to.match(/11 instances in all; the limit is 10 \(maxInstancesPerJob\)/);
  });

  it('turns a limit off with 0', () => {
    checkJobInputs(job({ A: 'x'.repeat(200), B: '', C: '', D: '' }, {}, [6, 5]), { maxEnvBytes: 0, maxEnvVars: 0, maxInstancesPerJob: 0 });
  });
});
