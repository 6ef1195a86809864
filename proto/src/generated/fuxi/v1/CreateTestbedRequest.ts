// Original file: proto/fuxi/v1/master.proto

import type { Long } from '@grpc/proto-loader';

export interface CreateTestbedRequest {
  'name'?: (string);
  'quotaGroup'?: (string);
  /**
   * Exactly one of: host ids, a label (key=value) every chosen node carries, a count of hosts the
   * master picks (healthy, uncordoned, least loaded).
   */
  'hosts'?: (string)[];
  'label'?: (string);
  'count'?: (number);
  /**
   * The window (ms since the epoch; 0: from now / without end).
   */
  'startMs'?: (number | string | Long);
  'endMs'?: (number | string | Long);
  'requestedBy'?: (string);
}

export interface CreateTestbedRequest__Output {
  'name': (string);
  'quotaGroup': (string);
  /**
   * Exactly one of: host ids, a label (key=value) every chosen node carries, a count of hosts the
   * master picks (healthy, uncordoned, least loaded).
   */
  'hosts': (string)[];
  'label': (string);
  'count': (number);
  /**
   * The window (ms since the epoch; 0: from now / without end).
   */
  'startMs': (string);
  'endMs': (string);
  'requestedBy': (string);
}
