import { expect } from 'chai';
import { RETENTION_EVERY_MS } from '../retention.js';
import { Harness, mockSpec, ofKind } from './core-factories.js';

describe('master core: retention of finished jobs and list pages', () => {
  const jobs = (h: Harness) => h.core.listJobs().map((j) => j.jobId);

  it('deletes finished jobs past jobRetentionMs from memory and the store; unfinished ones stay', () => {
    const h = new Harness({ nodes: [{ nodeId: 'n1' }], config: { jobRetentionMs: 60_000 } });
    for (const id of ['a', 'b', 'c']) h.submit(mockSpec({ id }));
    h.kill('a');
    h.advance(30_000);
    h.kill('b');
    h.advance(31_000 + RETENTION_EVERY_MS);
    const effects = h.tick();
    expect(jobs(h)).to.deep.equal(['b', 'c']);
    expect(ofKind(effects, 'store').flatMap((e) => e.ops)).to.deep.include({ type: 'del', key: 'jobs/a' });
    h.advance(60_000);
    h.tick();
    expect(jobs(h)).to.deep.equal(['c']);
  });

  it('keeps at most jobRetentionCount finished jobs, the oldest ends going first (array members too)', () => {
    const h = new Harness({ nodes: [{ nodeId: 'n1' }], config: { jobRetentionCount: 2 } });
    for (let i = 0; i < 4; i++) h.submit({ ...mockSpec({ id: `m_${i}` }), array: { id: 'm', index: i, maxRunning: 0 } });
    for (let i = 0; i < 4; i++) {
      h.advance(1000);
      h.kill(`m_${i}`);
    }
    h.advance(RETENTION_EVERY_MS);
    h.tick();
    expect(jobs(h)).to.deep.equal(['m_2', 'm_3']);
    expect(h.core.listJobs([], 'm').map((j) => j.jobId)).to.deep.equal(['m_2', 'm_3']);
  });

  it('pages jobs in submission order; an unknown `after` is NOT_FOUND naming the field', () => {
    const h = new Harness({ nodes: [{ nodeId: 'n1' }] });
    for (const id of ['p1', 'p2', 'p3', 'p4', 'p5']) h.submit(mockSpec({ id }));
    const p1 = h.core.listJobsPage({ limit: 2 });
    expect([p1.jobs.map((j) => j.jobId), p1.nextAfter]).to.deep.equal([['p1', 'p2'], 'p2']);
    const p2 = h.core.listJobsPage({ limit: 2, after: p1.nextAfter });
    expect([p2.jobs.map((j) => j.jobId), p2.nextAfter]).to.deep.equal([['p3', 'p4'], 'p4']);
    const p3 = h.core.listJobsPage({ limit: 2, after: p2.nextAfter });
    expect([p3.jobs.map((j) => j.jobId), p3.nextAfter]).to.deep.equal([['p5'], '']);
    expect(() => h.core.listJobsPage({ limit: 2, after: 'gone' })).to.throw(/after/);
  });
});
