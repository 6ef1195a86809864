// Original file: proto/fuxi/v1/appmaster.proto

import type { WorkerStatus as _fuxi_v1_WorkerStatus, WorkerStatus__Output as _fuxi_v1_WorkerStatus__Output } from '../../fuxi/v1/WorkerStatus.js';
import type { PathRecord as _fuxi_v1_PathRecord, PathRecord__Output as _fuxi_v1_PathRecord__Output } from '../../fuxi/v1/PathRecord.js';

export interface WorkerEventsRequest {
  'nodeId'?: (string);
  'events'?: (_fuxi_v1_WorkerStatus)[];
  /**
   * Transfers the node's data service served to the app's workers (source = node_id).
   */
  'paths'?: (_fuxi_v1_PathRecord)[];
}

export interface WorkerEventsRequest__Output {
  'nodeId': (string);
  'events': (_fuxi_v1_WorkerStatus__Output)[];
  /**
   * Transfers the node's data service served to the app's workers (source = node_id).
   */
  'paths': (_fuxi_v1_PathRecord__Output)[];
}
