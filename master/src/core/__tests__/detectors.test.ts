import { expect } from 'chai';
import fc from 'fast-check';
import { Harness } from './core-factories.js';
import { evaluateDetector } from '../detector-qos.js';
import { DEFAULT_CONFIG, type MasterCoreConfig } from '../master-state.js';
import { createDetector, defaultDetectorConfig, normalCdf, parseDetectorConfig, phiOf, type DetectorKind, type FailureDetector } from '../detectors.js';

const KINDS: DetectorKind[] = ['fixed', 'chen', 'bertier', 'phi', 'sfd'];

/** Feeds arrivals; returns the detector. */
function feed(d: FailureDetector, arrivals: number[]): FailureDetector {
  for (const t of arrivals) d.heartbeat(t);
  return d;
}

/** Deterministic pseudo-random jitter in [-1, 1). */
function jitter(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return (s / 2 ** 32) * 2 - 1;
  };
}

/** A host beating every `period` ms with +-`spread` ms of jitter, `n` beats from t=0. */
function trace(n: number, period: number, spread: number, seed = 1): number[] {
  const r = jitter(seed);
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push(Math.max(out.at(-1) ?? 0, i * period + spread * r()));
  return out;
}

describe('failure detectors', () => {
  describe('the normal tail', () => {
    it('normalCdf matches known values', () => {
      expect(normalCdf(0)).to.be.closeTo(0.5, 1e-7);
      expect(normalCdf(1.96)).to.be.closeTo(0.975, 1e-4);
      expect(normalCdf(-1.96)).to.be.closeTo(0.025, 1e-4);
    });
    it('phiOf is continuous and increasing, also past the switch to the asymptotic form', () => {
      expect(phiOf(4.999)).to.be.closeTo(phiOf(5), 0.01);
      let prev = -Infinity;
      for (let z = -3; z < 40; z += 0.25) {
        const p = phiOf(z);
        expect(p).to.be.greaterThan(prev);
        prev = p;
      }
    });
  });

  describe('a stable host (1 s period, 10 ms jitter)', () => {
    const beats = trace(200, 1000, 10);
    for (const kind of KINDS) {
      it(`${kind}: never suspects between beats, and suspects within the fixed timeout after the last`, () => {
        const d = createDetector(defaultDetectorConfig(kind, 3000));
        for (let i = 0; i < beats.length; i++) {
          d.heartbeat(beats[i]!);
          if (i + 1 < beats.length) expect(d.suspicion(beats[i + 1]! - 1), `before beat ${i + 1}`).to.equal(0);
        }
        expect(d.mistakes).to.equal(0);
        const last = beats.at(-1)!;
        expect(d.suspectAt()).to.be.greaterThan(last + 1000);
        expect(d.suspectAt()).to.be.at.most(last + 3000);
        expect(d.suspicion(d.suspectAt())).to.equal(0);
        expect(d.suspicion(d.suspectAt() + 1)).to.be.at.least(1);
      });
    }
    it('the adaptive kinds detect a crash at least 4x faster than the fixed 3 s timeout', () => {
      for (const kind of KINDS.filter((k) => k !== 'fixed')) {
        const d = feed(createDetector(defaultDetectorConfig(kind, 3000)), beats);
        const detection = d.suspectAt() - (beats.at(-1)! + 1000); // from the beat that never came
        expect(detection, kind).to.be.lessThan(3000 / 4);
      }
    });
  });

  describe('a jittery host (1 s period, 300 ms jitter)', () => {
    const beats = trace(300, 1000, 300, 7);
    it('phi and bertier widen their margin with the jitter; chen keeps its constant one', () => {
      const stable = trace(300, 1000, 10, 7);
      for (const kind of ['phi', 'bertier'] as const) {
        const quiet = feed(createDetector(defaultDetectorConfig(kind, 3000)), stable);
        const noisy = feed(createDetector(defaultDetectorConfig(kind, 3000)), beats);
        expect(noisy.suspectAt() - beats.at(-1)!, kind).to.be.greaterThan(quiet.suspectAt() - stable.at(-1)! + 100);
      }
    });
    it('phi makes no mistake on it', () => {
      const d = feed(createDetector(defaultDetectorConfig('phi', 3000)), beats);
      expect(d.mistakes).to.equal(0);
    });
    it('sfd raises its margin after mistakes and makes fewer of them than chen', () => {
      const chen = feed(createDetector({ ...defaultDetectorConfig('chen', 3000), alphaMs: 50 } as never), beats);
      const sfd = feed(createDetector({ ...defaultDetectorConfig('sfd', 3000), initialMarginMs: 50 } as never), beats);
      expect(chen.mistakes).to.be.greaterThan(0);
      expect(sfd.mistakes).to.be.lessThan(chen.mistakes);
    });
  });

  describe('a crashed host', () => {
    for (const kind of KINDS) {
      it(`${kind}: suspicion rises from 0 to at least 1 and stays there`, () => {
        const d = feed(createDetector(defaultDetectorConfig(kind, 3000)), trace(50, 1000, 20, 3));
        const last = 49 * 1000 + 20;
        expect(d.suspicion(last + 900)).to.equal(0);
        let prev = 0;
        for (let t = d.suspectAt() + 1; t < last + 60_000; t += 500) {
          const s = d.suspicion(t);
          expect(s).to.be.at.least(1);
          expect(s).to.be.at.least(prev);
          prev = s;
        }
      });
    }
  });

  it('falls back to bootstrapMs until minSamples arrivals are in', () => {
    for (const kind of KINDS.filter((k) => k !== 'fixed')) {
      const d = createDetector(defaultDetectorConfig(kind, 3000));
      expect(d.suspectAt()).to.equal(Infinity);
      d.heartbeat(0);
      d.heartbeat(1000);
      expect(d.suspectAt(), kind).to.equal(4000);
    }
  });

  it('property: no detector suspects a host whose heartbeats come on time', () => {
    // On time: every beat within +-spread of its schedule, spread at most 2 % of the period and
    // 20 ms (a busy host's scheduling noise, below the master's tick); the margins' floors (Chen's
    // 200 ms, Bertier's and SFD's 50 ms) are sized for that.
    fc.assert(
      fc.property(
        fc.constantFrom(...KINDS),
        fc.integer({ min: 200, max: 5000 }),
        fc.double({ min: 0, max: 0.02, noNaN: true }),
        fc.integer({ min: 1, max: 2 ** 30 }),
        fc.integer({ min: 2, max: 300 }),
        (kind, period, spreadShare, seed, n) => {
          const spread = Math.min(20, period * spreadShare);
          const d = createDetector(defaultDetectorConfig(kind, 3 * period));
          const r = jitter(seed);
          let t = 0;
          for (let i = 0; i < n; i++) {
            const next = Math.max(t, (i + 1) * period + spread * r());
            if (i > 0 && d.suspicion(next) !== 0) return false;
            d.heartbeat(next);
            t = next;
          }
          return d.mistakes === 0;
        },
      ),
      { numRuns: 500 },
    );
  });

  describe('config', () => {
    it('fills defaults and takes overrides', () => {
      expect(parseDetectorConfig({ kind: 'phi', threshold: 12 }, 3000)).to.deep.include({ kind: 'phi', threshold: 12, bootstrapMs: 3000, windowSize: 100 });
      expect(parseDetectorConfig({}, 3000)).to.deep.equal({ kind: 'fixed', timeoutMs: 3000 });
    });
    it('names the field and the reason', () => {
      const bad: Array<[unknown, RegExp]> = [
        ['phi', /failureDetector: must be an object/],
        [{ kind: 'magic' }, /failureDetector\.kind: must be one of fixed, chen, bertier, phi, sfd/],
        [{ kind: 'chen', threshold: 3 }, /failureDetector\.threshold: is not a parameter of the chen detector/],
        [{ kind: 'phi', threshold: -1 }, /failureDetector\.threshold: must be a number >= 0/],
        [{ kind: 'phi', threshold: 0 }, /failureDetector\.threshold: must be greater than 0/],
        [{ kind: 'sfd', windowSize: 1 }, /failureDetector\.windowSize: must be an integer >= 2/],
        [{ kind: 'sfd', increase: 1 }, /failureDetector\.increase: must be greater than 1/],
      ];
      for (const [raw, msg] of bad) expect(() => parseDetectorConfig(raw, 3000)).to.throw(msg);
    });
  });
});

/** An AGENT_TIMING event is open for n1. */
const timingOut = (h: Harness) => h.core.clusterStatus(h.now).openEvents.some((e) => e.kind === 'AGENT_TIMING' && e.subject === 'n1');

describe('master core: the failure detector decides timing out', () => {
  /** One agent beating every second for a minute, then silent; returns when it was timing out. */
  function timingOutAfterSilence(cfg?: Partial<MasterCoreConfig>): number {
    const h = new Harness({ nodes: [{ nodeId: 'n1' }], config: cfg });
    h.run(60_000, { step: 1000 });
    const silentFrom = h.now;
    for (let t = 0; t < 10_000; t += 100) {
      h.advance(100);
      h.tick();
      if (timingOut(h)) return h.now - silentFrom;
    }
    return Infinity;
  }

  it('fixed (default): after agentTimingOutMs of silence', () => {
    const ms = timingOutAfterSilence();
    expect(ms).to.be.greaterThan(DEFAULT_CONFIG.agentTimingOutMs);
    expect(ms).to.be.at.most(DEFAULT_CONFIG.agentTimingOutMs + 100);
  });

  it('phi: soon after the missed beat, never while the agent beats on time', () => {
    const ms = timingOutAfterSilence({ failureDetector: defaultDetectorConfig('phi', 3000) });
    expect(ms).to.be.greaterThan(1000);
    expect(ms).to.be.lessThan(1500);
  });

  it('a lost agent starts over with a fresh detector (its outage is not learnt as a gap)', () => {
    const h = new Harness({ nodes: [{ nodeId: 'n1' }], config: { failureDetector: defaultDetectorConfig('phi', 3000) } });
    h.run(30_000);
    h.run(DEFAULT_CONFIG.agentTimeoutMs + 2000, { silentNodes: ['n1'] });
    expect(h.core.listNodes()[0]!.healthy).to.equal(false);
    h.heartbeat('n1');
    h.run(3000);
    expect(h.core.listNodes()[0]!.healthy).to.equal(true);
    expect(timingOut(h)).to.equal(false);
  });
});

describe('detector QoS on a trace (Chen et al.)', () => {
  const steady = new Map([['n1', trace(600, 1000, 20, 5)]]);

  it('fixed 3 s: detection about 2.5 s after a crash on average (the beat was due 0-1 s after it), no mistakes', () => {
    const q = evaluateDetector({ kind: 'fixed', timeoutMs: 3000 }, steady, { crashesPerNode: 200 });
    expect(q.crashes).to.equal(200);
    expect(q.detectionMsP50).to.be.within(2300, 2700);
    expect([q.mistakes, q.mistakesPerHour, q.queryAccuracy]).to.deep.equal([0, 0, 1]);
  });

  it('phi detects far sooner on a steady host, still without mistakes', () => {
    const q = evaluateDetector(defaultDetectorConfig('phi', 3000), steady, { crashesPerNode: 200 });
    expect(q.detectionMsP50).to.be.lessThan(1000);
    expect(q.mistakes).to.equal(0);
  });

  it('counts a pause longer than the timeout as one mistake with its duration', () => {
    const beats = trace(100, 1000, 0);
    const paused = beats.map((t, i) => (i >= 50 ? t + 5000 : t)); // a 6 s gap between beats 49 and 50
    const q = evaluateDetector({ kind: 'fixed', timeoutMs: 3000 }, new Map([['n1', paused]]));
    expect(q.mistakes).to.equal(1);
    expect(q.mistakeMsMean).to.equal(3000);
    expect(q.queryAccuracy).to.be.closeTo(1 - 3000 / paused.at(-1)!, 1e-9);
  });
});
