// Original file: proto/fuxi/v1/appmaster.proto

import type { Long } from '@grpc/proto-loader';

export interface AgentsTimedOutRequest {
  'epoch'?: (number | string | Long);
  'nodeIds'?: (string)[];
}

export interface AgentsTimedOutRequest__Output {
  'epoch': (string);
  'nodeIds': (string)[];
}
