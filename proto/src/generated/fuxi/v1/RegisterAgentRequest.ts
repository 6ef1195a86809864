// Original file: proto/fuxi/v1/master.proto

import type { NodeInfo as _fuxi_v1_NodeInfo, NodeInfo__Output as _fuxi_v1_NodeInfo__Output } from '../../fuxi/v1/NodeInfo.js';
import type { Grant as _fuxi_v1_Grant, Grant__Output as _fuxi_v1_Grant__Output } from '../../fuxi/v1/Grant.js';
import type { Long } from '@grpc/proto-loader';

export interface RegisterAgentRequest {
  'node'?: (_fuxi_v1_NodeInfo | null);
  /**
   * Highest master epoch this agent has accepted (decimal int64).
   */
  'epochSeen'?: (number | string | Long);
  /**
   * With with_state, `grants` is the agent's whole grant table: a master rebuilding its soft state
   * takes it as it would a ReportAgentState (saving that round trip); any other master ignores it.
   */
  'withState'?: (boolean);
  'grants'?: (_fuxi_v1_Grant)[];
}

export interface RegisterAgentRequest__Output {
  'node': (_fuxi_v1_NodeInfo__Output | null);
  /**
   * Highest master epoch this agent has accepted (decimal int64).
   */
  'epochSeen': (string);
  /**
   * With with_state, `grants` is the agent's whole grant table: a master rebuilding its soft state
   * takes it as it would a ReportAgentState (saving that round trip); any other master ignores it.
   */
  'withState': (boolean);
  'grants': (_fuxi_v1_Grant__Output)[];
}
