// Original file: proto/fuxi/v1/appmaster.proto

import type { Assignment as _fuxi_v1_Assignment, Assignment__Output as _fuxi_v1_Assignment__Output } from '../../fuxi/v1/Assignment.js';
import type { Long } from '@grpc/proto-loader';

export interface UpdateAssignmentsRequest {
  'epoch'?: (number | string | Long);
  'seq'?: (number | string | Long);
  'full'?: (boolean);
  'assignments'?: (_fuxi_v1_Assignment)[];
}

export interface UpdateAssignmentsRequest__Output {
  'epoch': (string);
  'seq': (string);
  'full': (boolean);
  'assignments': (_fuxi_v1_Assignment__Output)[];
}
