// Original file: proto/fuxi/v1/master.proto

import type { NodeInfo as _fuxi_v1_NodeInfo, NodeInfo__Output as _fuxi_v1_NodeInfo__Output } from '../../fuxi/v1/NodeInfo.js';
import type { Resource as _fuxi_v1_Resource, Resource__Output as _fuxi_v1_Resource__Output } from '../../fuxi/v1/Resource.js';
import type { NodeAdmin as _fuxi_v1_NodeAdmin, NodeAdmin__Output as _fuxi_v1_NodeAdmin__Output } from '../../fuxi/v1/NodeAdmin.js';
import type { Long } from '@grpc/proto-loader';

export interface NodeStatus {
  'node'?: (_fuxi_v1_NodeInfo | null);
  'healthy'?: (boolean);
  'allocated'?: (_fuxi_v1_Resource | null);
  'free'?: (_fuxi_v1_Resource | null);
  'runningWorkers'?: (number);
  'lastHeartbeatMs'?: (number | string | Long);
  /**
   * ready, timing out (silent: its slots reserved, not schedulable), lost (its slots released),
   * unreported / missing (after a failover: not heard from yet / not by the end of the window),
   * partitioned (the master cannot hear it, its peers can: its workers and slots are kept, nothing
   * new is placed on it). `healthy` is any state but lost (a timing-out node holds its workers and
   * slots).
   */
  'state'?: (string);
  /**
   * Peers this node cannot reach or be reached by (a partial partition); empty when none.
   */
  'unreachablePeers'?: (string)[];
  /**
   * Its administrative state (absent: none, the node is schedulable when ready).
   */
  'admin'?: (_fuxi_v1_NodeAdmin | null);
  /**
   * Failure prediction's word on the host: "" (nothing), "gray" (new workers only when no other
   * host has room), "blocked" (no new workers), "job" (blocked for the jobs in prediction_jobs),
   * "memory" (new workers only while its memory allocated stays below the pressure level); the reason (the predicted failure rate and the failures and flaps behind it) and those jobs.
   */
  'prediction'?: (string);
  'predictionReason'?: (string);
  'predictionJobs'?: (string)[];
  /**
   * The testbed that holds the node now (only its quota group's jobs get new slots here); '' when none.
   */
  'testbed'?: (string);
}

export interface NodeStatus__Output {
  'node': (_fuxi_v1_NodeInfo__Output | null);
  'healthy': (boolean);
  'allocated': (_fuxi_v1_Resource__Output | null);
  'free': (_fuxi_v1_Resource__Output | null);
  'runningWorkers': (number);
  'lastHeartbeatMs': (string);
  /**
   * ready, timing out (silent: its slots reserved, not schedulable), lost (its slots released),
   * unreported / missing (after a failover: not heard from yet / not by the end of the window),
   * partitioned (the master cannot hear it, its peers can: its workers and slots are kept, nothing
   * new is placed on it). `healthy` is any state but lost (a timing-out node holds its workers and
   * slots).
   */
  'state': (string);
  /**
   * Peers this node cannot reach or be reached by (a partial partition); empty when none.
   */
  'unreachablePeers': (string)[];
  /**
   * Its administrative state (absent: none, the node is schedulable when ready).
   */
  'admin': (_fuxi_v1_NodeAdmin__Output | null);
  /**
   * Failure prediction's word on the host: "" (nothing), "gray" (new workers only when no other
   * host has room), "blocked" (no new workers), "job" (blocked for the jobs in prediction_jobs),
   * "memory" (new workers only while its memory allocated stays below the pressure level); the reason (the predicted failure rate and the failures and flaps behind it) and those jobs.
   */
  'prediction': (string);
  'predictionReason': (string);
  'predictionJobs': (string)[];
  /**
   * The testbed that holds the node now (only its quota group's jobs get new slots here); '' when none.
   */
  'testbed': (string);
}
