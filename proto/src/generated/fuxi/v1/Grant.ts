// Original file: proto/fuxi/v1/common.proto

import type { Resource as _fuxi_v1_Resource, Resource__Output as _fuxi_v1_Resource__Output } from '../../fuxi/v1/Resource.js';

/**
 * "app A / schedule unit S may use `slots` slots of `resource` on this node".
 * Always the absolute number for (app, su) on the node, never a delta, so a
 * repeated or reordered delivery cannot double-count.
 */
export interface Grant {
  'appId'?: (string);
  'suId'?: (string);
  'slots'?: (number);
  'resource'?: (_fuxi_v1_Resource | null);
  /**
   * The app's current AM attempt: agents reject plans and stops from older attempts (fencing a
   * restarted or stalled AM's predecessor).
   */
  'amAttempt'?: (number);
  /**
   * sha-256 (hex) of the current AM attempt's token: agents accept plans for the app only from a
   * caller presenting that token (never the token itself).
   */
  'amTokenHash'?: (string);
  /**
   * The job's quota group: the agent runs the app's job processes as that group's user
   * (agent config `workerUsers`).
   */
  'quotaGroup'?: (string);
}

/**
 * "app A / schedule unit S may use `slots` slots of `resource` on this node".
 * Always the absolute number for (app, su) on the node, never a delta, so a
 * repeated or reordered delivery cannot double-count.
 */
export interface Grant__Output {
  'appId': (string);
  'suId': (string);
  'slots': (number);
  'resource': (_fuxi_v1_Resource__Output | null);
  /**
   * The app's current AM attempt: agents reject plans and stops from older attempts (fencing a
   * restarted or stalled AM's predecessor).
   */
  'amAttempt': (number);
  /**
   * sha-256 (hex) of the current AM attempt's token: agents accept plans for the app only from a
   * caller presenting that token (never the token itself).
   */
  'amTokenHash': (string);
  /**
   * The job's quota group: the agent runs the app's job processes as that group's user
   * (agent config `workerUsers`).
   */
  'quotaGroup': (string);
}
