import { expect } from 'chai';
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
});
