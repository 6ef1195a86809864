/**
 * Who probes whom: each agent's probe targets (the peers whose UDP responders it pings, see
 * agent/src/core/probes.ts), chosen by the master and sent with heartbeat answers.
 *
 * - **Up to `probeAllUpTo` (64) probing nodes, all of them**: every node probes every other, as
 *   CASPR does; every link is watched from both ends.
 * - **Above it, a bounded deterministic sample** plus the hosts that share an application with the
 *   node. Nodes sit on a ring ordered by a hash of their ids (FNV-1a, ties by id); each node probes
 *   its `probeSample` (16) successors, so each node is probed by exactly as many predecessors
 *   (the vouchers a node partitioned from the master needs). Then, up to `probeMaxTargets` (64) in
 *   all: the AM hosts of the apps that hold slots on the node, and its co-hosts in each such app,
 *   taken round-robin over the apps, each app's hosts in ring order after the node. So every
 *   worker host probes its AM's host, and a job's hosts watch the links between them that a job
 *   needs, up to the bound.
 *
 * A node probes at most max(N - 1, probeMaxTargets) peers, 5 pings a second each at the agents'
 * default 200 ms period (docs/architecture.md, "Network partitions", "Probing" and "What probing costs").
 *
 * `computeProbeTargets` is a pure function of the members and the apps. probing.ts
 * (`refreshProbeTargets`) recomputes them over the master state when membership (registration,
 * loss, return) or, above the threshold, the hosts of an app changed, and gives each node whose
 * list changed a new version (numbered from `connectivityBase(epoch)`, so a new leader's versions
 * never meet an old one's); a heartbeat naming another version gets the list.
 *
 * ```ts
 * const t = computeProbeTargets(
 *   [{ nodeId: 'a1', address: '10.0.0.1:7071' }, { nodeId: 'a2', address: '10.0.0.2:7071' }],
 *   [],
 *   DEFAULT_PROBE_TARGETS,
 * ); // Map { a1 => ['a2'], a2 => ['a1'] }
 * ```
 */
import { connectivityBase } from './connectivity.js';

export interface ProbeTargetsConfig {
  /** Up to this many probing nodes, every node probes every other. */
  allUpTo: number;
  /** Above it, each node probes this many successors on the hash ring... */
  sample: number;
  /** ...and hosts sharing an app with it, up to this many targets in all. */
  maxTargets: number;
}

export const DEFAULT_PROBE_TARGETS: Readonly<ProbeTargetsConfig> = Object.freeze({ allUpTo: 64, sample: 16, maxTargets: 64 });

/** A node that probes and answers probes: its id and its responder's host:port. */
export interface ProbeMember {
  nodeId: string;
  address: string;
}

/** An application's hosts (node ids of its slots) and the host of its AM. */
export interface ProbeApp {
  hosts: readonly string[];
  amHost?: string;
}

/** FNV-1a (32 bits) of a string's UTF-16 code units: the ring position. */
export function ringHash(id: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) {
    h ^= id.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/** Node ids in ring order (hash, then id). */
export function ringOrder(ids: Iterable<string>): string[] {
  return [...ids]
    .map((id) => ({ id, h: ringHash(id) }))
    .sort((a, b) => a.h - b.h || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
    .map((x) => x.id);
}

/** Each member's targets (node ids, sorted). Pure and deterministic. */
export function computeProbeTargets(members: readonly ProbeMember[], apps: readonly ProbeApp[], cfg: ProbeTargetsConfig): Map<string, string[]> {
  const ids = [...new Set(members.map((m) => m.nodeId))];
  const out = new Map<string, string[]>();
  if (ids.length <= cfg.allUpTo) {
    const sorted = [...ids].sort();
    for (const id of sorted)
      out.set(
        id,
        sorted.filter((p) => p !== id),
      );
    return out;
  }
  const ring = ringOrder(ids);
  const pos = new Map(ring.map((id, i) => [id, i]));
  const n = ring.length;
  // Each app's member hosts in ring order, and the apps of each node.
  const appRings: Array<{ ring: string[]; at: Map<string, number>; amHost: string | undefined }> = [];
  const appsOf = new Map<string, number[]>();
  for (const app of apps) {
    const hosts = ringOrder(new Set(app.hosts.filter((h) => pos.has(h))));
    if (hosts.length === 0) continue;
    const k = appRings.length;
    appRings.push({ ring: hosts, at: new Map(hosts.map((h, i) => [h, i])), amHost: app.amHost !== undefined && pos.has(app.amHost) ? app.amHost : undefined });
    for (const h of hosts) {
      const list = appsOf.get(h);
      if (list) list.push(k);
      else appsOf.set(h, [k]);
    }
  }
  const sample = Math.min(cfg.sample, n - 1);
  const max = Math.max(cfg.maxTargets, sample);
  for (let i = 0; i < n; i++) {
    const id = ring[i]!;
    const chosen = new Set<string>();
    for (let j = 1; j <= sample; j++) chosen.add(ring[(i + j) % n]!);
    const mine = appsOf.get(id) ?? [];
    // The AM hosts of its apps first: every worker host watches its link to its AM.
    const amHosts = [...new Set(mine.map((k) => appRings[k]!.amHost).filter((h): h is string => h !== undefined && h !== id))];
    for (const h of amHosts.sort((a, b) => pos.get(a)! - pos.get(b)!)) {
      if (chosen.size >= max) break;
      chosen.add(h);
    }
    // Then co-hosts, round-robin over its apps, each app's ring from the node on.
    const cursors = mine.map((k) => ({ app: appRings[k]!, step: 1 }));
    while (chosen.size < max && cursors.length > 0) {
      for (let c = 0; c < cursors.length && chosen.size < max;) {
        const cur = cursors[c]!;
        const r = cur.app.ring;
        if (cur.step >= r.length) {
          cursors.splice(c, 1);
          continue;
        }
        chosen.add(r[(cur.app.at.get(id)! + cur.step) % r.length]!);
        cur.step++;
        c++;
      }
    }
    chosen.delete(id);
    out.set(id, [...chosen].sort());
  }
  return out;
}

// ------------------------------------------------------------------ the plan the master keeps

/** A peer as a heartbeat answer names it. */
export interface ProbePeerView {
  nodeId: string;
  address: string;
}

/** The master's current probe targets and what triggers their recomputation (probing.ts). */
export interface ProbePlan {
  /** The last version handed out. */
  counter: number;
  byNode: Map<string, { version: number; peers: ProbePeerView[] }>;
  /** Membership changed (a registration, a loss, a return): recompute. */
  membersDirty: boolean;
  /** A node joined or left an app's hosts: recompute when above `allUpTo`. */
  appsDirty: boolean;
  /** Probing members at the last computation. */
  members: number;
  /** When the targets were last computed (the master's clock). */
  computedAtMs: number;
}

/** An empty plan whose versions start at `connectivityBase(epoch)`, above any older leader's. */
export function newProbePlan(epoch: string): ProbePlan {
  return { counter: connectivityBase(epoch), byNode: new Map(), membersDirty: true, appsDirty: false, members: 0, computedAtMs: Number.NEGATIVE_INFINITY };
}
