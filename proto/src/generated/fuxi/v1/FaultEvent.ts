// Original file: proto/fuxi/v1/master.proto

import type { Long } from '@grpc/proto-loader';

export interface FaultEvent {
  'id'?: (string);
  /**
   * FM_CRASH, AM_CRASH, AM_TIMING, AGENT_CRASH, AGENT_TIMING, AGENT_PARTITIONED (the master cannot
   * hear the agent but its peers reach it).
   */
  'kind'?: (string);
  /**
   * The node id or app id concerned ("" for the master).
   */
  'subject'?: (string);
  'sinceMs'?: (number | string | Long);
  /**
   * open, recovering, resolved.
   */
  'state'?: (string);
  'detail'?: (string);
}

export interface FaultEvent__Output {
  'id': (string);
  /**
   * FM_CRASH, AM_CRASH, AM_TIMING, AGENT_CRASH, AGENT_TIMING, AGENT_PARTITIONED (the master cannot
   * hear the agent but its peers reach it).
   */
  'kind': (string);
  /**
   * The node id or app id concerned ("" for the master).
   */
  'subject': (string);
  'sinceMs': (string);
  /**
   * open, recovering, resolved.
   */
  'state': (string);
  'detail': (string);
}
