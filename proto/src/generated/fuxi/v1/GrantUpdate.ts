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
   * True: `grants` is the whole table; entries absent are revoked. False: a delta, the entries
   * that changed since table `base_seq` of the same master (an entry with 0 slots is revoked).
   */
  'full'?: (boolean);
  'grants'?: (_fuxi_v1_Grant)[];
  /**
   * A delta applies only on exactly this table of the same master; 0: on table `seq` - 1.
   */
  'baseSeq'?: (number | string | Long);
}

/**
 * Wire-compatible with AgentService's UpdateGrantsRequest.
 */
export interface GrantUpdate__Output {
  'epoch': (string);
  'seq': (string);
  /**
   * True: `grants` is the whole table; entries absent are revoked. False: a delta, the entries
   * that changed since table `base_seq` of the same master (an entry with 0 slots is revoked).
   */
  'full': (boolean);
  'grants': (_fuxi_v1_Grant__Output)[];
  /**
   * A delta applies only on exactly this table of the same master; 0: on table `seq` - 1.
   */
  'baseSeq': (string);
}
