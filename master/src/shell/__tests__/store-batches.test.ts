import { expect } from 'chai';
import type { Effect } from '../../core/types.js';
import { coalesceStoreWrites } from '../store-batches.js';

const put = (k: string, v = 'x'): Effect => ({ kind: 'store', ops: [{ type: 'put', key: k, value: v }] });
const changed = (jobId: string): Effect => ({ kind: 'jobChanged', jobId });

describe('coalesceStoreWrites', () => {
  it('merges consecutive store effects in order, up to maxOps', () => {
    const effects = Array.from({ length: 300 }, (_, i) => put(`jobs/j${i}`));
    const out = coalesceStoreWrites(effects);
    expect(out.map((e) => (e.kind === 'store' ? e.ops.length : -1))).to.deep.equal([128, 128, 44]);
    const keys = out.flatMap((e) => (e.kind === 'store' ? e.ops.map((o) => o.key) : []));
    expect(keys).to.deep.equal(effects.map((e) => (e.kind === 'store' ? e.ops[0]!.key : '')));
  });

  it('keeps other effects in their place and never merges across them', () => {
    const out = coalesceStoreWrites([put('a'), put('b'), changed('a'), put('c')]);
    expect(out.map((e) => e.kind)).to.deep.equal(['store', 'jobChanged', 'store']);
    expect(out[0]).to.deep.equal({
      kind: 'store',
      ops: [
        { type: 'put', key: 'a', value: 'x' },
        { type: 'put', key: 'b', value: 'x' },
      ],
    });
  });

  it('starts a new batch before maxBytes, and never splits one effect', () => {
    const big = 'v'.repeat(600);
    const two: Effect = {
      kind: 'store',
      ops: [
        { type: 'put', key: 'p', value: big },
        { type: 'del', key: 'q' },
      ],
    };
    const out = coalesceStoreWrites([put('a', big), two, put('b', big)], { maxOps: 128, maxBytes: 1000 });
    expect(out.map((e) => (e.kind === 'store' ? e.ops.map((o) => o.key) : []))).to.deep.equal([['a'], ['p', 'q'], ['b']]);
    const alone = coalesceStoreWrites([{ kind: 'store', ops: Array.from({ length: 200 }, (_, i) => ({ type: 'del' as const, key: `k${i}` })) }]);
    expect(alone).to.have.length(1);
  });
});
