/**
 * The fault matrix on the rack: rows 1, 2, 4 and 9 of Table 3 (master crash, master timing, AM
 * crash, agent crash) with etcd, every master and every agent on a host of its own, started from
 * the multi-host config files. Writes bench-results/fault-matrix-rack.json. `FUXI_RACK_FAULT_ROWS`
 * picks other rows (same syntax as FUXI_FAULT_ROWS).
 */
import { join } from 'node:path';
import { REPO_ROOT } from '@fuxi/deploy';
import { defineFaultMatrix } from '../faults/fault-matrix.js';
import { selectedScenarios } from '../faults/scenarios.js';
import { TIMINGS } from '../faults/fault-cluster.js';
import type { Rack } from './rack.js';
import { rackPlacement, startRack, startRackEtcd } from './rack-cluster.js';

let rack: Rack | undefined;

defineFaultMatrix({
  title: 'fault matrix on the rack: rows 1, 2, 4 and 9 of Table 3, each daemon on its own host',
  scenarios: selectedScenarios(process.env.FUXI_RACK_FAULT_ROWS || '1,2,4,9'),
  out: join(REPO_ROOT, 'bench-results', 'fault-matrix-rack.json'),
  async setup() {
    rack = await startRack(TIMINGS.agents);
    return startRackEtcd(rack);
  },
  placement: () => (rack ? rackPlacement(rack, TIMINGS.agents) : undefined),
  async teardown() {
    await rack?.destroy();
  },
});
