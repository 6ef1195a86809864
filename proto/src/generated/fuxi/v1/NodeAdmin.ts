// Original file: proto/fuxi/v1/master.proto

import type { Long } from '@grpc/proto-loader';

/**
 * An operator's decision about a node (CordonNode, DrainNode).
 */
export interface NodeAdmin {
  /**
   * "cordoned" or "draining".
   */
  'state'?: (string);
  'reason'?: (string);
  /**
   * Who asked (the caller's user name as the client sent it).
   */
  'by'?: (string);
  /**
   * When it was asked (ms since the epoch).
   */
  'sinceMs'?: (number | string | Long);
  /**
   * Draining: when the slots still held on the node are revoked (ms since the epoch); else 0.
   */
  'deadlineMs'?: (number | string | Long);
  /**
   * Cordoned because a drain finished.
   */
  'drained'?: (boolean);
}

/**
 * An operator's decision about a node (CordonNode, DrainNode).
 */
export interface NodeAdmin__Output {
  /**
   * "cordoned" or "draining".
   */
  'state': (string);
  'reason': (string);
  /**
   * Who asked (the caller's user name as the client sent it).
   */
  'by': (string);
  /**
   * When it was asked (ms since the epoch).
   */
  'sinceMs': (string);
  /**
   * Draining: when the slots still held on the node are revoked (ms since the epoch); else 0.
   */
  'deadlineMs': (string);
  /**
   * Cordoned because a drain finished.
   */
  'drained': (boolean);
}
