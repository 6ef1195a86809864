// Original file: proto/fuxi/v1/master.proto

import type { Long } from '@grpc/proto-loader';

export interface WatchGrantsRequest {
  'nodeId'?: (string);
  /**
   * The epoch the agent registered with (decimal int64); a stream from another master is refused.
   */
  'epoch'?: (number | string | Long);
}

export interface WatchGrantsRequest__Output {
  'nodeId': (string);
  /**
   * The epoch the agent registered with (decimal int64); a stream from another master is refused.
   */
  'epoch': (string);
}
