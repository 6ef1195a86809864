/**
 * Property test: the core against a simulated master (random placement, lost and late assignment
 * messages healed by full tables) and simulated agents (random outcomes, duplicated events).
 * The simulated master refuses requests as the real one does (a task's outstanding plus granted
 * slots above its instances plus an allowance), nodes time out and come back, and links between
 * the AM's host and the nodes break and heal (the master places nothing on hosts the AM gave
 * up). Invariants: the
 * AM never runs more workers of an SU on a node than the master assigned, never plans a worker id
 * twice nor on a host it gave up, and always finishes (refused requests are taken back and asked again); a successful job
 * ran every instance to success.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { DagAppMaster } from '../dag-am.js';
import type { AmEffect, Assignment, AssignmentUpdate } from '../types.js';
import { ev, mockJob, mockTask } from './factories.js';

function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const NODES = ['n1', 'n2', 'n3'];

function simulate(
  seed: number,
  failRate: number,
): { result: { succeeded: boolean; message: string }; violations: string[]; succeededIds: Set<string>; total: number } {
  const r = rng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
  const spec = mockJob(
    [
      mockTask({ name: 'a', instances: 1 + Math.floor(r() * 5), maxAttempts: 3 }),
      mockTask({ name: 'b', instances: 1 + Math.floor(r() * 3), maxAttempts: 2, dependsOn: ['a'], locality: { nodes: ['n2'], racks: ['r1'] } }),
      mockTask({ name: 'c', instances: 1 + Math.floor(r() * 4), maxAttempts: 3, dependsOn: ['a'] }),
      mockTask({ name: 'd', instances: 1, maxAttempts: 3, dependsOn: ['b', 'c'] }),
    ],
    { rerunAfterMs: 50 },
  );
  // Nodes the master told the AM are timing out: nothing is placed there, their slots do not count.
  const timingOut = new Set<string>();
  let refusals = 0;
  const am = new DagAppMaster({ returnSettleMs: 1e12, nodeId: 'n0' });
  // Broken links between hosts (the AM's host n0 and the nodes), as the master would send them.
  const links = new Set<string>();
  const asgn = new Map<string, number>();
  const outstanding = new Map<string, number>();
  let seq = 0;
  const inbox: AssignmentUpdate[] = [];
  const running = new Map<string, { su: string; node: string }>();
  const planned = new Set<string>();
  const succeededIds = new Set<string>();
  const violations: string[] = [];
  let result: { succeeded: boolean; message: string } | undefined;
  let now = 0;

  const entry = (su: string, node: string): Assignment => ({ suId: su, nodeId: node, nodeAddress: `${node}:1`, slots: asgn.get(`${su}|${node}`) ?? 0 });
  const push = (su: string, node: string) => {
    seq++;
    if (r() < 0.1) return; // lost
    inbox.push({ seq, full: false, assignments: [entry(su, node)] });
  };
  const apply = (effects: AmEffect[]) => {
    for (const e of effects) {
      if (result) violations.push(`effect after finish: ${e.kind}`);
      switch (e.kind) {
        case 'request': {
          // As the master does (request-limits.ts): a call that raises a task's outstanding slots
          // above its instances plus one (the least allowance), counting granted slots on nodes not
          // timing out, is refused whole. The AM asks for at most its instances as it counts them;
          // it is refused when a cancellation crossed placements it has not heard of (pushes late
          // or lost): it takes the request back and asks again later.
          const after = new Map(outstanding);
          for (const d of e.deltas) after.set(d.suId, Math.max(0, (after.get(d.suId) ?? 0) + d.delta));
          const over = [...after].some(([su, n]) => {
            let granted = 0;
            for (const node of NODES) if (!timingOut.has(node)) granted += asgn.get(`${su}|${node}`) ?? 0;
            const instances = spec.tasks.find((t) => t.name === su)?.instances ?? 0;
            return n > (outstanding.get(su) ?? 0) && n + granted > instances + 1;
          });
          if (over) {
            refusals++;
            am.requestRefused(e.units, e.deltas);
          } else for (const [su, n] of after) outstanding.set(su, n);
          break;
        }
        case 'return':
          for (const x of e.returns) {
            const k = `${x.suId}|${x.nodeId}`;
            if ((asgn.get(k) ?? 0) < x.slots) violations.push(`returned ${x.slots} of ${k} holding ${asgn.get(k) ?? 0}`);
            asgn.set(k, Math.max(0, (asgn.get(k) ?? 0) - x.slots));
            push(x.suId, x.nodeId);
          }
          break;
        case 'plan':
          if (am.placementConstraints().avoid.includes(e.nodeId)) violations.push(`planned on ${e.nodeId}, a host given up`);
          for (const p of e.plans) {
            if (planned.has(p.workerId)) violations.push(`planned twice: ${p.workerId}`);
            planned.add(p.workerId);
            running.set(p.workerId, { su: p.suId, node: e.nodeId });
            const n = [...running.values()].filter((w) => w.su === p.suId && w.node === e.nodeId).length;
            const held = asgn.get(`${p.suId}|${e.nodeId}`) ?? 0;
            if (n > held) violations.push(`${n} workers of ${p.suId} on ${e.nodeId} holding ${held}`);
          }
          break;
        case 'stop':
          for (const id of e.workerIds) running.delete(id);
          break;
        case 'finish':
          result = { succeeded: e.succeeded, message: e.message };
          break;
      }
    }
  };

  apply(am.start(spec, { seq: 0, assignments: [] }, now));
  for (let step = 0; step < 20_000 && !result; step++) {
    now += 10;
    const x = r();
    if (x < 0.3) {
      const sus = [...outstanding.entries()].filter(([, n]) => n > 0).map(([su]) => su);
      if (sus.length === 0) continue;
      const su = pick(sus);
      const avoid = new Set(am.placementConstraints().avoid);
      const healthy = NODES.filter((n) => !timingOut.has(n) && !avoid.has(n));
      if (healthy.length === 0) continue;
      const node = pick(healthy);
      outstanding.set(su, (outstanding.get(su) ?? 0) - 1);
      asgn.set(`${su}|${node}`, (asgn.get(`${su}|${node}`) ?? 0) + 1);
      push(su, node);
    } else if (x < 0.55) {
      const m = inbox.shift();
      if (m) apply(am.assignments(m, now));
    } else if (x < 0.85) {
      const ids = [...running.keys()];
      if (ids.length === 0) continue;
      const id = pick(ids);
      const w = running.get(id)!;
      running.delete(id);
      const ok = r() >= failRate;
      if (ok) succeededIds.add(id);
      const e = ev(id, ok ? 'succeeded' : 'failed');
      apply(am.workerEvents(w.node, r() < 0.2 ? [e, e] : [e], now));
    } else if (x < 0.95) {
      // Heartbeat: the master answers with the full table when the AM is behind and nothing is in flight.
      if (inbox.length === 0 && am.assignmentSeq !== seq) {
        const table = [...asgn.keys()].map((k) => entry(...(k.split('|') as [string, string]))).filter((a) => a.slots > 0);
        apply(am.assignments({ seq, full: true, assignments: table, returnsReflected: am.returnsIssued }, now));
      }
    } else if (x < 0.97) {
      apply(am.tick(now));
    } else if (x < 0.99) {
      // A link between two hosts breaks, or heals.
      const hosts = ['n0', ...NODES];
      const a = pick(hosts);
      const b = pick(hosts.filter((h) => h !== a));
      const k = a < b ? `${a}|${b}` : `${b}|${a}`;
      if (!links.delete(k)) links.add(k);
      const list = [...links].map((l) => ({ a: l.split('|')[0]!, b: l.split('|')[1]! }));
      apply(am.connectivityChanged(list, [], now));
    } else {
      // A node times out (its instances re-run elsewhere after rerunAfterMs, the old attempts kept
      // as shadows) or comes back.
      const node = pick(NODES);
      if (timingOut.delete(node)) apply(am.agentsTimedOut([], [node], now));
      else if (timingOut.size < NODES.length - 1) {
        timingOut.add(node);
        apply(am.agentsTimedOut([node], [], now));
      }
    }
  }
  if (!result) violations.push(`did not finish (${refusals} requests refused)`);
  const total = spec.tasks.reduce((n, t) => n + t.instances, 0);
  return { result: result ?? { succeeded: false, message: '' }, violations, succeededIds, total };
}

describe('DagAppMaster (property)', () => {
  it('never over-uses slots, never plans a worker twice and always finishes', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 2 ** 31 - 1 }), fc.constantFrom(0, 0.1, 0.3), (seed, failRate) => {
        const { result, violations, succeededIds, total } = simulate(seed, failRate);
        expect(violations, violations.slice(0, 5).join('; ')).to.deep.equal([]);
        if (failRate === 0) expect(result.succeeded, result.message).to.equal(true);
        if (result.succeeded) {
          const instances = new Set([...succeededIds].map((id) => id.replace(/\.\d+$/, '')));
          expect(instances.size).to.equal(total);
        } else {
          expect(result.message).to.match(/^task "\w" instance \d+ failed after \d attempts?( \(plus \d+ not counted: [^)]*\))?: exit code 1$/);
        }
      }),
      { numRuns: 200 },
    );
  });
});
