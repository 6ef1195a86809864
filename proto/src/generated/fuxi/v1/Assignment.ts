// Original file: proto/fuxi/v1/common.proto


/**
 * "You hold `slots` slots of SU `su_id` on node `node_id`" (absolute).
 */
export interface Assignment {
  'suId'?: (string);
  'nodeId'?: (string);
  'nodeAddress'?: (string);
  'slots'?: (number);
}

/**
 * "You hold `slots` slots of SU `su_id` on node `node_id`" (absolute).
 */
export interface Assignment__Output {
  'suId': (string);
  'nodeId': (string);
  'nodeAddress': (string);
  'slots': (number);
}
