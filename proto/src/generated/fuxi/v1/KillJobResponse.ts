// Original file: proto/fuxi/v1/master.proto

import type { JobInfo as _fuxi_v1_JobInfo, JobInfo__Output as _fuxi_v1_JobInfo__Output } from '../../fuxi/v1/JobInfo.js';

export interface KillJobResponse {
  'job'?: (_fuxi_v1_JobInfo | null);
}

export interface KillJobResponse__Output {
  'job': (_fuxi_v1_JobInfo__Output | null);
}
