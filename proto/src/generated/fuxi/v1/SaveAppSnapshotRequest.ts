// Original file: proto/fuxi/v1/master.proto

import type { Long } from '@grpc/proto-loader';

export interface SaveAppSnapshotRequest {
  'appId'?: (string);
  'amAttempt'?: (number);
  /**
   * Written once per app (the first non-empty one wins); opaque to the master (JSON).
   */
  'topology'?: (string);
  /**
   * Appended in order; `seq` makes a retried call idempotent (per AM attempt).
   */
  'seq'?: (number | string | Long);
  'entries'?: (string)[];
}

export interface SaveAppSnapshotRequest__Output {
  'appId': (string);
  'amAttempt': (number);
  /**
   * Written once per app (the first non-empty one wins); opaque to the master (JSON).
   */
  'topology': (string);
  /**
   * Appended in order; `seq` makes a retried call idempotent (per AM attempt).
   */
  'seq': (string);
  'entries': (string)[];
}
