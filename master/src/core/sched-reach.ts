/**
 * Connected apps during one schedule() call (CASPR, seed 000, Algorithm 1): the nodes each may use
 * (every anchor reachable, none it avoids), its anchors growing with every slot the plan gives it,
 * and the preference of an app's first slot for the node with the fewest broken links.
 *
 * A node with no broken link reaches every other, so the anchors are read only when a node with a
 * broken link is considered: with none in the cluster, a connected app places exactly as an
 * independent one.
 */
import type { PlacementScope, Reach, SchedUnit, SchedulerSnapshot } from './sched-types.js';

/** What find() asks of a node beyond room for the slot. */
export interface NodeFilter {
  allows(nodeId: string): boolean;
  /** Set when the pick prefers the fewest broken links (the app's first slot). */
  readonly degree: ((nodeId: string) => number) | undefined;
}

class AppScope implements NodeFilter {
  private anchorSet: Set<string> | undefined;
  /** Slots placed before the anchors were first read. */
  private readonly placedEarly: string[] = [];
  readonly degree = undefined;

  constructor(
    private readonly scope: PlacementScope,
    private readonly reach: Reach | undefined,
  ) {}

  allows(nodeId: string): boolean {
    if (this.scope.avoid.has(nodeId)) return false;
    const reach = this.reach;
    const degree = reach === undefined ? 0 : reach.brokenDegree(nodeId);
    if (reach === undefined || degree === 0) return true;
    const anchors = this.anchors();
    // Whichever is shorter: the node's broken links (usually a few) or the app's anchors.
    if (reach.unreachablePeers !== undefined && degree < anchors.size) {
      for (const p of reach.unreachablePeers(nodeId)) if (anchors.has(p)) return false;
      return true;
    }
    for (const a of anchors) if (!reach.reachable(nodeId, a)) return false;
    return true;
  }

  placed(nodeId: string): void {
    if (this.anchorSet !== undefined) this.anchorSet.add(nodeId);
    else this.placedEarly.push(nodeId);
  }

  /** Anchors the app gave up (avoid) are not anchors. */
  private anchors(): Set<string> {
    if (this.anchorSet === undefined) {
      const s = new Set<string>();
      for (const a of this.scope.anchors) if (!this.scope.avoid.has(a)) s.add(a);
      for (const a of this.placedEarly) s.add(a);
      this.anchorSet = s;
    }
    return this.anchorSet;
  }
}

export class ScopeState {
  private readonly apps = new Map<string, AppScope | undefined>();
  private readonly reach: Reach | undefined;
  private readonly scopes: ReadonlyMap<string, PlacementScope> | undefined;

  constructor(snapshot: SchedulerSnapshot) {
    this.reach = snapshot.reach;
    this.scopes = snapshot.scopes;
  }

  /** The filter for a slot of `su` (undefined: any node with room will do). */
  filterFor(su: SchedUnit): NodeFilter | undefined {
    const app = this.app(su.appId);
    if (app === undefined) return undefined;
    const reach = this.reach;
    if (su.mostConnected !== true || reach === undefined) return app;
    return { allows: (id) => app.allows(id), degree: (id) => reach.brokenDegree(id) };
  }

  /** A slot of `appId` went to `nodeId`: later slots of the app must reach it. */
  placed(appId: string, nodeId: string): void {
    this.apps.get(appId)?.placed(nodeId);
  }

  private app(appId: string): AppScope | undefined {
    if (this.scopes === undefined) return undefined;
    if (this.apps.has(appId)) return this.apps.get(appId);
    const scope = this.scopes.get(appId);
    // Without broken links and with nothing to avoid, a connected app may go anywhere.
    const app = scope !== undefined && (this.reach !== undefined || scope.avoid.size > 0) ? new AppScope(scope, this.reach) : undefined;
    this.apps.set(appId, app);
    return app;
  }
}
