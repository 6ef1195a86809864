// Original file: proto/fuxi/v1/master.proto

import type { ScheduleUnitConfig as _fuxi_v1_ScheduleUnitConfig, ScheduleUnitConfig__Output as _fuxi_v1_ScheduleUnitConfig__Output } from '../../fuxi/v1/ScheduleUnitConfig.js';
import type { RequestDelta as _fuxi_v1_RequestDelta, RequestDelta__Output as _fuxi_v1_RequestDelta__Output } from '../../fuxi/v1/RequestDelta.js';
import type { TaskProgress as _fuxi_v1_TaskProgress, TaskProgress__Output as _fuxi_v1_TaskProgress__Output } from '../../fuxi/v1/TaskProgress.js';
import type { PlacementConstraints as _fuxi_v1_PlacementConstraints, PlacementConstraints__Output as _fuxi_v1_PlacementConstraints__Output } from '../../fuxi/v1/PlacementConstraints.js';
import type { Long } from '@grpc/proto-loader';

export interface UpdateRequestsRequest {
  'appId'?: (string);
  'amAttempt'?: (number);
  /**
   * Monotonic per AM attempt; a repeated seq is acknowledged but not applied again.
   */
  'seq'?: (number | string | Long);
  'units'?: (_fuxi_v1_ScheduleUnitConfig)[];
  'deltas'?: (_fuxi_v1_RequestDelta)[];
  /**
   * The last assignment sequence the AM applied.
   */
  'assignmentSeq'?: (number | string | Long);
  'progress'?: (_fuxi_v1_TaskProgress)[];
  /**
   * The connectivity version the AM holds (0: none).
   */
  'connectivityVersion'?: (number | string | Long);
  /**
   * When set, replaces the app's placement constraints.
   */
  'constraints'?: (_fuxi_v1_PlacementConstraints | null);
}

export interface UpdateRequestsRequest__Output {
  'appId': (string);
  'amAttempt': (number);
  /**
   * Monotonic per AM attempt; a repeated seq is acknowledged but not applied again.
   */
  'seq': (string);
  'units': (_fuxi_v1_ScheduleUnitConfig__Output)[];
  'deltas': (_fuxi_v1_RequestDelta__Output)[];
  /**
   * The last assignment sequence the AM applied.
   */
  'assignmentSeq': (string);
  'progress': (_fuxi_v1_TaskProgress__Output)[];
  /**
   * The connectivity version the AM holds (0: none).
   */
  'connectivityVersion': (string);
  /**
   * When set, replaces the app's placement constraints.
   */
  'constraints': (_fuxi_v1_PlacementConstraints__Output | null);
}
