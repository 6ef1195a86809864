// Original file: proto/fuxi/v1/master.proto

import type { Resource as _fuxi_v1_Resource, Resource__Output as _fuxi_v1_Resource__Output } from '../../fuxi/v1/Resource.js';

/**
 * Shape of an SU; sent once (with the first delta) and kept by the master.
 */
export interface ScheduleUnitConfig {
  'suId'?: (string);
  'resource'?: (_fuxi_v1_Resource | null);
  'priority'?: (number);
}

/**
 * Shape of an SU; sent once (with the first delta) and kept by the master.
 */
export interface ScheduleUnitConfig__Output {
  'suId': (string);
  'resource': (_fuxi_v1_Resource__Output | null);
  'priority': (number);
}
