// Original file: proto/fuxi/v1/master.proto

import type { Assignment as _fuxi_v1_Assignment, Assignment__Output as _fuxi_v1_Assignment__Output } from '../../fuxi/v1/Assignment.js';
import type { Long } from '@grpc/proto-loader';

export interface ReportAppStateResponse {
  'epoch'?: (number | string | Long);
  /**
   * This master's full assignment table for the app, built from the report (instead of a push).
   */
  'fullAssignments'?: (boolean);
  'assignmentSeq'?: (number | string | Long);
  'assignments'?: (_fuxi_v1_Assignment)[];
}

export interface ReportAppStateResponse__Output {
  'epoch': (string);
  /**
   * This master's full assignment table for the app, built from the report (instead of a push).
   */
  'fullAssignments': (boolean);
  'assignmentSeq': (string);
  'assignments': (_fuxi_v1_Assignment__Output)[];
}
