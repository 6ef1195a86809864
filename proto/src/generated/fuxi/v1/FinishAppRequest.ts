// Original file: proto/fuxi/v1/master.proto

import type { TaskProgress as _fuxi_v1_TaskProgress, TaskProgress__Output as _fuxi_v1_TaskProgress__Output } from '../../fuxi/v1/TaskProgress.js';

export interface FinishAppRequest {
  'appId'?: (string);
  'amAttempt'?: (number);
  'succeeded'?: (boolean);
  'message'?: (string);
  'progress'?: (_fuxi_v1_TaskProgress)[];
}

export interface FinishAppRequest__Output {
  'appId': (string);
  'amAttempt': (number);
  'succeeded': (boolean);
  'message': (string);
  'progress': (_fuxi_v1_TaskProgress__Output)[];
}
