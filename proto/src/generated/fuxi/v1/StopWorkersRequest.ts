// Original file: proto/fuxi/v1/agent.proto

import type { Long } from '@grpc/proto-loader';

export interface StopWorkersRequest {
  'appId'?: (string);
  /**
   * Empty = every worker of the app.
   */
  'workerIds'?: (string)[];
  'amAttempt'?: (number);
  'epoch'?: (number | string | Long);
  'reason'?: (string);
}

export interface StopWorkersRequest__Output {
  'appId': (string);
  /**
   * Empty = every worker of the app.
   */
  'workerIds': (string)[];
  'amAttempt': (number);
  'epoch': (string);
  'reason': (string);
}
