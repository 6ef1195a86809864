import { expect } from 'chai';
import {
  applyDelta,
  brokenLinks,
  confirmReports,
  connectivityBase,
  dropNode,
  forgetReports,
  newConnectivity,
  nodeRestarted,
  probersOf,
  reachable,
  setPartitioned,
  unreachablePeers,
  vouchers,
  type ConnectivityState,
} from '../connectivity.js';

const full = (seq: number, unreachable: string[]) => ({ seq, baseSeq: 0, unreachable, reachable: [] });
const delta = (baseSeq: number, seq: number, unreachable: string[], reachable: string[] = []) => ({ seq, baseSeq, unreachable, reachable });

describe('connectivity graph (master core)', () => {
  let cs: ConnectivityState;
  beforeEach(() => {
    cs = newConnectivity(100);
  });
  /** Every report's accused peer heard since: all reports confirmed. */
  const confirmAll = () => confirmReports(cs, 0, () => true);

  it('starts each leader above its predecessors', () => {
    expect(connectivityBase('1')).to.equal(1e9);
    expect(connectivityBase('7')).to.equal(7e9);
    expect(connectivityBase('0')).to.equal(1);
    expect(connectivityBase('not a number')).to.equal(1);
    expect(connectivityBase('99999999999')).to.equal(1); // beyond safe integers
    expect(newConnectivity(connectivityBase('3')).version).to.equal(3e9);
  });

  describe('applyDelta', () => {
    it('takes a whole set (base 0), then changes on top of the seq it holds', () => {
      expect(applyDelta(cs, 'a1', full(1, []), 10)).to.deep.equal({ ackSeq: 1, resync: false, changed: false });
      expect(cs.version).to.equal(100);
      expect(applyDelta(cs, 'a1', delta(1, 2, ['a2']), 20)).to.deep.equal({ ackSeq: 2, resync: false, changed: true });
      expect(cs.version).to.equal(101);
      expect(reachable(cs, 'a1', 'a2')).to.equal(true); // not confirmed yet
      expect(confirmAll()).to.equal(true);
      expect(cs.version).to.equal(102);
      expect(reachable(cs, 'a1', 'a2')).to.equal(false);
      expect(reachable(cs, 'a2', 'a1')).to.equal(false);
      expect(brokenLinks(cs)).to.deep.equal([{ a: 'a1', b: 'a2', sinceMs: 20 }]);
      // Nothing changed: the same seq on top of itself.
      expect(applyDelta(cs, 'a1', delta(2, 2, []), 30)).to.deep.equal({ ackSeq: 2, resync: false, changed: false });
      expect(applyDelta(cs, 'a1', delta(2, 3, ['a3'], ['a2']), 40)).to.deep.equal({ ackSeq: 3, resync: false, changed: true });
      confirmAll();
      expect(brokenLinks(cs)).to.deep.equal([{ a: 'a1', b: 'a3', sinceMs: 40 }]);
      expect(cs.version).to.equal(104);
    });

    it('keeps the time a link was first reported across a whole-set report', () => {
      applyDelta(cs, 'a1', full(1, ['a2']), 10);
      applyDelta(cs, 'a1', full(5, ['a2', 'a3']), 50);
      confirmAll();
      expect(brokenLinks(cs)).to.deep.equal([
        { a: 'a1', b: 'a2', sinceMs: 10 },
        { a: 'a1', b: 'a3', sinceMs: 50 },
      ]);
    });

    it('asks for the whole set when it lacks the base (a new leader, a lost answer), and acks a retry it already applied', () => {
      expect(applyDelta(cs, 'a1', delta(4, 5, ['a2']), 10)).to.deep.equal({ ackSeq: 0, resync: true, changed: false });
      expect(cs.rows.has('a1')).to.equal(false);
      applyDelta(cs, 'a1', full(5, ['a2']), 10);
      // The answer to seq 5 was lost: the agent sends seq 5 on top of 4 again.
      expect(applyDelta(cs, 'a1', delta(4, 5, ['a2']), 20)).to.deep.equal({ ackSeq: 5, resync: false, changed: false });
      // Another change meanwhile: seq 6 on top of 4, which the master does not hold.
      expect(applyDelta(cs, 'a1', delta(4, 6, ['a2', 'a3']), 20)).to.deep.equal({ ackSeq: 5, resync: true, changed: false });
    });

    it('ignores a node reporting itself', () => {
      applyDelta(cs, 'a1', full(1, ['a1', 'a2']), 10);
      confirmAll();
      expect(unreachablePeers(cs, 'a1')).to.deep.equal(['a2']);
    });
  });

  it('sees a link broken when either end reports it, and each peer once', () => {
    applyDelta(cs, 'a2', full(1, ['a1']), 5);
    applyDelta(cs, 'a1', full(1, ['a2', 'a3']), 10);
    applyDelta(cs, 'a4', full(1, ['a1']), 12);
    // a1 and a2 report each other: confirmed at once; the rest once the accused are heard.
    expect(brokenLinks(cs)).to.deep.equal([{ a: 'a1', b: 'a2', sinceMs: 5 }]);
    confirmAll();
    expect(brokenLinks(cs)).to.deep.equal([
      { a: 'a1', b: 'a2', sinceMs: 5 },
      { a: 'a1', b: 'a3', sinceMs: 10 },
      { a: 'a1', b: 'a4', sinceMs: 12 },
    ]);
    expect(unreachablePeers(cs, 'a1')).to.deep.equal(['a2', 'a3', 'a4']);
    expect(unreachablePeers(cs, 'a3')).to.deep.equal(['a1']);
    expect(unreachablePeers(cs, 'a5')).to.deep.equal([]);
    expect(reachable(cs, 'a3', 'a4')).to.equal(true);
    expect(reachable(cs, 'a1', 'a1')).to.equal(true);
  });

  describe('confirmation', () => {
    it('a report counts once its accused peer is heard a detection delay after it, not before', () => {
      applyDelta(cs, 'a1', full(1, ['a2']), 1000);
      const heard = new Map([['a2', 1500]]);
      const heardAt = (id: string, t: number) => (heard.get(id) ?? -1) >= t;
      expect(confirmReports(cs, 1300, heardAt)).to.equal(false);
      expect(brokenLinks(cs)).to.deep.equal([]);
      heard.set('a2', 2299);
      expect(confirmReports(cs, 1300, heardAt)).to.equal(false);
      heard.set('a2', 2300);
      const v = cs.version;
      expect(confirmReports(cs, 1300, heardAt)).to.equal(true);
      expect(cs.version).to.equal(v + 1);
      expect(brokenLinks(cs)).to.deep.equal([{ a: 'a1', b: 'a2', sinceMs: 1000 }]);
      // Healed: the report and its confirmation go.
      applyDelta(cs, 'a1', delta(1, 2, [], ['a2']), 2400);
      expect(brokenLinks(cs)).to.deep.equal([]);
      applyDelta(cs, 'a1', delta(2, 3, ['a2']), 2500);
      expect(brokenLinks(cs)).to.deep.equal([]);
    });

    it('a peer that is down and comes back (restarted, resumed) is no broken link: reports about it are dated anew', () => {
      applyDelta(cs, 'a1', full(1, ['a2']), 1000);
      confirmAll();
      expect(brokenLinks(cs)).to.have.length(1);
      const v = cs.version;
      expect(nodeRestarted(cs, 'a2', 5000)).to.equal(true);
      expect(cs.version).to.equal(v + 1);
      expect(brokenLinks(cs)).to.deep.equal([]);
      expect(cs.rows.get('a1')?.unreachable.get('a2')).to.equal(5000);
      // Heard soon after its return: a1's "reachable" is still on its way; not confirmed.
      expect(confirmReports(cs, 1300, (_id, t) => 5400 >= t)).to.equal(false);
      applyDelta(cs, 'a1', delta(1, 2, [], ['a2']), 5500);
      expect(confirmReports(cs, 1300, () => true)).to.equal(false);
      expect(brokenLinks(cs)).to.deep.equal([]);
      // Nothing was reported about a3: nothing changes.
      expect(nodeRestarted(cs, 'a3', 6000)).to.equal(false);
    });

    it('a report the restarted peer makes too (a real cut) stays confirmed', () => {
      applyDelta(cs, 'a1', full(1, ['a2']), 1000);
      applyDelta(cs, 'a2', full(1, ['a1']), 1100);
      expect(brokenLinks(cs).map((l) => `${l.a}-${l.b}`)).to.deep.equal(['a1-a2']);
      expect(nodeRestarted(cs, 'a2', 5000)).to.equal(false);
      expect(brokenLinks(cs).map((l) => `${l.a}-${l.b}`)).to.deep.equal(['a1-a2']);
    });
  });

  describe('dropNode', () => {
    it('removes its row, every report about it, its probe targets and its place in others', () => {
      applyDelta(cs, 'a1', full(1, ['a2']), 10);
      applyDelta(cs, 'a3', full(1, ['a2']), 10);
      applyDelta(cs, 'a2', full(1, ['a4']), 10);
      confirmAll();
      cs.probes.set('a1', new Set(['a2', 'a3']));
      cs.probes.set('a2', new Set(['a1']));
      cs.probes.set('a3', new Set(['a2']));
      setPartitioned(cs, 'a2', true);
      const v = cs.version;
      expect(dropNode(cs, 'a2')).to.equal(true);
      expect(cs.version).to.equal(v + 1);
      expect(brokenLinks(cs)).to.deep.equal([]);
      expect(cs.rows.has('a2')).to.equal(false);
      expect(cs.partitioned.has('a2')).to.equal(false);
      expect([...cs.probes.keys()]).to.deep.equal(['a1', 'a3']);
      expect([...cs.probes.get('a1')!]).to.deep.equal(['a3']);
      expect([...cs.probes.get('a3')!]).to.deep.equal([]);
      expect(probersOf(cs, 'a2')).to.deep.equal([]);
    });

    it('changes no version when nothing about the node was broken', () => {
      applyDelta(cs, 'a1', full(1, []), 10);
      cs.probes.set('a1', new Set(['a2']));
      expect(dropNode(cs, 'a2')).to.equal(false);
      expect(cs.version).to.equal(100);
      expect([...cs.probes.get('a1')!]).to.deep.equal([]);
    });
  });

  it('forgetReports drops what a node reported (and its targets), keeping what others report about it', () => {
    applyDelta(cs, 'a1', full(1, ['a2', 'a3']), 10);
    applyDelta(cs, 'a2', full(1, ['a1']), 10);
    confirmAll();
    cs.probes.set('a1', new Set(['a2', 'a3']));
    expect(forgetReports(cs, 'a1')).to.equal(true); // a1-a3 heals; a1-a2 is still a2's report
    expect(brokenLinks(cs).map((l) => `${l.a}-${l.b}`)).to.deep.equal(['a1-a2']);
    expect(cs.probes.has('a1')).to.equal(false);
    expect(forgetReports(cs, 'a1')).to.equal(false);
  });

  it('probersOf and vouchers: fresh probers with a report that still reach the node', () => {
    cs.probes.set('a1', new Set(['a4']));
    cs.probes.set('a2', new Set(['a4']));
    cs.probes.set('a3', new Set(['a4']));
    cs.probes.set('a5', new Set(['a4']));
    cs.probes.set('a4', new Set(['a1']));
    applyDelta(cs, 'a1', full(1, []), 10);
    applyDelta(cs, 'a2', full(1, ['a4']), 10);
    applyDelta(cs, 'a3', full(1, []), 10);
    // a5 has not reported to this master.
    expect(probersOf(cs, 'a4').sort()).to.deep.equal(['a1', 'a2', 'a3', 'a5']);
    const fresh = (id: string) => id !== 'a3';
    expect(vouchers(cs, 'a4', probersOf(cs, 'a4'), fresh)).to.deep.equal(['a1']);
  });

  it('setPartitioned bumps the version only on a change', () => {
    expect(setPartitioned(cs, 'a1', true)).to.equal(true);
    expect(setPartitioned(cs, 'a1', true)).to.equal(false);
    expect(cs.version).to.equal(101);
    expect(setPartitioned(cs, 'a1', false)).to.equal(true);
    expect(cs.version).to.equal(102);
  });
});
