// Original file: proto/fuxi/v1/master.proto

import type { Grant as _fuxi_v1_Grant, Grant__Output as _fuxi_v1_Grant__Output } from '../../fuxi/v1/Grant.js';
import type { Long } from '@grpc/proto-loader';

/**
 * Wire-compatible with AgentService's UpdateGrantsRequest.
 */
export interface GrantUpdate {
  'epoch'?: (number | string | Long);
  'seq'?: (number | string | Long);
  /**
   * True: `grants` is the whole table; entries absent are revoked.
   */
  'full'?: (boolean);
  'grants'?: (_fuxi_v1_Grant)[];
}

/**
 * Wire-compatible with AgentService's UpdateGrantsRequest.
 */
export interface GrantUpdate__Output {
  'epoch': (string);
  'seq': (string);
  /**
   * True: `grants` is the whole table; entries absent are revoked.
   */
  'full': (boolean);
  'grants': (_fuxi_v1_Grant__Output)[];
}
