/**
 * The nodes during one schedule() call: free capacity, load, and heaps per rack and for the
 * cluster that find the least-loaded node where a slot fits.
 */
import { add, dominantShare, fits, isZero, scale, sub, ZERO } from '@fuxi/common';
import type { Resource } from '@fuxi/common';
import type { NodeFilter } from './sched-reach.js';
import type { Request } from './sched-requests.js';
import type { SchedNode } from './sched-types.js';

export interface Pick {
  node: number;
  /** The heap the node was found in and the next-best node in it, for batching; none at node level. */
  heap: NodeHeap | undefined;
  rival: number | undefined;
  /** Found by a scan, not in heap order: the turn places one slot. */
  single?: boolean;
}

/**
 * Mutable view of the nodes during one schedule() call. Candidates are the schedulable nodes with
 * non-zero capacity; each sits in a global heap and its rack's heap, ordered by (load, id). The
 * order is total (ids are unique), so the plan does not depend on the order nodes come in. Heaps are
 * built on first use, in linear time: a plan that only needs the requested nodes, or no rack, does
 * not pay for them (this runs on every request the master gets).
 */
export class ClusterState {
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
  /** Slot shapes already known to fit nowhere; allocations only grow, so this stays true (a gang's undone placements forget what was learnt during them). */
  private readonly hopeless: Resource[] = [];

  constructor(nodes: ReadonlyMap<string, SchedNode>) {
    for (const n of nodes.values()) {
      if (!takesSlots(n)) continue;
      this.nodes.push(n);
      this.ids.push(n.id);
      this.alloc.push(n.allocated);
      this.load.push(dominantShare(n.allocated, n.capacity));
    }
    this.total = schedulableTotal(this.nodes);
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

  /** Memory allocated and capacity (MB) of the candidate `nodeId` now; undefined: not a candidate. */
  memoryOf(nodeId: string): { allocatedMb: number; capacityMb: number } | undefined {
    const i = this.byId.get(nodeId);
    if (i === undefined) return undefined;
    return { allocatedMb: (this.alloc[i] ?? ZERO).memoryMb, capacityMb: this.nodeOf(i).capacity.memoryMb };
  }

  /**
   * The node one slot of `r` for `req` goes to: requested node, else its rack, else anywhere;
   * with a `filter`, only nodes it allows, and at each level the fewest broken links first when it
   * says so (CASPR's first pod).
   */
  find(r: Resource, req: Request, filter?: NodeFilter): Pick | undefined {
    if (this.hopeless.some((h) => fits(h, r))) return undefined;
    const fitsOn = (i: number): boolean => fits(r, this.free(i));
    const ok = filter === undefined ? fitsOn : (i: number): boolean => fitsOn(i) && filter.allows(this.nodeId(i));
    const degree = filter?.degree;
    if (req.kind === 'node' && req.nodeId !== undefined) {
      const i = this.byId.get(req.nodeId);
      if (i !== undefined && ok(i)) return { node: i, heap: undefined, rival: undefined };
    }
    if (req.rack !== undefined) {
      const h = this.rack(req.rack);
      const found = h === undefined ? undefined : this.bestIn(h, ok, degree);
      if (found !== undefined) return found;
    }
    const found = this.bestIn(this.all, ok, degree);
    if (found !== undefined) return found;
    if (filter === undefined) this.hopeless.push(r);
    return undefined;
  }

  /** Whether one slot of `r` fits on some candidate, whatever filters say (remembers a shape that fits nowhere). */
  fitsSomewhere(r: Resource): boolean {
    if (this.hopeless.some((h) => fits(h, r))) return false;
    if (this.all.findFirst((i) => fits(r, this.free(i))) !== undefined) return true;
    this.hopeless.push(r);
    return false;
  }

  /**
   * The first node of `h` that is `ok`, in (load, id) order; with `degree`, in (broken links, load,
   * id) order: a node with none is found in heap order (batching stays possible), otherwise every
   * node of the heap is looked at and the pick takes one slot per turn.
   */
  private bestIn(h: NodeHeap, ok: (i: number) => boolean, degree: ((id: string) => number) | undefined): Pick | undefined {
    if (degree === undefined) {
      const f = h.findFirst(ok);
      return f === undefined ? undefined : { node: f.item, heap: h, rival: f.next };
    }
    const f = h.findFirst((i) => ok(i) && degree(this.nodeId(i)) === 0);
    if (f !== undefined) return { node: f.item, heap: h, rival: f.next };
    let best: number | undefined;
    let bestDegree = Infinity;
    h.forEach((i) => {
      if (!ok(i)) return;
      const d = degree(this.nodeId(i));
      if (best === undefined || d < bestDegree || (d === bestDegree && this.less(i, best))) {
        best = i;
        bestDegree = d;
      }
    });
    return best === undefined ? undefined : { node: best, heap: undefined, rival: undefined, single: true };
  }

  /** Would `pick.node` still be the best choice after k more slots of `r`? */
  winsAfter(pick: Pick, k: number, r: Resource): boolean {
    if (pick.heap === undefined || pick.rival === undefined) return true;
    const n = this.nodeOf(pick.node);
    const mine = dominantShare(add(this.alloc[pick.node] ?? ZERO, scale(r, k)), n.capacity);
    const theirs = this.load[pick.rival] ?? Infinity;
    return mine < theirs || (mine === theirs && n.id < this.nodeId(pick.rival));
  }

  /** How many shapes are known to fit nowhere: `forgetSince` drops those learnt after, when placements are undone. */
  hopelessMark(): number {
    return this.hopeless.length;
  }

  /** Forgets the shapes found hopeless since `mark` (they were hopeless only with placements now undone). */
  forgetSince(mark: number): void {
    this.hopeless.length = Math.min(this.hopeless.length, mark);
  }

  /** Places `amount` on node i; a negative amount undoes an earlier placement (a gang rolled back). */
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

  forEach(fn: (item: number) => void): void {
    for (const item of this.items) fn(item);
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

/** Whether the scheduler places anything on `n` (schedulable, with some capacity). */
function takesSlots(n: SchedNode): boolean {
  return n.schedulable && !isZero(n.capacity);
}

/** The cluster's schedulable capacity: the sum over the nodes that take slots. */
export function schedulableTotal(nodes: Iterable<SchedNode>): Resource {
  let cpuMilli = 0;
  let memoryMb = 0;
  for (const n of nodes) {
    if (!takesSlots(n)) continue;
    cpuMilli += n.capacity.cpuMilli;
    memoryMb += n.capacity.memoryMb;
  }
  return { cpuMilli, memoryMb };
}
