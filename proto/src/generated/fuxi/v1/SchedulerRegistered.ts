// Original file: proto/fuxi/v1/scheduler.proto

import type { Long } from '@grpc/proto-loader';

export interface SchedulerRegistered {
  /**
   * This registration's epoch: Place calls carry it; an older one is fenced.
   */
  'epoch'?: (number | string | Long);
  /**
   * The master's epoch (its term), to notice a failover.
   */
  'masterEpoch'?: (string);
  /**
   * How long the master waits for a message before it counts the scheduler as stalled.
   */
  'stallMs'?: (number);
}

export interface SchedulerRegistered__Output {
  /**
   * This registration's epoch: Place calls carry it; an older one is fenced.
   */
  'epoch': (string);
  /**
   * The master's epoch (its term), to notice a failover.
   */
  'masterEpoch': (string);
  /**
   * How long the master waits for a message before it counts the scheduler as stalled.
   */
  'stallMs': (number);
}
