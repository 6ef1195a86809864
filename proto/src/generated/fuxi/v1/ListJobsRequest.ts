// Original file: proto/fuxi/v1/master.proto

import type { JobState as _fuxi_v1_JobState, JobState__Output as _fuxi_v1_JobState__Output } from '../../fuxi/v1/JobState.js';

export interface ListJobsRequest {
  /**
   * Empty = every state.
   */
  'states'?: (_fuxi_v1_JobState)[];
  /**
   * Only the members of this job array ('' = every job).
   */
  'arrayId'?: (string);
  /**
   * A page: at most `limit` jobs (0 = all), in submission order, after the job `after` ('' = from
   * the first); `next_after` in the answer continues.
   */
  'limit'?: (number);
  'after'?: (string);
}

export interface ListJobsRequest__Output {
  /**
   * Empty = every state.
   */
  'states': (_fuxi_v1_JobState__Output)[];
  /**
   * Only the members of this job array ('' = every job).
   */
  'arrayId': (string);
  /**
   * A page: at most `limit` jobs (0 = all), in submission order, after the job `after` ('' = from
   * the first); `next_after` in the answer continues.
   */
  'limit': (number);
  'after': (string);
}
