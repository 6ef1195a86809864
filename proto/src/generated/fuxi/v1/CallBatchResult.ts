// Original file: proto/fuxi/v1/common.proto

import type { BatchedResult as _fuxi_v1_BatchedResult, BatchedResult__Output as _fuxi_v1_BatchedResult__Output } from '../../fuxi/v1/BatchedResult.js';

/**
 * One result per call, in the order of the calls.
 */
export interface CallBatchResult {
  'results'?: (_fuxi_v1_BatchedResult)[];
}

/**
 * One result per call, in the order of the calls.
 */
export interface CallBatchResult__Output {
  'results': (_fuxi_v1_BatchedResult__Output)[];
}
