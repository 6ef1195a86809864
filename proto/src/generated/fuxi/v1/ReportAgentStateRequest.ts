// Original file: proto/fuxi/v1/master.proto

import type { Grant as _fuxi_v1_Grant, Grant__Output as _fuxi_v1_Grant__Output } from '../../fuxi/v1/Grant.js';
import type { WorkerStatus as _fuxi_v1_WorkerStatus, WorkerStatus__Output as _fuxi_v1_WorkerStatus__Output } from '../../fuxi/v1/WorkerStatus.js';
import type { Long } from '@grpc/proto-loader';

export interface ReportAgentStateRequest {
  'nodeId'?: (string);
  'epoch'?: (number | string | Long);
  'grants'?: (_fuxi_v1_Grant)[];
  'workers'?: (_fuxi_v1_WorkerStatus)[];
}

export interface ReportAgentStateRequest__Output {
  'nodeId': (string);
  'epoch': (string);
  'grants': (_fuxi_v1_Grant__Output)[];
  'workers': (_fuxi_v1_WorkerStatus__Output)[];
}
