/**
 * The fault matrix on loopback: every row of Table 3 (see `fault-matrix.ts`), a real etcd, three
 * masters and two agents on this host. `FUXI_FAULT_ROWS=8-13` runs a subset. The same rows run on
 * the rack (each daemon its own host) in `rack/fault-matrix-rack.test.ts`.
 */
import { startEtcd } from '../etcd-harness.js';
import { defineFaultMatrix, FAULT_MATRIX_OUT } from './fault-matrix.js';
import { selectedScenarios } from './scenarios.js';

defineFaultMatrix({
  title: 'fault matrix: every row of Table 3 with real processes and a real etcd',
  scenarios: selectedScenarios(),
  out: FAULT_MATRIX_OUT,
  setup: () => startEtcd(),
});
