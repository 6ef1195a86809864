// Original file: proto/fuxi/v1/common.proto

import type { WorkerState as _fuxi_v1_WorkerState, WorkerState__Output as _fuxi_v1_WorkerState__Output } from '../../fuxi/v1/WorkerState.js';
import type { Resource as _fuxi_v1_Resource, Resource__Output as _fuxi_v1_Resource__Output } from '../../fuxi/v1/Resource.js';
import type { PathRecord as _fuxi_v1_PathRecord, PathRecord__Output as _fuxi_v1_PathRecord__Output } from '../../fuxi/v1/PathRecord.js';
import type { Long } from '@grpc/proto-loader';

export interface WorkerStatus {
  'workerId'?: (string);
  'appId'?: (string);
  'suId'?: (string);
  'task'?: (string);
  'instance'?: (number);
  'attempt'?: (number);
  'amAttempt'?: (number);
  'nodeId'?: (string);
  'state'?: (_fuxi_v1_WorkerState);
  'pid'?: (number);
  'exitCode'?: (number);
  'signal'?: (string);
  'message'?: (string);
  'startedAtMs'?: (number | string | Long);
  'finishedAtMs'?: (number | string | Long);
  'resource'?: (_fuxi_v1_Resource | null);
  /**
   * What the worker reported of its progress (running workers; 0-1, 0 also when it reports none).
   */
  'progress'?: (number | string);
  /**
   * The worker's reads from other hosts, as it measured them (the SDK's fetches).
   */
  'paths'?: (_fuxi_v1_PathRecord)[];
}

export interface WorkerStatus__Output {
  'workerId': (string);
  'appId': (string);
  'suId': (string);
  'task': (string);
  'instance': (number);
  'attempt': (number);
  'amAttempt': (number);
  'nodeId': (string);
  'state': (_fuxi_v1_WorkerState__Output);
  'pid': (number);
  'exitCode': (number);
  'signal': (string);
  'message': (string);
  'startedAtMs': (string);
  'finishedAtMs': (string);
  'resource': (_fuxi_v1_Resource__Output | null);
  /**
   * What the worker reported of its progress (running workers; 0-1, 0 also when it reports none).
   */
  'progress': (number);
  /**
   * The worker's reads from other hosts, as it measured them (the SDK's fetches).
   */
  'paths': (_fuxi_v1_PathRecord__Output)[];
}
