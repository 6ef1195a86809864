// Original file: proto/fuxi/v1/appmaster.proto

import type { Assignment as _fuxi_v1_Assignment, Assignment__Output as _fuxi_v1_Assignment__Output } from '../../fuxi/v1/Assignment.js';
import type { TaskProgress as _fuxi_v1_TaskProgress, TaskProgress__Output as _fuxi_v1_TaskProgress__Output } from '../../fuxi/v1/TaskProgress.js';
import type { WorkerStatus as _fuxi_v1_WorkerStatus, WorkerStatus__Output as _fuxi_v1_WorkerStatus__Output } from '../../fuxi/v1/WorkerStatus.js';

export interface GetAppStateResponse {
  'appId'?: (string);
  'amAttempt'?: (number);
  'assignments'?: (_fuxi_v1_Assignment)[];
  'progress'?: (_fuxi_v1_TaskProgress)[];
  'workers'?: (_fuxi_v1_WorkerStatus)[];
}

export interface GetAppStateResponse__Output {
  'appId': (string);
  'amAttempt': (number);
  'assignments': (_fuxi_v1_Assignment__Output)[];
  'progress': (_fuxi_v1_TaskProgress__Output)[];
  'workers': (_fuxi_v1_WorkerStatus__Output)[];
}
