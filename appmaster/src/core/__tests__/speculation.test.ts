/**
 * Speculative execution (speculation.ts) and the path detector (paths.ts) on scripted inputs:
 * the slow end of data paths found from path records alone, base (LATE) backups and their cap,
 * path-based moves off a slow host, and the modes.
 */
import { expect } from 'chai';
import type { PathObservation } from '../am-state.js';
import { judgePaths, observePath } from '../paths.js';
import type { AmEffect, JobSpec, PathRecord } from '../types.js';
import { asg, ev, Harness, mockJob, mockTask, planIds, plansOf, returnsOf, stopsOf } from './factories.js';

const MB = 1024 * 1024;

/** A path record: `bytes` moved in `elapsedMs` from src to dst. */
function path(src: string, dst: string, reader: string, srcWorker: string, bytes: number, elapsedMs: number, done = false): PathRecord {
  return { srcNode: src, dstNode: dst, readerWorker: reader, srcWorker, bytes, elapsedMs, done };
}

function observed(records: PathRecord[], now = 10_000): Map<string, PathObservation> {
  const m = new Map<string, PathObservation>();
  for (const r of records) observePath(m, r, now);
  return m;
}

/** Every reader r<i> on node d<i> reading map outputs on n1..n3; paths touching `slow` at 100 KiB/s, the rest at 50 MiB/s. */
function shuffle(slow: (src: string, dst: string) => boolean): PathRecord[] {
  const out: PathRecord[] = [];
  for (const dst of ['n1', 'n2', 'n3', 'n4']) {
    for (const src of ['n1', 'n2', 'n3', 'n4']) {
      if (src === dst) continue;
      const bw = slow(src, dst) ? 100 * 1024 : 50 * MB;
      const ms = 2000;
      out.push(path(src, dst, `reduce.${dst}`, `map.${src}`, Math.round((bw * ms) / 1000), ms));
    }
  }
  return out;
}

describe('paths: the slow end of data paths', () => {
  it('finds the source host common to slow paths (its NIC serves every reader slowly)', () => {
    const j = judgePaths(observed(shuffle((src, dst) => src === 'n3' || dst === 'n3')).values(), 10_000);
    expect(j.culprits).to.deep.equal(['n3']);
    expect(j.slow).to.have.length(6);
    expect(j.reference).to.be.greaterThan(40 * MB);
  });

  it('finds a reader host whose reads are all slow, while its sources serve others well', () => {
    const j = judgePaths(observed(shuffle((_src, dst) => dst === 'n2')).values(), 10_000);
    expect(j.culprits).to.deep.equal(['n2']);
  });

  it('blames nobody when every path is as fast as its peers, or too few paths are known', () => {
    expect(judgePaths(observed(shuffle(() => false)).values(), 10_000).culprits).to.deep.equal([]);
    const two = observed([path('n1', 'n2', 'r.0.1', 'm.0.1', 100, 2000), path('n3', 'n2', 'r.0.1', 'm.1.1', 50 * MB, 2000)]);
    expect(judgePaths(two.values(), 10_000)).to.deep.include({ culprits: [], reference: 0 });
  });

  it('counts a read stalled at the start (no byte after 2 s) as slow; a lone slow path blames the end with no healthy path', () => {
    const records = [
      path('n1', 'n2', 'r.0.1', 'm.0.1', 100 * MB, 2000, true),
      path('n1', 'n3', 'r.1.1', 'm.0.1', 100 * MB, 2000, true),
      path('n2', 'n3', 'r.1.1', 'm.1.1', 100 * MB, 2000, true),
      path('n5', 'n2', 'r.0.1', 'm.2.1', 0, 2500),
    ];
    const j = judgePaths(observed(records).values(), 10_000);
    expect(j.slow.map((p) => p.record.srcNode)).to.deep.equal(['n5']);
    expect(j.culprits).to.deep.equal(['n5']);
  });

  it('ignores local reads and judges nothing younger than a second', () => {
    const records = [...shuffle(() => false), path('n3', 'n3', 'r.9.1', 'm.9.1', 10, 5000), path('n4', 'n1', 'r.8.1', 'm.8.1', 0, 500)];
    const j = judgePaths(observed(records).values(), 10_000);
    expect(j.paths.some((p) => p.record.srcNode === p.record.dstNode)).to.equal(false);
    expect(j.slow).to.deep.equal([]);
  });

  it('merges the reader and the server reports of one path: most bytes, latest elapsed, done once either saw it end', () => {
    const m = new Map<string, PathObservation>();
    observePath(m, path('n1', 'n2', 'r.0.1', 'm.0.1', 1000, 1000), 5000);
    observePath(m, path('n1', 'n2', 'r.0.1', 'm.0.1', 4000, 1500), 5200);
    observePath(m, path('n1', 'n2', 'r.0.1', 'm.0.1', 3000, 1400, true), 5300);
    expect(m.size).to.equal(1);
    expect(m.get('r.0.1|m.0.1')!.record).to.deep.include({ bytes: 4000, done: true, elapsedMs: 1400 });
  });

  it('believes the reader over the serving agent, whose writes run ahead of the wire by the socket buffers', () => {
    const m = new Map<string, PathObservation>();
    // The agent wrote the whole file into its socket at once: "done" in 5 ms.
    observePath(m, path('n3', 'n1', 'r.0.1', 'm.2.1', 256 * 1024, 5, true), 5000);
    expect(m.get('r.0.1|m.2.1')!.record.done).to.equal(true);
    // The reader has 64 KiB after 2 s: that is the path, and later agent reports change nothing.
    observePath(m, path('n3', 'n1', 'r.0.1', 'm.2.1', 64 * 1024, 2000), 7000, true);
    observePath(m, path('n3', 'n1', 'r.0.1', 'm.2.1', 256 * 1024, 2500, true), 7500);
    expect(m.get('r.0.1|m.2.1')!.record).to.deep.include({ bytes: 64 * 1024, done: false, elapsedMs: 2000 });
  });
});

/** n0 hosts the AM; `spec` runs its maps on the nodes given, one slot each. */
function harness(spec: JobSpec): Harness {
  const h = new Harness({ nodeId: 'n0', returnSettleMs: 1e12 });
  h.start(spec);
  return h;
}

const running = (h: Harness, node: string, id: string, progress = 0, paths: PathRecord[] = []): AmEffect[] =>
  h.events(node, ev(id, 'running', { progress, paths }));

describe('speculation: base (LATE)', () => {
  function fiveMaps(mode: JobSpec['speculation']): Harness {
    const h = harness(mockJob([mockTask({ name: 'map', instances: 5 })], { speculation: mode }));
    expect(planIds(h.assign(asg('map', 'n1', 2), asg('map', 'n2', 2), asg('map', 'n3', 1)))).to.have.length(5);
    for (const [i, n] of ['n1', 'n1', 'n2', 'n2', 'n3'].entries()) running(h, n, `map.${i}.1`);
    h.now += 5000;
    for (const [i, n] of ['n1', 'n1', 'n2', 'n2'].entries()) running(h, n, `map.${i}.1`, 0.8);
    running(h, 'n3', 'map.4.1', 0.1);
    return h;
  }

  it('backs up an attempt far slower than its peers on another node; the first to succeed wins and the other is stopped', () => {
    const h = fiveMaps('base');
    let fx = h.am.tick(h.now);
    // One backup (cap: a tenth of 5 instances, at least 1): asked for beside the 5 held slots.
    expect(h.progressOf('map')).to.deep.include({ running: 4, pending: 1, backups: 1 });
    expect(fx.flatMap((e) => (e.kind === 'request' ? e.deltas : []))).to.deep.equal([{ suId: 'map', location: '', delta: 1 }]);
    // A slot on the slow attempt's own node is not taken for its backup; one elsewhere is.
    fx = h.assign(asg('map', 'n3', 2));
    expect(planIds(fx)).to.deep.equal([]);
    fx = h.assign(asg('map', 'n4', 1));
    expect(planIds(fx)).to.deep.equal(['map.4.2']);
    // Nothing more while one backup runs.
    expect(planIds(h.am.tick(h.now + 10_000))).to.deep.equal([]);
    running(h, 'n4', 'map.4.2');
    fx = h.events('n4', ev('map.4.2', 'succeeded'));
    expect(stopsOf(fx)).to.deep.equal(['map.4.1']);
    expect(h.progressOf('map')).to.deep.include({ succeeded: 1, running: 4, backups: 1, retries: 0 });
    // The stopped original's end is no failure.
    h.events('n3', ev('map.4.1', 'killed'));
    expect(h.progressOf('map')).to.deep.include({ failed: 0, retries: 0 });
  });

  it('keeps the original when it finishes first: the backup is stopped and its slot returned', () => {
    const h = fiveMaps('base');
    h.am.tick(h.now);
    expect(planIds(h.assign(asg('map', 'n4', 1)))).to.deep.equal(['map.4.2']);
    const fx = h.events('n3', ev('map.4.1', 'succeeded'));
    expect(stopsOf(fx)).to.deep.equal(['map.4.2']);
    // Both slots of the instance are free now: the original's and the stopped backup's.
    expect(returnsOf(fx)).to.deep.equal([
      { suId: 'map', nodeId: 'n3', slots: 1 },
      { suId: 'map', nodeId: 'n4', slots: 1 },
    ]);
  });

  it('does nothing with speculation off, and nothing for attempts as fast as their peers', () => {
    const off = fiveMaps('off');
    expect(off.am.tick(off.now)).to.deep.equal([]);
    const even = harness(mockJob([mockTask({ name: 'map', instances: 4 })]));
    even.assign(asg('map', 'n1', 4));
    for (let i = 0; i < 4; i++) running(even, 'n1', `map.${i}.1`);
    even.now += 5000;
    for (let i = 0; i < 4; i++) running(even, 'n1', `map.${i}.1`, 0.5 + i * 0.05);
    expect(even.am.tick(even.now)).to.deep.equal([]);
    expect(even.progressOf('map')).to.deep.include({ backups: 0 });
  });

  it('reports the fraction done per task: succeeded instances count 1, running ones what they reported', () => {
    const h = fiveMaps('off');
    expect(h.progressOf('map')!.progress).to.be.closeTo((4 * 0.8 + 0.1) / 5, 1e-9);
  });
});

describe('speculation: path-based (PBSE)', () => {
  /**
   * 3 maps (map.0 on n1, map.1 on n2, map.2 on n3) succeeded; 2 reducers run on n1 and n2 and read
   * every map's output: reads from n3 crawl at 100 KiB/s, the others go at 50 MiB/s.
   */
  function slowShuffle(mode: JobSpec['speculation']): Harness {
    const h = harness(
      mockJob([mockTask({ name: 'map', instances: 3 }), mockTask({ name: 'reduce', instances: 2, dependsOn: ['map'], maxAttempts: 1 })], {
        speculation: mode,
      }),
    );
    h.assign(asg('map', 'n1', 1), asg('map', 'n2', 1), asg('map', 'n3', 1));
    h.succeed('n1', 'map.0.1');
    h.succeed('n2', 'map.1.1');
    h.succeed('n3', 'map.2.1');
    h.assign(asg('map', 'n1', 0), asg('map', 'n2', 0), asg('map', 'n3', 0));
    expect(planIds(h.assign(asg('reduce', 'n1', 1), asg('reduce', 'n2', 1)))).to.deep.equal(['reduce.0.1', 'reduce.1.1']);
    running(h, 'n1', 'reduce.0.1');
    running(h, 'n2', 'reduce.1.1');
    h.now += 3000;
    running(h, 'n1', 'reduce.0.1', 0.3, [
      path('n1', 'n1', 'reduce.0.1', 'map.0.1', 8 * MB, 100, true),
      path('n2', 'n1', 'reduce.0.1', 'map.1.1', 8 * MB, 160, true),
      path('n3', 'n1', 'reduce.0.1', 'map.2.1', 300 * 1024, 3000),
    ]);
    running(h, 'n2', 'reduce.1.1', 0.3, [
      path('n1', 'n2', 'reduce.1.1', 'map.0.1', 8 * MB, 160, true),
      path('n2', 'n2', 'reduce.1.1', 'map.1.1', 8 * MB, 100, true),
    ]);
    // The serving agent on n3 reports the path to reduce.1 (its SDK reported none yet).
    h.am.pathsReported([path('n3', 'n2', 'reduce.1.1', 'map.2.1', 290 * 1024, 2900)], h.now);
    return h;
  }

  /** Two judgements CONFIRM_MS apart: the first only suspects the host. */
  function confirm(h: Harness): AmEffect[] {
    expect(h.am.tick(h.now)).to.deep.equal([]);
    expect(h.am.slowHosts()).to.deep.equal([]);
    h.now += 1500;
    return h.am.tick(h.now);
  }

  it('moves the output a slow host serves, avoids the host, and runs the readers again once the new copy exists', () => {
    const h = slowShuffle('path');
    let fx = confirm(h);
    expect(h.am.slowHosts()).to.deep.equal(['n3']);
    expect(h.am.placementConstraints().avoid).to.deep.equal(['n3']);
    expect(h.progressOf('map')).to.deep.include({ succeeded: 2, pending: 1, backups: 1 });
    // The readers keep reading until the new copy exists.
    expect(stopsOf(fx)).to.deep.equal([]);
    // A map slot on n3 goes back; one on n4 runs the copy.
    fx = h.assign(asg('map', 'n3', 1));
    expect(planIds(fx)).to.deep.equal([]);
    expect(returnsOf(fx)).to.deep.equal([{ suId: 'map', nodeId: 'n3', slots: 1 }]);
    fx = h.assign(asg('map', 'n4', 1));
    expect(planIds(fx)).to.deep.equal(['map.2.2']);
    h.succeed('n4', 'map.2.2');
    fx = h.am.tick(h.now + 1000);
    expect(stopsOf(fx).sort()).to.deep.equal(['reduce.0.1', 'reduce.1.1']);
    expect(h.progressOf('reduce')).to.deep.include({ running: 2, backups: 2, failed: 0 });
    // The readers' new attempts read the copy on n4, not n3 (their slots stayed; they run on them).
    const plans = plansOf(fx);
    expect(plans.map((p) => p.workerId).sort()).to.deep.equal(['reduce.0.2', 'reduce.1.2']);
    const upstream = JSON.parse(plans[0]!.command.env.FUXI_UPSTREAM!);
    expect(upstream.map.hosts).to.include('n4.addr:7071').and.not.include('n3.addr:7071');
    // Their stopped first attempts are no failures (maxAttempts 1).
    h.events('n1', ev('reduce.0.1', 'killed'));
    h.events('n2', ev('reduce.1.1', 'killed'));
    h.succeed('n1', 'reduce.0.2');
    const end = h.succeed('n2', 'reduce.1.2');
    expect(end.find((e) => e.kind === 'finish')).to.deep.include({ succeeded: true });
  });

  it('leaves a reader that already read everything it needed from the slow host', () => {
    const h = slowShuffle('path');
    h.now += 500;
    running(h, 'n2', 'reduce.1.1', 0.9, [path('n3', 'n2', 'reduce.1.1', 'map.2.1', 400 * 1024, 3400, true)]);
    confirm(h);
    h.assign(asg('map', 'n4', 1));
    h.succeed('n4', 'map.2.2');
    expect(stopsOf(h.am.tick(h.now + 1000))).to.deep.equal(['reduce.0.1']);
  });

  it('with base speculation, a slow shuffle moves nothing off the slow host', () => {
    const h = slowShuffle('base');
    h.am.tick(h.now);
    h.am.tick(h.now + 1500);
    expect(h.am.slowHosts()).to.deep.equal([]);
    expect(h.progressOf('map')).to.deep.include({ succeeded: 3, backups: 0 });
  });
});
