// Original file: proto/fuxi/v1/agent.proto

import type { Command as _fuxi_v1_Command, Command__Output as _fuxi_v1_Command__Output } from '../../fuxi/v1/Command.js';
import type { Resource as _fuxi_v1_Resource, Resource__Output as _fuxi_v1_Resource__Output } from '../../fuxi/v1/Resource.js';

/**
 * Start instance `instance` attempt `attempt` of `task` in schedule unit `su_id`.
 */
export interface WorkerPlan {
  'workerId'?: (string);
  'suId'?: (string);
  'task'?: (string);
  'instance'?: (number);
  'attempt'?: (number);
  'command'?: (_fuxi_v1_Command | null);
  'resource'?: (_fuxi_v1_Resource | null);
}

/**
 * Start instance `instance` attempt `attempt` of `task` in schedule unit `su_id`.
 */
export interface WorkerPlan__Output {
  'workerId': (string);
  'suId': (string);
  'task': (string);
  'instance': (number);
  'attempt': (number);
  'command': (_fuxi_v1_Command__Output | null);
  'resource': (_fuxi_v1_Resource__Output | null);
}
