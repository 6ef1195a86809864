// Original file: proto/fuxi/v1/scheduler.proto

import type { Long } from '@grpc/proto-loader';

export interface HistoryEntry {
  /**
   * "placed" (a placement was applied) or "failed" (a worker of one of its jobs failed on the host).
   */
  'kind'?: (string);
  'atMs'?: (number | string | Long);
  'appId'?: (string);
  'unit'?: (string);
  'nodeId'?: (string);
  'count'?: (number);
}

export interface HistoryEntry__Output {
  /**
   * "placed" (a placement was applied) or "failed" (a worker of one of its jobs failed on the host).
   */
  'kind': (string);
  'atMs': (string);
  'appId': (string);
  'unit': (string);
  'nodeId': (string);
  'count': (number);
}
