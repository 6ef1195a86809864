// Original file: proto/fuxi/v1/master.proto

import type { JobInfo as _fuxi_v1_JobInfo, JobInfo__Output as _fuxi_v1_JobInfo__Output } from '../../fuxi/v1/JobInfo.js';

export interface ListJobsResponse {
  'jobs'?: (_fuxi_v1_JobInfo)[];
  /**
   * The `after` of the next page; '' when this was the last.
   */
  'nextAfter'?: (string);
}

export interface ListJobsResponse__Output {
  'jobs': (_fuxi_v1_JobInfo__Output)[];
  /**
   * The `after` of the next page; '' when this was the last.
   */
  'nextAfter': (string);
}
