import { expect } from 'chai';
import type { JobSpec } from '@fuxi/common';
import type { BatchSubmitResult } from '../master-core.js';
import { Harness, mockSpec } from './core-factories.js';

const plain = (id: string, over: Record<string, unknown> = {}) => mockSpec({ id, ...over });
const member = (i: number, maxRunning = 2, id = 'arr') => ({ ...mockSpec({ id: `${id}_${i}` }), array: { id, index: i, maxRunning } });

/** A master holding job `old` and alice's array `arr` (members 0 and 1, at most 2 running). */
function cluster(): Harness {
  const h = new Harness({ nodes: [{ nodeId: 'n1' }] });
  h.core.submitJob(plain('old'), h.now, 'alice');
  for (let i = 0; i < 2; i++) h.core.submitJob(member(i), h.now, 'alice');
  return h;
}

/** Everything clients can see of the master's jobs, and of its arrays. */
const visible = (h: Harness) => JSON.stringify([h.core.listJobs(), ...['arr', 'fresh', 'old'].map((a) => h.core.listJobs([], a))]);

const verdicts = (rs: readonly BatchSubmitResult[]) => rs.map((r) => [r.jobId, r.created, r.error?.code ?? '', r.error?.message ?? '']);

/** One of each admission check, some passing only because of a job before them in the batch. */
const BATCH: JobSpec[] = [
  plain('new-1'),
  plain('old'), // a retry
  plain('old', { name: 'renamed' }), // another spec under a taken id
  plain('bad-group', { quotaGroup: 'nope' }),
  plain('bad-testbed', { testbed: 'nope' }),
  plain('too-big', { tasks: [{ name: 'map', instances: 1, resources: { cpu: 64, memory: 1024 }, command: ['true'] }] }),
  plain('arr'), // a job with an array's id
  member(0, 2, 'old'), // an array with a job's id
  member(2), // a new member of alice's array
  member(3, 5), // one that would change its limit
  member(0, 1, 'fresh'), // a new array...
  member(1, 3, 'fresh'), // ...whose second member is checked against the first
  plain('fresh'), // a job with the id of the array made above
  plain('new-1'), // found the second time
  plain('new-1', { name: 'changed' }),
];

describe('master core: SubmitJobs dry run', () => {
  it('gives every job the verdict the real submit of the batch gets, and changes nothing', () => {
    const h = cluster();
    const before = visible(h);
    const dry = h.core.submitJobs(BATCH, h.now, 'alice', { dryRun: true });
    expect(dry.effects).to.deep.equal([]);
    expect(visible(h)).to.equal(before);
    expect(dry.results.map((r) => [r.jobId, r.created, r.error?.code ?? ''])).to.deep.equal([
      ['new-1', true, ''],
      ['old', false, ''],
      ['old', false, 'ALREADY_EXISTS'],
      ['bad-group', false, 'INVALID_ARGUMENT'],
      ['bad-testbed', false, 'INVALID_ARGUMENT'],
      ['too-big', false, 'INVALID_ARGUMENT'],
      ['arr', false, 'ALREADY_EXISTS'],
      ['old_0', false, 'ALREADY_EXISTS'],
      ['arr_2', true, ''],
      ['arr_3', false, 'INVALID_ARGUMENT'],
      ['fresh_0', true, ''],
      ['fresh_1', false, 'INVALID_ARGUMENT'],
      ['fresh', false, 'ALREADY_EXISTS'],
      ['new-1', false, ''],
      ['new-1', false, 'ALREADY_EXISTS'],
    ]);
    // The real submit of the same batch: the same verdicts, messages included.
    const real = h.core.submitJobs(BATCH, h.now, 'alice');
    expect(verdicts(real.results)).to.deep.equal(verdicts(dry.results));
    expect(real.effects.some((e) => e.kind === 'store')).to.equal(true);
    expect(visible(h)).to.not.equal(before);
  });

  it('leaves no trace: the real submit after it makes what it makes on a master that saw no dry run (ids, order, held members)', () => {
    const checked = cluster();
    checked.core.submitJobs(BATCH, checked.now, 'alice', { dryRun: true });
    checked.core.submitJobs(BATCH.slice(0, 5), checked.now, 'alice', { dryRun: true });
    const plainRun = cluster();
    const a = checked.core.submitJobs(BATCH, checked.now, 'alice');
    const b = plainRun.core.submitJobs(BATCH, plainRun.now, 'alice');
    expect(verdicts(a.results)).to.deep.equal(verdicts(b.results));
    expect(visible(checked)).to.equal(visible(plainRun));
  });

  it("refuses another user's member as the real submit does, and a batch of only retries creates nothing", () => {
    const h = cluster();
    const dry = h.core.submitJobs([member(2), plain('mine')], h.now, 'mallory', { dryRun: true });
    expect(dry.results.map((r) => r.error?.code ?? '')).to.deep.equal(['PERMISSION_DENIED', '']);
    expect(verdicts(dry.results)).to.deep.equal(verdicts(h.core.submitJobs([member(2), plain('mine')], h.now, 'mallory').results));
    const retry = h.core.submitJobs([plain('old'), member(1)], h.now, 'alice', { dryRun: true });
    expect(retry.results.map((r) => r.created)).to.deep.equal([false, false]);
  });
});
