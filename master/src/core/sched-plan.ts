/** The scheduler's output, merged per (app, unit, node, location) as it is built. */
import type { Request } from './sched-requests.js';
import type { LocalityLevel, Placement, Plan, SchedUnit, Unsatisfied, UnsatisfiedReason } from './sched-types.js';

export class PlanBuilder {
  private readonly placements = new Map<string, Placement>();
  private readonly missing = new Map<string, Unsatisfied>();

  place(su: SchedUnit, nodeId: string, slots: number, req: Request, localityLevel: LocalityLevel): void {
    const key = `${su.appId}\u0000${su.suId}\u0000${nodeId}\u0000${req.location}`;
    const p = this.placements.get(key);
    if (p !== undefined) p.slots += slots;
    else this.placements.set(key, { appId: su.appId, suId: su.suId, nodeId, slots, location: req.location, localityLevel });
  }

  /** Takes back `slots` of an earlier `place` (a gang that could not be placed whole). */
  unplace(su: SchedUnit, nodeId: string, slots: number, req: Request): void {
    const key = `${su.appId}\u0000${su.suId}\u0000${nodeId}\u0000${req.location}`;
    const p = this.placements.get(key);
    if (p === undefined) return;
    p.slots -= slots;
    if (p.slots <= 0) this.placements.delete(key);
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
