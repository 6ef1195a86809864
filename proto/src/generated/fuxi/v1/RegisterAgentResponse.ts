// Original file: proto/fuxi/v1/master.proto

import type { Long } from '@grpc/proto-loader';

export interface RegisterAgentResponse {
  'epoch'?: (number | string | Long);
  'heartbeatIntervalMs'?: (number);
}

export interface RegisterAgentResponse__Output {
  'epoch': (string);
  'heartbeatIntervalMs': (number);
}
