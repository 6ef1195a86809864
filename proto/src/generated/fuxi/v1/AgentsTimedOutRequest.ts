// Original file: proto/fuxi/v1/appmaster.proto

import type { Long } from '@grpc/proto-loader';

export interface AgentsTimedOutRequest {
  'epoch'?: (number | string | Long);
  /**
   * Agents that stopped heartbeating: their workers are reserved, not released (Algorithm 1).
   */
  'nodeIds'?: (string)[];
  /**
   * Agents that were timing out and are back: nothing of theirs was lost.
   */
  'recoveredNodeIds'?: (string)[];
}

export interface AgentsTimedOutRequest__Output {
  'epoch': (string);
  /**
   * Agents that stopped heartbeating: their workers are reserved, not released (Algorithm 1).
   */
  'nodeIds': (string)[];
  /**
   * Agents that were timing out and are back: nothing of theirs was lost.
   */
  'recoveredNodeIds': (string)[];
}
