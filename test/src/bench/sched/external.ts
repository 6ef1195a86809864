/**
 * The external-scheduler case of bench-sched: a scheduler built on the SDK's `ExternalScheduler`
 * (first fit over the hosts, starting where the last placement ended) that times each decision's
 * round trip, from the arrival of the state push that showed pending requests to the Place answer
 * that says they were applied (granted).
 */
import { ExternalScheduler, slotsIn, type ClusterView, type Placement, type PlaceOutcome } from '@fuxi/client';

export class BenchScheduler extends ExternalScheduler {
  /** Round trips (ms) while `recording`, one per placement applied. */
  readonly samples: number[] = [];
  /** The Place call alone (sent to answered), one per call with placements applied. */
  readonly callSamples: number[] = [];
  recording = false;
  placed = 0;
  rejected = 0;
  private next = 0;

  protected override onState(view: ClusterView): Placement[] {
    const hosts = [...view.hosts.values()].filter((h) => h.schedulable);
    if (hosts.length === 0) return [];
    const room = new Map(hosts.map((h) => [h.nodeId, { ...h.free }]));
    const out: Placement[] = [];
    for (const req of view.pending) {
      let left = req.count;
      for (let i = 0; i < hosts.length && left > 0; i++) {
        const h = hosts[(this.next + i) % hosts.length]!;
        const free = room.get(h.nodeId)!;
        const k = Math.min(left, slotsIn(req.resource, free));
        if (k === 0) continue;
        free.cpuMilli -= req.resource.cpuMilli * k;
        free.memoryMb -= req.resource.memoryMb * k;
        out.push({ appId: req.appId, unit: req.unit, nodeId: h.nodeId, count: k });
        left -= k;
        this.next = (this.next + i + 1) % hosts.length;
      }
    }
    return out;
  }

  protected override onPlaced(o: PlaceOutcome): void {
    this.rejected += o.rejected.length;
    if (!this.recording) return;
    const ms = o.doneAtMs - o.viewAtMs;
    this.placed += o.applied;
    for (let i = 0; i < o.applied; i++) this.samples.push(ms);
    if (o.applied > 0) this.callSamples.push(o.doneAtMs - o.sentAtMs);
  }
}

/** What the scheduler process (external-main.ts) reports when asked. */
export interface BenchSchedulerReport {
  samples: number[];
  callSamples: number[];
  placed: number;
  rejected: number;
  registrations: number;
  /** Views received (the last view's version). */
  views: number;
  /** Round trips of a call that does nothing, every 100 ms while recording (the machine's load). */
  pingSamples: number[];
}
