import { expect } from 'chai';
import { ProbeCore, type ProbeChange } from '../probes.js';

const P = 200;
const A2 = { nodeId: 'a2', address: '10.0.0.2:7071' };
const A3 = { nodeId: 'a3', address: '10.0.0.3:7071' };

/** Runs rounds from `from` every period until `to` (exclusive); `answers(round)` says who answers it at once. */
function rounds(p: ProbeCore, from: number, to: number, answers: (round: number) => string[]): { changes: ProbeChange[]; at: Map<string, number> } {
  const changes: ProbeChange[] = [];
  const at = new Map<string, number>();
  for (let t = from; t < to; t += P) {
    const r = p.tick(t);
    for (const c of r.changes) at.set(`${c.nodeId}:${c.reachable ? 'up' : 'down'}`, t);
    changes.push(...r.changes);
    const round = r.pings[0]?.seq ?? 0;
    for (const id of answers(round)) {
      const c = p.answer(id, round, t + 1);
      if (c) {
        changes.push(c);
        at.set(`${c.nodeId}:up`, t + 1);
      }
    }
  }
  return { changes, at };
}

describe('ProbeCore: peer probing (agent core)', () => {
  it('pings every target once per round, numbered by the round', () => {
    const p = new ProbeCore({ periodMs: P, misses: 3 });
    expect(p.targetsVersion).to.equal(0);
    p.setTargets(5, [A3, A2], 0);
    expect(p.targetsVersion).to.equal(5);
    expect(p.tick(0).pings).to.deep.equal([
      { ...A3, seq: 1 },
      { ...A2, seq: 1 },
    ]);
    // A second tick within half a period starts no round.
    expect(p.tick(50).pings).to.deep.equal([]);
    expect(p.tick(200).pings.map((x) => x.seq)).to.deep.equal([2, 2]);
    expect(p.targets()).to.deep.equal([A2, A3]);
  });

  it('marks a peer unreachable after 3 unanswered rounds and 3 periods, and reachable at its next answer', () => {
    const p = new ProbeCore({ periodMs: P, misses: 3 });
    p.setTargets(1, [A2, A3], 0);
    // a2 answers until t=1000, then is cut; back from t=3000.
    const cut = (round: number) => (round <= 6 || round >= 16 ? ['a2', 'a3'] : ['a3']);
    const { changes, at } = rounds(p, 0, 4000, cut);
    expect(changes.map((c) => `${c.nodeId}:${c.reachable ? 'up' : 'down'}`)).to.deep.equal(['a2:down', 'a2:up']);
    // Last answer at ~1000 (round 6); rounds 7, 8, 9 unanswered; noticed at the tick of round 10.
    expect(at.get('a2:down')).to.equal(1800);
    expect(at.get('a2:up')).to.equal(3001);
    expect(p.unreachable()).to.deep.equal([]);
  });

  it('counts rounds, not only time: a stall of its own loop makes no peer unreachable', () => {
    const p = new ProbeCore({ periodMs: P, misses: 3 });
    p.setTargets(1, [A2], 0);
    p.tick(0);
    p.answer('a2', 1, 1);
    // The loop stalls for 5 s: no tick, no ping. The answer to the next round comes in late.
    const r = p.tick(5000);
    expect(r.changes).to.deep.equal([]);
    p.answer('a2', 2, 5300);
    expect(p.tick(5400).changes).to.deep.equal([]);
    expect(p.unreachable()).to.deep.equal([]);
  });

  it('ignores answers from non-targets, to rounds not sent, and to rounds before the peer became a target', () => {
    const p = new ProbeCore({ periodMs: P, misses: 1 });
    p.tick(0); // round 1, no targets
    p.setTargets(1, [A2], 0);
    expect(p.answer('a2', 1, 1)).to.equal(undefined); // before it was a target
    expect(p.answer('zz', 1, 1)).to.equal(undefined);
    p.tick(200); // round 2
    p.tick(400); // round 3: round 2 unanswered -> unreachable (misses 1)
    expect(p.unreachable()).to.deep.equal(['a2']);
    expect(p.answer('a2', 9, 401)).to.equal(undefined); // never sent
    expect(p.answer('a2', 1.5, 401)).to.equal(undefined);
    // A late answer to round 2 (sent before it was marked) does not bring it back; round 3 does.
    expect(p.answer('a2', 2, 402)).to.equal(undefined);
    expect(p.unreachable()).to.deep.equal(['a2']);
    expect(p.answer('a2', 3, 403)).to.deep.equal({ nodeId: 'a2', reachable: true, silentMs: 1 });
  });

  it('new targets start reachable; a dropped unreachable target leaves the set; a moved one starts again', () => {
    const p = new ProbeCore({ periodMs: P, misses: 3 });
    p.setTargets(1, [A2, A3], 0);
    rounds(p, 0, 1000, () => ['a3']);
    expect(p.unreachable()).to.deep.equal(['a2']);
    const seq = p.currentSeq;
    expect(p.setTargets(2, [A3], 1000)).to.deep.equal([{ nodeId: 'a2', reachable: true, silentMs: 1000 }]);
    expect(p.currentSeq).to.equal(seq + 1);
    expect(p.unreachable()).to.deep.equal([]);
    // a3 moves: a new address starts over (reachable), and is judged again from now on.
    const moved = { nodeId: 'a3', address: '10.0.0.33:7071' };
    expect(p.setTargets(3, [moved], 1000)).to.deep.equal([]);
    expect(p.tick(1000).pings).to.deep.equal([{ ...moved, seq: 6 }]);
  });

  describe('reports', () => {
    it('sends the whole set until the master acknowledges, then only changes on top of what it holds', () => {
      const p = new ProbeCore({ periodMs: P, misses: 3 });
      p.setTargets(1, [A2, A3], 0);
      const r0 = p.report();
      expect(r0).to.deep.equal({ seq: 1, baseSeq: 0, unreachable: [], reachable: [] });
      p.acked(1, false);
      expect(p.report()).to.deep.equal({ seq: 1, baseSeq: 1, unreachable: [], reachable: [] });
      rounds(p, 0, 1000, () => ['a3']); // a2 down
      const r1 = p.report();
      expect(r1).to.deep.equal({ seq: 2, baseSeq: 1, unreachable: ['a2'], reachable: [] });
      // The answer to that heartbeat is lost: the next report is still on top of 1.
      rounds(p, 1000, 2000, () => []); // a3 down too
      expect(p.report()).to.deep.equal({ seq: 3, baseSeq: 1, unreachable: ['a2', 'a3'], reachable: [] });
      p.acked(3, false);
      p.answer('a2', p.tick(2000).pings[0]!.seq, 2001);
      expect(p.report()).to.deep.equal({ seq: 4, baseSeq: 3, unreachable: [], reachable: ['a2'] });
    });

    it('sends the whole set again when the master asks (resync), for a new registration, and for an ack it cannot place', () => {
      const p = new ProbeCore({ periodMs: P, misses: 3 });
      p.setTargets(1, [A2, A3], 0);
      rounds(p, 0, 1000, () => ['a3']);
      const r = p.report();
      p.acked(r.seq, false);
      expect(p.report().baseSeq).to.equal(r.seq);
      p.acked(0, true);
      expect(p.report()).to.deep.equal({ seq: r.seq, baseSeq: 0, unreachable: ['a2'], reachable: [] });
      p.acked(r.seq, false);
      p.resync();
      expect(p.report().baseSeq).to.equal(0);
      p.acked(r.seq, false);
      p.acked(0, false); // the master did not take the report: nothing changes
      expect(p.report().baseSeq).to.equal(r.seq);
      p.acked(77, false); // never reported
      expect(p.report().baseSeq).to.equal(0);
    });

    it('is deterministic: the same inputs give the same pings, changes and reports', () => {
      const run = () => {
        const p = new ProbeCore({ periodMs: P, misses: 3 });
        p.setTargets(1, [A2, A3], 0);
        const out = rounds(p, 0, 3000, (round) => (round % 5 === 0 ? [] : round < 8 ? ['a2', 'a3'] : ['a3']));
        return JSON.stringify([out.changes, p.report()]);
      };
      expect(run()).to.equal(run());
    });
  });

  it('refuses a nonsensical config', () => {
    expect(() => new ProbeCore({ periodMs: 0, misses: 3 })).to.throw(RangeError);
    expect(() => new ProbeCore({ periodMs: 200, misses: 0 })).to.throw(RangeError);
  });
});
