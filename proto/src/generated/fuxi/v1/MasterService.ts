// Original file: proto/fuxi/v1/master.proto

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { AssignmentUpdate as _fuxi_v1_AssignmentUpdate, AssignmentUpdate__Output as _fuxi_v1_AssignmentUpdate__Output } from '../../fuxi/v1/AssignmentUpdate.js';
import type { CallBatch as _fuxi_v1_CallBatch, CallBatch__Output as _fuxi_v1_CallBatch__Output } from '../../fuxi/v1/CallBatch.js';
import type { CallBatchResult as _fuxi_v1_CallBatchResult, CallBatchResult__Output as _fuxi_v1_CallBatchResult__Output } from '../../fuxi/v1/CallBatchResult.js';
import type { ClusterStatus as _fuxi_v1_ClusterStatus, ClusterStatus__Output as _fuxi_v1_ClusterStatus__Output } from '../../fuxi/v1/ClusterStatus.js';
import type { CordonNodeRequest as _fuxi_v1_CordonNodeRequest, CordonNodeRequest__Output as _fuxi_v1_CordonNodeRequest__Output } from '../../fuxi/v1/CordonNodeRequest.js';
import type { CreateTestbedRequest as _fuxi_v1_CreateTestbedRequest, CreateTestbedRequest__Output as _fuxi_v1_CreateTestbedRequest__Output } from '../../fuxi/v1/CreateTestbedRequest.js';
import type { CreateTestbedResponse as _fuxi_v1_CreateTestbedResponse, CreateTestbedResponse__Output as _fuxi_v1_CreateTestbedResponse__Output } from '../../fuxi/v1/CreateTestbedResponse.js';
import type { DeleteTestbedRequest as _fuxi_v1_DeleteTestbedRequest, DeleteTestbedRequest__Output as _fuxi_v1_DeleteTestbedRequest__Output } from '../../fuxi/v1/DeleteTestbedRequest.js';
import type { DeleteTestbedResponse as _fuxi_v1_DeleteTestbedResponse, DeleteTestbedResponse__Output as _fuxi_v1_DeleteTestbedResponse__Output } from '../../fuxi/v1/DeleteTestbedResponse.js';
import type { DrainNodeRequest as _fuxi_v1_DrainNodeRequest, DrainNodeRequest__Output as _fuxi_v1_DrainNodeRequest__Output } from '../../fuxi/v1/DrainNodeRequest.js';
import type { FinishAppRequest as _fuxi_v1_FinishAppRequest, FinishAppRequest__Output as _fuxi_v1_FinishAppRequest__Output } from '../../fuxi/v1/FinishAppRequest.js';
import type { FinishAppResponse as _fuxi_v1_FinishAppResponse, FinishAppResponse__Output as _fuxi_v1_FinishAppResponse__Output } from '../../fuxi/v1/FinishAppResponse.js';
import type { GetAppSnapshotRequest as _fuxi_v1_GetAppSnapshotRequest, GetAppSnapshotRequest__Output as _fuxi_v1_GetAppSnapshotRequest__Output } from '../../fuxi/v1/GetAppSnapshotRequest.js';
import type { GetAppSnapshotResponse as _fuxi_v1_GetAppSnapshotResponse, GetAppSnapshotResponse__Output as _fuxi_v1_GetAppSnapshotResponse__Output } from '../../fuxi/v1/GetAppSnapshotResponse.js';
import type { GetClusterStatusRequest as _fuxi_v1_GetClusterStatusRequest, GetClusterStatusRequest__Output as _fuxi_v1_GetClusterStatusRequest__Output } from '../../fuxi/v1/GetClusterStatusRequest.js';
import type { GetJobRequest as _fuxi_v1_GetJobRequest, GetJobRequest__Output as _fuxi_v1_GetJobRequest__Output } from '../../fuxi/v1/GetJobRequest.js';
import type { GetJobResponse as _fuxi_v1_GetJobResponse, GetJobResponse__Output as _fuxi_v1_GetJobResponse__Output } from '../../fuxi/v1/GetJobResponse.js';
import type { GrantUpdate as _fuxi_v1_GrantUpdate, GrantUpdate__Output as _fuxi_v1_GrantUpdate__Output } from '../../fuxi/v1/GrantUpdate.js';
import type { HeartbeatRequest as _fuxi_v1_HeartbeatRequest, HeartbeatRequest__Output as _fuxi_v1_HeartbeatRequest__Output } from '../../fuxi/v1/HeartbeatRequest.js';
import type { HeartbeatResponse as _fuxi_v1_HeartbeatResponse, HeartbeatResponse__Output as _fuxi_v1_HeartbeatResponse__Output } from '../../fuxi/v1/HeartbeatResponse.js';
import type { JobInfo as _fuxi_v1_JobInfo, JobInfo__Output as _fuxi_v1_JobInfo__Output } from '../../fuxi/v1/JobInfo.js';
import type { KillJobRequest as _fuxi_v1_KillJobRequest, KillJobRequest__Output as _fuxi_v1_KillJobRequest__Output } from '../../fuxi/v1/KillJobRequest.js';
import type { KillJobResponse as _fuxi_v1_KillJobResponse, KillJobResponse__Output as _fuxi_v1_KillJobResponse__Output } from '../../fuxi/v1/KillJobResponse.js';
import type { ListJobsRequest as _fuxi_v1_ListJobsRequest, ListJobsRequest__Output as _fuxi_v1_ListJobsRequest__Output } from '../../fuxi/v1/ListJobsRequest.js';
import type { ListJobsResponse as _fuxi_v1_ListJobsResponse, ListJobsResponse__Output as _fuxi_v1_ListJobsResponse__Output } from '../../fuxi/v1/ListJobsResponse.js';
import type { ListNodesRequest as _fuxi_v1_ListNodesRequest, ListNodesRequest__Output as _fuxi_v1_ListNodesRequest__Output } from '../../fuxi/v1/ListNodesRequest.js';
import type { ListNodesResponse as _fuxi_v1_ListNodesResponse, ListNodesResponse__Output as _fuxi_v1_ListNodesResponse__Output } from '../../fuxi/v1/ListNodesResponse.js';
import type { ListTestbedsRequest as _fuxi_v1_ListTestbedsRequest, ListTestbedsRequest__Output as _fuxi_v1_ListTestbedsRequest__Output } from '../../fuxi/v1/ListTestbedsRequest.js';
import type { ListTestbedsResponse as _fuxi_v1_ListTestbedsResponse, ListTestbedsResponse__Output as _fuxi_v1_ListTestbedsResponse__Output } from '../../fuxi/v1/ListTestbedsResponse.js';
import type { NodeAdminResponse as _fuxi_v1_NodeAdminResponse, NodeAdminResponse__Output as _fuxi_v1_NodeAdminResponse__Output } from '../../fuxi/v1/NodeAdminResponse.js';
import type { RegisterAgentRequest as _fuxi_v1_RegisterAgentRequest, RegisterAgentRequest__Output as _fuxi_v1_RegisterAgentRequest__Output } from '../../fuxi/v1/RegisterAgentRequest.js';
import type { RegisterAgentResponse as _fuxi_v1_RegisterAgentResponse, RegisterAgentResponse__Output as _fuxi_v1_RegisterAgentResponse__Output } from '../../fuxi/v1/RegisterAgentResponse.js';
import type { RegisterAppRequest as _fuxi_v1_RegisterAppRequest, RegisterAppRequest__Output as _fuxi_v1_RegisterAppRequest__Output } from '../../fuxi/v1/RegisterAppRequest.js';
import type { RegisterAppResponse as _fuxi_v1_RegisterAppResponse, RegisterAppResponse__Output as _fuxi_v1_RegisterAppResponse__Output } from '../../fuxi/v1/RegisterAppResponse.js';
import type { ReportAgentStateRequest as _fuxi_v1_ReportAgentStateRequest, ReportAgentStateRequest__Output as _fuxi_v1_ReportAgentStateRequest__Output } from '../../fuxi/v1/ReportAgentStateRequest.js';
import type { ReportAgentStateResponse as _fuxi_v1_ReportAgentStateResponse, ReportAgentStateResponse__Output as _fuxi_v1_ReportAgentStateResponse__Output } from '../../fuxi/v1/ReportAgentStateResponse.js';
import type { ReportAppStateRequest as _fuxi_v1_ReportAppStateRequest, ReportAppStateRequest__Output as _fuxi_v1_ReportAppStateRequest__Output } from '../../fuxi/v1/ReportAppStateRequest.js';
import type { ReportAppStateResponse as _fuxi_v1_ReportAppStateResponse, ReportAppStateResponse__Output as _fuxi_v1_ReportAppStateResponse__Output } from '../../fuxi/v1/ReportAppStateResponse.js';
import type { ReturnSlotsRequest as _fuxi_v1_ReturnSlotsRequest, ReturnSlotsRequest__Output as _fuxi_v1_ReturnSlotsRequest__Output } from '../../fuxi/v1/ReturnSlotsRequest.js';
import type { ReturnSlotsResponse as _fuxi_v1_ReturnSlotsResponse, ReturnSlotsResponse__Output as _fuxi_v1_ReturnSlotsResponse__Output } from '../../fuxi/v1/ReturnSlotsResponse.js';
import type { SaveAppSnapshotRequest as _fuxi_v1_SaveAppSnapshotRequest, SaveAppSnapshotRequest__Output as _fuxi_v1_SaveAppSnapshotRequest__Output } from '../../fuxi/v1/SaveAppSnapshotRequest.js';
import type { SaveAppSnapshotResponse as _fuxi_v1_SaveAppSnapshotResponse, SaveAppSnapshotResponse__Output as _fuxi_v1_SaveAppSnapshotResponse__Output } from '../../fuxi/v1/SaveAppSnapshotResponse.js';
import type { SubmitJobRequest as _fuxi_v1_SubmitJobRequest, SubmitJobRequest__Output as _fuxi_v1_SubmitJobRequest__Output } from '../../fuxi/v1/SubmitJobRequest.js';
import type { SubmitJobResponse as _fuxi_v1_SubmitJobResponse, SubmitJobResponse__Output as _fuxi_v1_SubmitJobResponse__Output } from '../../fuxi/v1/SubmitJobResponse.js';
import type { SubmitJobsRequest as _fuxi_v1_SubmitJobsRequest, SubmitJobsRequest__Output as _fuxi_v1_SubmitJobsRequest__Output } from '../../fuxi/v1/SubmitJobsRequest.js';
import type { SubmitJobsResponse as _fuxi_v1_SubmitJobsResponse, SubmitJobsResponse__Output as _fuxi_v1_SubmitJobsResponse__Output } from '../../fuxi/v1/SubmitJobsResponse.js';
import type { UncordonNodeRequest as _fuxi_v1_UncordonNodeRequest, UncordonNodeRequest__Output as _fuxi_v1_UncordonNodeRequest__Output } from '../../fuxi/v1/UncordonNodeRequest.js';
import type { UpdateRequestsRequest as _fuxi_v1_UpdateRequestsRequest, UpdateRequestsRequest__Output as _fuxi_v1_UpdateRequestsRequest__Output } from '../../fuxi/v1/UpdateRequestsRequest.js';
import type { UpdateRequestsResponse as _fuxi_v1_UpdateRequestsResponse, UpdateRequestsResponse__Output as _fuxi_v1_UpdateRequestsResponse__Output } from '../../fuxi/v1/UpdateRequestsResponse.js';
import type { WatchAssignmentsRequest as _fuxi_v1_WatchAssignmentsRequest, WatchAssignmentsRequest__Output as _fuxi_v1_WatchAssignmentsRequest__Output } from '../../fuxi/v1/WatchAssignmentsRequest.js';
import type { WatchGrantsRequest as _fuxi_v1_WatchGrantsRequest, WatchGrantsRequest__Output as _fuxi_v1_WatchGrantsRequest__Output } from '../../fuxi/v1/WatchGrantsRequest.js';
import type { WatchJobRequest as _fuxi_v1_WatchJobRequest, WatchJobRequest__Output as _fuxi_v1_WatchJobRequest__Output } from '../../fuxi/v1/WatchJobRequest.js';
import type { WatchJobsRequest as _fuxi_v1_WatchJobsRequest, WatchJobsRequest__Output as _fuxi_v1_WatchJobsRequest__Output } from '../../fuxi/v1/WatchJobsRequest.js';

/**
 * The master: agents, application masters and clients all talk to it.
 * A standby answers every call with FAILED_PRECONDITION / UNAVAILABLE and the
 * leader's address in the `fuxi-leader` trailer metadata so callers redirect.
 */
export interface MasterServiceClient extends grpc.Client {
  /**
   * Many AMs' calls in one (an AM host's hosted AMs): each entry is one of the unary AM methods
   * above with its request bytes and its AM's token, authorized and run as that call alone would
   * be, and answered with its own response or error. The batch is answered once every entry is.
   */
  AmCalls(argument: _fuxi_v1_CallBatch, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_CallBatchResult__Output>): grpc.ClientUnaryCall;
  AmCalls(argument: _fuxi_v1_CallBatch, metadata: grpc.Metadata, callback: grpc.requestCallback<_fuxi_v1_CallBatchResult__Output>): grpc.ClientUnaryCall;
  AmCalls(argument: _fuxi_v1_CallBatch, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_CallBatchResult__Output>): grpc.ClientUnaryCall;
  AmCalls(argument: _fuxi_v1_CallBatch, callback: grpc.requestCallback<_fuxi_v1_CallBatchResult__Output>): grpc.ClientUnaryCall;
  /**
   * Many AMs' calls in one (an AM host's hosted AMs): each entry is one of the unary AM methods
   * above with its request bytes and its AM's token, authorized and run as that call alone would
   * be, and answered with its own response or error. The batch is answered once every entry is.
   */
  amCalls(argument: _fuxi_v1_CallBatch, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_CallBatchResult__Output>): grpc.ClientUnaryCall;
  amCalls(argument: _fuxi_v1_CallBatch, metadata: grpc.Metadata, callback: grpc.requestCallback<_fuxi_v1_CallBatchResult__Output>): grpc.ClientUnaryCall;
  amCalls(argument: _fuxi_v1_CallBatch, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_CallBatchResult__Output>): grpc.ClientUnaryCall;
  amCalls(argument: _fuxi_v1_CallBatch, callback: grpc.requestCallback<_fuxi_v1_CallBatchResult__Output>): grpc.ClientUnaryCall;
  
  /**
   * Operators: a node's administrative state (hard state: it survives a master failover). A
   * cordoned node gets no new grants, its work runs on; a draining one gets none either, its batch
   * work finishes or, at the deadline, has its slots revoked (its AMs run it again elsewhere), its
   * AMs move last, and it ends up cordoned (drained). Uncordon makes it schedulable again and ends
   * a drain. NOT_FOUND for an unknown node; answered once the state is durable.
   */
  CordonNode(argument: _fuxi_v1_CordonNodeRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_NodeAdminResponse__Output>): grpc.ClientUnaryCall;
  CordonNode(argument: _fuxi_v1_CordonNodeRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fuxi_v1_NodeAdminResponse__Output>): grpc.ClientUnaryCall;
  CordonNode(argument: _fuxi_v1_CordonNodeRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_NodeAdminResponse__Output>): grpc.ClientUnaryCall;
  CordonNode(argument: _fuxi_v1_CordonNodeRequest, callback: grpc.requestCallback<_fuxi_v1_NodeAdminResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Operators: a node's administrative state (hard state: it survives a master failover). A
   * cordoned node gets no new grants, its work runs on; a draining one gets none either, its batch
   * work finishes or, at the deadline, has its slots revoked (its AMs run it again elsewhere), its
   * AMs move last, and it ends up cordoned (drained). Uncordon makes it schedulable again and ends
   * a drain. NOT_FOUND for an unknown node; answered once the state is durable.
   */
  cordonNode(argument: _fuxi_v1_CordonNodeRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_NodeAdminResponse__Output>): grpc.ClientUnaryCall;
  cordonNode(argument: _fuxi_v1_CordonNodeRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fuxi_v1_NodeAdminResponse__Output>): grpc.ClientUnaryCall;
  cordonNode(argument: _fuxi_v1_CordonNodeRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_NodeAdminResponse__Output>): grpc.ClientUnaryCall;
  cordonNode(argument: _fuxi_v1_CordonNodeRequest, callback: grpc.requestCallback<_fuxi_v1_NodeAdminResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Operators: testbeds, named sets of hosts reserved for one quota group, optionally for a time
   * window (hard state: they survive a master failover). While a testbed is active only its group's
   * jobs get new slots on its hosts (workers of other groups already there run on); a job that names
   * it (JobSpec.testbed) goes only there. INVALID_ARGUMENT names the field at fault; answered once
   * the testbed is durable (a failed write changes nothing and is UNAVAILABLE).
   */
  CreateTestbed(argument: _fuxi_v1_CreateTestbedRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_CreateTestbedResponse__Output>): grpc.ClientUnaryCall;
  CreateTestbed(argument: _fuxi_v1_CreateTestbedRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fuxi_v1_CreateTestbedResponse__Output>): grpc.ClientUnaryCall;
  CreateTestbed(argument: _fuxi_v1_CreateTestbedRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_CreateTestbedResponse__Output>): grpc.ClientUnaryCall;
  CreateTestbed(argument: _fuxi_v1_CreateTestbedRequest, callback: grpc.requestCallback<_fuxi_v1_CreateTestbedResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Operators: testbeds, named sets of hosts reserved for one quota group, optionally for a time
   * window (hard state: they survive a master failover). While a testbed is active only its group's
   * jobs get new slots on its hosts (workers of other groups already there run on); a job that names
   * it (JobSpec.testbed) goes only there. INVALID_ARGUMENT names the field at fault; answered once
   * the testbed is durable (a failed write changes nothing and is UNAVAILABLE).
   */
  createTestbed(argument: _fuxi_v1_CreateTestbedRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_CreateTestbedResponse__Output>): grpc.ClientUnaryCall;
  createTestbed(argument: _fuxi_v1_CreateTestbedRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fuxi_v1_CreateTestbedResponse__Output>): grpc.ClientUnaryCall;
  createTestbed(argument: _fuxi_v1_CreateTestbedRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_CreateTestbedResponse__Output>): grpc.ClientUnaryCall;
  createTestbed(argument: _fuxi_v1_CreateTestbedRequest, callback: grpc.requestCallback<_fuxi_v1_CreateTestbedResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * NOT_FOUND for an unknown testbed.
   */
  DeleteTestbed(argument: _fuxi_v1_DeleteTestbedRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_DeleteTestbedResponse__Output>): grpc.ClientUnaryCall;
  DeleteTestbed(argument: _fuxi_v1_DeleteTestbedRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fuxi_v1_DeleteTestbedResponse__Output>): grpc.ClientUnaryCall;
  DeleteTestbed(argument: _fuxi_v1_DeleteTestbedRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_DeleteTestbedResponse__Output>): grpc.ClientUnaryCall;
  DeleteTestbed(argument: _fuxi_v1_DeleteTestbedRequest, callback: grpc.requestCallback<_fuxi_v1_DeleteTestbedResponse__Output>): grpc.ClientUnaryCall;
  /**
   * NOT_FOUND for an unknown testbed.
   */
  deleteTestbed(argument: _fuxi_v1_DeleteTestbedRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_DeleteTestbedResponse__Output>): grpc.ClientUnaryCall;
  deleteTestbed(argument: _fuxi_v1_DeleteTestbedRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fuxi_v1_DeleteTestbedResponse__Output>): grpc.ClientUnaryCall;
  deleteTestbed(argument: _fuxi_v1_DeleteTestbedRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_DeleteTestbedResponse__Output>): grpc.ClientUnaryCall;
  deleteTestbed(argument: _fuxi_v1_DeleteTestbedRequest, callback: grpc.requestCallback<_fuxi_v1_DeleteTestbedResponse__Output>): grpc.ClientUnaryCall;
  
  DrainNode(argument: _fuxi_v1_DrainNodeRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_NodeAdminResponse__Output>): grpc.ClientUnaryCall;
  DrainNode(argument: _fuxi_v1_DrainNodeRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fuxi_v1_NodeAdminResponse__Output>): grpc.ClientUnaryCall;
  DrainNode(argument: _fuxi_v1_DrainNodeRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_NodeAdminResponse__Output>): grpc.ClientUnaryCall;
  DrainNode(argument: _fuxi_v1_DrainNodeRequest, callback: grpc.requestCallback<_fuxi_v1_NodeAdminResponse__Output>): grpc.ClientUnaryCall;
  drainNode(argument: _fuxi_v1_DrainNodeRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_NodeAdminResponse__Output>): grpc.ClientUnaryCall;
  drainNode(argument: _fuxi_v1_DrainNodeRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fuxi_v1_NodeAdminResponse__Output>): grpc.ClientUnaryCall;
  drainNode(argument: _fuxi_v1_DrainNodeRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_NodeAdminResponse__Output>): grpc.ClientUnaryCall;
  drainNode(argument: _fuxi_v1_DrainNodeRequest, callback: grpc.requestCallback<_fuxi_v1_NodeAdminResponse__Output>): grpc.ClientUnaryCall;
  
  FinishApp(argument: _fuxi_v1_FinishAppRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_FinishAppResponse__Output>): grpc.ClientUnaryCall;
  FinishApp(argument: _fuxi_v1_FinishAppRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fuxi_v1_FinishAppResponse__Output>): grpc.ClientUnaryCall;
  FinishApp(argument: _fuxi_v1_FinishAppRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_FinishAppResponse__Output>): grpc.ClientUnaryCall;
  FinishApp(argument: _fuxi_v1_FinishAppRequest, callback: grpc.requestCallback<_fuxi_v1_FinishAppResponse__Output>): grpc.ClientUnaryCall;
  finishApp(argument: _fuxi_v1_FinishAppRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_FinishAppResponse__Output>): grpc.ClientUnaryCall;
  finishApp(argument: _fuxi_v1_FinishAppRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fuxi_v1_FinishAppResponse__Output>): grpc.ClientUnaryCall;
  finishApp(argument: _fuxi_v1_FinishAppRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_FinishAppResponse__Output>): grpc.ClientUnaryCall;
  finishApp(argument: _fuxi_v1_FinishAppRequest, callback: grpc.requestCallback<_fuxi_v1_FinishAppResponse__Output>): grpc.ClientUnaryCall;
  
  GetAppSnapshot(argument: _fuxi_v1_GetAppSnapshotRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_GetAppSnapshotResponse__Output>): grpc.ClientUnaryCall;
  GetAppSnapshot(argument: _fuxi_v1_GetAppSnapshotRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fuxi_v1_GetAppSnapshotResponse__Output>): grpc.ClientUnaryCall;
  GetAppSnapshot(argument: _fuxi_v1_GetAppSnapshotRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_GetAppSnapshotResponse__Output>): grpc.ClientUnaryCall;
  GetAppSnapshot(argument: _fuxi_v1_GetAppSnapshotRequest, callback: grpc.requestCallback<_fuxi_v1_GetAppSnapshotResponse__Output>): grpc.ClientUnaryCall;
  getAppSnapshot(argument: _fuxi_v1_GetAppSnapshotRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_GetAppSnapshotResponse__Output>): grpc.ClientUnaryCall;
  getAppSnapshot(argument: _fuxi_v1_GetAppSnapshotRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fuxi_v1_GetAppSnapshotResponse__Output>): grpc.ClientUnaryCall;
  getAppSnapshot(argument: _fuxi_v1_GetAppSnapshotRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_GetAppSnapshotResponse__Output>): grpc.ClientUnaryCall;
  getAppSnapshot(argument: _fuxi_v1_GetAppSnapshotRequest, callback: grpc.requestCallback<_fuxi_v1_GetAppSnapshotResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Operators: the fault FSM state, open fault events and recovery progress.
   */
  GetClusterStatus(argument: _fuxi_v1_GetClusterStatusRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_ClusterStatus__Output>): grpc.ClientUnaryCall;
  GetClusterStatus(argument: _fuxi_v1_GetClusterStatusRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fuxi_v1_ClusterStatus__Output>): grpc.ClientUnaryCall;
  GetClusterStatus(argument: _fuxi_v1_GetClusterStatusRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_ClusterStatus__Output>): grpc.ClientUnaryCall;
  GetClusterStatus(argument: _fuxi_v1_GetClusterStatusRequest, callback: grpc.requestCallback<_fuxi_v1_ClusterStatus__Output>): grpc.ClientUnaryCall;
  /**
   * Operators: the fault FSM state, open fault events and recovery progress.
   */
  getClusterStatus(argument: _fuxi_v1_GetClusterStatusRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_ClusterStatus__Output>): grpc.ClientUnaryCall;
  getClusterStatus(argument: _fuxi_v1_GetClusterStatusRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fuxi_v1_ClusterStatus__Output>): grpc.ClientUnaryCall;
  getClusterStatus(argument: _fuxi_v1_GetClusterStatusRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_ClusterStatus__Output>): grpc.ClientUnaryCall;
  getClusterStatus(argument: _fuxi_v1_GetClusterStatusRequest, callback: grpc.requestCallback<_fuxi_v1_ClusterStatus__Output>): grpc.ClientUnaryCall;
  
  GetJob(argument: _fuxi_v1_GetJobRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_GetJobResponse__Output>): grpc.ClientUnaryCall;
  GetJob(argument: _fuxi_v1_GetJobRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fuxi_v1_GetJobResponse__Output>): grpc.ClientUnaryCall;
  GetJob(argument: _fuxi_v1_GetJobRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_GetJobResponse__Output>): grpc.ClientUnaryCall;
  GetJob(argument: _fuxi_v1_GetJobRequest, callback: grpc.requestCallback<_fuxi_v1_GetJobResponse__Output>): grpc.ClientUnaryCall;
  getJob(argument: _fuxi_v1_GetJobRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_GetJobResponse__Output>): grpc.ClientUnaryCall;
  getJob(argument: _fuxi_v1_GetJobRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fuxi_v1_GetJobResponse__Output>): grpc.ClientUnaryCall;
  getJob(argument: _fuxi_v1_GetJobRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_GetJobResponse__Output>): grpc.ClientUnaryCall;
  getJob(argument: _fuxi_v1_GetJobRequest, callback: grpc.requestCallback<_fuxi_v1_GetJobResponse__Output>): grpc.ClientUnaryCall;
  
  Heartbeat(argument: _fuxi_v1_HeartbeatRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_HeartbeatResponse__Output>): grpc.ClientUnaryCall;
  Heartbeat(argument: _fuxi_v1_HeartbeatRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fuxi_v1_HeartbeatResponse__Output>): grpc.ClientUnaryCall;
  Heartbeat(argument: _fuxi_v1_HeartbeatRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_HeartbeatResponse__Output>): grpc.ClientUnaryCall;
  Heartbeat(argument: _fuxi_v1_HeartbeatRequest, callback: grpc.requestCallback<_fuxi_v1_HeartbeatResponse__Output>): grpc.ClientUnaryCall;
  heartbeat(argument: _fuxi_v1_HeartbeatRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_HeartbeatResponse__Output>): grpc.ClientUnaryCall;
  heartbeat(argument: _fuxi_v1_HeartbeatRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fuxi_v1_HeartbeatResponse__Output>): grpc.ClientUnaryCall;
  heartbeat(argument: _fuxi_v1_HeartbeatRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_HeartbeatResponse__Output>): grpc.ClientUnaryCall;
  heartbeat(argument: _fuxi_v1_HeartbeatRequest, callback: grpc.requestCallback<_fuxi_v1_HeartbeatResponse__Output>): grpc.ClientUnaryCall;
  
  KillJob(argument: _fuxi_v1_KillJobRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_KillJobResponse__Output>): grpc.ClientUnaryCall;
  KillJob(argument: _fuxi_v1_KillJobRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fuxi_v1_KillJobResponse__Output>): grpc.ClientUnaryCall;
  KillJob(argument: _fuxi_v1_KillJobRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_KillJobResponse__Output>): grpc.ClientUnaryCall;
  KillJob(argument: _fuxi_v1_KillJobRequest, callback: grpc.requestCallback<_fuxi_v1_KillJobResponse__Output>): grpc.ClientUnaryCall;
  killJob(argument: _fuxi_v1_KillJobRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_KillJobResponse__Output>): grpc.ClientUnaryCall;
  killJob(argument: _fuxi_v1_KillJobRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fuxi_v1_KillJobResponse__Output>): grpc.ClientUnaryCall;
  killJob(argument: _fuxi_v1_KillJobRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_KillJobResponse__Output>): grpc.ClientUnaryCall;
  killJob(argument: _fuxi_v1_KillJobRequest, callback: grpc.requestCallback<_fuxi_v1_KillJobResponse__Output>): grpc.ClientUnaryCall;
  
  ListJobs(argument: _fuxi_v1_ListJobsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_ListJobsResponse__Output>): grpc.ClientUnaryCall;
  ListJobs(argument: _fuxi_v1_ListJobsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fuxi_v1_ListJobsResponse__Output>): grpc.ClientUnaryCall;
  ListJobs(argument: _fuxi_v1_ListJobsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_ListJobsResponse__Output>): grpc.ClientUnaryCall;
  ListJobs(argument: _fuxi_v1_ListJobsRequest, callback: grpc.requestCallback<_fuxi_v1_ListJobsResponse__Output>): grpc.ClientUnaryCall;
  listJobs(argument: _fuxi_v1_ListJobsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_ListJobsResponse__Output>): grpc.ClientUnaryCall;
  listJobs(argument: _fuxi_v1_ListJobsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fuxi_v1_ListJobsResponse__Output>): grpc.ClientUnaryCall;
  listJobs(argument: _fuxi_v1_ListJobsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_ListJobsResponse__Output>): grpc.ClientUnaryCall;
  listJobs(argument: _fuxi_v1_ListJobsRequest, callback: grpc.requestCallback<_fuxi_v1_ListJobsResponse__Output>): grpc.ClientUnaryCall;
  
  ListNodes(argument: _fuxi_v1_ListNodesRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_ListNodesResponse__Output>): grpc.ClientUnaryCall;
  ListNodes(argument: _fuxi_v1_ListNodesRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fuxi_v1_ListNodesResponse__Output>): grpc.ClientUnaryCall;
  ListNodes(argument: _fuxi_v1_ListNodesRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_ListNodesResponse__Output>): grpc.ClientUnaryCall;
  ListNodes(argument: _fuxi_v1_ListNodesRequest, callback: grpc.requestCallback<_fuxi_v1_ListNodesResponse__Output>): grpc.ClientUnaryCall;
  listNodes(argument: _fuxi_v1_ListNodesRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_ListNodesResponse__Output>): grpc.ClientUnaryCall;
  listNodes(argument: _fuxi_v1_ListNodesRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fuxi_v1_ListNodesResponse__Output>): grpc.ClientUnaryCall;
  listNodes(argument: _fuxi_v1_ListNodesRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_ListNodesResponse__Output>): grpc.ClientUnaryCall;
  listNodes(argument: _fuxi_v1_ListNodesRequest, callback: grpc.requestCallback<_fuxi_v1_ListNodesResponse__Output>): grpc.ClientUnaryCall;
  
  ListTestbeds(argument: _fuxi_v1_ListTestbedsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_ListTestbedsResponse__Output>): grpc.ClientUnaryCall;
  ListTestbeds(argument: _fuxi_v1_ListTestbedsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fuxi_v1_ListTestbedsResponse__Output>): grpc.ClientUnaryCall;
  ListTestbeds(argument: _fuxi_v1_ListTestbedsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_ListTestbedsResponse__Output>): grpc.ClientUnaryCall;
  ListTestbeds(argument: _fuxi_v1_ListTestbedsRequest, callback: grpc.requestCallback<_fuxi_v1_ListTestbedsResponse__Output>): grpc.ClientUnaryCall;
  listTestbeds(argument: _fuxi_v1_ListTestbedsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_ListTestbedsResponse__Output>): grpc.ClientUnaryCall;
  listTestbeds(argument: _fuxi_v1_ListTestbedsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fuxi_v1_ListTestbedsResponse__Output>): grpc.ClientUnaryCall;
  listTestbeds(argument: _fuxi_v1_ListTestbedsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_ListTestbedsResponse__Output>): grpc.ClientUnaryCall;
  listTestbeds(argument: _fuxi_v1_ListTestbedsRequest, callback: grpc.requestCallback<_fuxi_v1_ListTestbedsResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * --- agents ---
   */
  RegisterAgent(argument: _fuxi_v1_RegisterAgentRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_RegisterAgentResponse__Output>): grpc.ClientUnaryCall;
  RegisterAgent(argument: _fuxi_v1_RegisterAgentRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fuxi_v1_RegisterAgentResponse__Output>): grpc.ClientUnaryCall;
  RegisterAgent(argument: _fuxi_v1_RegisterAgentRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_RegisterAgentResponse__Output>): grpc.ClientUnaryCall;
  RegisterAgent(argument: _fuxi_v1_RegisterAgentRequest, callback: grpc.requestCallback<_fuxi_v1_RegisterAgentResponse__Output>): grpc.ClientUnaryCall;
  /**
   * --- agents ---
   */
  registerAgent(argument: _fuxi_v1_RegisterAgentRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_RegisterAgentResponse__Output>): grpc.ClientUnaryCall;
  registerAgent(argument: _fuxi_v1_RegisterAgentRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fuxi_v1_RegisterAgentResponse__Output>): grpc.ClientUnaryCall;
  registerAgent(argument: _fuxi_v1_RegisterAgentRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_RegisterAgentResponse__Output>): grpc.ClientUnaryCall;
  registerAgent(argument: _fuxi_v1_RegisterAgentRequest, callback: grpc.requestCallback<_fuxi_v1_RegisterAgentResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * --- application masters ---
   */
  RegisterApp(argument: _fuxi_v1_RegisterAppRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_RegisterAppResponse__Output>): grpc.ClientUnaryCall;
  RegisterApp(argument: _fuxi_v1_RegisterAppRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fuxi_v1_RegisterAppResponse__Output>): grpc.ClientUnaryCall;
  RegisterApp(argument: _fuxi_v1_RegisterAppRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_RegisterAppResponse__Output>): grpc.ClientUnaryCall;
  RegisterApp(argument: _fuxi_v1_RegisterAppRequest, callback: grpc.requestCallback<_fuxi_v1_RegisterAppResponse__Output>): grpc.ClientUnaryCall;
  /**
   * --- application masters ---
   */
  registerApp(argument: _fuxi_v1_RegisterAppRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_RegisterAppResponse__Output>): grpc.ClientUnaryCall;
  registerApp(argument: _fuxi_v1_RegisterAppRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fuxi_v1_RegisterAppResponse__Output>): grpc.ClientUnaryCall;
  registerApp(argument: _fuxi_v1_RegisterAppRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_RegisterAppResponse__Output>): grpc.ClientUnaryCall;
  registerApp(argument: _fuxi_v1_RegisterAppRequest, callback: grpc.requestCallback<_fuxi_v1_RegisterAppResponse__Output>): grpc.ClientUnaryCall;
  
  ReportAgentState(argument: _fuxi_v1_ReportAgentStateRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_ReportAgentStateResponse__Output>): grpc.ClientUnaryCall;
  ReportAgentState(argument: _fuxi_v1_ReportAgentStateRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fuxi_v1_ReportAgentStateResponse__Output>): grpc.ClientUnaryCall;
  ReportAgentState(argument: _fuxi_v1_ReportAgentStateRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_ReportAgentStateResponse__Output>): grpc.ClientUnaryCall;
  ReportAgentState(argument: _fuxi_v1_ReportAgentStateRequest, callback: grpc.requestCallback<_fuxi_v1_ReportAgentStateResponse__Output>): grpc.ClientUnaryCall;
  reportAgentState(argument: _fuxi_v1_ReportAgentStateRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_ReportAgentStateResponse__Output>): grpc.ClientUnaryCall;
  reportAgentState(argument: _fuxi_v1_ReportAgentStateRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fuxi_v1_ReportAgentStateResponse__Output>): grpc.ClientUnaryCall;
  reportAgentState(argument: _fuxi_v1_ReportAgentStateRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_ReportAgentStateResponse__Output>): grpc.ClientUnaryCall;
  reportAgentState(argument: _fuxi_v1_ReportAgentStateRequest, callback: grpc.requestCallback<_fuxi_v1_ReportAgentStateResponse__Output>): grpc.ClientUnaryCall;
  
  ReportAppState(argument: _fuxi_v1_ReportAppStateRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_ReportAppStateResponse__Output>): grpc.ClientUnaryCall;
  ReportAppState(argument: _fuxi_v1_ReportAppStateRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fuxi_v1_ReportAppStateResponse__Output>): grpc.ClientUnaryCall;
  ReportAppState(argument: _fuxi_v1_ReportAppStateRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_ReportAppStateResponse__Output>): grpc.ClientUnaryCall;
  ReportAppState(argument: _fuxi_v1_ReportAppStateRequest, callback: grpc.requestCallback<_fuxi_v1_ReportAppStateResponse__Output>): grpc.ClientUnaryCall;
  reportAppState(argument: _fuxi_v1_ReportAppStateRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_ReportAppStateResponse__Output>): grpc.ClientUnaryCall;
  reportAppState(argument: _fuxi_v1_ReportAppStateRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fuxi_v1_ReportAppStateResponse__Output>): grpc.ClientUnaryCall;
  reportAppState(argument: _fuxi_v1_ReportAppStateRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_ReportAppStateResponse__Output>): grpc.ClientUnaryCall;
  reportAppState(argument: _fuxi_v1_ReportAppStateRequest, callback: grpc.requestCallback<_fuxi_v1_ReportAppStateResponse__Output>): grpc.ClientUnaryCall;
  
  ReturnSlots(argument: _fuxi_v1_ReturnSlotsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_ReturnSlotsResponse__Output>): grpc.ClientUnaryCall;
  ReturnSlots(argument: _fuxi_v1_ReturnSlotsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fuxi_v1_ReturnSlotsResponse__Output>): grpc.ClientUnaryCall;
  ReturnSlots(argument: _fuxi_v1_ReturnSlotsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_ReturnSlotsResponse__Output>): grpc.ClientUnaryCall;
  ReturnSlots(argument: _fuxi_v1_ReturnSlotsRequest, callback: grpc.requestCallback<_fuxi_v1_ReturnSlotsResponse__Output>): grpc.ClientUnaryCall;
  returnSlots(argument: _fuxi_v1_ReturnSlotsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_ReturnSlotsResponse__Output>): grpc.ClientUnaryCall;
  returnSlots(argument: _fuxi_v1_ReturnSlotsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fuxi_v1_ReturnSlotsResponse__Output>): grpc.ClientUnaryCall;
  returnSlots(argument: _fuxi_v1_ReturnSlotsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_ReturnSlotsResponse__Output>): grpc.ClientUnaryCall;
  returnSlots(argument: _fuxi_v1_ReturnSlotsRequest, callback: grpc.requestCallback<_fuxi_v1_ReturnSlotsResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * The AM's hard state (docs/design.md, "Hard state and soft state"): its task topology once, then an append-only log of
   * finished instances, kept in the master's store so that a restarted AM can resume.
   */
  SaveAppSnapshot(argument: _fuxi_v1_SaveAppSnapshotRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_SaveAppSnapshotResponse__Output>): grpc.ClientUnaryCall;
  SaveAppSnapshot(argument: _fuxi_v1_SaveAppSnapshotRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fuxi_v1_SaveAppSnapshotResponse__Output>): grpc.ClientUnaryCall;
  SaveAppSnapshot(argument: _fuxi_v1_SaveAppSnapshotRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_SaveAppSnapshotResponse__Output>): grpc.ClientUnaryCall;
  SaveAppSnapshot(argument: _fuxi_v1_SaveAppSnapshotRequest, callback: grpc.requestCallback<_fuxi_v1_SaveAppSnapshotResponse__Output>): grpc.ClientUnaryCall;
  /**
   * The AM's hard state (docs/design.md, "Hard state and soft state"): its task topology once, then an append-only log of
   * finished instances, kept in the master's store so that a restarted AM can resume.
   */
  saveAppSnapshot(argument: _fuxi_v1_SaveAppSnapshotRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_SaveAppSnapshotResponse__Output>): grpc.ClientUnaryCall;
  saveAppSnapshot(argument: _fuxi_v1_SaveAppSnapshotRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fuxi_v1_SaveAppSnapshotResponse__Output>): grpc.ClientUnaryCall;
  saveAppSnapshot(argument: _fuxi_v1_SaveAppSnapshotRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_SaveAppSnapshotResponse__Output>): grpc.ClientUnaryCall;
  saveAppSnapshot(argument: _fuxi_v1_SaveAppSnapshotRequest, callback: grpc.requestCallback<_fuxi_v1_SaveAppSnapshotResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * --- clients ---
   */
  SubmitJob(argument: _fuxi_v1_SubmitJobRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_SubmitJobResponse__Output>): grpc.ClientUnaryCall;
  SubmitJob(argument: _fuxi_v1_SubmitJobRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fuxi_v1_SubmitJobResponse__Output>): grpc.ClientUnaryCall;
  SubmitJob(argument: _fuxi_v1_SubmitJobRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_SubmitJobResponse__Output>): grpc.ClientUnaryCall;
  SubmitJob(argument: _fuxi_v1_SubmitJobRequest, callback: grpc.requestCallback<_fuxi_v1_SubmitJobResponse__Output>): grpc.ClientUnaryCall;
  /**
   * --- clients ---
   */
  submitJob(argument: _fuxi_v1_SubmitJobRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_SubmitJobResponse__Output>): grpc.ClientUnaryCall;
  submitJob(argument: _fuxi_v1_SubmitJobRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fuxi_v1_SubmitJobResponse__Output>): grpc.ClientUnaryCall;
  submitJob(argument: _fuxi_v1_SubmitJobRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_SubmitJobResponse__Output>): grpc.ClientUnaryCall;
  submitJob(argument: _fuxi_v1_SubmitJobRequest, callback: grpc.requestCallback<_fuxi_v1_SubmitJobResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Many jobs in one call (workflow engines): each is taken or refused on its own, idempotent by
   * its id like SubmitJob; answered once every taken job's record is durable. With dry_run the
   * master runs every admission check of a real submit on each job and writes nothing.
   */
  SubmitJobs(argument: _fuxi_v1_SubmitJobsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_SubmitJobsResponse__Output>): grpc.ClientUnaryCall;
  SubmitJobs(argument: _fuxi_v1_SubmitJobsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fuxi_v1_SubmitJobsResponse__Output>): grpc.ClientUnaryCall;
  SubmitJobs(argument: _fuxi_v1_SubmitJobsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_SubmitJobsResponse__Output>): grpc.ClientUnaryCall;
  SubmitJobs(argument: _fuxi_v1_SubmitJobsRequest, callback: grpc.requestCallback<_fuxi_v1_SubmitJobsResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Many jobs in one call (workflow engines): each is taken or refused on its own, idempotent by
   * its id like SubmitJob; answered once every taken job's record is durable. With dry_run the
   * master runs every admission check of a real submit on each job and writes nothing.
   */
  submitJobs(argument: _fuxi_v1_SubmitJobsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_SubmitJobsResponse__Output>): grpc.ClientUnaryCall;
  submitJobs(argument: _fuxi_v1_SubmitJobsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fuxi_v1_SubmitJobsResponse__Output>): grpc.ClientUnaryCall;
  submitJobs(argument: _fuxi_v1_SubmitJobsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_SubmitJobsResponse__Output>): grpc.ClientUnaryCall;
  submitJobs(argument: _fuxi_v1_SubmitJobsRequest, callback: grpc.requestCallback<_fuxi_v1_SubmitJobsResponse__Output>): grpc.ClientUnaryCall;
  
  UncordonNode(argument: _fuxi_v1_UncordonNodeRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_NodeAdminResponse__Output>): grpc.ClientUnaryCall;
  UncordonNode(argument: _fuxi_v1_UncordonNodeRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fuxi_v1_NodeAdminResponse__Output>): grpc.ClientUnaryCall;
  UncordonNode(argument: _fuxi_v1_UncordonNodeRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_NodeAdminResponse__Output>): grpc.ClientUnaryCall;
  UncordonNode(argument: _fuxi_v1_UncordonNodeRequest, callback: grpc.requestCallback<_fuxi_v1_NodeAdminResponse__Output>): grpc.ClientUnaryCall;
  uncordonNode(argument: _fuxi_v1_UncordonNodeRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_NodeAdminResponse__Output>): grpc.ClientUnaryCall;
  uncordonNode(argument: _fuxi_v1_UncordonNodeRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fuxi_v1_NodeAdminResponse__Output>): grpc.ClientUnaryCall;
  uncordonNode(argument: _fuxi_v1_UncordonNodeRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_NodeAdminResponse__Output>): grpc.ClientUnaryCall;
  uncordonNode(argument: _fuxi_v1_UncordonNodeRequest, callback: grpc.requestCallback<_fuxi_v1_NodeAdminResponse__Output>): grpc.ClientUnaryCall;
  
  UpdateRequests(argument: _fuxi_v1_UpdateRequestsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_UpdateRequestsResponse__Output>): grpc.ClientUnaryCall;
  UpdateRequests(argument: _fuxi_v1_UpdateRequestsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fuxi_v1_UpdateRequestsResponse__Output>): grpc.ClientUnaryCall;
  UpdateRequests(argument: _fuxi_v1_UpdateRequestsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_UpdateRequestsResponse__Output>): grpc.ClientUnaryCall;
  UpdateRequests(argument: _fuxi_v1_UpdateRequestsRequest, callback: grpc.requestCallback<_fuxi_v1_UpdateRequestsResponse__Output>): grpc.ClientUnaryCall;
  updateRequests(argument: _fuxi_v1_UpdateRequestsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_UpdateRequestsResponse__Output>): grpc.ClientUnaryCall;
  updateRequests(argument: _fuxi_v1_UpdateRequestsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fuxi_v1_UpdateRequestsResponse__Output>): grpc.ClientUnaryCall;
  updateRequests(argument: _fuxi_v1_UpdateRequestsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_UpdateRequestsResponse__Output>): grpc.ClientUnaryCall;
  updateRequests(argument: _fuxi_v1_UpdateRequestsRequest, callback: grpc.requestCallback<_fuxi_v1_UpdateRequestsResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * The leader's assignment pushes for one AM attempt, in order, on a stream the AM holds open
   * after it registers: the same messages as AppMasterService.UpdateAssignments. While none is open
   * the master calls UpdateAssignments instead. Ends when the master stops leading or a newer
   * attempt registers.
   */
  WatchAssignments(argument: _fuxi_v1_WatchAssignmentsRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_fuxi_v1_AssignmentUpdate__Output>;
  WatchAssignments(argument: _fuxi_v1_WatchAssignmentsRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_fuxi_v1_AssignmentUpdate__Output>;
  /**
   * The leader's assignment pushes for one AM attempt, in order, on a stream the AM holds open
   * after it registers: the same messages as AppMasterService.UpdateAssignments. While none is open
   * the master calls UpdateAssignments instead. Ends when the master stops leading or a newer
   * attempt registers.
   */
  watchAssignments(argument: _fuxi_v1_WatchAssignmentsRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_fuxi_v1_AssignmentUpdate__Output>;
  watchAssignments(argument: _fuxi_v1_WatchAssignmentsRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_fuxi_v1_AssignmentUpdate__Output>;
  
  /**
   * The leader's grant-table pushes for one agent, on a stream the agent holds open after it
   * registers: the same messages as AgentService.UpdateGrants, for a fraction of the cost of a call
   * each. While no stream is open the master calls UpdateGrants instead. The stream ends when the
   * master stops leading or the agent registers again.
   */
  WatchGrants(argument: _fuxi_v1_WatchGrantsRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_fuxi_v1_GrantUpdate__Output>;
  WatchGrants(argument: _fuxi_v1_WatchGrantsRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_fuxi_v1_GrantUpdate__Output>;
  /**
   * The leader's grant-table pushes for one agent, on a stream the agent holds open after it
   * registers: the same messages as AgentService.UpdateGrants, for a fraction of the cost of a call
   * each. While no stream is open the master calls UpdateGrants instead. The stream ends when the
   * master stops leading or the agent registers again.
   */
  watchGrants(argument: _fuxi_v1_WatchGrantsRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_fuxi_v1_GrantUpdate__Output>;
  watchGrants(argument: _fuxi_v1_WatchGrantsRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_fuxi_v1_GrantUpdate__Output>;
  
  WatchJob(argument: _fuxi_v1_WatchJobRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_fuxi_v1_JobInfo__Output>;
  WatchJob(argument: _fuxi_v1_WatchJobRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_fuxi_v1_JobInfo__Output>;
  watchJob(argument: _fuxi_v1_WatchJobRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_fuxi_v1_JobInfo__Output>;
  watchJob(argument: _fuxi_v1_WatchJobRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_fuxi_v1_JobInfo__Output>;
  
  /**
   * Many jobs on one stream (`fuxi wait` on many, a job array): the current state of each, then
   * every change, until every one of them is terminal.
   */
  WatchJobs(argument: _fuxi_v1_WatchJobsRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_fuxi_v1_JobInfo__Output>;
  WatchJobs(argument: _fuxi_v1_WatchJobsRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_fuxi_v1_JobInfo__Output>;
  /**
   * Many jobs on one stream (`fuxi wait` on many, a job array): the current state of each, then
   * every change, until every one of them is terminal.
   */
  watchJobs(argument: _fuxi_v1_WatchJobsRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_fuxi_v1_JobInfo__Output>;
  watchJobs(argument: _fuxi_v1_WatchJobsRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_fuxi_v1_JobInfo__Output>;
  
}

/**
 * The master: agents, application masters and clients all talk to it.
 * A standby answers every call with FAILED_PRECONDITION / UNAVAILABLE and the
 * leader's address in the `fuxi-leader` trailer metadata so callers redirect.
 */
export interface MasterServiceHandlers extends grpc.UntypedServiceImplementation {
  /**
   * Many AMs' calls in one (an AM host's hosted AMs): each entry is one of the unary AM methods
   * above with its request bytes and its AM's token, authorized and run as that call alone would
   * be, and answered with its own response or error. The batch is answered once every entry is.
   */
  AmCalls: grpc.handleUnaryCall<_fuxi_v1_CallBatch__Output, _fuxi_v1_CallBatchResult>;
  
  /**
   * Operators: a node's administrative state (hard state: it survives a master failover). A
   * cordoned node gets no new grants, its work runs on; a draining one gets none either, its batch
   * work finishes or, at the deadline, has its slots revoked (its AMs run it again elsewhere), its
   * AMs move last, and it ends up cordoned (drained). Uncordon makes it schedulable again and ends
   * a drain. NOT_FOUND for an unknown node; answered once the state is durable.
   */
  CordonNode: grpc.handleUnaryCall<_fuxi_v1_CordonNodeRequest__Output, _fuxi_v1_NodeAdminResponse>;
  
  /**
   * Operators: testbeds, named sets of hosts reserved for one quota group, optionally for a time
   * window (hard state: they survive a master failover). While a testbed is active only its group's
   * jobs get new slots on its hosts (workers of other groups already there run on); a job that names
   * it (JobSpec.testbed) goes only there. INVALID_ARGUMENT names the field at fault; answered once
   * the testbed is durable (a failed write changes nothing and is UNAVAILABLE).
   */
  CreateTestbed: grpc.handleUnaryCall<_fuxi_v1_CreateTestbedRequest__Output, _fuxi_v1_CreateTestbedResponse>;
  
  /**
   * NOT_FOUND for an unknown testbed.
   */
  DeleteTestbed: grpc.handleUnaryCall<_fuxi_v1_DeleteTestbedRequest__Output, _fuxi_v1_DeleteTestbedResponse>;
  
  DrainNode: grpc.handleUnaryCall<_fuxi_v1_DrainNodeRequest__Output, _fuxi_v1_NodeAdminResponse>;
  
  FinishApp: grpc.handleUnaryCall<_fuxi_v1_FinishAppRequest__Output, _fuxi_v1_FinishAppResponse>;
  
  GetAppSnapshot: grpc.handleUnaryCall<_fuxi_v1_GetAppSnapshotRequest__Output, _fuxi_v1_GetAppSnapshotResponse>;
  
  /**
   * Operators: the fault FSM state, open fault events and recovery progress.
   */
  GetClusterStatus: grpc.handleUnaryCall<_fuxi_v1_GetClusterStatusRequest__Output, _fuxi_v1_ClusterStatus>;
  
  GetJob: grpc.handleUnaryCall<_fuxi_v1_GetJobRequest__Output, _fuxi_v1_GetJobResponse>;
  
  Heartbeat: grpc.handleUnaryCall<_fuxi_v1_HeartbeatRequest__Output, _fuxi_v1_HeartbeatResponse>;
  
  KillJob: grpc.handleUnaryCall<_fuxi_v1_KillJobRequest__Output, _fuxi_v1_KillJobResponse>;
  
  ListJobs: grpc.handleUnaryCall<_fuxi_v1_ListJobsRequest__Output, _fuxi_v1_ListJobsResponse>;
  
  ListNodes: grpc.handleUnaryCall<_fuxi_v1_ListNodesRequest__Output, _fuxi_v1_ListNodesResponse>;
  
  ListTestbeds: grpc.handleUnaryCall<_fuxi_v1_ListTestbedsRequest__Output, _fuxi_v1_ListTestbedsResponse>;
  
  /**
   * --- agents ---
   */
  RegisterAgent: grpc.handleUnaryCall<_fuxi_v1_RegisterAgentRequest__Output, _fuxi_v1_RegisterAgentResponse>;
  
  /**
   * --- application masters ---
   */
  RegisterApp: grpc.handleUnaryCall<_fuxi_v1_RegisterAppRequest__Output, _fuxi_v1_RegisterAppResponse>;
  
  ReportAgentState: grpc.handleUnaryCall<_fuxi_v1_ReportAgentStateRequest__Output, _fuxi_v1_ReportAgentStateResponse>;
  
  ReportAppState: grpc.handleUnaryCall<_fuxi_v1_ReportAppStateRequest__Output, _fuxi_v1_ReportAppStateResponse>;
  
  ReturnSlots: grpc.handleUnaryCall<_fuxi_v1_ReturnSlotsRequest__Output, _fuxi_v1_ReturnSlotsResponse>;
  
  /**
   * The AM's hard state (docs/design.md, "Hard state and soft state"): its task topology once, then an append-only log of
   * finished instances, kept in the master's store so that a restarted AM can resume.
   */
  SaveAppSnapshot: grpc.handleUnaryCall<_fuxi_v1_SaveAppSnapshotRequest__Output, _fuxi_v1_SaveAppSnapshotResponse>;
  
  /**
   * --- clients ---
   */
  SubmitJob: grpc.handleUnaryCall<_fuxi_v1_SubmitJobRequest__Output, _fuxi_v1_SubmitJobResponse>;
  
  /**
   * Many jobs in one call (workflow engines): each is taken or refused on its own, idempotent by
   * its id like SubmitJob; answered once every taken job's record is durable. With dry_run the
   * master runs every admission check of a real submit on each job and writes nothing.
   */
  SubmitJobs: grpc.handleUnaryCall<_fuxi_v1_SubmitJobsRequest__Output, _fuxi_v1_SubmitJobsResponse>;
  
  UncordonNode: grpc.handleUnaryCall<_fuxi_v1_UncordonNodeRequest__Output, _fuxi_v1_NodeAdminResponse>;
  
  UpdateRequests: grpc.handleUnaryCall<_fuxi_v1_UpdateRequestsRequest__Output, _fuxi_v1_UpdateRequestsResponse>;
  
  /**
   * The leader's assignment pushes for one AM attempt, in order, on a stream the AM holds open
   * after it registers: the same messages as AppMasterService.UpdateAssignments. While none is open
   * the master calls UpdateAssignments instead. Ends when the master stops leading or a newer
   * attempt registers.
   */
  WatchAssignments: grpc.handleServerStreamingCall<_fuxi_v1_WatchAssignmentsRequest__Output, _fuxi_v1_AssignmentUpdate>;
  
  /**
   * The leader's grant-table pushes for one agent, on a stream the agent holds open after it
   * registers: the same messages as AgentService.UpdateGrants, for a fraction of the cost of a call
   * each. While no stream is open the master calls UpdateGrants instead. The stream ends when the
   * master stops leading or the agent registers again.
   */
  WatchGrants: grpc.handleServerStreamingCall<_fuxi_v1_WatchGrantsRequest__Output, _fuxi_v1_GrantUpdate>;
  
  WatchJob: grpc.handleServerStreamingCall<_fuxi_v1_WatchJobRequest__Output, _fuxi_v1_JobInfo>;
  
  /**
   * Many jobs on one stream (`fuxi wait` on many, a job array): the current state of each, then
   * every change, until every one of them is terminal.
   */
  WatchJobs: grpc.handleServerStreamingCall<_fuxi_v1_WatchJobsRequest__Output, _fuxi_v1_JobInfo>;
  
}

export interface MasterServiceDefinition extends grpc.ServiceDefinition {
  AmCalls: MethodDefinition<_fuxi_v1_CallBatch, _fuxi_v1_CallBatchResult, _fuxi_v1_CallBatch__Output, _fuxi_v1_CallBatchResult__Output>
  CordonNode: MethodDefinition<_fuxi_v1_CordonNodeRequest, _fuxi_v1_NodeAdminResponse, _fuxi_v1_CordonNodeRequest__Output, _fuxi_v1_NodeAdminResponse__Output>
  CreateTestbed: MethodDefinition<_fuxi_v1_CreateTestbedRequest, _fuxi_v1_CreateTestbedResponse, _fuxi_v1_CreateTestbedRequest__Output, _fuxi_v1_CreateTestbedResponse__Output>
  DeleteTestbed: MethodDefinition<_fuxi_v1_DeleteTestbedRequest, _fuxi_v1_DeleteTestbedResponse, _fuxi_v1_DeleteTestbedRequest__Output, _fuxi_v1_DeleteTestbedResponse__Output>
  DrainNode: MethodDefinition<_fuxi_v1_DrainNodeRequest, _fuxi_v1_NodeAdminResponse, _fuxi_v1_DrainNodeRequest__Output, _fuxi_v1_NodeAdminResponse__Output>
  FinishApp: MethodDefinition<_fuxi_v1_FinishAppRequest, _fuxi_v1_FinishAppResponse, _fuxi_v1_FinishAppRequest__Output, _fuxi_v1_FinishAppResponse__Output>
  GetAppSnapshot: MethodDefinition<_fuxi_v1_GetAppSnapshotRequest, _fuxi_v1_GetAppSnapshotResponse, _fuxi_v1_GetAppSnapshotRequest__Output, _fuxi_v1_GetAppSnapshotResponse__Output>
  GetClusterStatus: MethodDefinition<_fuxi_v1_GetClusterStatusRequest, _fuxi_v1_ClusterStatus, _fuxi_v1_GetClusterStatusRequest__Output, _fuxi_v1_ClusterStatus__Output>
  GetJob: MethodDefinition<_fuxi_v1_GetJobRequest, _fuxi_v1_GetJobResponse, _fuxi_v1_GetJobRequest__Output, _fuxi_v1_GetJobResponse__Output>
  Heartbeat: MethodDefinition<_fuxi_v1_HeartbeatRequest, _fuxi_v1_HeartbeatResponse, _fuxi_v1_HeartbeatRequest__Output, _fuxi_v1_HeartbeatResponse__Output>
  KillJob: MethodDefinition<_fuxi_v1_KillJobRequest, _fuxi_v1_KillJobResponse, _fuxi_v1_KillJobRequest__Output, _fuxi_v1_KillJobResponse__Output>
  ListJobs: MethodDefinition<_fuxi_v1_ListJobsRequest, _fuxi_v1_ListJobsResponse, _fuxi_v1_ListJobsRequest__Output, _fuxi_v1_ListJobsResponse__Output>
  ListNodes: MethodDefinition<_fuxi_v1_ListNodesRequest, _fuxi_v1_ListNodesResponse, _fuxi_v1_ListNodesRequest__Output, _fuxi_v1_ListNodesResponse__Output>
  ListTestbeds: MethodDefinition<_fuxi_v1_ListTestbedsRequest, _fuxi_v1_ListTestbedsResponse, _fuxi_v1_ListTestbedsRequest__Output, _fuxi_v1_ListTestbedsResponse__Output>
  RegisterAgent: MethodDefinition<_fuxi_v1_RegisterAgentRequest, _fuxi_v1_RegisterAgentResponse, _fuxi_v1_RegisterAgentRequest__Output, _fuxi_v1_RegisterAgentResponse__Output>
  RegisterApp: MethodDefinition<_fuxi_v1_RegisterAppRequest, _fuxi_v1_RegisterAppResponse, _fuxi_v1_RegisterAppRequest__Output, _fuxi_v1_RegisterAppResponse__Output>
  ReportAgentState: MethodDefinition<_fuxi_v1_ReportAgentStateRequest, _fuxi_v1_ReportAgentStateResponse, _fuxi_v1_ReportAgentStateRequest__Output, _fuxi_v1_ReportAgentStateResponse__Output>
  ReportAppState: MethodDefinition<_fuxi_v1_ReportAppStateRequest, _fuxi_v1_ReportAppStateResponse, _fuxi_v1_ReportAppStateRequest__Output, _fuxi_v1_ReportAppStateResponse__Output>
  ReturnSlots: MethodDefinition<_fuxi_v1_ReturnSlotsRequest, _fuxi_v1_ReturnSlotsResponse, _fuxi_v1_ReturnSlotsRequest__Output, _fuxi_v1_ReturnSlotsResponse__Output>
  SaveAppSnapshot: MethodDefinition<_fuxi_v1_SaveAppSnapshotRequest, _fuxi_v1_SaveAppSnapshotResponse, _fuxi_v1_SaveAppSnapshotRequest__Output, _fuxi_v1_SaveAppSnapshotResponse__Output>
  SubmitJob: MethodDefinition<_fuxi_v1_SubmitJobRequest, _fuxi_v1_SubmitJobResponse, _fuxi_v1_SubmitJobRequest__Output, _fuxi_v1_SubmitJobResponse__Output>
  SubmitJobs: MethodDefinition<_fuxi_v1_SubmitJobsRequest, _fuxi_v1_SubmitJobsResponse, _fuxi_v1_SubmitJobsRequest__Output, _fuxi_v1_SubmitJobsResponse__Output>
  UncordonNode: MethodDefinition<_fuxi_v1_UncordonNodeRequest, _fuxi_v1_NodeAdminResponse, _fuxi_v1_UncordonNodeRequest__Output, _fuxi_v1_NodeAdminResponse__Output>
  UpdateRequests: MethodDefinition<_fuxi_v1_UpdateRequestsRequest, _fuxi_v1_UpdateRequestsResponse, _fuxi_v1_UpdateRequestsRequest__Output, _fuxi_v1_UpdateRequestsResponse__Output>
  WatchAssignments: MethodDefinition<_fuxi_v1_WatchAssignmentsRequest, _fuxi_v1_AssignmentUpdate, _fuxi_v1_WatchAssignmentsRequest__Output, _fuxi_v1_AssignmentUpdate__Output>
  WatchGrants: MethodDefinition<_fuxi_v1_WatchGrantsRequest, _fuxi_v1_GrantUpdate, _fuxi_v1_WatchGrantsRequest__Output, _fuxi_v1_GrantUpdate__Output>
  WatchJob: MethodDefinition<_fuxi_v1_WatchJobRequest, _fuxi_v1_JobInfo, _fuxi_v1_WatchJobRequest__Output, _fuxi_v1_JobInfo__Output>
  WatchJobs: MethodDefinition<_fuxi_v1_WatchJobsRequest, _fuxi_v1_JobInfo, _fuxi_v1_WatchJobsRequest__Output, _fuxi_v1_JobInfo__Output>
}
