import { expect } from 'chai';
import { Blacklist } from '../blacklist.js';

const MIN = 60_000;

describe('blacklist', () => {
  const config = { grayAt: 0.25, blockAt: 0.5, halfLifeMs: 10 * MIN, jobBlockFailures: 2, maxBlockedFraction: 0.5, pressureCapAt: 0.3 };

  it('grays then blocks a host as its predicted failure rate rises', () => {
    const b = new Blacklist(config);
    b.observeHost('n1', 0.3, 'predicted', 0);
    expect([...b.view(0, 10).gray]).to.deep.equal(['n1']);
    b.observeHost('n1', 0.7, 'predicted', 1000);
    const v = b.view(1000, 10);
    expect([...v.blocked]).to.deep.equal(['n1']);
    expect(v.gray.size).to.equal(0);
  });

  it('lets a blocked host back by halves once predictions drop: gray after one half-life, clear after two', () => {
    const b = new Blacklist(config);
    b.observeHost('n1', 0.8, 'x', 0);
    b.observeHost('n1', 0.05, 'x', 5 * MIN); // a lower prediction does not wipe the score
    expect(b.view(5 * MIN, 10).blocked.has('n1')).to.equal(true);
    expect(b.score('n1', 10 * MIN)).to.be.closeTo(0.4, 1e-9);
    expect(b.view(10 * MIN, 10).gray.has('n1')).to.equal(true);
    expect(b.view(20 * MIN, 10).gray.has('n1')).to.equal(false);
    expect(b.view(20 * MIN, 10).blocked.has('n1')).to.equal(false);
  });

  it('blocks a host for a job after the job failed there twice, decaying the same way', () => {
    const b = new Blacklist(config);
    b.recordJobFailure('j1', 'n2', 0);
    expect(b.view(0, 10).perApp.size).to.equal(0);
    b.recordJobFailure('j1', 'n2', 1000);
    expect([...(b.view(1000, 10).perApp.get('j1') ?? [])]).to.deep.equal(['n2']);
    expect(b.view(1000 + 10 * MIN, 10).perApp.size).to.equal(0);
    expect(b.entries(1000, 10)).to.deep.equal([{ nodeId: 'n2', level: 'job', score: 0, reason: 'failed its job repeatedly', jobs: ['j1'] }]);
    b.forgetJob('j1');
    expect(b.view(1000, 10).perApp.size).to.equal(0);
  });

  it('blocks a host for a job at once when failure prediction moved the job off it', () => {
    const b = new Blacklist(config);
    b.blockForJob('j1', 'n2', 0);
    expect([...(b.view(0, 10).perApp.get('j1') ?? [])]).to.deep.equal(['n2']);
    expect(b.view(10 * MIN, 10).perApp.size).to.equal(0);
  });

  it('never blocks more than maxBlockedFraction of the hosts: the worst go first, the rest stay gray', () => {
    const b = new Blacklist({ ...config, maxBlockedFraction: 0.2 });
    b.observeHost('a', 0.6, 'x', 0);
    b.observeHost('b', 0.9, 'x', 0);
    b.observeHost('c', 0.7, 'x', 0);
    const v = b.view(0, 10);
    expect([...v.blocked].sort()).to.deep.equal(['b', 'c']);
    expect([...v.gray]).to.deep.equal(['a']);
    expect(b.entries(0, 10).map((e) => `${e.nodeId}:${e.level}`)).to.deep.equal(['a:gray', 'b:blocked', 'c:blocked']);
  });
});
