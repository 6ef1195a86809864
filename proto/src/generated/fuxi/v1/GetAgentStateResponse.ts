// Original file: proto/fuxi/v1/agent.proto

import type { NodeInfo as _fuxi_v1_NodeInfo, NodeInfo__Output as _fuxi_v1_NodeInfo__Output } from '../../fuxi/v1/NodeInfo.js';
import type { Grant as _fuxi_v1_Grant, Grant__Output as _fuxi_v1_Grant__Output } from '../../fuxi/v1/Grant.js';
import type { WorkerStatus as _fuxi_v1_WorkerStatus, WorkerStatus__Output as _fuxi_v1_WorkerStatus__Output } from '../../fuxi/v1/WorkerStatus.js';
import type { Resource as _fuxi_v1_Resource, Resource__Output as _fuxi_v1_Resource__Output } from '../../fuxi/v1/Resource.js';
import type { Long } from '@grpc/proto-loader';

export interface GetAgentStateResponse {
  'node'?: (_fuxi_v1_NodeInfo | null);
  'epoch'?: (number | string | Long);
  'grantSeq'?: (number | string | Long);
  'grants'?: (_fuxi_v1_Grant)[];
  'workers'?: (_fuxi_v1_WorkerStatus)[];
  'used'?: (_fuxi_v1_Resource | null);
}

export interface GetAgentStateResponse__Output {
  'node': (_fuxi_v1_NodeInfo__Output | null);
  'epoch': (string);
  'grantSeq': (string);
  'grants': (_fuxi_v1_Grant__Output)[];
  'workers': (_fuxi_v1_WorkerStatus__Output)[];
  'used': (_fuxi_v1_Resource__Output | null);
}
