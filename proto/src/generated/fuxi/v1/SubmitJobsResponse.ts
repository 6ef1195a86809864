// Original file: proto/fuxi/v1/master.proto

import type { SubmitJobResult as _fuxi_v1_SubmitJobResult, SubmitJobResult__Output as _fuxi_v1_SubmitJobResult__Output } from '../../fuxi/v1/SubmitJobResult.js';

export interface SubmitJobsResponse {
  /**
   * One per spec, in order.
   */
  'results'?: (_fuxi_v1_SubmitJobResult)[];
}

export interface SubmitJobsResponse__Output {
  /**
   * One per spec, in order.
   */
  'results': (_fuxi_v1_SubmitJobResult__Output)[];
}
