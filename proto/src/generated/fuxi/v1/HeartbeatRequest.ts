// Original file: proto/fuxi/v1/master.proto

import type { Resource as _fuxi_v1_Resource, Resource__Output as _fuxi_v1_Resource__Output } from '../../fuxi/v1/Resource.js';
import type { WorkerSummary as _fuxi_v1_WorkerSummary, WorkerSummary__Output as _fuxi_v1_WorkerSummary__Output } from '../../fuxi/v1/WorkerSummary.js';
import type { WorkerStatus as _fuxi_v1_WorkerStatus, WorkerStatus__Output as _fuxi_v1_WorkerStatus__Output } from '../../fuxi/v1/WorkerStatus.js';
import type { ConnectivityDelta as _fuxi_v1_ConnectivityDelta, ConnectivityDelta__Output as _fuxi_v1_ConnectivityDelta__Output } from '../../fuxi/v1/ConnectivityDelta.js';
import type { RegisterAgentRequest as _fuxi_v1_RegisterAgentRequest, RegisterAgentRequest__Output as _fuxi_v1_RegisterAgentRequest__Output } from '../../fuxi/v1/RegisterAgentRequest.js';
import type { Long } from '@grpc/proto-loader';

export interface HeartbeatRequest {
  'nodeId'?: (string);
  'epoch'?: (number | string | Long);
  /**
   * The last grant sequence number the agent applied.
   */
  'grantSeq'?: (number | string | Long);
  'used'?: (_fuxi_v1_Resource | null);
  'workers'?: (_fuxi_v1_WorkerSummary | null);
  /**
   * Every application-master process on this node, so the master learns when one exits.
   */
  'amWorkers'?: (_fuxi_v1_WorkerStatus)[];
  /**
   * Reachability of the peers this agent probes, as changes on top of what the master acknowledged.
   */
  'connectivity'?: (_fuxi_v1_ConnectivityDelta | null);
  /**
   * The version of the probe targets the agent holds (0: none yet).
   */
  'probeTargetsVersion'?: (number | string | Long);
  /**
   * Workers (not AMs) that ended since a master last answered, oldest first: the attempt outcomes
   * the master's failure prediction learns from.
   */
  'workerEnds'?: (_fuxi_v1_WorkerStatus)[];
  /**
   * The task workers (not AMs) running on this node now, at most 1,000: the attempts the master's
   * failure prediction weighs one by one (ATLAS+: proceed, reschedule, kill). Only worker_id,
   * app_id, task, instance, attempt and started_at_ms are set.
   */
  'runningWorkers'?: (_fuxi_v1_WorkerStatus)[];
  /**
   * Sent after the agent lost its master (its grant stream was cut) until a master answers: a
   * master that does not know this agent (a new leader) registers it from this, with its state,
   * as RegisterAgent would, and answers in `registered` instead of asking it to register again:
   * one round trip per agent in a failover instead of two. A master that knows it ignores it.
   */
  'rejoin'?: (_fuxi_v1_RegisterAgentRequest | null);
}

export interface HeartbeatRequest__Output {
  'nodeId': (string);
  'epoch': (string);
  /**
   * The last grant sequence number the agent applied.
   */
  'grantSeq': (string);
  'used': (_fuxi_v1_Resource__Output | null);
  'workers': (_fuxi_v1_WorkerSummary__Output | null);
  /**
   * Every application-master process on this node, so the master learns when one exits.
   */
  'amWorkers': (_fuxi_v1_WorkerStatus__Output)[];
  /**
   * Reachability of the peers this agent probes, as changes on top of what the master acknowledged.
   */
  'connectivity': (_fuxi_v1_ConnectivityDelta__Output | null);
  /**
   * The version of the probe targets the agent holds (0: none yet).
   */
  'probeTargetsVersion': (string);
  /**
   * Workers (not AMs) that ended since a master last answered, oldest first: the attempt outcomes
   * the master's failure prediction learns from.
   */
  'workerEnds': (_fuxi_v1_WorkerStatus__Output)[];
  /**
   * The task workers (not AMs) running on this node now, at most 1,000: the attempts the master's
   * failure prediction weighs one by one (ATLAS+: proceed, reschedule, kill). Only worker_id,
   * app_id, task, instance, attempt and started_at_ms are set.
   */
  'runningWorkers': (_fuxi_v1_WorkerStatus__Output)[];
  /**
   * Sent after the agent lost its master (its grant stream was cut) until a master answers: a
   * master that does not know this agent (a new leader) registers it from this, with its state,
   * as RegisterAgent would, and answers in `registered` instead of asking it to register again:
   * one round trip per agent in a failover instead of two. A master that knows it ignores it.
   */
  'rejoin': (_fuxi_v1_RegisterAgentRequest__Output | null);
}
