// Original file: proto/fuxi/v1/master.proto

import type { Testbed as _fuxi_v1_Testbed, Testbed__Output as _fuxi_v1_Testbed__Output } from '../../fuxi/v1/Testbed.js';

export interface ListTestbedsResponse {
  'testbeds'?: (_fuxi_v1_Testbed)[];
}

export interface ListTestbedsResponse__Output {
  'testbeds': (_fuxi_v1_Testbed__Output)[];
}
