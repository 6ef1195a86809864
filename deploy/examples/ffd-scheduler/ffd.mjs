// First-fit decreasing: the largest requests first (one slot's CPU, then memory), each slot on the
// first host (by id) with room. A gang's slots go all together or the request waits for the next view.
import { slotsIn } from '@fuxi/client';

/** Placements for `view.pending` on `view.hosts` (an ExternalScheduler ClusterView). */
export function firstFitDecreasing(view) {
  const hosts = [...view.hosts.values()]
    .filter((h) => h.schedulable)
    .sort((a, b) => (a.nodeId < b.nodeId ? -1 : 1))
    .map((h) => ({ ...h, free: { ...h.free } }));
  const size = (r) => [r.resource.cpuMilli, r.resource.memoryMb];
  const queue = [...view.pending].sort((a, b) => size(b)[0] - size(a)[0] || size(b)[1] - size(a)[1] || a.queueOrder - b.queueOrder);
  const out = [];
  for (const req of queue) {
    const mine = [];
    let left = req.count;
    for (const h of hosts) {
      if (left === 0) break;
      const k = Math.min(left, slotsIn(req.resource, h.free));
      if (k === 0) continue;
      mine.push({ host: h, count: k });
      left -= k;
    }
    if (req.count - left < req.gang) continue; // a gang that does not fit whole waits
    for (const { host, count } of mine) {
      host.free.cpuMilli -= req.resource.cpuMilli * count;
      host.free.memoryMb -= req.resource.memoryMb * count;
      out.push({ appId: req.appId, unit: req.unit, nodeId: host.nodeId, count });
    }
  }
  return out;
}
