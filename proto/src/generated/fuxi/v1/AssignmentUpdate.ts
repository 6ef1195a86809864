// Original file: proto/fuxi/v1/master.proto

import type { Assignment as _fuxi_v1_Assignment, Assignment__Output as _fuxi_v1_Assignment__Output } from '../../fuxi/v1/Assignment.js';
import type { Long } from '@grpc/proto-loader';

/**
 * Wire-compatible with AppMasterService's UpdateAssignmentsRequest.
 */
export interface AssignmentUpdate {
  'epoch'?: (number | string | Long);
  'seq'?: (number | string | Long);
  /**
   * True: `assignments` is the whole table; otherwise only the (unit, node) entries that changed.
   */
  'full'?: (boolean);
  'assignments'?: (_fuxi_v1_Assignment)[];
}

/**
 * Wire-compatible with AppMasterService's UpdateAssignmentsRequest.
 */
export interface AssignmentUpdate__Output {
  'epoch': (string);
  'seq': (string);
  /**
   * True: `assignments` is the whole table; otherwise only the (unit, node) entries that changed.
   */
  'full': (boolean);
  'assignments': (_fuxi_v1_Assignment__Output)[];
}
