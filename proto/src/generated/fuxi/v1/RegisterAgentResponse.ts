// Original file: proto/fuxi/v1/master.proto

import type { Long } from '@grpc/proto-loader';

export interface RegisterAgentResponse {
  'epoch'?: (number | string | Long);
  'heartbeatIntervalMs'?: (number);
  /**
   * A new master is rebuilding its state: send ReportAgentState (full grants and workers) now.
   */
  'reportState'?: (boolean);
}

export interface RegisterAgentResponse__Output {
  'epoch': (string);
  'heartbeatIntervalMs': (number);
  /**
   * A new master is rebuilding its state: send ReportAgentState (full grants and workers) now.
   */
  'reportState': (boolean);
}
