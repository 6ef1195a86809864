// Original file: proto/fuxi/v1/scheduler.proto

import type { Resource as _fuxi_v1_Resource, Resource__Output as _fuxi_v1_Resource__Output } from '../../fuxi/v1/Resource.js';

export interface HostState {
  'nodeId'?: (string);
  'rack'?: (string);
  'capacity'?: (_fuxi_v1_Resource | null);
  'free'?: (_fuxi_v1_Resource | null);
  /**
   * False: cordoned, draining, lost or timing out; placements there are rejected.
   */
  'schedulable'?: (boolean);
}

export interface HostState__Output {
  'nodeId': (string);
  'rack': (string);
  'capacity': (_fuxi_v1_Resource__Output | null);
  'free': (_fuxi_v1_Resource__Output | null);
  /**
   * False: cordoned, draining, lost or timing out; placements there are rejected.
   */
  'schedulable': (boolean);
}
