import { expect } from 'chai';
import { InvalidArgumentError } from '@fuxi/common';
import { upstreamOutputs } from '../sdk/outputs.js';

describe('upstream outputs ($FUXI_UPSTREAM)', () => {
  const env = {
    FUXI_UPSTREAM: JSON.stringify({
      map: {
        hosts: ['10.0.0.7:7071', '10.0.0.8:7071'],
        outputs: [
          [0, 'map.0.1'],
          [1, 'map.1.2'],
          [-1, ''],
        ],
      },
    }),
  };

  it('lists where each instance of an upstream task ran', () => {
    expect(upstreamOutputs('map', env)).to.deep.equal([
      { task: 'map', instance: 0, workerId: 'map.0.1', address: '10.0.0.7:7071' },
      { task: 'map', instance: 1, workerId: 'map.1.2', address: '10.0.0.8:7071' },
      { task: 'map', instance: 2, workerId: '', address: '' },
    ]);
  });

  it('names the problem: not set, not JSON, not an upstream task', () => {
    expect(() => upstreamOutputs('map', {})).to.throw(InvalidArgumentError, /FUXI_UPSTREAM: is not set/);
    expect(() => upstreamOutputs('map', { FUXI_UPSTREAM: '{' })).to.throw(InvalidArgumentError, /FUXI_UPSTREAM: is not JSON/);
    expect(() => upstreamOutputs('reduce', env)).to.throw(InvalidArgumentError, /task: "reduce" is not a task this one depends on \(upstream: map\)/);
  });
});
