// Original file: proto/fuxi/v1/master.proto

import type { Grant as _fuxi_v1_Grant, Grant__Output as _fuxi_v1_Grant__Output } from '../../fuxi/v1/Grant.js';
import type { WorkerStatus as _fuxi_v1_WorkerStatus, WorkerStatus__Output as _fuxi_v1_WorkerStatus__Output } from '../../fuxi/v1/WorkerStatus.js';
import type { Long } from '@grpc/proto-loader';

/**
 * The agent's soft state, for a master rebuilding its own (FAgentFullCapFromFM): every grant it
 * holds and every worker it knows. The master believes grants only for apps it knows, within the
 * node's capacity.
 */
export interface ReportAgentStateRequest {
  'nodeId'?: (string);
  'epoch'?: (number | string | Long);
  'grants'?: (_fuxi_v1_Grant)[];
  'workers'?: (_fuxi_v1_WorkerStatus)[];
  /**
   * The grant sequence the agent applied last (from the previous master).
   */
  'grantSeq'?: (number | string | Long);
}

/**
 * The agent's soft state, for a master rebuilding its own (FAgentFullCapFromFM): every grant it
 * holds and every worker it knows. The master believes grants only for apps it knows, within the
 * node's capacity.
 */
export interface ReportAgentStateRequest__Output {
  'nodeId': (string);
  'epoch': (string);
  'grants': (_fuxi_v1_Grant__Output)[];
  'workers': (_fuxi_v1_WorkerStatus__Output)[];
  /**
   * The grant sequence the agent applied last (from the previous master).
   */
  'grantSeq': (string);
}
