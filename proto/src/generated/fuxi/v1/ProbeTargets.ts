// Original file: proto/fuxi/v1/master.proto

import type { ProbePeer as _fuxi_v1_ProbePeer, ProbePeer__Output as _fuxi_v1_ProbePeer__Output } from '../../fuxi/v1/ProbePeer.js';
import type { Long } from '@grpc/proto-loader';

/**
 * Whom an agent probes, and where (UDP, the peer's probe address).
 */
export interface ProbeTargets {
  'version'?: (number | string | Long);
  'peers'?: (_fuxi_v1_ProbePeer)[];
}

/**
 * Whom an agent probes, and where (UDP, the peer's probe address).
 */
export interface ProbeTargets__Output {
  'version': (string);
  'peers': (_fuxi_v1_ProbePeer__Output)[];
}
