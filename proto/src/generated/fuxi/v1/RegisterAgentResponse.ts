// Original file: proto/fuxi/v1/master.proto

import type { Grant as _fuxi_v1_Grant, Grant__Output as _fuxi_v1_Grant__Output } from '../../fuxi/v1/Grant.js';
import type { Long } from '@grpc/proto-loader';

export interface RegisterAgentResponse {
  'epoch'?: (number | string | Long);
  'heartbeatIntervalMs'?: (number);
  /**
   * A new master is rebuilding its state: send ReportAgentState (full grants and workers) now.
   */
  'reportState'?: (boolean);
  /**
   * The state sent with the registration was adopted: `grants` is this master's full grant table
   * for the node, numbered grant_seq, to apply like a pushed one.
   */
  'stateAdopted'?: (boolean);
  'grantSeq'?: (number | string | Long);
  'grants'?: (_fuxi_v1_Grant)[];
}

export interface RegisterAgentResponse__Output {
  'epoch': (string);
  'heartbeatIntervalMs': (number);
  /**
   * A new master is rebuilding its state: send ReportAgentState (full grants and workers) now.
   */
  'reportState': (boolean);
  /**
   * The state sent with the registration was adopted: `grants` is this master's full grant table
   * for the node, numbered grant_seq, to apply like a pushed one.
   */
  'stateAdopted': (boolean);
  'grantSeq': (string);
  'grants': (_fuxi_v1_Grant__Output)[];
}
