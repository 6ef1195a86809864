/**
 * The master's scheduler core: a pure function from a read-only snapshot of the cluster to a plan
 * (in the manner of nomad's `scheduler/`). The master applies the plan; nothing here does IO, reads
 * the clock or draws random numbers, so the same snapshot always yields the same plan.
 *
 * Algorithm, in one paragraph: quota groups take turns, the group with the lowest weighted dominant
 * share (its usage, plus what this plan gave it, over the cluster's schedulable capacity, over its
 * weight) goes next. The group serves its head unit (priority, then submission order), and within
 * the unit its node requests, then rack requests, then "any" requests. A request lands on the
 * requested node if it has room, else on the least-loaded node of the rack, else on the least-loaded
 * node of the cluster ("least loaded" = lowest dominant share of allocated/capacity, ties by node id).
 * Conceptually one slot is placed per turn; a turn places a batch of k slots only when k one-slot
 * turns would have made exactly the same choice, so batching changes speed, never the plan.
 *
 * ```ts
 * const plan = schedule({ nodes, units, groups, groupUsage });
 * for (const p of plan.placements) grant(p.nodeId, p.appId, p.suId, p.slots);
 * ```
 */
import { add, dominantShare, fits, isNonNegative, isZero, scale, slotsThatFit, sub, ZERO } from '@fuxi/common';
import type { Resource } from '@fuxi/common';

export interface SchedNode {
  id: string;
  rack: string;
  capacity: Resource;
  allocated: Resource;
  schedulable: boolean;
}

export interface SchedUnit {
  appId: string;
  suId: string;
  /** Resource of one slot. */
  resource: Resource;
  /** Higher is served first (within the unit's quota group). */
  priority: number;
  quotaGroup: string;
  /** App submission order; lower is served first among equal priorities (FIFO). */
  submitSeq: number;
  /** Location -> outstanding slot count. Location is '' (any), 'node:<id>' or 'rack:<name>'. */
  requests: ReadonlyMap<string, number>;
  preemptible?: boolean;
}

export interface QuotaGroup {
  name: string;
  /** Fair-share weight, > 0. */
  weight: number;
  /** Hard cap on the group's total allocation. */
  limit?: Resource;
}

export interface SchedulerSnapshot {
  nodes: ReadonlyMap<string, SchedNode>;
  /** Only units with outstanding requests need be present. */
  units: readonly SchedUnit[];
  /** A group not listed behaves as `{ weight: 1 }` with no limit. */
  groups: ReadonlyMap<string, QuotaGroup>;
  /** Current allocation of each group (all apps). */
  groupUsage: ReadonlyMap<string, Resource>;
}

export type LocalityLevel = 'node' | 'rack' | 'any';

export interface Placement {
  appId: string;
  suId: string;
  nodeId: string;
  slots: number;
  /** The request key that was consumed ('', 'node:<id>' or 'rack:<name>'). */
  location: string;
  /** Where the slots actually landed relative to `location`. */
  localityLevel: LocalityLevel;
}

export type UnsatisfiedReason = 'no-capacity' | 'quota-limit';

export interface Unsatisfied {
  appId: string;
  suId: string;
  slots: number;
  reason: UnsatisfiedReason;
}

export interface Plan {
  placements: Placement[];
  unsatisfied: Unsatisfied[];
}

export const NODE_PREFIX = 'node:';
export const RACK_PREFIX = 'rack:';

/** Computes a plan for every outstanding request in `snapshot`. Pure and deterministic. */
export function schedule(snapshot: SchedulerSnapshot): Plan {
  const cluster = new ClusterState(snapshot.nodes);
  const out = new PlanBuilder();
  const groups = buildGroups(snapshot, cluster.total, out);
  const active = [...groups.values()].filter((g) => g.units.length > 0);

  while (active.length > 0) {
    const [gi, rival] = pickGroup(active);
    const group = active[gi];
    if (group === undefined) break;
    const unit = group.units[group.head];
    if (unit === undefined) {
      active.splice(gi, 1);
      continue;
    }
    const req = unit.reqs[unit.cur];
    if (req === undefined || req.remaining === 0) {
      if (req === undefined) group.head++;
      else unit.cur++;
      continue;
    }
    const r = unit.su.resource;

    const quotaRoom = group.quotaRoom(r);
    if (quotaRoom === 0) {
      for (const q of unit.reqs.slice(unit.cur)) out.unsatisfied(unit.su, q.remaining, 'quota-limit');
      group.head++;
      continue;
    }

    const pick = cluster.find(r, req);
    if (pick === undefined) {
      out.unsatisfied(unit.su, req.remaining, 'no-capacity');
      req.remaining = 0;
      continue;
    }

    // How many consecutive one-slot turns would make this same choice.
    const cap = Math.min(req.remaining, quotaRoom, slotsThatFit(r, cluster.free(pick.node)));
    let k = 1;
    if (isZero(r)) k = cap; // no share moves, so every later turn repeats this one
    else while (k < cap && group.winsAfter(k, r, rival, cluster.total) && cluster.winsAfter(pick, k, r)) k++;

    cluster.place(pick.node, scale(r, k));
    group.take(scale(r, k), cluster.total);
    req.remaining -= k;
    out.place(unit.su, cluster.nodeId(pick.node), k, req, levelOf(req, cluster.nodeOf(pick.node)));
  }
  return out.build();
}

// ---- requests and units ------------------------------------------------------------------------

interface Request {
  readonly location: string;
  readonly kind: LocalityLevel;
  /** The requested node id for kind 'node'. */
  readonly nodeId: string | undefined;
  /** The requested rack (kind 'rack') or the requested node's rack (kind 'node'), if known. */
  readonly rack: string | undefined;
  remaining: number;
}

interface UnitState {
  readonly su: SchedUnit;
  /** Node requests first, then rack, then any; by location within a kind. */
  readonly reqs: Request[];
  cur: number;
}

const KIND_ORDER: Record<LocalityLevel, number> = { node: 0, rack: 1, any: 2 };

function buildUnit(su: SchedUnit, nodes: ReadonlyMap<string, SchedNode>): UnitState {
  const reqs: Request[] = [];
  for (const [location, count] of su.requests) {
    const remaining = Number.isFinite(count) ? Math.floor(count) : 0;
    if (remaining <= 0) continue;
    if (location.startsWith(NODE_PREFIX)) {
      const nodeId = location.slice(NODE_PREFIX.length);
      const node = nodes.get(nodeId);
      // An unknown node has no rack either: the request falls back to any node.
      reqs.push({ location, kind: node ? 'node' : 'any', nodeId, rack: node?.rack, remaining });
    } else if (location.startsWith(RACK_PREFIX)) {
      reqs.push({ location, kind: 'rack', nodeId: undefined, rack: location.slice(RACK_PREFIX.length), remaining });
    } else {
      reqs.push({ location, kind: 'any', nodeId: undefined, rack: undefined, remaining });
    }
  }
  reqs.sort((a, b) => KIND_ORDER[a.kind] - KIND_ORDER[b.kind] || cmpStr(a.location, b.location));
  return { su, reqs, cur: 0 };
}

function levelOf(req: Request, node: SchedNode): LocalityLevel {
  if (req.nodeId !== undefined && node.id === req.nodeId) return 'node';
  if (req.rack !== undefined && node.rack === req.rack) return 'rack';
  return 'any';
}

// ---- quota groups -------------------------------------------------------------------------------

class GroupState {
  head = 0;
  /** Weighted dominant share of `usage`; only the served group's changes, so it is kept here. */
  share: number;

  constructor(
    readonly name: string,
    readonly weight: number,
    readonly limit: Resource | undefined,
    private usage: Resource,
    readonly units: UnitState[],
    total: Resource,
  ) {
    this.share = this.shareWith(ZERO, total);
  }

  take(amount: Resource, total: Resource): void {
    this.usage = add(this.usage, amount);
    this.share = this.shareWith(ZERO, total);
  }

  /** Weighted dominant share after `extra` more resources. */
  shareWith(extra: Resource, total: Resource): number {
    return dominantShare(add(this.usage, extra), total) / this.weight;
  }

  /**
   * Slots of `r` the group may still take under its limit. A group already over its limit in any
   * dimension (the limit was lowered) gets nothing, not even slots that do not use that dimension.
   */
  quotaRoom(r: Resource): number {
    if (this.limit === undefined) return Infinity;
    if (!fits(this.usage, this.limit)) return 0;
    return slotsThatFit(r, sub(this.limit, this.usage));
  }

  /** Would this group still be picked, ahead of `rival`, after k more slots of `r`? */
  winsAfter(k: number, r: Resource, rival: GroupState | undefined, total: Resource): boolean {
    if (rival === undefined) return true;
    const mine = this.shareWith(scale(r, k), total);
    return mine < rival.share || (mine === rival.share && this.name < rival.name);
  }
}

function buildGroups(snapshot: SchedulerSnapshot, total: Resource, out: PlanBuilder): Map<string, GroupState> {
  const groups = new Map<string, GroupState>();
  for (const su of snapshot.units) {
    let g = groups.get(su.quotaGroup);
    if (g === undefined) {
      const spec = snapshot.groups.get(su.quotaGroup);
      const weight = spec !== undefined && spec.weight > 0 && Number.isFinite(spec.weight) ? spec.weight : 1;
      g = new GroupState(su.quotaGroup, weight, spec?.limit, snapshot.groupUsage.get(su.quotaGroup) ?? ZERO, [], total);
      groups.set(su.quotaGroup, g);
    }
    const unit = buildUnit(su, snapshot.nodes);
    if (unit.reqs.length === 0) continue;
    if (!isValidSlot(su.resource)) {
      // A negative or non-finite slot would corrupt the capacity arithmetic: it fits nowhere.
      for (const q of unit.reqs) out.unsatisfied(su, q.remaining, 'no-capacity');
      continue;
    }
    g.units.push(unit);
  }
  for (const g of groups.values()) {
    g.units.sort(
      (a, b) =>
        b.su.priority - a.su.priority ||
        a.su.submitSeq - b.su.submitSeq ||
        cmpStr(a.su.appId, b.su.appId) ||
        cmpStr(a.su.suId, b.su.suId),
    );
  }
  return groups;
}

/** Index of the group to serve next, and its closest rival (the runner-up). */
function pickGroup(active: readonly GroupState[]): [number, GroupState | undefined] {
  // A linear scan per turn: the number of groups with outstanding requests is small.
  let best = -1;
  let bestShare = Infinity;
  let second: GroupState | undefined;
  let secondShare = Infinity;
  for (let i = 0; i < active.length; i++) {
    const g = active[i];
    if (g === undefined) continue;
    const s = g.share;
    const b = active[best];
    if (b === undefined || s < bestShare || (s === bestShare && g.name < b.name)) {
      second = b;
      secondShare = bestShare;
      best = i;
      bestShare = s;
    } else if (second === undefined || s < secondShare || (s === secondShare && g.name < second.name)) {
      second = g;
      secondShare = s;
    }
  }
  return [best, second];
}

function isValidSlot(r: Resource): boolean {
  return isNonNegative(r) && Number.isFinite(r.cpuMilli) && Number.isFinite(r.memoryMb);
}

// ---- nodes --------------------------------------------------------------------------------------

interface Pick {
  node: number;
  /** The heap the node was found in and the next-best node in it, for batching; none at node level. */
  heap: NodeHeap | undefined;
  rival: number | undefined;
}

/**
 * Mutable view of the nodes during one schedule() call. Candidates are the schedulable nodes with
 * non-zero capacity; each sits in a global heap and its rack's heap, ordered by (load, id). The
 * order is total (ids are unique), so the plan does not depend on the order nodes come in. Heaps are
 * built on first use, in linear time: a plan that only needs the requested nodes, or no rack, does
 * not pay for them (this runs on every request the master gets).
 */
class ClusterState {
  readonly total: Resource;
  private readonly nodes: SchedNode[] = [];
  private readonly ids: string[] = [];
  private readonly alloc: Resource[] = [];
  private readonly load: number[] = [];
  private byIdMap: Map<string, number> | undefined;
  private allHeap: NodeHeap | undefined;
  private readonly racks = new Map<string, NodeHeap>();
  private rackPos: Int32Array | undefined;
  private readonly lessFn = (a: number, b: number): boolean => this.less(a, b);
  /** Slot shapes already known to fit nowhere; allocations only grow, so this stays true. */
  private readonly hopeless: Resource[] = [];

  constructor(nodes: ReadonlyMap<string, SchedNode>) {
    let cpu = 0;
    let mem = 0;
    for (const n of nodes.values()) {
      if (!n.schedulable || isZero(n.capacity)) continue;
      this.nodes.push(n);
      this.ids.push(n.id);
      this.alloc.push(n.allocated);
      this.load.push(dominantShare(n.allocated, n.capacity));
      cpu += n.capacity.cpuMilli;
      mem += n.capacity.memoryMb;
    }
    this.total = { cpuMilli: cpu, memoryMb: mem };
  }

  /** Candidate index by node id (for node requests). */
  private get byId(): Map<string, number> {
    if (this.byIdMap === undefined) {
      this.byIdMap = new Map();
      for (let i = 0; i < this.ids.length; i++) this.byIdMap.set(this.ids[i]!, i);
    }
    return this.byIdMap;
  }

  /** Every candidate, ordered by (load, id). */
  private get all(): NodeHeap {
    if (this.allHeap === undefined) {
      const items = Array.from({ length: this.nodes.length }, (_, i) => i);
      this.allHeap = new NodeHeap(this.lessFn, new Int32Array(this.nodes.length), items);
    }
    return this.allHeap;
  }

  /** The candidates of one rack, ordered by (load, id); undefined when the rack has none. */
  private rack(name: string): NodeHeap | undefined {
    let h = this.racks.get(name);
    if (h === undefined) {
      const items: number[] = [];
      for (let i = 0; i < this.nodes.length; i++) if (this.nodes[i]!.rack === name) items.push(i);
      if (items.length === 0) return undefined;
      this.rackPos ??= new Int32Array(this.nodes.length);
      h = new NodeHeap(this.lessFn, this.rackPos, items);
      this.racks.set(name, h);
    }
    return h;
  }

  nodeOf(i: number): SchedNode {
    const n = this.nodes[i];
    if (n === undefined) throw new RangeError(`no candidate node ${i}`);
    return n;
  }

  nodeId(i: number): string {
    return this.nodeOf(i).id;
  }

  free(i: number): Resource {
    return sub(this.nodeOf(i).capacity, this.alloc[i] ?? ZERO);
  }

  /** The node one slot of `r` for `req` goes to: requested node, else its rack, else anywhere. */
  find(r: Resource, req: Request): Pick | undefined {
    if (this.hopeless.some((h) => fits(h, r))) return undefined;
    const fitsOn = (i: number): boolean => fits(r, this.free(i));
    if (req.kind === 'node' && req.nodeId !== undefined) {
      const i = this.byId.get(req.nodeId);
      if (i !== undefined && fitsOn(i)) return { node: i, heap: undefined, rival: undefined };
    }
    if (req.rack !== undefined) {
      const h = this.rack(req.rack);
      const found = h?.findFirst(fitsOn);
      if (h !== undefined && found !== undefined) return { node: found.item, heap: h, rival: found.next };
    }
    const found = this.all.findFirst(fitsOn);
    if (found !== undefined) return { node: found.item, heap: this.all, rival: found.next };
    this.hopeless.push(r);
    return undefined;
  }

  /** Would `pick.node` still be the best choice after k more slots of `r`? */
  winsAfter(pick: Pick, k: number, r: Resource): boolean {
    if (pick.heap === undefined || pick.rival === undefined) return true;
    const n = this.nodeOf(pick.node);
    const mine = dominantShare(add(this.alloc[pick.node] ?? ZERO, scale(r, k)), n.capacity);
    const theirs = this.load[pick.rival] ?? Infinity;
    return mine < theirs || (mine === theirs && n.id < this.nodeId(pick.rival));
  }

  place(i: number, amount: Resource): void {
    const n = this.nodeOf(i);
    const a = add(this.alloc[i] ?? ZERO, amount);
    this.alloc[i] = a;
    this.load[i] = dominantShare(a, n.capacity);
    this.allHeap?.update(i);
    this.racks.get(n.rack)?.update(i);
  }

  private less(a: number, b: number): boolean {
    const la = this.load[a] ?? 0;
    const lb = this.load[b] ?? 0;
    return la < lb || (la === lb && (this.ids[a] ?? '') < (this.ids[b] ?? ''));
  }
}

/**
 * Binary min-heap of node indices with position tracking, so a node whose load changed can be
 * re-sifted in O(log n). Heaps that hold disjoint node sets (the racks) share one position array.
 */
class NodeHeap {
  private readonly items: number[];
  private readonly scan: number[] = [];

  /** A heap of `items` (taken over), built bottom-up in linear time. */
  constructor(
    private readonly less: (a: number, b: number) => boolean,
    private readonly pos: Int32Array,
    items: number[] = [],
  ) {
    this.items = items;
    for (let p = 0; p < items.length; p++) pos[items[p]!] = p;
    for (let p = (items.length >> 1) - 1; p >= 0; p--) this.down(p);
  }

  update(item: number): void {
    const p = this.pos[item];
    if (p === undefined || this.items[p] !== item) return;
    this.down(this.up(p));
  }

  /**
   * The least item satisfying `ok`, visiting items in heap order (best-first over the tree), and
   * the item that would come right after it in that order (`ok` or not), if any.
   */
  findFirst(ok: (item: number) => boolean): { item: number; next: number | undefined } | undefined {
    const frontier = this.scan; // a small heap of positions, ordered by the items they hold
    frontier.length = 0;
    if (this.items.length > 0) frontier.push(0);
    const at = (p: number): number => this.items[p] ?? -1;
    const lessPos = (a: number, b: number): boolean => this.less(at(a), at(b));
    while (frontier.length > 0) {
      const p = popPos(frontier, lessPos);
      const item = at(p);
      const left = 2 * p + 1;
      const right = left + 1;
      if (left < this.items.length) pushPos(frontier, left, lessPos);
      if (right < this.items.length) pushPos(frontier, right, lessPos);
      if (ok(item)) {
        const next = frontier[0];
        return { item, next: next === undefined ? undefined : at(next) };
      }
    }
    return undefined;
  }

  private up(p: number): number {
    const { items, pos } = this;
    const item = items[p] ?? -1;
    while (p > 0) {
      const parent = (p - 1) >> 1;
      const pi = items[parent] ?? -1;
      if (!this.less(item, pi)) break;
      items[p] = pi;
      pos[pi] = p;
      p = parent;
    }
    items[p] = item;
    pos[item] = p;
    return p;
  }

  private down(p: number): void {
    const { items, pos } = this;
    const n = items.length;
    const item = items[p] ?? -1;
    for (;;) {
      let c = 2 * p + 1;
      if (c >= n) break;
      const r = c + 1;
      if (r < n && this.less(items[r] ?? -1, items[c] ?? -1)) c = r;
      const ci = items[c] ?? -1;
      if (!this.less(ci, item)) break;
      items[p] = ci;
      pos[ci] = p;
      p = c;
    }
    items[p] = item;
    pos[item] = p;
  }
}

function pushPos(h: number[], v: number, less: (a: number, b: number) => boolean): void {
  h.push(v);
  let p = h.length - 1;
  while (p > 0) {
    const parent = (p - 1) >> 1;
    const pv = h[parent] ?? 0;
    if (!less(v, pv)) break;
    h[p] = pv;
    p = parent;
  }
  h[p] = v;
}

function popPos(h: number[], less: (a: number, b: number) => boolean): number {
  const top = h[0] ?? 0;
  const last = h.pop() ?? 0;
  if (h.length === 0) return top;
  let p = 0;
  for (;;) {
    let c = 2 * p + 1;
    if (c >= h.length) break;
    if (c + 1 < h.length && less(h[c + 1] ?? 0, h[c] ?? 0)) c++;
    const cv = h[c] ?? 0;
    if (!less(cv, last)) break;
    h[p] = cv;
    p = c;
  }
  h[p] = last;
  return top;
}

// ---- output -------------------------------------------------------------------------------------

class PlanBuilder {
  private readonly placements = new Map<string, Placement>();
  private readonly missing = new Map<string, Unsatisfied>();

  place(su: SchedUnit, nodeId: string, slots: number, req: Request, localityLevel: LocalityLevel): void {
    const key = `${su.appId}\u0000${su.suId}\u0000${nodeId}\u0000${req.location}`;
    const p = this.placements.get(key);
    if (p !== undefined) p.slots += slots;
    else this.placements.set(key, { appId: su.appId, suId: su.suId, nodeId, slots, location: req.location, localityLevel });
  }

  unsatisfied(su: SchedUnit, slots: number, reason: UnsatisfiedReason): void {
    if (slots <= 0) return;
    const key = `${su.appId}\u0000${su.suId}\u0000${reason}`;
    const u = this.missing.get(key);
    if (u !== undefined) u.slots += slots;
    else this.missing.set(key, { appId: su.appId, suId: su.suId, slots, reason });
  }

  build(): Plan {
    return { placements: [...this.placements.values()], unsatisfied: [...this.missing.values()] };
  }
}

/** Code-unit string order: locale-independent, so plans are the same on every machine. */
function cmpStr(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
