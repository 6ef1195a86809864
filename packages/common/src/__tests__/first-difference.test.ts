import { expect } from 'chai';
import { firstDifference } from '../first-difference.js';

describe('firstDifference', () => {
  it('is empty for equal values, whatever the key order', () => {
    expect(firstDifference({ a: 1, b: [1, { c: 'x' }] }, { b: [1, { c: 'x' }], a: 1 })).to.equal('');
  });

  it('names the first differing field path and both values (the second one first)', () => {
    const first = { name: 'wc', tasks: [{ name: 'map', instances: 2 }] };
    const second = { name: 'wc', tasks: [{ name: 'map', instances: 4 }] };
    expect(firstDifference(first, second)).to.equal('tasks[0].instances: 4, not 2');
  });

  it('treats a missing key or element as absent', () => {
    expect(firstDifference({ env: {} }, { env: { A: '1' } })).to.equal('env.A: "1", not absent');
    expect(firstDifference([1], [1, 2])).to.equal('[1]: 2, not absent');
  });
});
