// Original file: proto/fuxi/v1/appmaster.proto

import type { Long } from '@grpc/proto-loader';

export interface UpdateAssignmentsResponse {
  'appliedSeq'?: (number | string | Long);
}

export interface UpdateAssignmentsResponse__Output {
  'appliedSeq': (string);
}
