// Original file: proto/fuxi/v1/master.proto

import type { NodeInfo as _fuxi_v1_NodeInfo, NodeInfo__Output as _fuxi_v1_NodeInfo__Output } from '../../fuxi/v1/NodeInfo.js';
import type { Long } from '@grpc/proto-loader';

export interface RegisterAgentRequest {
  'node'?: (_fuxi_v1_NodeInfo | null);
  /**
   * Highest master epoch this agent has accepted (decimal int64).
   */
  'epochSeen'?: (number | string | Long);
}

export interface RegisterAgentRequest__Output {
  'node': (_fuxi_v1_NodeInfo__Output | null);
  /**
   * Highest master epoch this agent has accepted (decimal int64).
   */
  'epochSeen': (string);
}
