// Original file: proto/fuxi/v1/master.proto

import type { SubmitJobResult as _fuxi_v1_SubmitJobResult, SubmitJobResult__Output as _fuxi_v1_SubmitJobResult__Output } from '../../fuxi/v1/SubmitJobResult.js';

export interface SubmitJobsResponse {
  /**
   * One per spec, in order.
   */
  'results'?: (_fuxi_v1_SubmitJobResult)[];
  /**
   * The request's dry_run, echoed: a master that answers a dry run without it set (one older than
   * dry_run) has submitted the jobs.
   */
  'dryRun'?: (boolean);
}

export interface SubmitJobsResponse__Output {
  /**
   * One per spec, in order.
   */
  'results': (_fuxi_v1_SubmitJobResult__Output)[];
  /**
   * The request's dry_run, echoed: a master that answers a dry run without it set (one older than
   * dry_run) has submitted the jobs.
   */
  'dryRun': (boolean);
}
