// Original file: proto/fuxi/v1/master.proto

import type { Testbed as _fuxi_v1_Testbed, Testbed__Output as _fuxi_v1_Testbed__Output } from '../../fuxi/v1/Testbed.js';
import type { HostWorkers as _fuxi_v1_HostWorkers, HostWorkers__Output as _fuxi_v1_HostWorkers__Output } from '../../fuxi/v1/HostWorkers.js';

export interface CreateTestbedResponse {
  'testbed'?: (_fuxi_v1_Testbed | null);
  /**
   * Per host, workers of other quota groups running there now: they finish, no new ones start.
   */
  'othersRunning'?: (_fuxi_v1_HostWorkers)[];
}

export interface CreateTestbedResponse__Output {
  'testbed': (_fuxi_v1_Testbed__Output | null);
  /**
   * Per host, workers of other quota groups running there now: they finish, no new ones start.
   */
  'othersRunning': (_fuxi_v1_HostWorkers__Output)[];
}
