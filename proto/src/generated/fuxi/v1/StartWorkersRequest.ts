// Original file: proto/fuxi/v1/agent.proto

import type { WorkerPlan as _fuxi_v1_WorkerPlan, WorkerPlan__Output as _fuxi_v1_WorkerPlan__Output } from '../../fuxi/v1/WorkerPlan.js';
import type { Long } from '@grpc/proto-loader';

export interface StartWorkersRequest {
  'appId'?: (string);
  'amAttempt'?: (number);
  /**
   * host:port of the AM: where worker events go. Empty for AM processes.
   */
  'amAddress'?: (string);
  /**
   * Set when the master itself sends the plan (AM processes); 0 otherwise.
   */
  'epoch'?: (number | string | Long);
  'plans'?: (_fuxi_v1_WorkerPlan)[];
}

export interface StartWorkersRequest__Output {
  'appId': (string);
  'amAttempt': (number);
  /**
   * host:port of the AM: where worker events go. Empty for AM processes.
   */
  'amAddress': (string);
  /**
   * Set when the master itself sends the plan (AM processes); 0 otherwise.
   */
  'epoch': (string);
  'plans': (_fuxi_v1_WorkerPlan__Output)[];
}
