// Original file: proto/fuxi/v1/agent.proto

import type { Command as _fuxi_v1_Command, Command__Output as _fuxi_v1_Command__Output } from '../../fuxi/v1/Command.js';
import type { Resource as _fuxi_v1_Resource, Resource__Output as _fuxi_v1_Resource__Output } from '../../fuxi/v1/Resource.js';
import type { Long } from '@grpc/proto-loader';

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
  /**
   * The grant table of this node that holds the plan's slot (master epoch, message seq; from
   * `Assignment.grant_seq`): the agent starts the plan only once it has applied that table or a
   * newer one. A slot returned and placed on the node again comes back in a later table than the
   * one that took it away, which the agent may not have applied yet: started on the older table,
   * the worker would be killed as over its grant when that one arrives. 0: none (start on any).
   */
  'grantEpoch'?: (number | string | Long);
  'grantSeq'?: (number | string | Long);
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
  /**
   * The grant table of this node that holds the plan's slot (master epoch, message seq; from
   * `Assignment.grant_seq`): the agent starts the plan only once it has applied that table or a
   * newer one. A slot returned and placed on the node again comes back in a later table than the
   * one that took it away, which the agent may not have applied yet: started on the older table,
   * the worker would be killed as over its grant when that one arrives. 0: none (start on any).
   */
  'grantEpoch': (string);
  'grantSeq': (string);
}
