// Original file: proto/fuxi/v1/common.proto

import type { JobState as _fuxi_v1_JobState, JobState__Output as _fuxi_v1_JobState__Output } from '../../fuxi/v1/JobState.js';
import type { TaskProgress as _fuxi_v1_TaskProgress, TaskProgress__Output as _fuxi_v1_TaskProgress__Output } from '../../fuxi/v1/TaskProgress.js';
import type { JobSpec as _fuxi_v1_JobSpec, JobSpec__Output as _fuxi_v1_JobSpec__Output } from '../../fuxi/v1/JobSpec.js';
import type { Long } from '@grpc/proto-loader';

export interface JobInfo {
  'jobId'?: (string);
  'name'?: (string);
  'state'?: (_fuxi_v1_JobState);
  /**
   * Why the job failed or was killed; empty otherwise.
   */
  'message'?: (string);
  'quotaGroup'?: (string);
  'priority'?: (number);
  'submittedAtMs'?: (number | string | Long);
  'finishedAtMs'?: (number | string | Long);
  'amAttempt'?: (number);
  'amNodeId'?: (string);
  'amAddress'?: (string);
  'tasks'?: (_fuxi_v1_TaskProgress)[];
  'spec'?: (_fuxi_v1_JobSpec | null);
  /**
   * Who submitted the job (the caller's name; empty: nobody known, e.g. an insecure cluster's anonymous client).
   */
  'owner'?: (string);
}

export interface JobInfo__Output {
  'jobId': (string);
  'name': (string);
  'state': (_fuxi_v1_JobState__Output);
  /**
   * Why the job failed or was killed; empty otherwise.
   */
  'message': (string);
  'quotaGroup': (string);
  'priority': (number);
  'submittedAtMs': (string);
  'finishedAtMs': (string);
  'amAttempt': (number);
  'amNodeId': (string);
  'amAddress': (string);
  'tasks': (_fuxi_v1_TaskProgress__Output)[];
  'spec': (_fuxi_v1_JobSpec__Output | null);
  /**
   * Who submitted the job (the caller's name; empty: nobody known, e.g. an insecure cluster's anonymous client).
   */
  'owner': (string);
}
