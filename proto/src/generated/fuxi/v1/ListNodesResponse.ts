// Original file: proto/fuxi/v1/master.proto

import type { NodeStatus as _fuxi_v1_NodeStatus, NodeStatus__Output as _fuxi_v1_NodeStatus__Output } from '../../fuxi/v1/NodeStatus.js';

export interface ListNodesResponse {
  'nodes'?: (_fuxi_v1_NodeStatus)[];
}

export interface ListNodesResponse__Output {
  'nodes': (_fuxi_v1_NodeStatus__Output)[];
}
