import { expect } from 'chai';
import { PermissionDeniedError } from '@fuxi/common';
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
});
