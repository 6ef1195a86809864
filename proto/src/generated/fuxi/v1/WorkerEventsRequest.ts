// Original file: proto/fuxi/v1/appmaster.proto

import type { WorkerStatus as _fuxi_v1_WorkerStatus, WorkerStatus__Output as _fuxi_v1_WorkerStatus__Output } from '../../fuxi/v1/WorkerStatus.js';

export interface WorkerEventsRequest {
  'nodeId'?: (string);
  'events'?: (_fuxi_v1_WorkerStatus)[];
}

export interface WorkerEventsRequest__Output {
  'nodeId': (string);
  'events': (_fuxi_v1_WorkerStatus__Output)[];
}
