import { expect } from 'chai';
import fc from 'fast-check';
import {
  add,
  AlreadyExistsError,
  DEFAULT_AM_RESOURCE,
  DEFAULT_SHARED_AM_RESOURCE,
  FailedPreconditionError,
  fits,
  FuxiError,
  InvalidArgumentError,
  NotFoundError,
  nullLogger,
  res,
  StaleEpochError,
  sub,
  ZERO,
  type JobSpec,
} from '@fuxi/common';
import { DEFAULT_CONFIG, MasterCore } from '../master-core.js';
import { AM_SU } from '@fuxi/common';
import { TERMINAL_STATES, type Effect, type JobRecord, type RequestDelta, type UnitConfig } from '../types.js';
import {
  AM_RES,
  amReport,
  asgnMap,
  delta,
  EPOCH,
  grantMap,
  grantTotal,
  Harness,
  indexOfKind,
  mockNodeInfo,
  mockSpec,
  ofKind,
  progress,
  SLOT,
  totalSlots,
  unit,
} from './core-factories.js';

type ErrorClass = abstract new (...args: never[]) => Error;

/** Runs `fn`, expects it to throw an instance of `cls`, returns the error. */
function expectThrow<E extends Error>(fn: () => unknown, cls: abstract new (...args: never[]) => E): E {
  try {
    fn();
  } catch (e) {
    expect(e, String(e)).to.be.instanceOf(cls as unknown as ErrorClass);
    return e as E;
  }
  throw new Error(`expected ${cls.name} to be thrown`);
}

function expectInvalid(fn: () => unknown, field: string): InvalidArgumentError {
  const e = expectThrow(fn, InvalidArgumentError);
  expect(e.field).to.equal(field);
  expect(e.code).to.equal('INVALID_ARGUMENT');
  return e;
}

/** Two 8-core / 16 GiB nodes n1 (rack r1) and n2 (rack r2). */
function twoNodes(): Harness {
  return new Harness({
    nodes: [
      { nodeId: 'n1', rack: 'r1' },
      { nodeId: 'n2', rack: 'r2' },
    ],
  });
}

describe('MasterCore', () => {
  describe('submitJob', () => {
    it('creates the job, persists it and places the AM slot: grants to the node, then launchAm', () => {
      const h = twoNodes();
      const { created, effects } = h.submit();
      expect(created).to.equal(true);

      // The job, then its AM's location (metaAM) once placed.
      const store = ofKind(effects, 'store');
      expect(store).to.have.length(2);
      const placed = store[1]?.ops[0];
      expect(placed?.type === 'put' && (JSON.parse(placed.value) as JobRecord).amNodeId).to.equal('n1');
      const op = store[0]?.ops[0];
      expect(op?.type).to.equal('put');
      expect(op?.type === 'put' && op.key).to.equal('jobs/job-1');
      const stored = JSON.parse(op?.type === 'put' ? op.value : '{}') as JobRecord;
      expect(stored).to.include({ jobId: 'job-1', state: 'submitted', submittedAtMs: h.now });
      expect(stored.spec.name).to.equal('word count');
      expect(ofKind(effects, 'jobChanged').map((e) => e.jobId)).to.include('job-1');

      // Least-loaded node, ties by id: n1.
      const grants = ofKind(effects, 'grants');
      expect(grants).to.have.length(1);
      expect(grants[0]).to.deep.include({ nodeId: 'n1', address: 'n1:7001', epoch: EPOCH, seq: 1, full: true });
      // Every grant names the app's current AM attempt: agents fence older AMs with it.
      expect(grants[0]?.grants).to.deep.equal([{ appId: 'job-1', suId: AM_SU, slots: 1, resource: AM_RES, amAttempt: 1, quotaGroup: 'default' }]);
      const launches = ofKind(effects, 'launchAm');
      expect(launches).to.deep.equal([{ kind: 'launchAm', appId: 'job-1', attempt: 1, nodeId: 'n1', address: 'n1:7001', resource: AM_RES, epoch: EPOCH }]);
      expect(indexOfKind(effects, 'grants')).to.be.lessThan(indexOfKind(effects, 'launchAm'));
      expect(indexOfKind(effects, 'store')).to.be.lessThan(indexOfKind(effects, 'grants'));

      const job = h.core.getJob('job-1');
      expect(job).to.include({ state: 'submitted', amAttempt: 1, amNodeId: 'n1', submitSeq: 1 });
      expect(job.progress).to.deep.equal([{ name: 'map', total: 200, pending: 200, running: 0, succeeded: 0, failed: 0, retries: 0 }]);
      expect(h.allocated('n1')).to.deep.equal(AM_RES);
      expect(h.allocated('n2')).to.deep.equal(ZERO);
    });

    it('is idempotent for the same jobId and spec: created=false, no effects, nothing allocated twice', () => {
      const h = twoNodes();
      h.submit();
      const again = h.submit(mockSpec());
      expect(again).to.deep.equal({ created: false, effects: [] });
      expect(h.core.listJobs()).to.have.length(1);
      expect(h.totalAllocated()).to.deep.equal(AM_RES);
    });

    it('refuses another spec under an existing jobId (ALREADY_EXISTS naming the first differing field), changing nothing', () => {
      const h = twoNodes();
      h.submit();
      expect(() => h.submit(mockSpec({ name: 'another name' }))).to.throw(AlreadyExistsError, 'name: "another name", not "word count"');
      expect(h.core.getJob('job-1').spec.name).to.equal('word count');
      expect(h.totalAllocated()).to.deep.equal(AM_RES);
    });

    it('existingSubmit answers from the job table without changing it: created=false, ALREADY_EXISTS, or undefined for a new job', () => {
      const h = twoNodes();
      expect(h.core.existingSubmit(mockSpec())).to.equal(undefined);
      expect(h.core.existingSubmit(mockSpec({ id: '' }))).to.equal(undefined);
      expect(h.core.listJobs()).to.deep.equal([]);
      h.submit();
      expect(h.core.existingSubmit(mockSpec())).to.deep.equal({ jobId: 'job-1', created: false });
      expect(() => h.core.existingSubmit(mockSpec({ name: 'another name' }))).to.throw(AlreadyExistsError, 'name: "another name"');
      expect(h.core.listJobs()).to.have.length(1);
      expect(h.totalAllocated()).to.deep.equal(AM_RES);
    });

    it('refuses a spec over maxJobSpecBytes before anything changes', () => {
      const h = new Harness({ config: { maxJobSpecBytes: 4096 }, nodes: [{ nodeId: 'n1' }] });
      expect(() => h.submit(mockSpec({ env: { BLOB: 'x'.repeat(5000) } }))).to.throw(InvalidArgumentError, /limit is 4096/);
      expect(h.core.listJobs()).to.deep.equal([]);
    });

    it('keeps resubmits idempotent after the job ended', () => {
      const h = twoNodes();
      h.start();
      h.finish('job-1', true);
      expect(h.submit()).to.deep.equal({ created: false, effects: [] });
      expect(h.core.getJob('job-1').state).to.equal('succeeded');
      expect(h.totalAllocated()).to.deep.equal(ZERO);
    });

    it('rejects an unknown quota group, naming the field and the known groups', () => {
      const h = twoNodes();
      const e = expectInvalid(() => h.submit(mockSpec({ quotaGroup: 'gold' })), 'quotaGroup');
      expect(e.message).to.contain('"gold"').and.to.contain('default');
      expect(h.core.listJobs()).to.deep.equal([]);
      expect(h.totalAllocated()).to.deep.equal(ZERO);
    });

    it('rejects an instance larger than every registered node, naming the field', () => {
      const h = twoNodes();
      const big = mockSpec({ tasks: [{ name: 'map', instances: 1, resources: { cpu: 4, memory: '20Gi' }, command: ['true'] }] });
      const e = expectInvalid(() => h.submit(big), 'tasks[0].resources');
      expect(e.message).to.contain('larger than every node');
      expect(h.core.listJobs()).to.deep.equal([]);
    });

    it('rejects an AM larger than every registered node', () => {
      const h = twoNodes();
      expectInvalid(() => h.submit(mockSpec({ am: { cpu: 9, memory: 512 } })), 'am');
    });

    it('checks sizes against healthy nodes only, and not at all before any node registered', () => {
      const h = new Harness({ config: { agentTimeoutMs: 1000 }, nodes: [{ nodeId: 'big', capacity: res(32000, 65536) }, { nodeId: 'small' }] });
      const big = (id: string) => mockSpec({ id, tasks: [{ name: 'map', instances: 1, resources: { cpu: 16, memory: 1024 }, command: ['true'] }] });
      expect(h.submit(big('fits')).created).to.equal(true);
      h.advance(2000);
      h.heartbeat('small');
      h.tick(); // "big" is lost
      expectInvalid(() => h.submit(big('too-big')), 'tasks[0].resources');

      const empty = new Harness();
      expect(empty.submit(big('no-nodes')).created).to.equal(true);
    });

    it('waits for a node when none has room for the AM, and places it when one registers', () => {
      const h = new Harness();
      const { effects } = h.submit();
      expect(ofKind(effects, 'launchAm')).to.deep.equal([]);
      expect(h.core.getJob('job-1')).to.include({ state: 'submitted', amNodeId: '' });

      const reg = h.addNode({ nodeId: 'n9' });
      expect(ofKind(reg, 'launchAm').map((e) => e.nodeId)).to.deep.equal(['n9']);
      expect(indexOfKind(reg, 'grants')).to.be.lessThan(indexOfKind(reg, 'launchAm'));
      expect(h.core.getJob('job-1').amNodeId).to.equal('n9');
    });

    it('applies the validator defaults to proto3 zero values (quota group "", AM mode "", AM resource 0)', () => {
      const h = twoNodes();
      const spec = { ...mockSpec(), quotaGroup: '', amMode: '', amResource: { cpuMilli: 0, memoryMb: 0 } } as unknown as JobSpec;
      const { effects } = h.submit(spec);
      const job = h.core.getJob('job-1');
      expect(job.spec.quotaGroup).to.equal('default');
      expect(job.spec.amMode).to.equal('shared');
      expect(job.spec.amResource).to.deep.equal(DEFAULT_SHARED_AM_RESOURCE);
      expect(ofKind(effects, 'launchAm')[0]?.resource).to.deep.equal(DEFAULT_SHARED_AM_RESOURCE);
      expect(h.allocated('n1')).to.deep.equal(DEFAULT_SHARED_AM_RESOURCE);
      // A dedicated AM's default slot is larger.
      h.submit({ ...spec, jobId: 'job-2', amMode: 'dedicated' });
      expect(h.core.getJob('job-2').spec.amResource).to.deep.equal(DEFAULT_AM_RESOURCE);
    });

    it('lists jobs in submission order and filters by state; getJob of an unknown id is NOT_FOUND', () => {
      const h = twoNodes();
      h.submit(mockSpec({ id: 'b' }));
      h.submit(mockSpec({ id: 'a' }));
      h.submit(mockSpec({ id: 'c' }));
      h.registerApp('a');
      h.kill('c');
      expect(h.core.listJobs().map((j) => j.jobId)).to.deep.equal(['b', 'a', 'c']);
      expect(h.core.listJobs(['running']).map((j) => j.jobId)).to.deep.equal(['a']);
      expect(h.core.listJobs(['submitted', 'killed']).map((j) => j.jobId)).to.deep.equal(['b', 'c']);
      const e = expectThrow(() => h.core.getJob('nope'), NotFoundError);
      expect(e.code).to.equal('NOT_FOUND');
    });
  });

  describe('registerApp', () => {
    it('marks the job running, persists it and returns the spec, assignments and seq', () => {
      const h = twoNodes();
      h.submit();
      const r = h.registerApp('job-1', 1, 'n1:9000');
      expect(r.spec).to.deep.equal(h.core.getJob('job-1').spec);
      expect(r.assignments).to.deep.equal([]);
      expect(r.seq).to.equal(0);
      expect(r.heartbeatIntervalMs).to.equal(DEFAULT_CONFIG.amHeartbeatIntervalMs);
      expect(ofKind(r.effects, 'store')).to.have.length(1);
      expect(ofKind(r.effects, 'jobChanged')).to.deep.equal([{ kind: 'jobChanged', jobId: 'job-1' }]);
      expect(h.core.getJob('job-1')).to.include({ state: 'running', amAddress: 'n1:9000', amNodeId: 'n1' });
    });

    it('is a no-op on retry (no effects) but takes the new address', () => {
      const h = twoNodes();
      h.submit();
      h.registerApp('job-1', 1, 'n1:9000');
      const again = h.registerApp('job-1', 1, 'n1:9001');
      expect(again.effects).to.deep.equal([]);
      expect(h.core.getJob('job-1').amAddress).to.equal('n1:9001');
    });

    it('returns the current assignments to an AM that (re)registers after slots were placed', () => {
      const h = twoNodes();
      h.start();
      h.ask('job-1', 2);
      const again = h.registerApp('job-1');
      expect(again.seq).to.equal(1);
      expect(totalSlots(again.assignments)).to.equal(2);
      expect(again.assignments.every((a) => a.nodeAddress === `${a.nodeId}:7001`)).to.equal(true);
    });

    it('keeps an AM that registered before its slot was placed registered (pushes still reach it)', () => {
      const h = new Harness();
      h.submit();
      h.registerApp('job-1');
      const reg = h.addNode();
      expect(ofKind(reg, 'launchAm').map((e) => e.appId)).to.deep.equal(['job-1']);
      expect(h.core.getJob('job-1').state).to.equal('running');
      const r = h.ask('job-1', 1);
      expect(ofKind(r.effects, 'assignments').map((e) => e.appId)).to.deep.equal(['job-1']);
      expect(r.full).to.equal(undefined);
    });

    it('rejects a wrong attempt with StaleEpochError (FAILED_PRECONDITION)', () => {
      const h = twoNodes();
      h.submit();
      for (const attempt of [0, 2]) {
        const e = expectThrow(() => h.registerApp('job-1', attempt), StaleEpochError);
        expect(e).to.be.instanceOf(FailedPreconditionError);
        expect(e.message).to.contain(`got ${attempt}`);
      }
      expect(h.core.getJob('job-1').state).to.equal('submitted');
    });

    it('rejects an unknown app with NotFoundError', () => {
      const h = twoNodes();
      expectThrow(() => h.core.registerApp('ghost', 1, 'x:1', h.now), NotFoundError);
    });

    it('rejects a finished app with FailedPreconditionError naming its state', () => {
      const h = twoNodes();
      h.start();
      h.finish('job-1', false);
      const e = expectThrow(() => h.registerApp('job-1', 1), FailedPreconditionError);
      expect(e).to.not.be.instanceOf(StaleEpochError);
      expect(e.message).to.contain('failed');
    });
  });

  describe('updateRequests', () => {
    it('places requested slots: grants to agents first, then one full assignments message to the AM', () => {
      const h = twoNodes();
      h.start();
      const r = h.request('job-1', [delta('map', 3)], { units: [unit('map')], assignmentSeq: 0 });
      expect(r.full).to.equal(undefined); // the AM was up to date; the push carries the change

      const grants = ofKind(r.effects, 'grants');
      expect(grants.map((g) => g.nodeId).sort()).to.deep.equal(['n1', 'n2']);
      // n1 holds the AM: slot 1 -> n2, slot 2 -> n1, slot 3 -> n2 (least loaded first).
      const byNode = Object.fromEntries(grants.map((g) => [g.nodeId, grantMap(g.grants)]));
      expect(byNode).to.deep.equal({ n1: { 'job-1/__am__': 1, 'job-1/map': 1 }, n2: { 'job-1/map': 2 } });
      for (const g of grants) expect(g).to.include({ epoch: EPOCH, full: true, address: `${g.nodeId}:7001` });

      const asg = ofKind(r.effects, 'assignments');
      expect(asg).to.have.length(1);
      expect(asg[0]).to.deep.include({ appId: 'job-1', address: 'am-job-1:9000', epoch: EPOCH, seq: 1, full: true });
      expect(asgnMap(asg[0]?.assignments ?? [])).to.deep.equal({ 'map@n1': 1, 'map@n2': 2 });
      expect(asg[0]?.assignments.find((a) => a.nodeId === 'n2')?.nodeAddress).to.equal('n2:7001');
      const lastGrant = Math.max(...r.effects.map((e, i) => (e.kind === 'grants' ? i : -1)));
      expect(lastGrant).to.be.lessThan(indexOfKind(r.effects, 'assignments'));

      expect(h.allocated('n1')).to.deep.equal(res(1500, 1536));
      expect(h.allocated('n2')).to.deep.equal(res(2000, 2048));
    });

    it('grants a gang task (its size read from the job spec) whole or not at all', () => {
      // Two 8-core nodes, the AM's half core on one: room for 15 one-core slots.
      const gangOf = (n: number) => mockSpec({ tasks: [{ name: 'map', instances: n, gang: true, resources: { cpu: 1, memory: 1024 }, command: ['true'] }] });
      const h = twoNodes();
      h.start(gangOf(16));
      h.ask('job-1', 16);
      expect(h.amSlots('job-1')).to.deep.equal({});
      const ok = twoNodes();
      ok.start(gangOf(15));
      ok.ask('job-1', 15);
      expect(Object.values(ok.amSlots('job-1')).reduce((a, b) => a + b, 0)).to.equal(15);
    });

    it('honours node and rack locality', () => {
      const h = new Harness({
        nodes: [
          { nodeId: 'a1', rack: 'ra' },
          { nodeId: 'b1', rack: 'rb' },
          { nodeId: 'b2', rack: 'rb' },
        ],
      });
      h.start();
      h.request('job-1', [delta('map', 2, 'node:a1'), delta('map', 2, 'rack:rb')], { units: [unit('map')] });
      expect(h.amSlots('job-1')).to.deep.equal({ 'map@a1': 2, 'map@b1': 1, 'map@b2': 1 });
    });

    it('does not apply a repeated seq twice', () => {
      const h = twoNodes();
      h.start();
      const first = h.request('job-1', [delta('map', 3)], { units: [unit('map')], seq: 5 });
      expect(ofKind(first.effects, 'grants')).to.not.deep.equal([]);
      const before = h.totalAllocated();
      for (const seq of [5, 4]) {
        const again = h.request('job-1', [delta('map', 3)], { units: [unit('map')], seq });
        expect(again.effects).to.deep.equal([]);
        expect(again.full).to.equal(undefined);
      }
      expect(h.totalAllocated()).to.deep.equal(before);
      expect(totalSlots(ofKind(first.effects, 'assignments')[0]?.assignments ?? [])).to.equal(3);
    });

    it('answers with the full table when the AM reports another assignment seq', () => {
      const h = twoNodes();
      h.start();
      h.ask('job-1', 3);
      // Asked again at once: the push it lacks is still on its way, so no full table yet.
      expect(h.request('job-1', [], { assignmentSeq: 0 }).full).to.equal(undefined);
      h.advance(999);
      expect(h.request('job-1', [], { assignmentSeq: 0 }).full).to.equal(undefined);
      h.advance(2); // the push went out over a second ago: taken as lost
      const behind = h.request('job-1', [], { assignmentSeq: 0 });
      expect(behind.full?.seq).to.equal(1);
      expect(asgnMap(behind.full?.assignments ?? [])).to.deep.equal({ 'map@n1': 1, 'map@n2': 2 });
      expect(behind.effects).to.deep.equal([]);
      expect(h.request('job-1', [], { assignmentSeq: 7 }).full?.seq).to.equal(1);
      expect(h.request('job-1', [], { assignmentSeq: 1 }).full).to.equal(undefined);
    });

    it('keeps requests that do not fit outstanding and places them when capacity appears', () => {
      const h = new Harness({ nodes: [{ nodeId: 'n1', capacity: res(4000, 8192) }] });
      h.start();
      h.ask('job-1', 5); // 3 fit beside the AM
      expect(h.amSlots('job-1')).to.deep.equal({ 'map@n1': 3 });
      const reg = h.addNode({ nodeId: 'n2' });
      expect(ofKind(reg, 'assignments')).to.have.length(1);
      expect(h.amSlots('job-1')).to.deep.equal({ 'map@n1': 3, 'map@n2': 2 });
    });

    it('cancels outstanding requests with a negative delta', () => {
      const h = new Harness({ nodes: [{ nodeId: 'n1', capacity: res(4000, 8192) }] });
      h.start();
      h.ask('job-1', 10); // 3 placed, 7 outstanding
      h.request('job-1', [delta('map', -100)]);
      h.addNode({ nodeId: 'n2' });
      expect(h.amSlots('job-1')).to.deep.equal({ 'map@n1': 3 });
      expect(h.allocated('n2')).to.deep.equal(ZERO);
    });

    it('records progress and reports a job change only when it differs', () => {
      const h = twoNodes();
      h.start();
      const p = [progress('map', { running: 1, pending: 1 })];
      const r1 = h.request('job-1', [], { progress: p });
      expect(ofKind(r1.effects, 'jobChanged')).to.have.length(1);
      expect(h.core.getJob('job-1').progress).to.deep.equal(p);
      const r2 = h.request('job-1', [], { progress: p });
      expect(r2.effects).to.deep.equal([]);
    });

    it('rejects a bad location with InvalidArgumentError on deltas.location', () => {
      const h = twoNodes();
      h.start();
      for (const loc of ['host:n1', 'node:', 'n1', 'rack:']) {
        const e = expectInvalid(() => h.request('job-1', [delta('map', 1, loc)], { units: [unit('map')] }), 'deltas.location');
        expect(e.message).to.contain(JSON.stringify(loc));
      }
    });

    it('rejects an unknown or reserved schedule unit with InvalidArgumentError on deltas.suId', () => {
      const h = twoNodes();
      h.start();
      const e = expectInvalid(() => h.request('job-1', [delta('reduce', 1)]), 'deltas.suId');
      expect(e.message).to.contain('"reduce"');
      expectInvalid(() => h.request('job-1', [delta(AM_SU, 1)]), 'deltas.suId');
      expectInvalid(() => h.request('job-1', [], { units: [unit(AM_SU)] }), 'units.suId');
      expectInvalid(() => h.request('job-1', [], { units: [unit('map', ZERO)] }), 'units[map].resource');
      expect(h.totalAllocated()).to.deep.equal(AM_RES);
    });

    it('applies nothing from a rejected request, so the AM can fix it and retry the same seq', () => {
      const h = twoNodes();
      h.start();
      expectInvalid(() => h.request('job-1', [delta('map', 2), delta('map', 1, 'bogus')], { units: [unit('map')], seq: 1 }), 'deltas.location');
      expectInvalid(() => h.request('job-1', [delta('map', 2)], { units: [unit('map'), unit('map', res(-1, 10))], seq: 1 }), 'units[map].resource');
      // Nothing was declared or requested: a capacity change places nothing.
      h.addNode({ nodeId: 'n3' });
      expect(h.totalAllocated()).to.deep.equal(AM_RES);
      expectInvalid(() => h.request('job-1', [delta('bad', 1)], { seq: 1 }), 'deltas.suId');

      const ok = h.request('job-1', [delta('map', 2)], { units: [unit('map')], seq: 1 });
      expect(totalSlots(ofKind(ok.effects, 'assignments')[0]?.assignments ?? [])).to.equal(2);
    });

    it('updates the priority of a declared unit', () => {
      const h = new Harness({ nodes: [{ nodeId: 'n1', capacity: res(2500, 8192) }] });
      const task = (name: string) => ({ name, instances: 2, resources: { cpu: 1, memory: 1024 }, command: ['true'] });
      h.start(mockSpec({ priority: 5, tasks: [task('lo'), task('hi')] })); // AM 500: room for two 1-core slots
      h.request('job-1', [delta('lo', 1), delta('hi', 1)], { units: [unit('lo', SLOT, 1), unit('hi', SLOT, 0)] });
      // "lo" had the higher priority when both were asked for.
      expect(h.amSlots('job-1')).to.deep.equal({ 'lo@n1': 1, 'hi@n1': 1 });
      h.request('job-1', [delta('lo', 1), delta('hi', 1)], { units: [unit('lo', SLOT, 0), unit('hi', SLOT, 5)] });
      h.giveBack('job-1', [{ suId: 'lo', nodeId: 'n1', slots: 1 }]);
      expect(h.amSlots('job-1')).to.deep.equal({ 'hi@n1': 2 });
    });

    it('rejects a stale attempt and an ended app', () => {
      const h = twoNodes();
      h.start();
      expectThrow(() => h.request('job-1', [], { attempt: 2 }), StaleEpochError);
      h.kill('job-1');
      expectThrow(() => h.request('job-1', []), FailedPreconditionError);
      expectThrow(() => h.request('ghost', [], { attempt: 1 }), NotFoundError);
    });
  });

  describe('request limits (what an AM may ask for)', () => {
    /** job-1 with task `map`: 4 instances of 1 core / 1 GiB, so 5 slots at most (one of speculation). */
    const four = () => mockSpec({ tasks: [{ name: 'map', instances: 4, resources: { cpu: 1, memory: 1024 }, command: ['true'] }] });
    const mapView = (h: Harness) => h.core.units('job-1').find((u) => u.suId === 'map');

    it('refuses a request beyond the spec whole: nothing declared, asked for or recorded, and the seq can be sent again', () => {
      const h = twoNodes();
      h.start(four());
      h.request('job-1', [delta('map', 3)], { units: [unit('map')], seq: 1 });
      expect(mapView(h)).to.deep.include({ outstanding: 0, granted: 3, counted: 3, limit: 5 });
      const before = h.totalAllocated();
      const p = [progress('map', { total: 4, running: 3, pending: 1 })];
      const e = expectInvalid(() => h.request('job-1', [delta('map', 3)], { units: [unit('map')], seq: 2, progress: p }), 'deltas.delta');
      expect(e.message).to.equal(
        'deltas.delta: schedule unit "map" would have 3 slots outstanding and 3 granted; task "map" allows 5 (4 instances + 1 speculation allowance, speculationAllowance)',
      );
      expectInvalid(() => h.request('job-1', [delta('map', 1)], { units: [unit('map', res(2000, 1024))], seq: 2 }), 'units[map].resource.cpuMilli');
      expectInvalid(() => h.request('job-1', [], { units: [unit('map', SLOT, 1)], seq: 2 }), 'units[map].priority');
      expectInvalid(() => h.request('job-1', [delta('reduce', 1)], { units: [unit('reduce')], seq: 2 }), 'units.suId');
      expect(h.totalAllocated()).to.deep.equal(before);
      expect(mapView(h)).to.deep.include({ priority: 0, outstanding: 0, granted: 3 });
      expect(h.core.getJob('job-1').progress[0]).to.deep.include({ total: 4, pending: 4 });
      // The same seq, within the limit this time, is applied.
      const ok = h.request('job-1', [delta('map', 2)], { seq: 2, progress: p });
      expect(totalSlots(ofKind(ok.effects, 'assignments')[0]?.assignments ?? [])).to.equal(5);
      expect(h.core.getJob('job-1').progress).to.deep.equal(p);
      // Over the limit now (a returned slot the AM asks for again, say): cancelling is always taken.
      h.request('job-1', [delta('map', -1)], { seq: 3 });
      expectInvalid(() => h.request('job-1', [delta('map', 1)], { seq: 4 }), 'deltas.delta');
    });

    it('does not count slots on an agent timing out: the AM may re-run its instances elsewhere, and the node counts again once back a while', () => {
      const h = new Harness({ nodes: [{ nodeId: 'n1' }, { nodeId: 'n2' }, { nodeId: 'n3' }] });
      h.start(four());
      h.request('job-1', [delta('map', 4, 'node:n2')], { units: [unit('map')] });
      expect(h.amSlots('job-1')).to.deep.equal({ 'map@n2': 4 });
      h.run(DEFAULT_CONFIG.agentTimingOutMs + 1000, { silentNodes: ['n2'] });
      expect(h.core.nodeStatus('n2')?.status).to.equal('timing-out');
      h.request('job-1', [delta('map', 4)]);
      expect(h.amSlots('job-1')).to.deep.include({ 'map@n2': 4 });
      expect(mapView(h)).to.deep.include({ outstanding: 0, granted: 8, counted: 4 });
      // Back: its AMs are told, and until they have heard it its slots still do not count.
      h.heartbeat('n2');
      h.request('job-1', [delta('map', 1)]);
      h.advance(10_000);
      h.heartbeatAll();
      expect(mapView(h)).to.deep.include({ outstanding: 0, granted: 9, counted: 9 });
      expectInvalid(() => h.request('job-1', [delta('map', 1)]), 'deltas.delta');
    });

    it("a cancellation that crosses a placement spills over to the unit's other locations", () => {
      const h = new Harness({ nodes: [{ nodeId: 'n1', capacity: res(1500, 8192) }] });
      h.start(four());
      // One fits beside the AM; the master places the node request, the AM counts it anywhere.
      h.request('job-1', [delta('map', 1, 'node:n1'), delta('map', 2)], { units: [unit('map')] });
      expect(mapView(h)).to.deep.include({ outstanding: 2, granted: 1 });
      // The AM takes the new slot off its node:n1 request... and then cancels one anywhere and
      // one on the node: the master has one left anywhere, and cancels it from there.
      h.request('job-1', [delta('map', -1, 'node:n1'), delta('map', -1)]);
      expect(mapView(h)).to.deep.include({ outstanding: 0, granted: 1 });
    });
  });

  describe('assignment pushes to large apps', () => {
    it('carry only the changed nodes above 64 entries, and the AM that applies them holds the full table', () => {
      const nodes = Array.from({ length: 80 }, (_, i) => ({ nodeId: `n${String(i).padStart(2, '0')}`, capacity: res(2000, 4096) }));
      const h = new Harness({ nodes });
      h.start(mockSpec({ id: 'big' }));
      h.ask('big', 150); // one slot per node and then some: more than 64 (unit, node) entries
      // The master's table, as an UpdateRequests answer gives it to an AM that holds none (an old
      // request seq, so nothing is applied).
      const full = () =>
        asgnMap(
          h.core.updateRequests({ appId: 'big', attempt: 1, seq: 0, units: [], deltas: [], assignmentSeq: -1, progress: [] }, h.now).full?.assignments ?? [],
        );
      const entries = Object.keys(full()).length;
      expect(entries).to.be.greaterThan(64);
      const nodeId = [...h.ams.get('big')!.slots.keys()][0]!.split('@')[1]!;
      const pushes = ofKind(h.giveBack('big', [{ suId: 'map', nodeId, slots: 1 }]), 'assignments');
      expect(pushes).to.have.length(1);
      expect(pushes[0]!.full).to.equal(false);
      expect(pushes[0]!.assignments.map((a) => a.nodeId)).to.deep.equal([nodeId]);
      const view = Object.fromEntries(h.ams.get('big')!.slots);
      expect(view).to.deep.equal(Object.fromEntries(Object.entries(full()).filter(([, n]) => n > 0)));
    });
  });

  describe('batch scheduling (schedulingIntervalMs > 0)', () => {
    it('requests and returns only mark a pass as due; one pass places everything owed', () => {
      const h = new Harness({ nodes: [{ nodeId: 'n1' }, { nodeId: 'n2' }], config: { schedulingIntervalMs: 5 } });
      // Submissions, like requests, only mark a pass as due: a batch of jobs is one pass, not one each.
      h.start(mockSpec({ id: 'a' }));
      for (const id of ['b', 'c']) expect(ofKind(h.submit(mockSpec({ id })).effects, 'launchAm')).to.deep.equal([]);
      expect(h.core.scheduleDue).to.equal(true);
      const amPass = h.core.runDueSchedule(h.now);
      h.observe(amPass);
      expect(ofKind(amPass, 'launchAm').map((e) => e.appId)).to.deep.equal(['a', 'b', 'c']);
      expect(h.core.scheduleDue).to.equal(false);
      const r1 = h.ask('a', 2);
      const r2 = h.ask('a', 1);
      expect(ofKind(r1.effects, 'grants')).to.deep.equal([]);
      expect(ofKind(r2.effects, 'assignments')).to.deep.equal([]);
      expect(h.core.scheduleDue).to.equal(true);
      const pass = h.core.runDueSchedule(h.now);
      h.observe(pass);
      expect(h.core.scheduleDue).to.equal(false);
      expect(ofKind(pass, 'assignments')).to.have.length(1); // one push for both requests
      expect([...h.ams.get('a')!.slots.values()].reduce((x, y) => x + y, 0)).to.equal(3);
      expect(h.core.runDueSchedule(h.now)).to.deep.equal([]);
      // A return frees capacity at once; the waiting request of another app waits for the pass.
      const nodeId = [...h.ams.get('a')!.slots.keys()][0]!.split('@')[1]!;
      h.giveBack('a', [{ suId: 'map', nodeId, slots: 1 }]);
      expect(h.core.scheduleDue).to.equal(true);
    });
  });

  describe('AM share (maxAmShare)', () => {
    it('a flood of submissions leaves room for workers: AMs launch only up to their share', () => {
      // 2 nodes of 4 cores: AMs (500 m each) may hold half, 4 cores: 8 AMs of the 20 jobs.
      const h = new Harness({
        nodes: [
          { nodeId: 'n1', capacity: res(4000, 8192) },
          { nodeId: 'n2', capacity: res(4000, 8192) },
        ],
        config: { maxAmShare: 0.5 },
      });
      const launched: string[] = [];
      for (let i = 0; i < 20; i++) launched.push(...ofKind(h.submit(mockSpec({ id: `j${i}` })).effects, 'launchAm').map((e) => e.appId));
      expect(launched).to.deep.equal(['j0', 'j1', 'j2', 'j3', 'j4', 'j5', 'j6', 'j7']);
      // The AMs' workers get the other half.
      h.registerApp('j0');
      h.ask('j0', 4);
      expect(h.amSlots('j0')).to.deep.equal({ 'map@n1': 2, 'map@n2': 2 });
      // An AM that ends makes room for the next job's AM.
      h.registerApp('j1');
      const effects = h.finish('j1', true);
      expect(ofKind(effects, 'launchAm').map((e) => e.appId)).to.deep.equal(['j8']);
    });
  });

  describe('returnSlots', () => {
    it('frees capacity and reschedules waiting requests of another app', () => {
      const h = new Harness({ nodes: [{ nodeId: 'n1' }] });
      h.start(mockSpec({ id: 'a' }));
      h.ask('a', 7); // 0.5 + 7 cores
      h.start(mockSpec({ id: 'b' })); // AM fits in the last 0.5 core
      h.ask('b', 2);
      expect(h.amSlots('b')).to.deep.equal({});
      expect(h.allocated('n1')).to.deep.equal(res(8000, 512 * 2 + 7 * 1024));

      const effects = h.giveBack('a', [{ suId: 'map', nodeId: 'n1', slots: 2 }]);
      const grants = ofKind(effects, 'grants');
      expect(grantMap(grants[grants.length - 1]?.grants ?? [])).to.deep.equal({ 'a/__am__': 1, 'a/map': 5, 'b/__am__': 1, 'b/map': 2 });
      // a learns its reduced table, b its new slots.
      const asg = ofKind(effects, 'assignments');
      expect(asg.map((e) => [e.appId, asgnMap(e.assignments)])).to.deep.equal([
        ['a', { 'map@n1': 5 }],
        ['b', { 'map@n1': 2 }],
      ]);
      expect(h.amSlots('b')).to.deep.equal({ 'map@n1': 2 });
      expect(h.amSlots('a')).to.deep.equal({ 'map@n1': 5 });
      expect(h.agents.get('n1')?.seq).to.equal(grants[grants.length - 1]?.seq);
    });

    it('ignores a repeated return seq', () => {
      const h = twoNodes();
      h.start();
      h.ask('job-1', 4);
      const before = h.totalAllocated();
      const first = h.giveBack('job-1', [{ suId: 'map', nodeId: 'n2', slots: 1 }], 3);
      expect(first).to.not.deep.equal([]);
      const freed = h.totalAllocated();
      expect(freed.cpuMilli).to.equal(before.cpuMilli - 1000);
      expect(h.giveBack('job-1', [{ suId: 'map', nodeId: 'n2', slots: 1 }], 3)).to.deep.equal([]);
      expect(h.giveBack('job-1', [{ suId: 'map', nodeId: 'n2', slots: 1 }], 2)).to.deep.equal([]);
      expect(h.totalAllocated()).to.deep.equal(freed);
    });

    it('never frees more than is held and ignores unknown units and nodes', () => {
      const h = twoNodes();
      h.start();
      h.ask('job-1', 3); // n1:1, n2:2
      h.giveBack('job-1', [
        { suId: 'map', nodeId: 'n2', slots: 100 },
        { suId: 'map', nodeId: 'n1', slots: -5 },
        { suId: 'nope', nodeId: 'n1', slots: 1 },
        { suId: 'map', nodeId: 'ghost', slots: 1 },
      ]);
      expect(h.allocated('n2')).to.deep.equal(ZERO);
      expect(h.allocated('n1')).to.deep.equal(res(1500, 1536));
      expect(grantMap(h.agents.get('n2')?.grants ?? [])).to.deep.equal({});
    });

    it('does not let an AM return its own slot (the AM process still runs there)', () => {
      const h = twoNodes();
      h.start();
      expect(h.giveBack('job-1', [{ suId: AM_SU, nodeId: 'n1', slots: 1 }])).to.deep.equal([]);
      expect(h.allocated('n1')).to.deep.equal(AM_RES);
    });

    it('gives a freed slot to a waiting AM before any task request', () => {
      const h = new Harness({ nodes: [{ nodeId: 'n1', capacity: res(1500, 2048) }] });
      h.start(mockSpec({ id: 'a' }));
      h.ask('a', 1); // full: 0.5 AM + 1 slot
      h.submit(mockSpec({ id: 'b' }));
      h.ask('a', 1); // outstanding
      const effects = h.giveBack('a', [{ suId: 'map', nodeId: 'n1', slots: 1 }]);
      expect(ofKind(effects, 'launchAm').map((e) => e.appId)).to.deep.equal(['b']);
      // Only a's reduced (now empty) table: its outstanding request did not fit.
      expect(ofKind(effects, 'assignments').map((e) => [e.appId, e.assignments])).to.deep.equal([['a', []]]);
      expect(h.amSlots('a')).to.deep.equal({});
    });

    it("names with a slot placed on the node again the grant table that holds it, after the return's", () => {
      // The return and the pass that places the slot again are two steps, two grant tables. The AM
      // plans on the slot with the second one's seq: the agent may still be on the table from
      // before the return, where the slot looks free and a worker started on it would be killed
      // as over its grant by the return's table.
      const h = new Harness({ nodes: [{ nodeId: 'n1', capacity: res(1500, 2048) }], config: { schedulingIntervalMs: 5 } });
      const pass = () => {
        const fx = h.core.runDueSchedule(h.now);
        h.observe(fx);
        return fx;
      };
      h.start();
      pass();
      h.ask('job-1', 1);
      expect(asgnMap(ofKind(pass(), 'assignments')[0]!.assignments)).to.deep.equal({ 'map@n1': 1 }); // full: 0.5 AM + 1 slot
      h.ask('job-1', 1);
      expect(pass()).to.deep.equal([]);
      const returned = h.giveBack('job-1', [{ suId: 'map', nodeId: 'n1', slots: 1 }]);
      const drop = ofKind(returned, 'grants')[0]!;
      expect(grantMap(drop.grants)).to.not.have.property('job-1/map');
      expect(ofKind(returned, 'assignments').map((e) => e.assignments)).to.deep.equal([[]]);
      const placed = pass();
      const rise = ofKind(placed, 'grants')[0]!;
      expect(grantMap(rise.grants)).to.deep.include({ 'job-1/map': 1 });
      expect(rise.seq).to.be.greaterThan(drop.seq);
      expect(ofKind(placed, 'assignments').map((e) => e.assignments)).to.deep.equal([
        [{ suId: 'map', nodeId: 'n1', nodeAddress: 'n1:7001', slots: 1, grantSeq: rise.seq }],
      ]);
    });
  });

  describe('finishApp', () => {
    /** job-1 with its AM on n1 and map slots on n1 and n2; n3 holds nothing of it. */
    function busy(): Harness {
      const h = new Harness({ nodes: [{ nodeId: 'n1' }, { nodeId: 'n2' }, { nodeId: 'n3', capacity: res(500, 512) }] });
      h.start();
      h.ask('job-1', 3);
      expect(h.allocated('n3')).to.deep.equal(ZERO);
      expect(h.amSlots('job-1')).to.deep.equal({ 'map@n1': 1, 'map@n2': 2 });
      return h;
    }

    it('on success releases everything: empty grant tables to every node that held some, no stops', () => {
      const h = busy();
      h.advance(500);
      const prog = [progress('map', { succeeded: 2 })];
      const effects = h.finish('job-1', true, 'done', prog);
      const grants = ofKind(effects, 'grants');
      expect(grants.map((g) => g.nodeId).sort()).to.deep.equal(['n1', 'n2']);
      for (const g of grants) expect(g.grants).to.deep.equal([]);
      expect(ofKind(effects, 'stopWorkers')).to.deep.equal([]);
      for (const n of h.core.listNodes()) {
        expect(n.allocated, n.info.nodeId).to.deep.equal(ZERO);
        expect(n.free).to.deep.equal(n.info.capacity);
      }
      const job = h.core.getJob('job-1');
      expect(job).to.include({ state: 'succeeded', message: 'done', finishedAtMs: h.now });
      expect(job.progress).to.deep.equal(prog);
      const stored = ofKind(effects, 'store').map((s) => s.ops[0]);
      expect(stored.map((o) => o?.type === 'put' && (JSON.parse(o.value) as JobRecord).state)).to.deep.equal(['succeeded']);
      expect(ofKind(effects, 'jobChanged')).to.deep.equal([{ kind: 'jobChanged', jobId: 'job-1' }]);
    });

    it('on failure also tells every node that held grants to stop the app workers', () => {
      const h = busy();
      const effects = h.finish('job-1', false, 'task map failed 3 times');
      const stops = ofKind(effects, 'stopWorkers');
      expect(stops.map((s) => s.nodeId).sort()).to.deep.equal(['n1', 'n2']);
      for (const s of stops) expect(s).to.include({ appId: 'job-1', epoch: EPOCH, reason: 'task map failed 3 times', address: `${s.nodeId}:7001` });
      expect(h.totalAllocated()).to.deep.equal(ZERO);
      expect(h.core.getJob('job-1')).to.include({ state: 'failed', message: 'task map failed 3 times' });
    });

    it('hands the freed capacity to waiting work', () => {
      const h = new Harness({ nodes: [{ nodeId: 'n1', capacity: res(1000, 1024) }] });
      h.start(mockSpec({ id: 'a', am: { cpu: 1, memory: 1024 } }));
      h.submit(mockSpec({ id: 'b', am: { cpu: 1, memory: 1024 } }));
      expect(h.core.getJob('b').amNodeId).to.equal('');
      const effects = h.finish('a', true);
      expect(ofKind(effects, 'launchAm').map((e) => e.appId)).to.deep.equal(['b']);
      expect(grantMap(h.agents.get('n1')?.grants ?? [])).to.deep.equal({ 'b/__am__': 1 });
    });

    it('rejects a stale attempt and a second finish', () => {
      const h = busy();
      expectThrow(() => h.core.finishApp({ appId: 'job-1', attempt: 2, succeeded: true, message: '', progress: [] }, h.now), StaleEpochError);
      h.finish('job-1', true);
      expectThrow(() => h.finish('job-1', true), FailedPreconditionError);
    });
  });

  describe('killJob', () => {
    it('revokes every grant and stops the workers on every node that held one', () => {
      const h = twoNodes();
      h.start();
      h.ask('job-1', 3);
      const effects = h.kill('job-1', 'user asked');
      expect(ofKind(effects, 'grants').every((g) => g.grants.length === 0)).to.equal(true);
      expect(ofKind(effects, 'stopWorkers').map((s) => [s.nodeId, s.reason])).to.have.deep.members([
        ['n1', 'user asked'],
        ['n2', 'user asked'],
      ]);
      expect(h.totalAllocated()).to.deep.equal(ZERO);
      expect(h.core.getJob('job-1')).to.include({ state: 'killed', message: 'user asked', finishedAtMs: h.now });
    });

    it('uses a default reason, is idempotent, and NOT_FOUND for an unknown job', () => {
      const h = twoNodes();
      h.start();
      h.kill('job-1');
      expect(h.core.getJob('job-1').message).to.equal('killed by user');
      expect(h.kill('job-1')).to.deep.equal([]);
      expectThrow(() => h.kill('ghost'), NotFoundError);
    });

    it('killChangesNothing: true once the job has ended, false before, NOT_FOUND for an unknown job', () => {
      const h = twoNodes();
      h.start();
      expect(h.core.killChangesNothing('job-1')).to.equal(false);
      expect(h.core.getJob('job-1').state).to.not.equal('killed');
      h.kill('job-1');
      expect(h.core.killChangesNothing('job-1')).to.equal(true);
      expectThrow(() => h.core.killChangesNothing('ghost'), NotFoundError);
    });

    it('kills a job still waiting for its AM; it is never launched afterwards', () => {
      const h = new Harness();
      h.submit();
      const effects = h.kill('job-1');
      expect(ofKind(effects, 'stopWorkers')).to.deep.equal([]);
      expect(h.core.getJob('job-1').state).to.equal('killed');
      expect(ofKind(h.addNode(), 'launchAm')).to.deep.equal([]);
      expect(h.totalAllocated()).to.deep.equal(ZERO);
    });

    it('kills a job whose AM is placed but not yet registered', () => {
      const h = twoNodes();
      h.submit();
      const effects = h.kill('job-1');
      expect(ofKind(effects, 'stopWorkers').map((s) => s.nodeId)).to.deep.equal(['n1']);
      expect(ofKind(effects, 'grants').map((g) => [g.nodeId, g.grants])).to.deep.equal([['n1', []]]);
      expect(h.core.amLaunchFailed('job-1', 1, 'late', h.now)).to.deep.equal([]);
    });
  });

  describe('amLaunchFailed', () => {
    it('fails the job of the current attempt and ignores other attempts', () => {
      const h = twoNodes();
      h.submit();
      expect(h.core.amLaunchFailed('job-1', 2, 'x', h.now)).to.deep.equal([]);
      expect(h.core.amLaunchFailed('ghost', 1, 'x', h.now)).to.deep.equal([]);
      h.core.amLaunchFailed('job-1', 1, 'agent unreachable', h.now);
      h.core.checkInvariants();
      expect(h.core.getJob('job-1').message).to.contain('could not start the application master').and.to.contain('agent unreachable');
      expect(h.totalAllocated()).to.deep.equal(ZERO);
    });
  });

  describe('registerAgent', () => {
    it('persists a new agent in the roster and re-persists only when its address changes', () => {
      const h = new Harness();
      const first = h.core.registerAgent(mockNodeInfo(), EPOCH, h.now);
      expect(first.heartbeatIntervalMs).to.equal(DEFAULT_CONFIG.heartbeatIntervalMs);
      expect(first.effects).to.deep.equal([
        { kind: 'store', ops: [{ type: 'put', key: 'agents/n1', value: JSON.stringify({ nodeId: 'n1', address: 'n1:7001' }) }] },
      ]);
      // A known agent registering again has restarted: no roster write, its full table at once.
      expect(h.core.registerAgent(mockNodeInfo(), EPOCH, h.now).effects).to.deep.equal([
        { kind: 'grants', nodeId: 'n1', address: 'n1:7001', epoch: EPOCH, seq: 1, full: true, grants: [] },
      ]);
      const moved = h.core.registerAgent(mockNodeInfo({ address: 'n1:7777' }), EPOCH, h.now);
      expect(ofKind(moved.effects, 'store')).to.have.length(1);
      expect(ofKind(moved.effects, 'grants').map((g) => [g.address, g.seq])).to.deep.equal([['n1:7777', 2]]);
      expect(h.core.listNodes().map((n) => n.info.address)).to.deep.equal(['n1:7777']);
    });

    it('pushes a restarted agent its full grant table (with the AM attempt) at once', () => {
      const h = twoNodes();
      h.start();
      h.ask('job-1', 3);
      const before = h.agents.get('n2');
      const { effects, reportState } = h.core.registerAgent(mockNodeInfo({ nodeId: 'n2', rack: 'r2' }), EPOCH, h.now);
      expect(reportState).to.equal(false);
      const grants = ofKind(effects, 'grants');
      expect(grants.map((g) => [g.nodeId, g.seq, g.full])).to.deep.equal([['n2', (before?.seq ?? 0) + 1, true]]);
      expect(grants[0]?.grants).to.deep.equal(before?.grants);
      expect(grants[0]?.grants.every((g) => g.amAttempt === 1)).to.equal(true);
      expect(ofKind(effects, 'store')).to.deep.equal([]);
      // Posted and resolved at once: the master's table is authoritative (Table 3 row 2).
      expect(h.core.faults.history().map((e) => [e.kind, e.subject, e.state])).to.deep.equal([['AGENT_CRASH', 'n2', 'resolved']]);
      expect(h.core.faults.state).to.equal('S0');
      expect(h.allocated('n2')).to.deep.equal(res(2000, 2048));
    });

    it('rejects a capacity that is not positive and an epoch newer than the master', () => {
      const h = new Harness();
      expectInvalid(() => h.addNode({ capacity: res(0, 1024) }), 'node.capacity');
      expectInvalid(() => h.addNode({ capacity: res(1000, -1) }), 'node.capacity');
      expectThrow(() => h.core.registerAgent(mockNodeInfo(), '8', h.now), StaleEpochError);
      expect(ofKind(h.core.registerAgent(mockNodeInfo(), '', h.now).effects, 'store')).to.have.length(1);
      // An older epoch is fine (the agent saw the previous master); it is a known agent now.
      const older = h.core.registerAgent(mockNodeInfo(), '6', h.now).effects;
      expect(ofKind(older, 'store')).to.deep.equal([]);
      expect(ofKind(older, 'grants').map((g) => g.epoch)).to.deep.equal([EPOCH]);
    });

    it('lists nodes by id with capacity, allocation and free resources', () => {
      const h = new Harness({
        nodes: [
          { nodeId: 'b', rack: 'rb' },
          { nodeId: 'a', rack: 'ra', labels: { gpu: 'no' } },
        ],
      });
      h.start();
      const nodes = h.core.listNodes();
      expect(nodes.map((n) => n.info.nodeId)).to.deep.equal(['a', 'b']);
      expect(nodes[0]).to.deep.include({ healthy: true, allocated: AM_RES, free: res(7500, 16384 - 512), runningWorkers: 0, lastHeartbeatMs: h.now });
      expect(nodes[0]?.info.labels).to.deep.equal({ gpu: 'no' });
    });
  });

  describe('heartbeat', () => {
    it('tells an unknown node to re-register', () => {
      const h = twoNodes();
      expect(h.heartbeat('ghost')).to.deep.equal({ reregister: true, effects: [] });
    });

    it('records running workers and the heartbeat time', () => {
      const h = twoNodes();
      h.advance(300);
      const r = h.heartbeat('n2', { running: 4 });
      expect(r).to.deep.equal({ reregister: false, effects: [] });
      const n2 = h.core.listNodes().find((n) => n.info.nodeId === 'n2');
      expect(n2).to.deep.include({ runningWorkers: 4, lastHeartbeatMs: h.now });
    });

    it('answers a grant seq mismatch with the full grant table', () => {
      const h = twoNodes();
      h.start();
      h.ask('job-1', 3);
      const seq = h.agents.get('n1')?.seq ?? -1;
      expect(seq).to.be.greaterThan(0);
      const behind = h.heartbeat('n1', { grantSeq: seq - 1 });
      expect(behind.full?.seq).to.equal(seq);
      expect(grantMap(behind.full?.grants ?? [])).to.deep.equal({ 'job-1/__am__': 1, 'job-1/map': 1 });
      expect(h.heartbeat('n1', { grantSeq: seq + 3 }).full?.seq).to.equal(seq);
      expect(h.heartbeat('n1', { grantSeq: seq }).full).to.equal(undefined);
    });

    it('rejects a heartbeat that has seen a newer master epoch', () => {
      const h = twoNodes();
      expectThrow(() => h.heartbeat('n1', { epoch: '8' }), StaleEpochError);
      expect(h.heartbeat('n1', { epoch: '0' }).reregister).to.equal(false);
      expect(h.heartbeat('n1', { epoch: '' }).reregister).to.equal(false);
    });

    it('restarts an AM reported dead (attempt + 1, same node, every slot kept); after maxAmAttempts deaths the job fails naming the exit code', () => {
      const h = twoNodes();
      h.start();
      h.ask('job-1', 3);
      expect(h.heartbeat('n1', { amWorkers: [amReport('job-1', { state: 'running' })] }).effects).to.deep.equal([]);
      const allocated = h.totalAllocated();
      h.advance(50);
      const r = h.heartbeat('n1', { amWorkers: [amReport('job-1', { state: 'failed', exitCode: 3, message: 'out of memory' })] });
      expect(h.core.getJob('job-1')).to.include({ state: 'running', amAttempt: 2, amNodeId: 'n1', amAddress: '', finishedAtMs: 0 });
      expect(ofKind(r.effects, 'launchAm').map((e) => [e.attempt, e.nodeId])).to.deep.equal([[2, 'n1']]);
      expect(ofKind(r.effects, 'stopWorkers').map((s) => [s.nodeId, s.workerIds])).to.deep.equal([['n1', ['am.1']]]);
      expect(h.totalAllocated()).to.deep.equal(allocated);
      // Every grant of the app names attempt 2; n1's table changed in this very call: the reply carries it in full.
      expect(
        ofKind(r.effects, 'grants')
          .map((g) => g.nodeId)
          .sort(),
      ).to.deep.equal(['n1', 'n2']);
      expect(r.full?.grants.map((g) => g.amAttempt)).to.deep.equal([2, 2]);

      const maxAttempts = DEFAULT_CONFIG.maxAmAttempts;
      for (let attempt = 2; attempt < maxAttempts; attempt++) {
        h.heartbeat('n1', { amWorkers: [amReport('job-1', { amAttempt: attempt, state: 'failed', exitCode: 3 })] });
        expect(h.core.getJob('job-1')).to.include({ state: 'running', amAttempt: attempt + 1 });
      }
      h.advance(50);
      const last = h.heartbeat('n1', { amWorkers: [amReport('job-1', { amAttempt: maxAttempts, state: 'failed', exitCode: 9, message: 'out of memory' })] });
      const job = h.core.getJob('job-1');
      expect(job.state).to.equal('failed');
      expect(job.message).to.contain('exit code 9').and.to.contain('out of memory').and.to.contain(`no AM attempts left (${maxAttempts})`);
      expect(job.finishedAtMs).to.equal(h.now);
      expect(ofKind(last.effects, 'launchAm')).to.deep.equal([]);
      expect(
        ofKind(last.effects, 'stopWorkers')
          .map((s) => s.nodeId)
          .sort(),
      ).to.deep.equal(['n1', 'n2']);
      expect(h.totalAllocated()).to.deep.equal(ZERO);
      expect(last.full?.grants).to.deep.equal([]);
    });

    it('names the signal of an AM that was killed by one', () => {
      const h = twoNodes();
      h.start();
      h.heartbeat('n1', { amWorkers: [amReport('job-1', { state: 'killed', exitCode: -1, signal: 'SIGKILL' })] });
      expect(h.core.faults.open().map((e) => [e.kind, e.subject])).to.deep.equal([['AM_CRASH', 'job-1']]);
      expect(h.core.faults.open()[0]?.detail).to.contain('signal SIGKILL');

      const once = new Harness({ config: { maxAmAttempts: 1 }, nodes: [{ nodeId: 'n1' }] });
      once.start();
      once.heartbeat('n1', { amWorkers: [amReport('job-1', { state: 'killed', exitCode: -1, signal: 'SIGKILL' })] });
      expect(once.core.getJob('job-1')).to.include({ state: 'failed' });
      expect(once.core.getJob('job-1').message).to.contain('signal SIGKILL');
    });

    it('ignores AM reports of another attempt, of unknown apps and of ended apps', () => {
      const h = twoNodes();
      h.start();
      const r = h.heartbeat('n1', {
        amWorkers: [
          amReport('job-1', { amAttempt: 0, state: 'failed', exitCode: 1 }),
          amReport('ghost', { state: 'failed' }),
          amReport('job-1', { state: 'pending' }),
        ],
      });
      expect(r.effects).to.deep.equal([]);
      expect(h.core.getJob('job-1').state).to.equal('running');
      h.finish('job-1', true);
      expect(h.heartbeat('n1', { amWorkers: [amReport('job-1', { state: 'succeeded' })] }).effects).to.deep.equal([]);
      expect(h.core.getJob('job-1').state).to.equal('succeeded');
    });
  });

  describe('agent timeout (tick)', () => {
    const TIMEOUT = DEFAULT_CONFIG.agentTimeoutMs;

    /** a: AM on n1, map slots n1:2 n2:1. b: AM on n2, nothing else. */
    function cluster(): Harness {
      const h = twoNodes();
      h.submit(mockSpec({ id: 'a' }));
      h.submit(mockSpec({ id: 'b' }));
      h.registerApp('a');
      h.registerApp('b');
      expect(h.core.getJob('a').amNodeId).to.equal('n1');
      expect(h.core.getJob('b').amNodeId).to.equal('n2');
      h.ask('a', 3);
      expect(h.amSlots('a')).to.deep.equal({ 'map@n1': 2, 'map@n2': 1 });
      return h;
    }

    /** Lets `lost` go silent past the timeout while the others keep heartbeating, then ticks. */
    function lose(h: Harness, lost: string[]): ReturnType<Harness['tick']> {
      const alive = h.core
        .listNodes()
        .filter((n) => n.healthy && !lost.includes(n.info.nodeId))
        .map((n) => n.info.nodeId);
      h.advance(TIMEOUT / 2);
      h.heartbeatAll(alive);
      h.advance(TIMEOUT / 2 + 1);
      h.heartbeatAll(alive);
      return h.tick();
    }

    it('does nothing while agents heartbeat within the timing-out threshold', () => {
      const h = cluster();
      const TIMING_OUT = DEFAULT_CONFIG.agentTimingOutMs;
      for (let t = 0; t < 2 * TIMEOUT; t += TIMING_OUT) {
        h.advance(TIMING_OUT);
        h.heartbeatAll();
        expect(h.tick()).to.deep.equal([]);
      }
      expect(h.core.listNodes().every((n) => n.healthy)).to.equal(true);
    });

    it('silent for the whole agent timeout but not past it: timing out (AMs told), nothing released', () => {
      const h = cluster();
      const before = h.core.listNodes().map((n) => n.allocated);
      h.advance(TIMEOUT);
      const effects = h.tick();
      expect(effects.every((e) => e.kind === 'agentsTimedOut')).to.equal(true);
      expect(ofKind(effects, 'agentsTimedOut').map((e) => [e.appId, e.nodeIds])).to.deep.equal([
        ['a', ['n1']],
        ['a', ['n2']],
      ]);
      expect(h.core.listNodes().every((n) => n.healthy)).to.equal(true);
      expect(h.core.listNodes().map((n) => n.state)).to.deep.equal(['timing out', 'timing out']);
      expect(h.core.listNodes().map((n) => n.allocated)).to.deep.equal(before);
    });

    it('releases a lost agent allocations, sends assignments without it and restarts AMs that were there elsewhere', () => {
      const h = cluster();
      const seqBefore = h.ams.get('a')?.seq ?? -1;
      const effects = lose(h, ['n2']);

      const n2 = h.core.listNodes().find((n) => n.info.nodeId === 'n2');
      expect(n2).to.deep.include({ healthy: false, allocated: ZERO });
      // a's AM and 2 map slots, and b's new AM.
      expect(h.allocated('n1')).to.deep.equal(res(3000, 512 + 2048 + 512));

      // a learns it lost map@n2. b's old AM (on n2) is sent its table before it is replaced; the
      // new attempt gets its own from RegisterApp.
      const asg = ofKind(effects, 'assignments');
      expect(asg.map((e) => [e.appId, e.address, e.seq, e.full])).to.deep.equal([
        ['a', 'am-a:9000', seqBefore + 1, true],
        ['b', 'am-b:9000', 1, true],
      ]);
      expect(asgnMap(asg[0]?.assignments ?? [])).to.deep.equal({ 'map@n1': 2 });
      expect(asg[1]?.assignments).to.deep.equal([]);

      // b is not failed: attempt 2 of its AM goes to n1, the only node left.
      expect(h.core.getJob('b')).to.include({ state: 'running', amAttempt: 2, amNodeId: 'n1', amAddress: '' });
      expect(ofKind(effects, 'launchAm').map((e) => [e.appId, e.attempt, e.nodeId])).to.deep.equal([['b', 2, 'n1']]);
      expect(grantMap(h.agents.get('n1')?.grants ?? [])).to.deep.equal({ 'a/__am__': 1, 'a/map': 2, 'b/__am__': 1 });
      expect(h.agents.get('n1')?.grants.find((g) => g.appId === 'b')?.amAttempt).to.equal(2);
      expect(h.core.getJob('a')).to.include({ state: 'running', amAttempt: 1 });
      expect(ofKind(effects, 'grants').map((g) => g.nodeId)).to.not.include('n2');
      expect(ofKind(effects, 'stopWorkers').map((s) => s.appId)).to.not.include('a');
    });

    it('gives an agent that returns after the timeout a full, empty grant table', () => {
      const h = cluster();
      const oldSeq = h.agents.get('n2')?.seq ?? -1;
      lose(h, ['n2']);
      h.advance(100);
      const back = h.heartbeat('n2', { grantSeq: oldSeq });
      expect(back.reregister).to.equal(false);
      expect(back.full?.grants).to.deep.equal([]);
      expect(back.full?.seq).to.not.equal(oldSeq);
      expect(h.core.listNodes().find((n) => n.info.nodeId === 'n2')).to.deep.include({ healthy: true, lastHeartbeatMs: h.now });
      expect(h.heartbeat('n2').full).to.equal(undefined);
    });

    it('schedules outstanding requests onto an agent that comes back', () => {
      const h = cluster();
      lose(h, ['n2']);
      h.ask('a', 10); // n1 has 5.5 cores left: 5 placed, 5 outstanding
      expect(h.amSlots('a')).to.deep.equal({ 'map@n1': 7 });
      const back = h.heartbeat('n2', { grantSeq: 0 });
      expect(grantMap(back.full?.grants ?? [])).to.deep.equal({ 'a/map': 5 });
      expect(ofKind(back.effects, 'assignments')).to.have.length(1);
      expect(h.amSlots('a')).to.deep.equal({ 'map@n1': 7, 'map@n2': 5 });
    });

    it('takes a lost agent back through registerAgent too, pushing its (empty) table at once', () => {
      const h = cluster();
      lose(h, ['n2']);
      const reg = h.addNode({ nodeId: 'n2', rack: 'r2' });
      expect(h.core.listNodes().every((n) => n.healthy)).to.equal(true);
      expect(ofKind(reg, 'grants').map((g) => [g.nodeId, g.grants])).to.deep.equal([['n2', []]]);
      expect(h.heartbeat('n2').full).to.equal(undefined);
    });

    it('does not place work on an agent that is timing out in the same tick', () => {
      // Each node has room for exactly one AM-sized slot. a: AM on n1, a task slot on n2; x: AM on
      // n3; c waits. n1 and n2 go silent together: a's AM must restart (its node is lost) and its
      // slot on n2 frees up, but n2 is lost too, so neither a's new AM nor c may be launched there.
      const h = new Harness({
        nodes: [
          { nodeId: 'n1', capacity: AM_RES },
          { nodeId: 'n2', capacity: AM_RES },
          { nodeId: 'n3', capacity: AM_RES },
        ],
      });
      const tiny = (id: string) => mockSpec({ id, tasks: [{ name: 'map', instances: 1, resources: { cpu: '500m', memory: 512 }, command: ['true'] }] });
      h.start(tiny('a'));
      h.ask('a', 1, '', 'map', AM_RES);
      h.start(tiny('x'));
      h.submit(tiny('c'));
      expect([h.core.getJob('a').amNodeId, h.core.getJob('x').amNodeId, h.core.getJob('c').amNodeId]).to.deep.equal(['n1', 'n3', '']);
      expect(h.amSlots('a')).to.deep.equal({ 'map@n2': 1 });

      const effects = lose(h, ['n1', 'n2']);
      expect(h.core.getJob('a')).to.include({ state: 'running', amAttempt: 2, amNodeId: '' });
      expect(ofKind(effects, 'launchAm')).to.deep.equal([]);
      expect(h.core.getJob('c')).to.include({ state: 'submitted', amNodeId: '' });
      expect(h.core.getJob('x').state).to.equal('running');

      // Once an agent is back, the earlier submission's AM (a, attempt 2) goes there; c waits on.
      const back = h.heartbeat('n2');
      expect(ofKind(back.effects, 'launchAm').map((e) => [e.appId, e.attempt, e.nodeId])).to.deep.equal([['a', 2, 'n2']]);
      expect(h.core.getJob('c')).to.include({ state: 'submitted', amNodeId: '' });
    });
  });

  describe('quota groups', () => {
    it('share capacity by weight when both groups wait for it', () => {
      const h = new Harness({
        config: {
          quotaGroups: [
            { name: 'gold', weight: 3 },
            { name: 'silver', weight: 1 },
          ],
        },
        nodes: [{ nodeId: 'n1' }, { nodeId: 'n2' }],
      });
      const small = { cpu: '100m', memory: 128 };
      h.start(mockSpec({ id: 'blocker' }));
      h.ask('blocker', 14); // 14.5 of 16 cores
      h.start(mockSpec({ id: 'g', quotaGroup: 'gold', am: small }));
      h.start(mockSpec({ id: 's', quotaGroup: 'silver', am: small }));
      h.ask('g', 100);
      h.ask('s', 100);
      expect(h.amSlots('g')).to.deep.equal({});
      expect(h.amSlots('s')).to.deep.equal({});

      h.finish('blocker', true); // 15 one-core slots free up at once
      const slots = (id: string) => Object.values(h.amSlots(id)).reduce((a, b) => a + b, 0);
      // Weighted dominant share (cpu): gold (0.1 + g) / 3 vs silver (0.1 + s) / 1, g + s = 15.
      expect([slots('g'), slots('s')]).to.deep.equal([11, 4]);
    });

    it('caps a group at its limit, AM included', () => {
      const h = new Harness({ config: { quotaGroups: [{ name: 'capped', weight: 1, limit: res(3000, 100_000) }] }, nodes: [{ nodeId: 'n1' }] });
      h.start(mockSpec({ quotaGroup: 'capped' }));
      h.ask('job-1', 5);
      expect(h.amSlots('job-1')).to.deep.equal({ 'map@n1': 2 });
      h.giveBack('job-1', [{ suId: 'map', nodeId: 'n1', slots: 1 }]);
      expect(h.amSlots('job-1')).to.deep.equal({ 'map@n1': 2 }); // the freed slot went back to it
    });

    it('always knows the default group', () => {
      const core = new MasterCore(EPOCH, { ...DEFAULT_CONFIG, quotaGroups: [{ name: 'gold', weight: 2 }] }, nullLogger);
      core.registerAgent(mockNodeInfo(), EPOCH, 0);
      expect(core.submitJob(mockSpec(), 0).result.created).to.equal(true);
    });
  });

  describe('loadHardState', () => {
    it('keeps finished jobs, recovers unfinished ones and keeps submission order', () => {
      const old = new Harness({ nodes: [{ nodeId: 'n1' }] });
      old.start(mockSpec({ id: 'done' }));
      old.finish('done', true);
      old.start(mockSpec({ id: 'live' }));
      old.submit(mockSpec({ id: 'queued' }));
      const records = old.core.listJobs().map((j) => JSON.parse(JSON.stringify(j)) as JobRecord);

      const h = new Harness({ now: 50_000 });
      const effects = h.core.loadHardState(records.reverse(), [{ nodeId: 'n1', address: 'n1:7001' }], h.now);
      expect(ofKind(effects, 'store')).to.be.empty;
      expect(h.core.isRecovering).to.equal(true);
      expect(h.core.getJob('done').state).to.equal('succeeded');
      expect(h.core.getJob('live').state).to.equal('running');
      h.submit(mockSpec({ id: 'new' }));
      expect(h.core.listJobs().map((j) => j.jobId)).to.deep.equal(['done', 'live', 'queued', 'new']);
      expect(h.submit(mockSpec({ id: 'done' })).created).to.equal(false);
    });
  });

  it('only ever throws typed errors for bad input', () => {
    const h = twoNodes();
    h.start();
    const bad: Array<() => unknown> = [
      () => h.request('job-1', [delta('map', 1, 'x')], { units: [unit()] }),
      () => h.submit(mockSpec({ quotaGroup: 'nope', id: 'other' })),
      () => h.core.registerApp('job-1', 9, '', h.now),
    ];
    for (const f of bad) expectThrow(f, FuxiError);
  });
});

// ---- property: random operation sequences --------------------------------------------------------

/** Ops name a job by an index: see `jobId` in `runOp`. */
const JOB_PICKS = 8;
const GROUP_NAMES = ['default', 'gold', 'silver'];
const AM_SIZES = [res(100, 128), res(500, 512), res(1000, 1024)];
const SUS: Array<{ suId: string; resource: ReturnType<typeof res> }> = [
  { suId: 'a', resource: res(1000, 1024) },
  { suId: 'b', resource: res(1500, 512) },
  { suId: 'c', resource: res(500, 3000) },
];
const LOCS = ['', '', 'node:n0', 'node:n2', 'rack:r0', 'rack:r1', 'node:ghost'];
/** Instances of each task of a property job, and so the most slots its AM may hold and ask for. */
const PROP_INSTANCES = 6;
const PROP_LIMIT = PROP_INSTANCES + 1;
/** Kinds of requests a job's spec does not allow: unknown unit, slot too large, priority too high, too many slots. */
const BAD_REQUESTS = 4;
const PROP_TIMEOUT = 1000;
/** Agents silent this long are timing out (reserved, not schedulable) before they are lost. */
const PROP_TIMING_OUT = PROP_TIMEOUT / 2;
/** AMs silent this long are replaced by a new attempt. */
const PROP_AM_STALL = 3 * PROP_TIMEOUT;
const PROP_MAX_AM_ATTEMPTS = 3;
/** `FUXI_PROP_RUNS=1000` for a longer run. */
const PROP_RUNS = Number(process.env.FUXI_PROP_RUNS ?? '') || 300;
/** A new leader's aggregation window closes this long after it loaded the hard state, at the latest. */
const PROP_DEADLINE = PROP_TIMEOUT / 4;
const PROP_CONFIG = {
  agentTimeoutMs: PROP_TIMEOUT,
  agentTimingOutMs: PROP_TIMING_OUT,
  amStallTimeoutMs: PROP_AM_STALL,
  maxAmAttempts: PROP_MAX_AM_ATTEMPTS,
  recoveryDeadlineMs: PROP_DEADLINE,
  amTimeoutMs: 2 * PROP_TIMEOUT,
  quotaGroups: [
    { name: 'gold', weight: 2, limit: res(12000, 24576) },
    { name: 'silver', weight: 1 },
  ],
};

type Op =
  | { op: 'submit'; job: number; am: number; group: number; register: boolean }
  | { op: 'register'; job: number }
  | { op: 'request'; job: number; su: number; loc: number; n: number }
  | { op: 'badRequest'; job: number; su: number; kind: number; n: number }
  | { op: 'retry'; job: number; su: number; n: number }
  | { op: 'return'; job: number; pick: number; n: number }
  | { op: 'finish'; job: number; ok: boolean }
  | { op: 'kill'; job: number }
  | { op: 'amDies'; job: number; old: boolean }
  | { op: 'lose'; nodes: number }
  | { op: 'lag'; nodes: number }
  | { op: 'revive'; node: number; register: boolean }
  | { op: 'staleHeartbeat'; node: number }
  | { op: 'time'; ms: number }
  | { op: 'takeover'; silentAgents: number; silentAms: number; agentsBack: boolean };

const idx = (n: number) => fc.integer({ min: 0, max: n - 1 });
const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant('submit' as const),
      job: idx(JOB_PICKS),
      am: idx(AM_SIZES.length),
      group: idx(GROUP_NAMES.length),
      register: fc.boolean(),
    }),
  },
  { weight: 4, arbitrary: fc.record({ op: fc.constant('register' as const), job: idx(JOB_PICKS) }) },
  {
    weight: 8,
    arbitrary: fc.record({
      op: fc.constant('request' as const),
      job: idx(JOB_PICKS),
      su: idx(SUS.length),
      loc: idx(LOCS.length),
      n: fc.integer({ min: -3, max: 6 }),
    }),
  },
  // Now and then a request the job's spec does not allow (refused whole: nothing changes).
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('badRequest' as const),
      job: idx(JOB_PICKS),
      su: idx(SUS.length),
      kind: idx(BAD_REQUESTS),
      n: fc.integer({ min: 1, max: 6 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('retry' as const), job: idx(JOB_PICKS), su: idx(SUS.length), n: fc.integer({ min: 1, max: 4 }) }) },
  // Gives back some of what the job holds (pick indexes its grants, the AM's own included).
  { weight: 4, arbitrary: fc.record({ op: fc.constant('return' as const), job: idx(JOB_PICKS), pick: fc.nat(), n: fc.integer({ min: 1, max: 3 }) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('finish' as const), job: idx(JOB_PICKS), ok: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('kill' as const), job: idx(JOB_PICKS) }) },
  // The current AM attempt dies (restart), or an old one is reported dead (ignored).
  { weight: 1, arbitrary: fc.record({ op: fc.constant('amDies' as const), job: idx(JOB_PICKS), old: fc.boolean() }) },
  // A bit mask: sometimes several agents go silent in the same tick.
  { weight: 2, arbitrary: fc.record({ op: fc.constant('lose' as const), nodes: fc.integer({ min: 1, max: 15 }) }) },
  // Agents late past the timing-out threshold but not lost (yet): their slots stay reserved.
  { weight: 2, arbitrary: fc.record({ op: fc.constant('lag' as const), nodes: fc.integer({ min: 1, max: 15 }) }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('revive' as const), node: idx(4), register: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('staleHeartbeat' as const), node: idx(4) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('time' as const), ms: fc.integer({ min: 1, max: Math.floor(PROP_TIMEOUT / 3) }) }) },
  // The leader dies and a standby takes over; bit masks pick the agents and AMs that stay silent
  // through the aggregation window (they report late, or the agents are lost).
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('takeover' as const),
      silentAgents: fc.integer({ min: 0, max: 15 }),
      silentAms: fc.integer({ min: 0, max: 255 }),
      agentsBack: fc.boolean(),
    }),
  },
);

const nodeArb = fc.record({ cpu: fc.integer({ min: 2, max: 16 }), mem: fc.integer({ min: 2, max: 16 }), rack: fc.constantFrom('r0', 'r1') });

/** A job whose tasks are the schedule units of SUS (PROP_INSTANCES each), so requests name its tasks. */
function propSpec(job: string, am: number, group: number) {
  const a = AM_SIZES[am] ?? AM_SIZES[0];
  return mockSpec({
    id: job,
    quotaGroup: GROUP_NAMES[group],
    am: { cpu: `${a?.cpuMilli}m`, memory: a?.memoryMb },
    tasks: SUS.map((u) => ({
      name: u.suId,
      instances: PROP_INSTANCES,
      resources: { cpu: `${u.resource.cpuMilli}m`, memory: u.resource.memoryMb },
      command: ['true'],
    })),
  });
}

/** Room left under the request limit of `suId` in `jobId` (nothing declared yet: the whole limit). */
function roomOf(h: Harness, jobId: string, suId: string): number {
  const u = h.core.units(jobId).find((x) => x.suId === suId);
  return u ? u.limit - u.outstanding - u.counted : PROP_LIMIT;
}

/** What a refused call must leave as it was: every app's units and every node's allocation. */
function stateOf(h: Harness): string {
  const apps = h.core.listJobs().map((j) => [j.jobId, j.progress, h.core.units(j.jobId)]);
  return JSON.stringify([apps, h.core.listNodes().map((n) => [n.info.nodeId, n.allocated])]);
}

/**
 * What every agent and AM holds (the tables the core pushed to them) agrees with the core's own
 * state: a healthy (or timing-out) node's last grant table adds up to its allocation, within
 * capacity, and names each app's current AM attempt; a lost node holds nothing; no ended job holds
 * a grant; a registered AM of the current attempt sees exactly the grants of its app (between an
 * AM restart and the new attempt's registration there is no AM to see anything: the new attempt
 * gets its table from RegisterApp); a job with a placed AM has the AM grant on a healthy node.
 */
function checkViews(h: Harness): void {
  h.core.checkInvariants();
  const nodes = h.core.listNodes();
  const healthy = new Set(nodes.filter((n) => n.healthy).map((n) => n.info.nodeId));
  for (const n of nodes) {
    const id = n.info.nodeId;
    expect(fits(n.allocated, n.info.capacity), `${id} over-committed`).to.equal(true);
    expect(n.free).to.deep.equal(sub(n.info.capacity, n.allocated));
    if (!n.healthy) {
      expect(n.allocated, `lost ${id} keeps allocations`).to.deep.equal(ZERO);
      continue;
    }
    const view = h.agents.get(id)?.grants ?? [];
    expect(grantTotal(view), `agent ${id} holds other grants than allocated`).to.deep.equal(n.allocated);
    for (const g of view) {
      const job = h.core.getJob(g.appId);
      expect(TERMINAL_STATES.has(job.state), `ended ${g.appId} still granted on ${id}`).to.equal(false);
      expect(g.amAttempt, `grant of ${g.appId} on ${id} names an old AM attempt`).to.equal(job.amAttempt);
    }
  }
  for (const job of h.core.listJobs()) {
    if (TERMINAL_STATES.has(job.state)) continue;
    if (job.amNodeId !== '') {
      expect(healthy.has(job.amNodeId), `${job.jobId} AM on lost ${job.amNodeId}`).to.equal(true);
      expect(grantMap(h.agents.get(job.amNodeId)?.grants ?? [])[`${job.jobId}/${AM_SU}`], `${job.jobId} AM grant`).to.equal(1);
    }
    expect(job.amAttempt, `${job.jobId} AM attempts`).to.be.at.most(PROP_MAX_AM_ATTEMPTS);
    if (job.state !== 'running' || job.amAddress === '') continue;
    const granted: Record<string, number> = {};
    for (const id of healthy) {
      for (const g of h.agents.get(id)?.grants ?? []) {
        if (g.appId === job.jobId && g.suId !== AM_SU) granted[`${g.suId}@${id}`] = g.slots;
      }
    }
    expect(h.amSlots(job.jobId), `AM view of ${job.jobId}`).to.deep.equal(granted);
  }
}

function checkEffects(h: Harness, effects: readonly Effect[]): void {
  const healthy = new Set(
    h.core
      .listNodes()
      .filter((n) => n.healthy)
      .map((n) => n.info.nodeId),
  );
  for (const e of effects) {
    if (e.kind === 'grants' || e.kind === 'assignments' || e.kind === 'launchAm' || e.kind === 'stopWorkers' || e.kind === 'agentsTimedOut')
      expect(e.epoch).to.equal(h.core.epoch);
    if (e.kind === 'grants') expect(e.full).to.equal(true);
    // Only old AM attempts are ever stopped one by one; the current one is fenced by its grants.
    if (e.kind === 'stopWorkers' && e.workerIds) {
      const attempt = h.core.getJob(e.appId).amAttempt;
      for (const w of e.workerIds)
        expect(w, `stops the current AM of ${e.appId}`)
          .to.match(/^am\.\d+$/)
          .and.to.not.equal(`am.${attempt}`);
    }
  }
  // The last launch of an app still going is where its current attempt runs.
  const lastLaunch = new Map(ofKind(effects, 'launchAm').map((e) => [e.appId, e]));
  for (const e of lastLaunch.values()) {
    const job = h.core.getJob(e.appId);
    if (TERMINAL_STATES.has(job.state)) continue;
    expect([job.amNodeId, job.amAttempt], `launch of ${e.appId}`).to.deep.equal([e.nodeId, e.attempt]);
    expect(healthy.has(e.nodeId), `AM launched on lost ${e.nodeId}`).to.equal(true);
  }
  // Several agents lost in one tick give an AM one push per agent (and an app may end later in the
  // same tick): the last push to the current AM of an app still going has none of them. (A push in
  // the same step before an AM restart goes to the old attempt, which is being replaced.)
  const lastPush = new Map(ofKind(effects, 'assignments').map((e) => [e.appId, e]));
  for (const e of lastPush.values()) {
    const job = h.core.getJob(e.appId);
    if (TERMINAL_STATES.has(job.state) || job.amAddress === '' || e.address !== job.amAddress) continue;
    for (const a of e.assignments) expect(healthy.has(a.nodeId), `assignment on lost ${a.nodeId}`).to.equal(true);
  }
}

function runOp(h: Harness, op: Op, nodeIds: string[]): Effect[] {
  // Mostly a job that is still going (so the op does something); now and then any job, ended ones
  // included (FAILED_PRECONDITION), or an unknown one (NOT_FOUND).
  const jobId = (j: number) => {
    if (j === JOB_PICKS - 1) return 'ghost';
    const live = h.core.listJobs(['submitted', 'running']);
    const pool = live.length > 0 && j < JOB_PICKS - 2 ? live : h.core.listJobs();
    return pool[j % Math.max(1, pool.length)]?.jobId ?? 'ghost';
  };
  const nodeId = (i: number) => nodeIds[i % nodeIds.length] ?? 'n0';
  const isRunning = (id: string) => {
    try {
      return !TERMINAL_STATES.has(h.core.getJob(id).state);
    } catch {
      return false;
    }
  };
  switch (op.op) {
    case 'submit': {
      // Mostly a new job (so there is always work), sometimes a resubmit of an existing id.
      const count = h.core.listJobs().length;
      const id = op.job < JOB_PICKS - 2 || count === 0 ? `j${count}` : `j${op.job % count}`;
      const { effects } = h.submit(propSpec(id, op.am, op.group));
      return op.register ? [...effects, ...h.registerApp(id).effects] : effects;
    }
    case 'register':
      return h.registerApp(jobId(op.job)).effects;
    case 'request': {
      const su = SUS[op.su] ?? SUS[0];
      if (!su) return [];
      // Within what the job's spec allows (badRequest tries the rest).
      const id = jobId(op.job);
      const n = isRunning(id) ? Math.min(op.n, roomOf(h, id, su.suId)) : op.n;
      return h.request(id, [delta(su.suId, n, LOCS[op.loc] ?? '')], { units: [unit(su.suId, su.resource)] }).effects;
    }
    case 'badRequest': {
      const id = jobId(op.job);
      const su = SUS[op.su] ?? SUS[0];
      if (!su || !isRunning(id) || h.core.getJob(id).amAttempt === 0) return [];
      const bad: Array<{ units: UnitConfig[]; deltas: RequestDelta[]; field: string }> = [
        { units: [unit('zz', su.resource)], deltas: [delta('zz', op.n)], field: 'units.suId' },
        { units: [unit(su.suId, add(su.resource, res(op.n, 0)))], deltas: [delta(su.suId, 1)], field: `units[${su.suId}].resource.cpuMilli` },
        { units: [unit(su.suId, su.resource, op.n)], deltas: [], field: `units[${su.suId}].priority` },
        { units: [unit(su.suId, su.resource)], deltas: [delta(su.suId, Math.max(1, roomOf(h, id, su.suId) + op.n))], field: 'deltas.delta' },
      ];
      const b = bad[op.kind % bad.length]!;
      const before = stateOf(h);
      let answer: ReturnType<Harness['request']> | undefined;
      try {
        answer = h.request(id, b.deltas, { units: b.units, progress: [progress('a', { total: 99 })] });
      } catch (e) {
        expect(e, String(e)).to.be.instanceOf(InvalidArgumentError);
        expect((e as InvalidArgumentError).field).to.equal(b.field);
      }
      // Not refused only by an app that has to report its state first (after a failover): not applied either.
      if (answer) expect(answer.reportState, `${JSON.stringify(b)} was taken`).to.equal(true);
      expect(stateOf(h), `${JSON.stringify(b)} was refused, yet something changed`).to.equal(before);
      return answer?.effects ?? [];
    }
    case 'retry': {
      // Re-send the last seq with other content: the core must ignore it.
      const id = jobId(op.job);
      if (!isRunning(id)) return [];
      const su = SUS[op.su] ?? SUS[0];
      if (!su) return [];
      // Seqs are per AM attempt: only one the current attempt sent is a retry.
      const last = h.acceptedReqSeq.get(id);
      if (last === undefined || last.attempt !== h.core.getJob(id).amAttempt) return [];
      const before = h.totalAllocated();
      const r = h.request(id, [delta(su.suId, op.n)], { units: [unit(su.suId, su.resource)], seq: last.seq });
      expect(r.effects, 'a repeated request seq was applied').to.deep.equal([]);
      expect(h.totalAllocated()).to.deep.equal(before);
      return r.effects;
    }
    case 'return': {
      const id = jobId(op.job);
      const held = [...h.agents].flatMap(([node, v]) => v.grants.filter((g) => g.appId === id).map((g) => ({ suId: g.suId, nodeId: node })));
      const target = held[op.pick % Math.max(1, held.length)] ?? { suId: 'a', nodeId: nodeId(op.pick) };
      return h.giveBack(id, [{ ...target, slots: op.n }]);
    }
    case 'finish':
      return h.finish(jobId(op.job), op.ok);
    case 'kill':
      return h.kill(jobId(op.job));
    case 'amDies': {
      const id = jobId(op.job);
      if (!isRunning(id)) return [];
      const job = h.core.getJob(id);
      if (job.amNodeId === '') return [];
      const attempt = job.amAttempt;
      const r = h.heartbeat(job.amNodeId, { amWorkers: [amReport(id, { amAttempt: op.old ? attempt - 1 : attempt, state: 'failed', exitCode: 137 })] });
      const after = h.core.getJob(id);
      if (op.old) expect(after.amAttempt, 'an old attempt dying changes nothing').to.equal(attempt);
      else if (attempt < PROP_MAX_AM_ATTEMPTS) expect([after.state, after.amAttempt]).to.deep.equal([job.state, attempt + 1]);
      else expect(after.state).to.equal('failed');
      return r.effects;
    }
    case 'lose': {
      const lost = new Set(nodeIds.filter((_, i) => (op.nodes >> i) & 1));
      const alive = h.core
        .listNodes()
        .filter((n) => n.healthy && !lost.has(n.info.nodeId))
        .map((n) => n.info.nodeId);
      h.advance(PROP_TIMEOUT + 1);
      h.heartbeatAll(alive);
      return h.tick();
    }
    case 'lag': {
      // Late, not lost: whatever is allocated on them stays (nothing new is placed there).
      const late = new Set(nodeIds.filter((_, i) => (op.nodes >> i) & 1));
      const alive = h.core
        .listNodes()
        .filter((n) => n.healthy && !late.has(n.info.nodeId))
        .map((n) => n.info.nodeId);
      const before = new Map(h.core.listNodes().map((n) => [n.info.nodeId, n.allocated]));
      h.advance(PROP_TIMING_OUT + 1);
      h.heartbeatAll(alive);
      const effects = h.tick();
      for (const n of h.core.listNodes()) {
        if (!late.has(n.info.nodeId)) continue;
        expect(fits(n.allocated, before.get(n.info.nodeId) ?? ZERO), `work placed on timing-out ${n.info.nodeId}`).to.equal(true);
      }
      for (const e of ofKind(effects, 'launchAm')) expect(late.has(e.nodeId), `AM launched on timing-out ${e.nodeId}`).to.equal(false);
      return effects;
    }
    case 'revive': {
      const id = nodeId(op.node);
      const node = h.core.listNodes().find((n) => n.info.nodeId === id);
      const effects = op.register && node ? h.addNode(node.info) : [];
      return [...effects, ...h.heartbeat(id).effects];
    }
    case 'staleHeartbeat': {
      const id = nodeId(op.node);
      const r = h.heartbeat(id, { grantSeq: (h.agents.get(id)?.seq ?? 0) - 1 });
      const node = h.core.listNodes().find((n) => n.info.nodeId === id);
      if (node?.healthy) expect(grantTotal(r.full?.grants ?? [])).to.deep.equal(node.allocated);
      return r.effects;
    }
    case 'time':
      h.advance(op.ms);
      h.heartbeatAll();
      return h.tick();
    case 'takeover':
      throw new Error('takeover replaces the harness: see takeOverOp');
  }
}

/**
 * A master failover inside the property run: a new core (the next epoch) loads the old one's hard
 * state; every agent and AM that is not silent reports what it holds (its view) during the
 * aggregation window; the window closes at the deadline if anyone is missing (Algorithms 1 and 2);
 * then the silent AMs report late, and the silent agents either report late or stay silent until
 * they are lost. Returns the harness of the new leader, with every view consistent again.
 */
function takeOverOp(old: Harness, op: Extract<Op, { op: 'takeover' }>): { h: Harness; effects: Effect[] } {
  const h = new Harness({ epoch: String(BigInt(old.core.epoch) + 1n), config: PROP_CONFIG, now: old.now + 1 });
  const effects = [...h.takeOver(old)];
  h.inheritSeqs(old);
  const registered = old.core.listNodes().filter((n) => n.healthy);
  const silentAgents = registered.filter((_, i) => (op.silentAgents >> i) & 1);
  const live = old.core.listJobs().filter((j) => !TERMINAL_STATES.has(j.state) && j.amAddress !== '');
  const silentAms = live.filter((_, i) => (op.silentAms >> i) & 1).map((j) => j.jobId);
  const amReports = (id: string) => h.appReports(id, { units: SUS.map((u) => unit(u.suId, u.resource)) });
  for (const n of registered) if (!silentAgents.includes(n)) effects.push(...h.agentReports(n.info));
  for (const j of live) if (!silentAms.includes(j.jobId)) effects.push(...amReports(j.jobId));
  if (h.core.isRecovering) {
    h.advance(PROP_DEADLINE + 1);
    h.heartbeatAll();
    effects.push(...h.tick());
  }
  expect(h.core.isRecovering, 'the aggregation window closes by the deadline').to.equal(false);
  for (const id of silentAms) if (!TERMINAL_STATES.has(h.core.getJob(id).state)) effects.push(...amReports(id));
  if (op.agentsBack) for (const n of silentAgents) effects.push(...h.agentReports(n.info));
  if ((!op.agentsBack && silentAgents.length > 0) || registered.length < old.core.listNodes().length) {
    // Roster agents that never report (silent ones, and those the old leader had lost already)
    // are lost after the agent timeout; the others heartbeat meanwhile.
    h.advance(PROP_TIMEOUT + 1);
    h.heartbeatAll();
    effects.push(...h.tick());
  }
  return { h, effects };
}

describe('MasterCore properties', function () {
  this.timeout(120_000); // ~1-2 s: hundreds of random runs of up to 80 operations (FUXI_PROP_RUNS for more)

  it('never over-commits a node, and agents and AMs always see what the core allocated', () => {
    fc.assert(
      fc.property(fc.array(nodeArb, { minLength: 1, maxLength: 4 }), fc.array(opArb, { minLength: 10, maxLength: 80, size: 'max' }), (nodeSpecs, ops) => {
        let h = new Harness({ config: PROP_CONFIG });
        const nodeIds = nodeSpecs.map((_, i) => `n${i}`);
        nodeSpecs.forEach((n, i) => h.addNode({ nodeId: `n${i}`, rack: n.rack, capacity: res(n.cpu * 500, n.mem * 1024) }));
        for (const [i, op] of ops.entries()) {
          let effects: Effect[] = [];
          try {
            if (op.op === 'takeover') ({ h, effects } = takeOverOp(h, op));
            else effects = runOp(h, op, nodeIds);
          } catch (e) {
            // Bad or out-of-date input is refused with a typed error; nothing else may throw.
            if (!(e instanceof FuxiError)) throw e;
          }
          try {
            checkEffects(h, effects);
            checkViews(h);
          } catch (e) {
            if (e instanceof Error)
              e.message = `after op ${i} (${JSON.stringify(op)}): ${e.message}; effects: ${JSON.stringify(effects.map((x) => (x.kind === 'launchAm' ? x : x.kind)))}`;
            throw e;
          }
        }
        // Ending every job gives every resource back.
        for (const j of h.core.listJobs()) h.kill(j.jobId);
        checkViews(h);
        expect(h.totalAllocated()).to.deep.equal(ZERO);
      }),
      { numRuns: PROP_RUNS },
    );
  });
});
