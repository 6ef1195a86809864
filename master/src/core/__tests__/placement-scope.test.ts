/**
 * Connectivity-aware placement through the master core (placement-scope.ts, scheduling.ts): a
 * connected job's AM on the most connected node and its slots only where they reach its hosts, an
 * independent job and `connectivityAware: false` as before, nothing on a node partitioned from the
 * master, the AM's constraints (UpdateRequests, and ReportAppState to a new leader), the graph in
 * UpdateRequests answers, and the waiting message of a job that only connectivity holds up. The
 * graph is filled directly with connectivity.ts, as the heartbeat path would.
 */
import { expect } from 'chai';
import { applyDelta, setPartitioned } from '../connectivity.js';
import type { MasterCoreConfig } from '../master-core.js';
import { Harness, mockSpec, ofKind } from './core-factories.js';

const NODES = ['a1', 'a2', 'a3', 'a4'].map((nodeId) => ({ nodeId }));

function cluster(config: Partial<MasterCoreConfig> = {}): Harness {
  return new Harness({ nodes: NODES, config });
}

/** One end's report on top of what it reported before. */
function report(h: Harness, from: string, to: string, cut: boolean): void {
  const cs = h.core.connectivity;
  const seq = cs.rows.get(from)?.seq ?? 0;
  applyDelta(cs, from, { seq: seq + 1, baseSeq: seq, unreachable: cut ? [to] : [], reachable: cut ? [] : [to] }, h.now);
}

/** The link `from`-`to` is cut: both ends report it (as probing peers do), so it is confirmed. */
function cut(h: Harness, from: string, to: string): void {
  report(h, from, to, true);
  report(h, to, from, true);
}

/** `from` and `to` reach each other again. */
function heal(h: Harness, from: string, to: string): void {
  report(h, from, to, false);
  report(h, to, from, false);
}

/** Slots of `suId` per node in the app's assignments (as its AM would hold them). */
function slotsByNode(h: Harness, appId = 'job-1', suId = 'map'): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, n] of Object.entries(h.amSlots(appId))) {
    const [su, node] = k.split('@') as [string, string];
    if (su === suId) out[node] = n;
  }
  return out;
}

const independent = () => mockSpec({ network: 'independent' });

describe('connectivity-aware placement (master core)', () => {
  describe("the AM's node", () => {
    it('is the node with the fewest broken links (CASPR Algorithm 1)', () => {
      const h = cluster();
      cut(h, 'a1', 'a2');
      cut(h, 'a1', 'a3');
      cut(h, 'a2', 'a3');
      // Degrees: a1 2, a2 2, a3 2, a4 0; without the graph the AM would go to a1 (ties by id).
      h.submit();
      expect(h.core.getJob('job-1').amNodeId).to.equal('a4');
    });

    it('is chosen as before for an independent job, and with connectivityAware off', () => {
      for (const [h, spec] of [
        [cluster(), independent()],
        [cluster({ connectivityAware: false }), mockSpec()],
      ] as const) {
        cut(h, 'a1', 'a2');
        h.submit(spec);
        expect(h.core.getJob('job-1').amNodeId).to.equal('a1');
      }
    });
  });

  describe("a connected job's slots", () => {
    it('go only to nodes that reach the AM and every slot before them; the job says what it waits for until the link heals', () => {
      const h = cluster();
      cut(h, 'a1', 'a2');
      h.start();
      expect(h.core.getJob('job-1').amNodeId).to.equal('a3');
      const r = h.ask('job-1', 40);
      // a1 (least loaded, first by id) takes the first slot; a2, cut from it, takes none.
      expect(slotsByNode(h)).to.deep.equal({ a1: 8, a3: 7, a4: 8 });
      expect(h.core.getJob('job-1').message).to.equal('waiting: no free host reaches all of a1, a3, a4 (broken links: a1-a2)');
      expect(h.core.listJobs().find((j) => j.jobId === 'job-1')?.message).to.equal('waiting: no free host reaches all of a1, a3, a4 (broken links: a1-a2)');
      expect(ofKind(r.effects, 'jobChanged').map((e) => e.jobId)).to.include('job-1');

      heal(h, 'a1', 'a2');
      const effects = h.tick();
      expect(slotsByNode(h)).to.deep.equal({ a1: 8, a2: 8, a3: 7, a4: 8 });
      expect(h.core.getJob('job-1').message).to.equal('');
      expect(ofKind(effects, 'jobChanged').map((e) => e.jobId)).to.include('job-1');
    });

    it('go anywhere for an independent job, and with connectivityAware off', () => {
      for (const [h, spec] of [
        [cluster(), independent()],
        [cluster({ connectivityAware: false }), mockSpec()],
      ] as const) {
        cut(h, 'a1', 'a2');
        h.start(spec);
        h.ask('job-1', 40);
        expect(slotsByNode(h)).to.deep.equal({ a1: 7, a2: 8, a3: 8, a4: 8 });
        expect(h.core.getJob('job-1').message).to.equal('');
      }
    });

    it('ignore links to a node the master does not hear either (down, or cut off from everyone)', () => {
      const h = cluster();
      h.start();
      h.ask('job-1', 2, 'node:a2');
      expect(slotsByNode(h)).to.deep.equal({ a2: 2 });
      h.run(4000, { silentNodes: ['a2'] });
      expect(h.core.nodeStatus('a2')?.status).to.equal('timing-out');
      for (const peer of ['a1', 'a3', 'a4']) cut(h, peer, 'a2');
      h.ask('job-1', 3);
      expect(slotsByNode(h)).to.deep.equal({ a1: 1, a2: 2, a3: 1, a4: 1 });
      expect(h.core.getJob('job-1').message).to.equal('');
    });

    it('wait while a host of the job is cut from every other one, and go elsewhere once the AM gives that host up', () => {
      const h = cluster();
      h.start();
      h.ask('job-1', 2, 'node:a2');
      for (const peer of ['a1', 'a3', 'a4']) cut(h, peer, 'a2');
      h.ask('job-1', 3);
      expect(slotsByNode(h)).to.deep.equal({ a2: 2 });
      expect(h.core.getJob('job-1').message).to.equal('waiting: no free host reaches all of a1, a2 (broken links: a1-a2, a2-a3, a2-a4)');
      h.request('job-1', [], { constraints: { reach: [], avoid: ['a2'] } });
      expect(slotsByNode(h)).to.deep.equal({ a1: 1, a2: 2, a3: 1, a4: 1 });
      expect(h.core.getJob('job-1').message).to.equal('');
    });
  });

  describe('a node partitioned from the master', () => {
    it('takes nothing new (the master cannot push grants there), unless connectivityAware is off', () => {
      const h = cluster();
      setPartitioned(h.core.connectivity, 'a1', true);
      h.start(independent());
      h.ask('job-1', 40);
      expect(h.core.getJob('job-1').amNodeId).to.equal('a2');
      expect(slotsByNode(h)).to.deep.equal({ a2: 7, a3: 8, a4: 8 });

      const off = cluster({ connectivityAware: false });
      setPartitioned(off.core.connectivity, 'a1', true);
      off.start();
      expect(off.core.getJob('job-1').amNodeId).to.equal('a1');
    });
  });

  describe("the AM's constraints", () => {
    it('keep new slots off avoided hosts and within reach of the named ones; replaced when present, kept when absent', () => {
      const h = cluster();
      cut(h, 'a1', 'a2');
      h.start();
      expect(h.core.getJob('job-1').amNodeId).to.equal('a3');
      // Stay in reach of a2 (say it serves outputs): a1 is out; a4 is given up.
      h.request('job-1', [], { constraints: { reach: ['a2'], avoid: ['a4', 'ghost'] } });
      h.ask('job-1', 4);
      expect(slotsByNode(h)).to.deep.equal({ a2: 2, a3: 2 });
      // A call without constraints keeps them.
      h.ask('job-1', 1);
      expect(Object.keys(slotsByNode(h)).sort()).to.deep.equal(['a2', 'a3']);
      // Empty constraints replace them: a4 is usable again (a1 still is not: cut from a2, a slot's host).
      h.request('job-1', [], { constraints: { reach: [], avoid: [] } });
      h.ask('job-1', 2);
      expect(slotsByNode(h).a4).to.equal(2);
      expect(slotsByNode(h).a1).to.equal(undefined);
    });

    it('reach a new leader with the AM state report', () => {
      const old = cluster();
      old.start();
      old.ask('job-1', 2);
      const nu = new Harness({ epoch: '8', now: old.now + 1000 });
      nu.takeOver(old);
      nu.inheritSeqs(old);
      for (const { nodeId } of NODES) nu.agentReports({ nodeId });
      nu.appReports('job-1', { requests: [{ suId: 'map', location: '', count: 20 }], constraints: { reach: [], avoid: ['a3', 'a4'] } });
      expect(nu.core.isRecovering).to.equal(false);
      const placed = Object.fromEntries(nu.core.listNodes().map((n) => [n.info.nodeId, n.allocated.cpuMilli]));
      const before = Object.fromEntries(old.core.listNodes().map((n) => [n.info.nodeId, n.allocated.cpuMilli]));
      expect(placed.a3).to.equal(before.a3);
      expect(placed.a4).to.equal(before.a4);
      expect((placed.a1 ?? 0) + (placed.a2 ?? 0)).to.be.greaterThan((before.a1 ?? 0) + (before.a2 ?? 0));
    });
  });

  describe('the graph in UpdateRequests answers', () => {
    it('goes to an AM whose version is stale, and not again until it changes', () => {
      const h = cluster();
      h.start();
      const base = h.core.connectivity.version;
      expect(base).to.equal(7e9);
      expect(h.request('job-1', [], { connectivityVersion: 0 }).connectivity).to.deep.equal({ version: base, brokenLinks: [], partitioned: [], draining: [] });
      expect(h.request('job-1', [], { connectivityVersion: base }).connectivity).to.equal(undefined);
      h.now += 5;
      cut(h, 'a2', 'a1');
      setPartitioned(h.core.connectivity, 'a4', true);
      expect(h.request('job-1', [], { connectivityVersion: base }).connectivity).to.deep.equal({
        version: base + 3, // two reports (one per end), then a4
        brokenLinks: [{ a: 'a1', b: 'a2', sinceMs: h.now }],
        partitioned: ['a4'],
        draining: [],
      });
    });

    it('is not sent with connectivityAware off', () => {
      const h = cluster({ connectivityAware: false });
      h.start();
      expect(h.request('job-1', [], { connectivityVersion: 0 }).connectivity).to.equal(undefined);
    });
  });
});
