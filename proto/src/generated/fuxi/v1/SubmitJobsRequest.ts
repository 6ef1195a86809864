// Original file: proto/fuxi/v1/master.proto

import type { JobSpec as _fuxi_v1_JobSpec, JobSpec__Output as _fuxi_v1_JobSpec__Output } from '../../fuxi/v1/JobSpec.js';

export interface SubmitJobsRequest {
  'specs'?: (_fuxi_v1_JobSpec)[];
}

export interface SubmitJobsRequest__Output {
  'specs': (_fuxi_v1_JobSpec__Output)[];
}
