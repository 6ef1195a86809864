// Original file: proto/fuxi/v1/scheduler.proto

import type { Resource as _fuxi_v1_Resource, Resource__Output as _fuxi_v1_Resource__Output } from '../../fuxi/v1/Resource.js';
import type { Long } from '@grpc/proto-loader';

export interface PendingRequest {
  'appId'?: (string);
  /**
   * The task (its schedule unit).
   */
  'unit'?: (string);
  'resource'?: (_fuxi_v1_Resource | null);
  /**
   * Slots still wanted.
   */
  'count'?: (number);
  /**
   * Gang: the first placement of this unit must bring at least this many slots (0 or 1: no gang).
   */
  'gang'?: (number);
  /**
   * When the master first saw the oldest of these slots (ms since the epoch, decimal).
   */
  'waitingSinceMs'?: (number | string | Long);
  /**
   * Position in the queue: priority, then submission order.
   */
  'queueOrder'?: (number);
  'priority'?: (number);
}

export interface PendingRequest__Output {
  'appId': (string);
  /**
   * The task (its schedule unit).
   */
  'unit': (string);
  'resource': (_fuxi_v1_Resource__Output | null);
  /**
   * Slots still wanted.
   */
  'count': (number);
  /**
   * Gang: the first placement of this unit must bring at least this many slots (0 or 1: no gang).
   */
  'gang': (number);
  /**
   * When the master first saw the oldest of these slots (ms since the epoch, decimal).
   */
  'waitingSinceMs': (string);
  /**
   * Position in the queue: priority, then submission order.
   */
  'queueOrder': (number);
  'priority': (number);
}
