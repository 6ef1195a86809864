// Original file: proto/fuxi/v1/master.proto

import type { NodeStatus as _fuxi_v1_NodeStatus, NodeStatus__Output as _fuxi_v1_NodeStatus__Output } from '../../fuxi/v1/NodeStatus.js';

export interface NodeAdminResponse {
  'node'?: (_fuxi_v1_NodeStatus | null);
}

export interface NodeAdminResponse__Output {
  'node': (_fuxi_v1_NodeStatus__Output | null);
}
