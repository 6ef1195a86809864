// Original file: proto/fuxi/v1/agent.proto

import type { Long } from '@grpc/proto-loader';

export interface UpdateGrantsResponse {
  'appliedSeq'?: (number | string | Long);
}

export interface UpdateGrantsResponse__Output {
  'appliedSeq': (string);
}
