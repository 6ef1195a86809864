// Original file: proto/fuxi/v1/master.proto

import type { Long } from '@grpc/proto-loader';

/**
 * Hosts reserved for a quota group (CreateTestbed).
 */
export interface Testbed {
  'name'?: (string);
  'quotaGroup'?: (string);
  /**
   * How the hosts were chosen (as asked): by name, by label (key=value) or a count of free hosts.
   */
  'selectorHosts'?: (string)[];
  'selectorLabel'?: (string);
  'selectorCount'?: (number);
  /**
   * The node ids, resolved when it was created.
   */
  'hosts'?: (string)[];
  /**
   * The window, ms since the epoch (0: unbounded on that side).
   */
  'startMs'?: (number | string | Long);
  'endMs'?: (number | string | Long);
  'createdMs'?: (number | string | Long);
  /**
   * Whether it holds its hosts now (inside its window).
   */
  'active'?: (boolean);
}

/**
 * Hosts reserved for a quota group (CreateTestbed).
 */
export interface Testbed__Output {
  'name': (string);
  'quotaGroup': (string);
  /**
   * How the hosts were chosen (as asked): by name, by label (key=value) or a count of free hosts.
   */
  'selectorHosts': (string)[];
  'selectorLabel': (string);
  'selectorCount': (number);
  /**
   * The node ids, resolved when it was created.
   */
  'hosts': (string)[];
  /**
   * The window, ms since the epoch (0: unbounded on that side).
   */
  'startMs': (string);
  'endMs': (string);
  'createdMs': (string);
  /**
   * Whether it holds its hosts now (inside its window).
   */
  'active': (boolean);
}
