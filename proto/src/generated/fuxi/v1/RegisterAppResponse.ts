// Original file: proto/fuxi/v1/master.proto

import type { JobSpec as _fuxi_v1_JobSpec, JobSpec__Output as _fuxi_v1_JobSpec__Output } from '../../fuxi/v1/JobSpec.js';
import type { Assignment as _fuxi_v1_Assignment, Assignment__Output as _fuxi_v1_Assignment__Output } from '../../fuxi/v1/Assignment.js';
import type { Long } from '@grpc/proto-loader';

export interface RegisterAppResponse {
  'epoch'?: (number | string | Long);
  'spec'?: (_fuxi_v1_JobSpec | null);
  'heartbeatIntervalMs'?: (number);
  /**
   * Assignments this app already holds (after an AM restart).
   */
  'assignments'?: (_fuxi_v1_Assignment)[];
  'assignmentSeq'?: (number | string | Long);
}

export interface RegisterAppResponse__Output {
  'epoch': (string);
  'spec': (_fuxi_v1_JobSpec__Output | null);
  'heartbeatIntervalMs': (number);
  /**
   * Assignments this app already holds (after an AM restart).
   */
  'assignments': (_fuxi_v1_Assignment__Output)[];
  'assignmentSeq': (string);
}
