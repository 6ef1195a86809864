// Original file: proto/fuxi/v1/master.proto

import type { Long } from '@grpc/proto-loader';

export interface WatchAssignmentsRequest {
  'appId'?: (string);
  'amAttempt'?: (number);
  /**
   * The epoch of the master the AM registered with (decimal int64).
   */
  'epoch'?: (number | string | Long);
}

export interface WatchAssignmentsRequest__Output {
  'appId': (string);
  'amAttempt': (number);
  /**
   * The epoch of the master the AM registered with (decimal int64).
   */
  'epoch': (string);
}
