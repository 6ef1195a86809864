// Original file: proto/fuxi/v1/agent.proto

import type { WorkerStatus as _fuxi_v1_WorkerStatus, WorkerStatus__Output as _fuxi_v1_WorkerStatus__Output } from '../../fuxi/v1/WorkerStatus.js';

export interface StopWorkersResponse {
  'workers'?: (_fuxi_v1_WorkerStatus)[];
}

export interface StopWorkersResponse__Output {
  'workers': (_fuxi_v1_WorkerStatus__Output)[];
}
