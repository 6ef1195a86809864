// Original file: proto/fuxi/v1/common.proto

import type { BatchedCall as _fuxi_v1_BatchedCall, BatchedCall__Output as _fuxi_v1_BatchedCall__Output } from '../../fuxi/v1/BatchedCall.js';

export interface CallBatch {
  'calls'?: (_fuxi_v1_BatchedCall)[];
}

export interface CallBatch__Output {
  'calls': (_fuxi_v1_BatchedCall__Output)[];
}
