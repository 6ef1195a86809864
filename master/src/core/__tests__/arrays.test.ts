import { expect } from 'chai';
import { AlreadyExistsError, PermissionDeniedError } from '@fuxi/common';
import type { JobRecord } from '../types.js';
import { Harness, mockSpec } from './core-factories.js';

const member = (i: number, maxRunning = 2, id = 'arr') => ({ ...mockSpec({ id: `${id}_${i}` }), array: { id, index: i, maxRunning } });

/** [jobId, amAttempt, state, held?] of every member, in submit order. */
const view = (h: Harness) => h.core.listJobs([], 'arr').map((j) => [j.jobId, j.amAttempt, j.state, j.message.startsWith('held') ? 'held' : ''] as const);

describe('master core: job arrays', () => {
  it('starts at most maxRunning members; the rest are held and say why', () => {
    const h = new Harness({ nodes: [{ nodeId: 'n1' }] });
    for (let i = 0; i < 5; i++) expect(h.submit(member(i)).created).to.equal(true);
    expect(view(h)).to.deep.equal([
      ['arr_0', 1, 'submitted', ''],
      ['arr_1', 1, 'submitted', ''],
      ['arr_2', 0, 'submitted', 'held'],
      ['arr_3', 0, 'submitted', 'held'],
      ['arr_4', 0, 'submitted', 'held'],
    ]);
    expect(h.core.getJob('arr_2').message).to.equal('held: array arr has 2 of at most 2 members running');
    expect(h.core.listJobs().length).to.equal(5);
    expect(h.core.listJobs([], 'other')).to.deep.equal([]);
  });

  it('admits the next held member, in index order, when an active one ends (and skips killed held ones)', () => {
    const h = new Harness({ nodes: [{ nodeId: 'n1' }] });
    for (let i = 0; i < 5; i++) h.submit(member(i));
    h.kill('arr_2'); // held: ends without starting, admits nothing
    expect(view(h).map((v) => v[1])).to.deep.equal([1, 1, 0, 0, 0]);
    h.kill('arr_0');
    expect(view(h)).to.deep.equal([
      ['arr_0', 1, 'killed', ''],
      ['arr_1', 1, 'submitted', ''],
      ['arr_2', 0, 'killed', ''],
      ['arr_3', 1, 'submitted', ''],
      ['arr_4', 0, 'submitted', 'held'],
    ]);
  });

  it('maxRunning 0 starts every member', () => {
    const h = new Harness({ nodes: [{ nodeId: 'n1' }] });
    for (let i = 0; i < 4; i++) h.submit(member(i, 0));
    expect(view(h).every((v) => v[1] === 1)).to.equal(true);
  });

  it('a new leader keeps held members held and admits into free room', () => {
    const old = new Harness({ nodes: [{ nodeId: 'n1' }] });
    for (let i = 0; i < 4; i++) old.submit(member(i));
    const h = new Harness({ nodes: [], epoch: '9' });
    h.takeOver(old);
    expect(view(h).map((v) => v[1])).to.deep.equal([1, 1, 0, 0]);
    h.kill('arr_1');
    expect(view(h).map((v) => [v[0], v[1], v[2]])).to.deep.equal([
      ['arr_0', 1, 'submitted'],
      ['arr_1', 1, 'killed'],
      ['arr_2', 1, 'submitted'],
      ['arr_3', 0, 'submitted'],
    ]);
  });

  it('a new leader reads held from the records: an admitted member written before its attempt counted is not held again', () => {
    const old = new Harness({ nodes: [{ nodeId: 'n1' }] });
    for (let i = 0; i < 4; i++) old.submit(member(i));
    // As the store has them: a record written at submission, before the attempt was counted.
    const records = old.core.listJobs().map((j) => ({ ...(JSON.parse(JSON.stringify(j)) as JobRecord), amAttempt: 0 }));
    const h = new Harness({ nodes: [], epoch: '9' });
    h.core.loadHardState(records, [{ nodeId: 'n1', address: 'n1:1' }], h.now);
    expect(view(h).map((v) => v[3])).to.deep.equal(['', '', 'held', 'held']);
  });
  it("refuses a member that is not the array owner's or would change its limit, and changes nothing", () => {
    const h = new Harness({ nodes: [{ nodeId: 'n1' }] });
    for (let i = 0; i < 3; i++) h.core.submitJob(member(i), h.now, 'alice');
    const { results } = h.core.submitJobs([member(3, 100), member(4)], h.now, 'mallory');
    expect(results[0]!.error).to.be.instanceOf(PermissionDeniedError);
    expect(results[0]!.error!.message).to.contain("job array arr is user alice's");
    expect(results[1]!.error).to.be.instanceOf(PermissionDeniedError);
    const raised = h.core.submitJobs([member(3, 100)], h.now, 'alice').results[0]!.error!;
    expect(raised.code).to.equal('INVALID_ARGUMENT');
    expect(raised.message).to.contain('array.maxRunning').and.contain('runs at most 2 members at once');
    expect(h.core.listJobs([], 'arr').map((j) => j.jobId)).to.deep.equal(['arr_0', 'arr_1', 'arr_2']);
    // The owner's next member is taken, and the limit still holds.
    expect(h.core.submitJob(member(3), h.now, 'alice').result.created).to.equal(true);
    expect(view(h).map((v) => v[3])).to.deep.equal(['', '', 'held', 'held']);
  });

  it('keeps its counts as members come and go: 20,000 members, 50 at a time, admitted in index order after a takeover', () => {
    const h = new Harness({ nodes: [{ nodeId: 'n1' }] });
    const n = 20_000;
    // Submitted out of index order, in batches as the CLI sends them.
    const specs = Array.from({ length: n }, (_, i) => member(i % 2 === 0 ? i : n - i, 50));
    for (let i = 0; i < n; i += 1000) h.core.submitJobs(specs.slice(i, i + 1000), h.now);
    const running = () => h.core.listJobs([], 'arr').filter((j) => j.amAttempt > 0 && j.state === 'submitted');
    expect(running()).to.have.length(50);
    expect(h.core.getJob('arr_19998').message).to.equal('held: array arr has 50 of at most 50 members running');
    // A new leader loads the records in whatever order the store lists them.
    const records = h.core
      .listJobs()
      .map((j) => JSON.parse(JSON.stringify(j)) as JobRecord)
      .reverse();
    const next = new Harness({ nodes: [], epoch: '9' });
    next.core.loadHardState(records, [{ nodeId: 'n1', address: 'n1:1' }], next.now);
    const first = running().map((j) => j.jobId);
    for (const id of first) next.kill(id);
    const admitted = next.core.listJobs([], 'arr').filter((j) => j.state === 'submitted' && j.held !== true);
    expect(admitted).to.have.length(50);
    // The lowest indexes still held before: every one above the first 50 submitted.
    const expected = h.core
      .listJobs([], 'arr')
      .filter((j) => j.held === true)
      .map((j) => j.spec.array!.index)
      .sort((a, b) => a - b)
      .slice(0, 50);
    expect(admitted.map((j) => j.spec.array!.index).sort((a, b) => a - b)).to.deep.equal(expected);
  });

  describe('jobs and job arrays share one id space', () => {
    const plain = (id: string) => mockSpec({ id });
    /** Every job the core knows, `id@array` for a member. */
    const ids = (h: Harness) => h.core.listJobs().map((j) => `${j.jobId}${j.spec.array ? `@${j.spec.array.id}` : ''}`);

    it('refuses a job whose id is an existing job array, naming the id and the array; nothing changes', () => {
      const h = new Harness({ nodes: [{ nodeId: 'n1' }] });
      for (let i = 0; i < 2; i++) h.submit(member(i));
      const before = ids(h);
      const { results, effects } = h.core.submitJobs([plain('arr')], h.now);
      expect(results[0]!.error).to.be.instanceOf(AlreadyExistsError);
      expect(results[0]!.error!.code).to.equal('ALREADY_EXISTS');
      expect(results[0]!.error!.message).to.equal(
        'job array "arr" already exists (a job may not have the id of a job array: fuxi status, wait and kill take the id of either)',
      );
      expect(effects).to.deep.equal([]);
      expect(() => h.submit(plain('arr'))).to.throw(AlreadyExistsError, 'job array "arr" already exists');
      // A member of another array may not take it either.
      expect(() => h.submit({ ...plain('arr'), array: { id: 'other', index: 0, maxRunning: 0 } })).to.throw(AlreadyExistsError, 'job array "arr"');
      expect(ids(h)).to.deep.equal(before);
      expect(() => h.core.getJob('arr')).to.throw(/not found/);
    });

    it('refuses a new job array whose id is an existing job (plain or a member), naming the job; nothing changes', () => {
      const h = new Harness({ nodes: [{ nodeId: 'n1' }] });
      h.submit(plain('solo'));
      h.submit(member(0));
      const before = ids(h);
      const { results, effects } = h.core.submitJobs([member(0, 2, 'solo'), member(1, 2, 'solo')], h.now);
      expect(results.map((r) => r.error?.code)).to.deep.equal(['ALREADY_EXISTS', 'ALREADY_EXISTS']);
      expect(results[0]!.error!.message).to.equal(
        'job "solo" already exists (job solo_0 may not make a job array of its id: fuxi status, wait and kill take the id of either)',
      );
      expect(effects).to.deep.equal([]);
      expect(h.core.listJobs([], 'solo')).to.deep.equal([]);
      // An array named after a member of another array.
      expect(() => h.submit(member(0, 2, 'arr_0'))).to.throw(AlreadyExistsError, 'job "arr_0" already exists (a member of job array arr; job arr_0_0 may not');
      // A member with its own array's id would make both at once.
      expect(() => h.submit({ ...plain('self'), array: { id: 'self', index: 0, maxRunning: 0 } })).to.throw(
        /array\.id: must not be the member's own job id "self"/,
      );
      expect(ids(h)).to.deep.equal(before);
    });

    it('keeps resubmission idempotent: the same plain job or member again is found, and an array takes new members', () => {
      const h = new Harness({ nodes: [{ nodeId: 'n1' }] });
      expect(h.submit(plain('solo')).created).to.equal(true);
      expect(h.submit(member(0)).created).to.equal(true);
      expect(h.submit(plain('solo')).created).to.equal(false);
      expect(h.submit(member(0)).created).to.equal(false);
      expect(h.submit(member(1)).created).to.equal(true);
      const { results } = h.core.submitJobs([plain('solo'), member(0), member(1), member(2)], h.now);
      expect(results.map((r) => [r.jobId, r.created, r.error?.code])).to.deep.equal([
        ['solo', false, undefined],
        ['arr_0', false, undefined],
        ['arr_1', false, undefined],
        ['arr_2', true, undefined],
      ]);
    });

    it('within one batch: the job or the array taken first holds the id', () => {
      const h = new Harness({ nodes: [{ nodeId: 'n1' }] });
      const { results } = h.core.submitJobs([plain('x'), member(0, 0, 'x'), member(0, 0, 'y'), plain('y')], h.now);
      expect(results.map((r) => [r.jobId, r.error?.code ?? 'taken'])).to.deep.equal([
        ['x', 'taken'],
        ['x_0', 'ALREADY_EXISTS'],
        ['y_0', 'taken'],
        ['y', 'ALREADY_EXISTS'],
      ]);
    });

    for (const masterFailover of [true, false]) {
      it(`holds after a master takeover (indexes rebuilt from the stored jobs${masterFailover ? '' : ', failover off'})`, () => {
        const old = new Harness({ nodes: [{ nodeId: 'n1' }] });
        old.submit(plain('solo'));
        for (let i = 0; i < 3; i++) old.submit(member(i));
        const h = new Harness({ nodes: [], epoch: '9', config: { masterFailover } });
        h.takeOver(old);
        expect(() => h.submit(plain('arr'))).to.throw(AlreadyExistsError, 'job array "arr" already exists');
        expect(() => h.submit(member(0, 2, 'solo'))).to.throw(AlreadyExistsError, 'job "solo" already exists');
        // A retry of what the old leader took is still answered as done.
        expect(h.submit(plain('solo')).created).to.equal(false);
        expect(h.submit(member(1)).created).to.equal(false);
        expect(h.submit(member(3)).created).to.equal(true);
      });
    }
  });
});
