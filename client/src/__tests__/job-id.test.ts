import { expect } from 'chai';
import { JOB_ID_PATTERN } from '@fuxi/common';
import { makeJobId } from '../sdk/job-id.js';
import { isTerminal, parseJobState, shortState } from '../sdk/job-state.js';
import { defaultMasters, splitAddresses } from '../sdk/fuxi-client.js';

describe('sdk helpers', () => {
  it('makes job ids from the name and a random suffix', () => {
    expect(makeJobId('wordcount', '3f2a9c1b-7d4e-4abc-8def-0123456789ab')).to.equal('wordcount-3f2a9c1b7d4e');
    expect(makeJobId('My Job!', 'abcdef')).to.equal('my-job-abcdef');
    expect(makeJobId('---', 'abc')).to.equal('job-abc');
    expect(makeJobId('', 'abc')).to.equal('job-abc');
    for (const name of ['A'.repeat(100), '__x__', '.hidden', 'ünïcödé', '9lives', 'a..b--c']) {
      expect(makeJobId(name, '0123456789abcdef')).to.match(JOB_ID_PATTERN);
    }
  });

  it('knows job states', () => {
    expect(isTerminal('JOB_STATE_SUCCEEDED')).to.equal(true);
    expect(isTerminal('JOB_STATE_KILLED')).to.equal(true);
    expect(isTerminal('JOB_STATE_RUNNING')).to.equal(false);
    expect(shortState('JOB_STATE_RUNNING')).to.equal('RUNNING');
    expect(parseJobState('running')).to.equal('JOB_STATE_RUNNING');
    expect(parseJobState('JOB_STATE_FAILED')).to.equal('JOB_STATE_FAILED');
    expect(parseJobState('Killed ')).to.equal('JOB_STATE_KILLED');
    expect(parseJobState('unspecified')).to.equal(undefined);
    expect(parseJobState('nope')).to.equal(undefined);
  });

  it('reads master addresses', () => {
    expect(defaultMasters({})).to.deep.equal(['127.0.0.1:7070']);
    expect(defaultMasters({ FUXI_MASTER: 'a:1, b:2,' })).to.deep.equal(['a:1', 'b:2']);
    expect(splitAddresses(' , ')).to.equal(undefined);
  });
});
