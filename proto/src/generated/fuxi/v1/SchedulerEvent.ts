// Original file: proto/fuxi/v1/scheduler.proto

import type { SchedulerRegistered as _fuxi_v1_SchedulerRegistered, SchedulerRegistered__Output as _fuxi_v1_SchedulerRegistered__Output } from '../../fuxi/v1/SchedulerRegistered.js';
import type { SchedulerView as _fuxi_v1_SchedulerView, SchedulerView__Output as _fuxi_v1_SchedulerView__Output } from '../../fuxi/v1/SchedulerView.js';

export interface SchedulerEvent {
  'registered'?: (_fuxi_v1_SchedulerRegistered | null);
  'view'?: (_fuxi_v1_SchedulerView | null);
  'event'?: "registered"|"view";
}

export interface SchedulerEvent__Output {
  'registered'?: (_fuxi_v1_SchedulerRegistered__Output | null);
  'view'?: (_fuxi_v1_SchedulerView__Output | null);
  'event'?: "registered"|"view";
}
