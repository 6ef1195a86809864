// Original file: proto/fuxi/v1/master.proto

import type { ScheduleUnitConfig as _fuxi_v1_ScheduleUnitConfig, ScheduleUnitConfig__Output as _fuxi_v1_ScheduleUnitConfig__Output } from '../../fuxi/v1/ScheduleUnitConfig.js';
import type { OutstandingRequest as _fuxi_v1_OutstandingRequest, OutstandingRequest__Output as _fuxi_v1_OutstandingRequest__Output } from '../../fuxi/v1/OutstandingRequest.js';

export interface ReportAppStateRequest {
  'appId'?: (string);
  'amAttempt'?: (number);
  'units'?: (_fuxi_v1_ScheduleUnitConfig)[];
  'requests'?: (_fuxi_v1_OutstandingRequest)[];
}

export interface ReportAppStateRequest__Output {
  'appId': (string);
  'amAttempt': (number);
  'units': (_fuxi_v1_ScheduleUnitConfig__Output)[];
  'requests': (_fuxi_v1_OutstandingRequest__Output)[];
}
