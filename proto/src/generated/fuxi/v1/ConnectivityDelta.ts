// Original file: proto/fuxi/v1/master.proto

import type { Long } from '@grpc/proto-loader';

/**
 * Peers that stopped or started answering this agent's probes (200 ms period, 3 misses).
 */
export interface ConnectivityDelta {
  /**
   * The agent's sequence after these changes (monotonic per agent process).
   */
  'seq'?: (number | string | Long);
  /**
   * The sequence the changes apply to; 0: `unreachable` is the agent's whole set.
   */
  'baseSeq'?: (number | string | Long);
  'unreachable'?: (string)[];
  'reachable'?: (string)[];
}

/**
 * Peers that stopped or started answering this agent's probes (200 ms period, 3 misses).
 */
export interface ConnectivityDelta__Output {
  /**
   * The agent's sequence after these changes (monotonic per agent process).
   */
  'seq': (string);
  /**
   * The sequence the changes apply to; 0: `unreachable` is the agent's whole set.
   */
  'baseSeq': (string);
  'unreachable': (string)[];
  'reachable': (string)[];
}
