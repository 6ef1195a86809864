/**
 * A unit's outstanding requests as the scheduler walks them: node requests first, then rack, then
 * "any", by location within a kind; and the locality level a placement achieved.
 */
import { cmpStr, NODE_PREFIX, RACK_PREFIX, type LocalityLevel, type SchedNode, type SchedUnit } from './sched-types.js';

export interface Request {
  readonly location: string;
  readonly kind: LocalityLevel;
  /** The requested node id for kind 'node'. */
  readonly nodeId: string | undefined;
  /** The requested rack (kind 'rack') or the requested node's rack (kind 'node'), if known. */
  readonly rack: string | undefined;
  remaining: number;
}

export interface UnitState {
  readonly su: SchedUnit;
  /** Node requests first, then rack, then any; by location within a kind. */
  readonly reqs: Request[];
  cur: number;
  /** Slots still to place all at once before the unit's other slots go one by one (0: none, or done). */
  gangLeft: number;
}

const KIND_ORDER: Record<LocalityLevel, number> = { node: 0, rack: 1, any: 2 };

export function buildUnit(su: SchedUnit, nodes: ReadonlyMap<string, SchedNode>): UnitState {
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
  // A gang larger than what the unit asks for is granted what it asks for, all at once.
  const outstanding = reqs.reduce((n, q) => n + q.remaining, 0);
  const gang = su.gang !== undefined && Number.isFinite(su.gang) ? Math.min(Math.floor(su.gang), outstanding) : 0;
  return { su, reqs, cur: 0, gangLeft: gang > 1 ? gang : 0 };
}

export function levelOf(req: Request, node: SchedNode): LocalityLevel {
  if (req.nodeId !== undefined && node.id === req.nodeId) return 'node';
  if (req.rack !== undefined && node.rack === req.rack) return 'rack';
  return 'any';
}
