// Original file: proto/fuxi/v1/master.proto

import type { Long } from '@grpc/proto-loader';

export interface RecoveryProgress {
  /**
   * aggregating, recovered, normal.
   */
  'phase'?: (string);
  'agentsReported'?: (number);
  'agentsExpected'?: (number);
  'appsReported'?: (number);
  'appsExpected'?: (number);
  'startedAtMs'?: (number | string | Long);
  'finishedAtMs'?: (number | string | Long);
}

export interface RecoveryProgress__Output {
  /**
   * aggregating, recovered, normal.
   */
  'phase': (string);
  'agentsReported': (number);
  'agentsExpected': (number);
  'appsReported': (number);
  'appsExpected': (number);
  'startedAtMs': (string);
  'finishedAtMs': (string);
}
