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
}
