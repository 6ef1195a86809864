// Original file: proto/fuxi/v1/common.proto

import type { Link as _fuxi_v1_Link, Link__Output as _fuxi_v1_Link__Output } from '../../fuxi/v1/Link.js';
import type { Long } from '@grpc/proto-loader';

/**
 * The cluster's connectivity as the master knows it: only what is broken. Everything not listed
 * reaches everything else.
 */
export interface Connectivity {
  /**
   * Changes with every change below; 0: the master knows nothing (e.g. just took over).
   */
  'version'?: (number | string | Long);
  'brokenLinks'?: (_fuxi_v1_Link)[];
  /**
   * Nodes the master cannot hear but that their peers still reach: partitioned from the master,
   * not lost (their workers keep running).
   */
  'partitionedFromMaster'?: (string)[];
  /**
   * Nodes an operator is draining (DrainNode): an AM plans nothing new there and gives back the
   * free slots it holds there, so that the drain ends once the work there has finished.
   */
  'draining'?: (string)[];
}

/**
 * The cluster's connectivity as the master knows it: only what is broken. Everything not listed
 * reaches everything else.
 */
export interface Connectivity__Output {
  /**
   * Changes with every change below; 0: the master knows nothing (e.g. just took over).
   */
  'version': (string);
  'brokenLinks': (_fuxi_v1_Link__Output)[];
  /**
   * Nodes the master cannot hear but that their peers still reach: partitioned from the master,
   * not lost (their workers keep running).
   */
  'partitionedFromMaster': (string)[];
  /**
   * Nodes an operator is draining (DrainNode): an AM plans nothing new there and gives back the
   * free slots it holds there, so that the drain ends once the work there has finished.
   */
  'draining': (string)[];
}
