// Original file: proto/fuxi/v1/master.proto

import type { ScheduleUnitConfig as _fuxi_v1_ScheduleUnitConfig, ScheduleUnitConfig__Output as _fuxi_v1_ScheduleUnitConfig__Output } from '../../fuxi/v1/ScheduleUnitConfig.js';
import type { OutstandingRequest as _fuxi_v1_OutstandingRequest, OutstandingRequest__Output as _fuxi_v1_OutstandingRequest__Output } from '../../fuxi/v1/OutstandingRequest.js';
import type { Assignment as _fuxi_v1_Assignment, Assignment__Output as _fuxi_v1_Assignment__Output } from '../../fuxi/v1/Assignment.js';
import type { PlacementConstraints as _fuxi_v1_PlacementConstraints, PlacementConstraints__Output as _fuxi_v1_PlacementConstraints__Output } from '../../fuxi/v1/PlacementConstraints.js';

/**
 * The AM's soft state, for a master rebuilding its own (AMFullReqResFromFM). Its outstanding
 * requests replace the master's; its assignments are never believed as grants (degree of
 * confidence: master > agent > worker > AM), only used to keep slots on timing-out agents reserved.
 */
export interface ReportAppStateRequest {
  'appId'?: (string);
  'amAttempt'?: (number);
  'units'?: (_fuxi_v1_ScheduleUnitConfig)[];
  'requests'?: (_fuxi_v1_OutstandingRequest)[];
  'assignments'?: (_fuxi_v1_Assignment)[];
  /**
   * The AM's own address (unchanged unless it moved).
   */
  'address'?: (string);
  'constraints'?: (_fuxi_v1_PlacementConstraints | null);
  /**
   * Hosts failure prediction moved or killed the app's running attempts off (AttemptVerdict), for
   * a new leader to keep them off the app's new grants again (its blacklist is soft state).
   */
  'predictedBadHosts'?: (string)[];
}

/**
 * The AM's soft state, for a master rebuilding its own (AMFullReqResFromFM). Its outstanding
 * requests replace the master's; its assignments are never believed as grants (degree of
 * confidence: master > agent > worker > AM), only used to keep slots on timing-out agents reserved.
 */
export interface ReportAppStateRequest__Output {
  'appId': (string);
  'amAttempt': (number);
  'units': (_fuxi_v1_ScheduleUnitConfig__Output)[];
  'requests': (_fuxi_v1_OutstandingRequest__Output)[];
  'assignments': (_fuxi_v1_Assignment__Output)[];
  /**
   * The AM's own address (unchanged unless it moved).
   */
  'address': (string);
  'constraints': (_fuxi_v1_PlacementConstraints__Output | null);
  /**
   * Hosts failure prediction moved or killed the app's running attempts off (AttemptVerdict), for
   * a new leader to keep them off the app's new grants again (its blacklist is soft state).
   */
  'predictedBadHosts': (string)[];
}
