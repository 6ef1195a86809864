import { expect } from 'chai';
import { nullLogger } from '@fuxi/common';
import { DEFAULT_CONFIG, type MasterCoreConfig } from '../master-core.js';
import { MasterState } from '../master-state.js';
import { computeProbeTargets, DEFAULT_PROBE_TARGETS, ringHash, ringOrder, type ProbeApp, type ProbeMember } from '../probe-targets.js';
import { probersOf } from '../connectivity.js';
import { APP_HOSTS_REFRESH_MS, probeHeartbeat, refreshProbeTargets } from '../probing.js';
import { registerAgent, setNodeStatus } from '../nodes.js';
import type { ConnectivityDeltaInput } from '../connectivity.js';
import type { HeartbeatInput } from '../types.js';
import { Harness, mockNodeInfo } from './core-factories.js';

const members = (n: number, prefix = 'n'): ProbeMember[] =>
  Array.from({ length: n }, (_, i) => ({ nodeId: `${prefix}${String(i + 1).padStart(4, '0')}`, address: `10.0.${i >> 8}.${i & 255}:7071` }));

/** How many nodes probe each node. */
function inDegree(t: Map<string, string[]>): Map<string, number> {
  const d = new Map<string, number>([...t.keys()].map((k) => [k, 0]));
  for (const targets of t.values()) for (const p of targets) d.set(p, (d.get(p) ?? 0) + 1);
  return d;
}

describe('probe targets (pure)', () => {
  it('hashes node ids with FNV-1a onto a ring, ties by id', () => {
    expect(ringHash('')).to.equal(0x811c9dc5);
    expect(ringHash('a')).to.equal(0xe40c292c);
    const ids = ['x', 'y', 'z', 'a1', 'a2'];
    expect(ringOrder(ids)).to.deep.equal(ringOrder([...ids].reverse()));
    expect(ringOrder(ids)).to.have.members(ids);
  });

  it('up to allUpTo members: every node probes every other', () => {
    const m = members(5);
    const t = computeProbeTargets(m, [], DEFAULT_PROBE_TARGETS);
    expect([...t.keys()]).to.deep.equal(m.map((x) => x.nodeId));
    expect(t.get('n0001')).to.deep.equal(['n0002', 'n0003', 'n0004', 'n0005']);
    for (const [id, targets] of t) expect(targets).to.have.length(4).and.not.include(id);
    expect(computeProbeTargets(members(64), [], DEFAULT_PROBE_TARGETS).get('n0064')).to.have.length(63);
    expect(computeProbeTargets([{ nodeId: 'solo', address: 'h:1' }], [], DEFAULT_PROBE_TARGETS).get('solo')).to.deep.equal([]);
  });

  it('above allUpTo: each node probes its `sample` ring successors, and is probed by exactly as many', () => {
    const t = computeProbeTargets(members(65), [], DEFAULT_PROBE_TARGETS);
    for (const targets of t.values()) expect(targets).to.have.length(16);
    expect(new Set(inDegree(t).values())).to.deep.equal(new Set([16]));
    const ring = ringOrder(t.keys());
    const first = ring[0]!;
    expect(t.get(first)).to.deep.equal(ring.slice(1, 17).sort());
  });

  it('is deterministic: the same members in any order give the same targets', () => {
    const m = members(100);
    const apps: ProbeApp[] = [{ hosts: m.slice(0, 30).map((x) => x.nodeId), amHost: 'n0007' }];
    const a = computeProbeTargets(m, apps, DEFAULT_PROBE_TARGETS);
    const b = computeProbeTargets([...m].reverse(), [{ hosts: [...apps[0]!.hosts].reverse(), amHost: 'n0007' }], DEFAULT_PROBE_TARGETS);
    expect([...b.entries()].sort()).to.deep.equal([...a.entries()].sort());
  });

  it('adds the AM host and co-hosts of the apps on a node, within maxTargets', () => {
    const m = members(200);
    const cfg = { allUpTo: 64, sample: 4, maxTargets: 10 };
    // A small app on 5 hosts (AM on n0001) and a big one on 150 hosts (AM on n0200).
    const small: ProbeApp = { hosts: ['n0001', 'n0002', 'n0003', 'n0004', 'n0005'], amHost: 'n0001' };
    const big: ProbeApp = { hosts: m.slice(50).map((x) => x.nodeId), amHost: 'n0200' };
    const t = computeProbeTargets(m, [small, big], cfg);
    // A host of the small app only: its sample, then its AM host and every co-host (4 + 4 <= 10).
    for (const h of ['n0002', 'n0003', 'n0004', 'n0005']) {
      expect(t.get(h)).to.include.members(small.hosts.filter((x) => x !== h));
      expect(t.get(h)!.length).to.be.at.most(10);
    }
    // The big app's hosts: every one probes the AM host; none more than maxTargets.
    for (const h of big.hosts) {
      if (h === 'n0200') continue;
      expect(t.get(h), h).to.include('n0200');
      expect(t.get(h)!.length).to.equal(10);
    }
    // Nodes of no app: the sample alone.
    expect(t.get('n0010')).to.have.length(4);
    // The AM host is probed by every host of its app.
    expect(inDegree(t).get('n0200')).to.be.at.least(149);
  });

  it('round-robins co-hosts over the apps of a node (each app gets its turn)', () => {
    const m = members(100);
    const cfg = { allUpTo: 10, sample: 1, maxTargets: 5 };
    const a: ProbeApp = { hosts: ['n0001', ...m.slice(10, 40).map((x) => x.nodeId)] };
    const b: ProbeApp = { hosts: ['n0001', ...m.slice(60, 90).map((x) => x.nodeId)] };
    const t = computeProbeTargets(m, [a, b], cfg).get('n0001')!;
    expect(t).to.have.length(5);
    expect(t.filter((x) => a.hosts.includes(x)).length).to.be.at.least(2);
    expect(t.filter((x) => b.hosts.includes(x)).length).to.be.at.least(2);
  });

  it('at 5,000 nodes: at most maxTargets each, sample in-degree 16, big apps included', () => {
    const m = members(5000);
    const apps: ProbeApp[] = [];
    for (let i = 0; i < 50; i++) apps.push({ hosts: m.slice(i * 100, i * 100 + 100).map((x) => x.nodeId), amHost: m[i * 100]!.nodeId });
    apps.push({ hosts: m.slice(0, 2000).map((x) => x.nodeId), amHost: m[1999]!.nodeId });
    const t = computeProbeTargets(m, apps, DEFAULT_PROBE_TARGETS);
    let total = 0;
    for (const targets of t.values()) {
      expect(targets.length).to.be.at.most(64);
      total += targets.length;
    }
    expect(total / t.size).to.be.at.most(64);
    expect(computeProbeTargets(m, [], DEFAULT_PROBE_TARGETS).get('n0001')).to.have.length(16);
  });
});

// ---------------------------------------------------------------------------- in the master core

const delta = (seq: number, baseSeq: number, unreachable: string[] = [], reachable: string[] = []): ConnectivityDeltaInput => ({
  seq,
  baseSeq,
  unreachable,
  reachable,
});

/** A master with nodes a1..aN that probe (probe port 7999), at 10.0.0.i. */
function harness(n: number, config: Partial<MasterCoreConfig> = {}): Harness {
  const h = new Harness({ config });
  for (let i = 1; i <= n; i++) h.addNode({ nodeId: `a${i}`, address: `10.0.0.${i}:7071`, probePort: 7999 });
  return h;
}

/** A heartbeat with a probe report (and the targets version the agent holds). */
function beat(h: Harness, nodeId: string, d: ConnectivityDeltaInput, probeTargetsVersion = 0) {
  return h.heartbeat(nodeId, { connectivity: d, probeTargetsVersion });
}

describe('probe targets and reports in the master core', () => {
  it('answers a stale targets version with the targets, and nothing once the agent holds them', () => {
    const h = harness(3);
    h.tick();
    const r = beat(h, 'a1', delta(1, 0));
    expect(r.connectivitySeq).to.equal(1);
    expect(r.connectivityResync).to.equal(false);
    expect(r.probeTargets?.peers).to.deep.equal([
      { nodeId: 'a2', address: '10.0.0.2:7999' },
      { nodeId: 'a3', address: '10.0.0.3:7999' },
    ]);
    const v = r.probeTargets!.version;
    expect(v).to.be.greaterThan(7e9); // above any older leader's (epoch 7)
    expect(beat(h, 'a1', delta(1, 1), v).probeTargets).to.equal(undefined);
    // A node that joins: everyone's targets change, with new versions.
    h.addNode({ nodeId: 'a4', address: '10.0.0.4:7071', probePort: 7999 });
    h.tick();
    const again = beat(h, 'a1', delta(1, 1), v);
    expect(again.probeTargets?.peers.map((p) => p.nodeId)).to.deep.equal(['a2', 'a3', 'a4']);
    expect(again.probeTargets!.version).to.be.greaterThan(v);
  });

  it('gives a node that does not probe no targets, and nobody it as a target', () => {
    const h = harness(2);
    h.addNode({ nodeId: 'old', address: '10.0.0.9:7071' });
    h.tick();
    expect(beat(h, 'a1', delta(1, 0)).probeTargets?.peers.map((p) => p.nodeId)).to.deep.equal(['a2']);
    const r = h.heartbeat('old');
    expect(r).to.not.have.property('probeTargets');
    expect(r).to.not.have.property('connectivitySeq');
  });

  it('shows a broken link in ListNodes and the cluster status from either end, and clears it when healed', () => {
    const h = harness(3);
    h.tick();
    for (const id of ['a1', 'a2', 'a3']) beat(h, id, delta(1, 0));
    h.advance(100);
    expect(beat(h, 'a1', delta(2, 1, ['a2'])).connectivitySeq).to.equal(2);
    const peers = () => Object.fromEntries(h.core.listNodes().map((n) => [n.info.nodeId, n.unreachablePeers]));
    // One end only: a2 may just be down (a restart); not a broken link yet.
    expect(peers()).to.deep.equal({ a1: [], a2: [], a3: [] });
    const since = h.now;
    beat(h, 'a2', delta(2, 1, ['a1'])); // the other end too: confirmed, one link
    expect(peers()).to.deep.equal({ a1: ['a2'], a2: ['a1'], a3: [] });
    const c = h.core.clusterStatus(h.now).connectivity;
    expect(c.brokenLinks).to.deep.equal([{ a: 'a1', b: 'a2', sinceMs: since }]);
    expect(c.partitioned).to.deep.equal([]);
    const v = c.version;
    beat(h, 'a1', delta(3, 2, [], ['a2']));
    beat(h, 'a2', delta(3, 2, [], ['a1']));
    expect(peers()).to.deep.equal({ a1: [], a2: [], a3: [] });
    expect(h.core.clusterStatus(h.now).connectivity.brokenLinks).to.deep.equal([]);
    expect(h.core.clusterStatus(h.now).connectivity.version).to.be.greaterThan(v);
  });

  it('confirms a one-sided report once the accused peer is heard a detection delay after it; not a peer that was down', () => {
    const h = harness(3, { heartbeatIntervalMs: 300, probeDetectionMs: 1000 });
    h.tick();
    for (const id of ['a1', 'a2', 'a3']) beat(h, id, delta(1, 0));
    const links = () => h.core.clusterStatus(h.now).connectivity.brokenLinks.map((l) => `${l.a}-${l.b}`);
    // a1 cannot reach a3 (a3 does not say so, e.g. it does not probe a1); a3 beats on.
    beat(h, 'a1', delta(2, 1, ['a3']));
    for (let t = 0; t < 4; t++) {
      h.advance(300);
      for (const id of ['a1', 'a2', 'a3'])
        h.heartbeat(id, { connectivity: { seq: id === 'a1' ? 2 : 1, baseSeq: id === 'a1' ? 2 : 1, unreachable: [], reachable: [] } });
      h.tick();
      expect(links(), `at ${(t + 1) * 300} ms`).to.deep.equal([]);
    }
    h.advance(300);
    h.heartbeat('a3', { connectivity: { seq: 1, baseSeq: 1, unreachable: [], reachable: [] } });
    h.tick(); // heard 1.5 s after the report: 1 s detection + one interval
    expect(links()).to.deep.equal(['a1-a3']);
    // a3 goes quiet for 2 s (paused), comes back: a1's report waits again, and a1 soon reaches it.
    h.advance(2000);
    h.heartbeat('a3', { connectivity: { seq: 1, baseSeq: 1, unreachable: [], reachable: [] } });
    expect(links()).to.deep.equal([]);
    h.advance(300);
    beat(h, 'a1', delta(3, 2, [], ['a3']));
    h.tick();
    expect(links()).to.deep.equal([]);
  });

  it('asks for the whole set when it lacks the base (a new leader), and ignores peers it does not know', () => {
    const h = harness(2);
    h.tick();
    const r = beat(h, 'a1', delta(5, 4, ['a2']));
    expect(r).to.deep.include({ connectivitySeq: 0, connectivityResync: true });
    expect(h.core.listNodes()[0]!.unreachablePeers).to.deep.equal([]);
    expect(beat(h, 'a1', delta(5, 0, ['a2', 'ghost']))).to.deep.include({ connectivitySeq: 5, connectivityResync: false });
    expect(beat(h, 'a2', delta(1, 0, ['a1']))).to.deep.include({ connectivitySeq: 1 });
    expect(h.core.clusterStatus(h.now).connectivity.brokenLinks.map((l) => `${l.a}-${l.b}`)).to.deep.equal(['a1-a2']);
  });

  it('forgets what an agent reported once it stops probing', () => {
    const h = harness(2);
    h.tick();
    beat(h, 'a1', delta(1, 0, ['a2']));
    beat(h, 'a2', delta(1, 0, ['a1']));
    expect(h.core.clusterStatus(h.now).connectivity.brokenLinks).to.have.length(1);
    h.heartbeat('a1');
    h.heartbeat('a2');
    expect(h.core.clusterStatus(h.now).connectivity.brokenLinks).to.deep.equal([]);
  });

  it('a lost node leaves the graph and everyone else’s targets', () => {
    const h = harness(3, { agentTimeoutMs: 10_000 });
    h.tick();
    const v: Record<string, number> = {};
    for (const id of ['a1', 'a2', 'a3']) v[id] = beat(h, id, delta(1, 0, id === 'a3' ? [] : [id === 'a1' ? 'a2' : 'a1'])).probeTargets!.version;
    // a3 cannot reach a1 nor a2: a2 is cut from everyone (a peer still reaching it would vouch for
    // it: partitioned from the master, never lost).
    beat(h, 'a3', delta(2, 1, ['a1', 'a2']), v.a3);
    // a1-a2 both ends report: broken. a3's reports wait for a1 and a2 to be heard after them.
    expect(h.core.clusterStatus(h.now).connectivity.brokenLinks).to.have.length(1);
    // a2 goes silent until it is lost; a1 and a3 keep beating.
    for (let t = 0; t < 11; t++) {
      h.advance(1000);
      beat(h, 'a1', delta(1, 1), v.a1);
      beat(h, 'a3', delta(2, 2), v.a3);
      h.tick();
    }
    expect(h.core.nodeStatus('a2')?.status).to.equal('lost');
    expect(h.core.clusterStatus(h.now).connectivity.brokenLinks.map((l) => `${l.a}-${l.b}`)).to.deep.equal(['a1-a3']);
    expect(h.core.listNodes().find((n) => n.info.nodeId === 'a1')!.unreachablePeers).to.deep.equal(['a3']);
    h.tick(); // the targets are recomputed at the next tick
    const r = beat(h, 'a1', delta(1, 1), v.a1);
    expect(r.probeTargets?.peers.map((p) => p.nodeId)).to.deep.equal(['a3']);
  });
});

describe('probing over the master state: probes (who probes whom) follow what agents confirmed', () => {
  const cfg = { ...DEFAULT_CONFIG, probeAllUpTo: 3, probeSample: 1, probeMaxTargets: 3 };
  function state(n: number): MasterState {
    const st = new MasterState('2', cfg, nullLogger);
    for (let i = 1; i <= n; i++) registerAgent(st, mockNodeInfo({ nodeId: `a${i}`, address: `10.0.0.${i}:7071`, probePort: 7071 }), '2');
    return st;
  }
  const hb = (nodeId: string, d: ConnectivityDeltaInput, probeTargetsVersion: number): HeartbeatInput => ({
    nodeId,
    epoch: '2',
    grantSeq: 0,
    used: { cpuMilli: 0, memoryMb: 0 },
    running: 0,
    pending: 0,
    amWorkers: [],
    connectivity: d,
    probeTargetsVersion,
  });

  it('fills connectivity.probes only when an agent holds its current targets', () => {
    const st = state(3);
    expect(refreshProbeTargets(st)).to.equal(true);
    expect(refreshProbeTargets(st)).to.equal(false); // nothing changed since
    const plan = st.probeTargets.byNode.get('a1')!;
    probeHeartbeat(st, hb('a1', delta(1, 0), 0));
    expect(st.connectivity.probes.has('a1')).to.equal(false);
    probeHeartbeat(st, hb('a1', delta(1, 1), plan.version));
    expect([...st.connectivity.probes.get('a1')!].sort()).to.deep.equal(['a2', 'a3']);
    expect(probersOf(st.connectivity, 'a2')).to.deep.equal(['a1']);
  });

  it('recomputes for app host changes only above allUpTo, and at most every APP_HOSTS_REFRESH_MS', () => {
    const st = state(5);
    st.now = 1000;
    refreshProbeTargets(st);
    st.probeTargets.appsDirty = true;
    st.now = 1000 + APP_HOSTS_REFRESH_MS - 1;
    expect(refreshProbeTargets(st)).to.equal(false);
    expect(st.probeTargets.appsDirty).to.equal(true); // kept for later
    st.now = 1000 + APP_HOSTS_REFRESH_MS;
    refreshProbeTargets(st);
    expect(st.probeTargets.appsDirty).to.equal(false);
    expect(st.probeTargets.computedAtMs).to.equal(st.now);
    // Membership changes do not wait.
    setNodeStatus(st, st.nodes.get('a5')!, 'lost', 'test');
    st.now += 1;
    expect(refreshProbeTargets(st)).to.equal(true);
  });

  it('recomputes on an app host change only above allUpTo', () => {
    const st = state(3);
    refreshProbeTargets(st);
    st.probeTargets.appsDirty = true;
    expect(refreshProbeTargets(st)).to.equal(false); // 3 members: all of them anyway
    const big = state(5);
    refreshProbeTargets(big);
    const before = big.probeTargets.byNode.get('a1')!.version;
    big.probeTargets.appsDirty = true;
    expect(refreshProbeTargets(big)).to.equal(false); // no app: the same lists, the same versions
    expect(big.probeTargets.byNode.get('a1')!.version).to.equal(before);
    setNodeStatus(big, big.nodes.get('a5')!, 'lost', 'test');
    expect(refreshProbeTargets(big)).to.equal(true);
    expect([...big.probeTargets.byNode.keys()].sort()).to.deep.equal(['a1', 'a2', 'a3', 'a4']);
  });
});
