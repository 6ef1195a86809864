// Original file: proto/fuxi/v1/common.proto

import type { Long } from '@grpc/proto-loader';

/**
 * A broken link between two hosts (node ids): probes between their agents go unanswered.
 */
export interface Link {
  'a'?: (string);
  'b'?: (string);
  /**
   * When the master learned of it (its clock).
   */
  'sinceMs'?: (number | string | Long);
}

/**
 * A broken link between two hosts (node ids): probes between their agents go unanswered.
 */
export interface Link__Output {
  'a': (string);
  'b': (string);
  /**
   * When the master learned of it (its clock).
   */
  'sinceMs': (string);
}
