// Original file: proto/fuxi/v1/common.proto

import type { Long } from '@grpc/proto-loader';

/**
 * "You hold `slots` slots of SU `su_id` on node `node_id`" (absolute).
 */
export interface Assignment {
  'suId'?: (string);
  'nodeId'?: (string);
  'nodeAddress'?: (string);
  'slots'?: (number);
  /**
   * The seq (in the sending master's numbering) of the first grant table of the node that holds
   * these slots: the one sent when the count last rose. A plan made on them carries it
   * (`WorkerPlan.grant_seq`). 0: unknown.
   */
  'grantSeq'?: (number | string | Long);
}

/**
 * "You hold `slots` slots of SU `su_id` on node `node_id`" (absolute).
 */
export interface Assignment__Output {
  'suId': (string);
  'nodeId': (string);
  'nodeAddress': (string);
  'slots': (number);
  /**
   * The seq (in the sending master's numbering) of the first grant table of the node that holds
   * these slots: the one sent when the count last rose. A plan made on them carries it
   * (`WorkerPlan.grant_seq`). 0: unknown.
   */
  'grantSeq': (string);
}
