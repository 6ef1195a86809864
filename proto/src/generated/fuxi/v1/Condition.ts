// Original file: proto/fuxi/v1/master.proto

import type { Long } from '@grpc/proto-loader';

export interface Condition {
  /**
   * StoreOutOfSpace: etcd refuses writes (its NOSPACE alarm); the leader serves reads only.
   */
  'type'?: (string);
  /**
   * When the master learned of it (0: not known).
   */
  'sinceMs'?: (number | string | Long);
  /**
   * What it means and what to do.
   */
  'message'?: (string);
}

export interface Condition__Output {
  /**
   * StoreOutOfSpace: etcd refuses writes (its NOSPACE alarm); the leader serves reads only.
   */
  'type': (string);
  /**
   * When the master learned of it (0: not known).
   */
  'sinceMs': (string);
  /**
   * What it means and what to do.
   */
  'message': (string);
}
