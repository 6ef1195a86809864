// Original file: proto/fuxi/v1/master.proto

import type { Long } from '@grpc/proto-loader';

export interface DrainNodeRequest {
  'nodeId'?: (string);
  'reason'?: (string);
  'requestedBy'?: (string);
  /**
   * How long running work may take to finish before its slots are revoked (ms, > 0; 0: 1 hour).
   */
  'deadlineMs'?: (number | string | Long);
}

export interface DrainNodeRequest__Output {
  'nodeId': (string);
  'reason': (string);
  'requestedBy': (string);
  /**
   * How long running work may take to finish before its slots are revoked (ms, > 0; 0: 1 hour).
   */
  'deadlineMs': (string);
}
