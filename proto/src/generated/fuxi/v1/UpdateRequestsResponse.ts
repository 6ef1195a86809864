// Original file: proto/fuxi/v1/master.proto

import type { Assignment as _fuxi_v1_Assignment, Assignment__Output as _fuxi_v1_Assignment__Output } from '../../fuxi/v1/Assignment.js';
import type { Connectivity as _fuxi_v1_Connectivity, Connectivity__Output as _fuxi_v1_Connectivity__Output } from '../../fuxi/v1/Connectivity.js';
import type { AttemptVerdict as _fuxi_v1_AttemptVerdict, AttemptVerdict__Output as _fuxi_v1_AttemptVerdict__Output } from '../../fuxi/v1/AttemptVerdict.js';
import type { Long } from '@grpc/proto-loader';

export interface UpdateRequestsResponse {
  'epoch'?: (number | string | Long);
  'fullAssignments'?: (boolean);
  'assignmentSeq'?: (number | string | Long);
  'assignments'?: (_fuxi_v1_Assignment)[];
  /**
   * A new master is rebuilding its state: send ReportAppState (units and all outstanding requests).
   */
  'reportState'?: (boolean);
  /**
   * Set when the AM's connectivity_version is stale.
   */
  'connectivity'?: (_fuxi_v1_Connectivity | null);
  /**
   * Running attempts failure prediction decided to move or kill (each sent once).
   */
  'attemptVerdicts'?: (_fuxi_v1_AttemptVerdict)[];
}

export interface UpdateRequestsResponse__Output {
  'epoch': (string);
  'fullAssignments': (boolean);
  'assignmentSeq': (string);
  'assignments': (_fuxi_v1_Assignment__Output)[];
  /**
   * A new master is rebuilding its state: send ReportAppState (units and all outstanding requests).
   */
  'reportState': (boolean);
  /**
   * Set when the AM's connectivity_version is stale.
   */
  'connectivity': (_fuxi_v1_Connectivity__Output | null);
  /**
   * Running attempts failure prediction decided to move or kill (each sent once).
   */
  'attemptVerdicts': (_fuxi_v1_AttemptVerdict__Output)[];
}
