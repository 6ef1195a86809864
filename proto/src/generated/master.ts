import type * as grpc from '@grpc/grpc-js';
import type { EnumTypeDefinition, MessageTypeDefinition } from '@grpc/proto-loader';

import type { Assignment as _fuxi_v1_Assignment, Assignment__Output as _fuxi_v1_Assignment__Output } from './fuxi/v1/Assignment.js';
import type { AssignmentUpdate as _fuxi_v1_AssignmentUpdate, AssignmentUpdate__Output as _fuxi_v1_AssignmentUpdate__Output } from './fuxi/v1/AssignmentUpdate.js';
import type { AttemptVerdict as _fuxi_v1_AttemptVerdict, AttemptVerdict__Output as _fuxi_v1_AttemptVerdict__Output } from './fuxi/v1/AttemptVerdict.js';
import type { BatchedCall as _fuxi_v1_BatchedCall, BatchedCall__Output as _fuxi_v1_BatchedCall__Output } from './fuxi/v1/BatchedCall.js';
import type { BatchedResult as _fuxi_v1_BatchedResult, BatchedResult__Output as _fuxi_v1_BatchedResult__Output } from './fuxi/v1/BatchedResult.js';
import type { CallBatch as _fuxi_v1_CallBatch, CallBatch__Output as _fuxi_v1_CallBatch__Output } from './fuxi/v1/CallBatch.js';
import type { CallBatchResult as _fuxi_v1_CallBatchResult, CallBatchResult__Output as _fuxi_v1_CallBatchResult__Output } from './fuxi/v1/CallBatchResult.js';
import type { ClusterStatus as _fuxi_v1_ClusterStatus, ClusterStatus__Output as _fuxi_v1_ClusterStatus__Output } from './fuxi/v1/ClusterStatus.js';
import type { Command as _fuxi_v1_Command, Command__Output as _fuxi_v1_Command__Output } from './fuxi/v1/Command.js';
import type { Condition as _fuxi_v1_Condition, Condition__Output as _fuxi_v1_Condition__Output } from './fuxi/v1/Condition.js';
import type { Connectivity as _fuxi_v1_Connectivity, Connectivity__Output as _fuxi_v1_Connectivity__Output } from './fuxi/v1/Connectivity.js';
import type { ConnectivityDelta as _fuxi_v1_ConnectivityDelta, ConnectivityDelta__Output as _fuxi_v1_ConnectivityDelta__Output } from './fuxi/v1/ConnectivityDelta.js';
import type { CordonNodeRequest as _fuxi_v1_CordonNodeRequest, CordonNodeRequest__Output as _fuxi_v1_CordonNodeRequest__Output } from './fuxi/v1/CordonNodeRequest.js';
import type { CreateTestbedRequest as _fuxi_v1_CreateTestbedRequest, CreateTestbedRequest__Output as _fuxi_v1_CreateTestbedRequest__Output } from './fuxi/v1/CreateTestbedRequest.js';
import type { CreateTestbedResponse as _fuxi_v1_CreateTestbedResponse, CreateTestbedResponse__Output as _fuxi_v1_CreateTestbedResponse__Output } from './fuxi/v1/CreateTestbedResponse.js';
import type { DeleteTestbedRequest as _fuxi_v1_DeleteTestbedRequest, DeleteTestbedRequest__Output as _fuxi_v1_DeleteTestbedRequest__Output } from './fuxi/v1/DeleteTestbedRequest.js';
import type { DeleteTestbedResponse as _fuxi_v1_DeleteTestbedResponse, DeleteTestbedResponse__Output as _fuxi_v1_DeleteTestbedResponse__Output } from './fuxi/v1/DeleteTestbedResponse.js';
import type { DrainNodeRequest as _fuxi_v1_DrainNodeRequest, DrainNodeRequest__Output as _fuxi_v1_DrainNodeRequest__Output } from './fuxi/v1/DrainNodeRequest.js';
import type { FaultEvent as _fuxi_v1_FaultEvent, FaultEvent__Output as _fuxi_v1_FaultEvent__Output } from './fuxi/v1/FaultEvent.js';
import type { FinishAppRequest as _fuxi_v1_FinishAppRequest, FinishAppRequest__Output as _fuxi_v1_FinishAppRequest__Output } from './fuxi/v1/FinishAppRequest.js';
import type { FinishAppResponse as _fuxi_v1_FinishAppResponse, FinishAppResponse__Output as _fuxi_v1_FinishAppResponse__Output } from './fuxi/v1/FinishAppResponse.js';
import type { GetAppSnapshotRequest as _fuxi_v1_GetAppSnapshotRequest, GetAppSnapshotRequest__Output as _fuxi_v1_GetAppSnapshotRequest__Output } from './fuxi/v1/GetAppSnapshotRequest.js';
import type { GetAppSnapshotResponse as _fuxi_v1_GetAppSnapshotResponse, GetAppSnapshotResponse__Output as _fuxi_v1_GetAppSnapshotResponse__Output } from './fuxi/v1/GetAppSnapshotResponse.js';
import type { GetClusterStatusRequest as _fuxi_v1_GetClusterStatusRequest, GetClusterStatusRequest__Output as _fuxi_v1_GetClusterStatusRequest__Output } from './fuxi/v1/GetClusterStatusRequest.js';
import type { GetJobRequest as _fuxi_v1_GetJobRequest, GetJobRequest__Output as _fuxi_v1_GetJobRequest__Output } from './fuxi/v1/GetJobRequest.js';
import type { GetJobResponse as _fuxi_v1_GetJobResponse, GetJobResponse__Output as _fuxi_v1_GetJobResponse__Output } from './fuxi/v1/GetJobResponse.js';
import type { Grant as _fuxi_v1_Grant, Grant__Output as _fuxi_v1_Grant__Output } from './fuxi/v1/Grant.js';
import type { GrantUpdate as _fuxi_v1_GrantUpdate, GrantUpdate__Output as _fuxi_v1_GrantUpdate__Output } from './fuxi/v1/GrantUpdate.js';
import type { HeartbeatRequest as _fuxi_v1_HeartbeatRequest, HeartbeatRequest__Output as _fuxi_v1_HeartbeatRequest__Output } from './fuxi/v1/HeartbeatRequest.js';
import type { HeartbeatResponse as _fuxi_v1_HeartbeatResponse, HeartbeatResponse__Output as _fuxi_v1_HeartbeatResponse__Output } from './fuxi/v1/HeartbeatResponse.js';
import type { HostWorkers as _fuxi_v1_HostWorkers, HostWorkers__Output as _fuxi_v1_HostWorkers__Output } from './fuxi/v1/HostWorkers.js';
import type { JobArray as _fuxi_v1_JobArray, JobArray__Output as _fuxi_v1_JobArray__Output } from './fuxi/v1/JobArray.js';
import type { JobInfo as _fuxi_v1_JobInfo, JobInfo__Output as _fuxi_v1_JobInfo__Output } from './fuxi/v1/JobInfo.js';
import type { JobSpec as _fuxi_v1_JobSpec, JobSpec__Output as _fuxi_v1_JobSpec__Output } from './fuxi/v1/JobSpec.js';
import type { KillJobRequest as _fuxi_v1_KillJobRequest, KillJobRequest__Output as _fuxi_v1_KillJobRequest__Output } from './fuxi/v1/KillJobRequest.js';
import type { KillJobResponse as _fuxi_v1_KillJobResponse, KillJobResponse__Output as _fuxi_v1_KillJobResponse__Output } from './fuxi/v1/KillJobResponse.js';
import type { Link as _fuxi_v1_Link, Link__Output as _fuxi_v1_Link__Output } from './fuxi/v1/Link.js';
import type { ListJobsRequest as _fuxi_v1_ListJobsRequest, ListJobsRequest__Output as _fuxi_v1_ListJobsRequest__Output } from './fuxi/v1/ListJobsRequest.js';
import type { ListJobsResponse as _fuxi_v1_ListJobsResponse, ListJobsResponse__Output as _fuxi_v1_ListJobsResponse__Output } from './fuxi/v1/ListJobsResponse.js';
import type { ListNodesRequest as _fuxi_v1_ListNodesRequest, ListNodesRequest__Output as _fuxi_v1_ListNodesRequest__Output } from './fuxi/v1/ListNodesRequest.js';
import type { ListNodesResponse as _fuxi_v1_ListNodesResponse, ListNodesResponse__Output as _fuxi_v1_ListNodesResponse__Output } from './fuxi/v1/ListNodesResponse.js';
import type { ListTestbedsRequest as _fuxi_v1_ListTestbedsRequest, ListTestbedsRequest__Output as _fuxi_v1_ListTestbedsRequest__Output } from './fuxi/v1/ListTestbedsRequest.js';
import type { ListTestbedsResponse as _fuxi_v1_ListTestbedsResponse, ListTestbedsResponse__Output as _fuxi_v1_ListTestbedsResponse__Output } from './fuxi/v1/ListTestbedsResponse.js';
import type { LocalityHint as _fuxi_v1_LocalityHint, LocalityHint__Output as _fuxi_v1_LocalityHint__Output } from './fuxi/v1/LocalityHint.js';
import type { MasterServiceClient as _fuxi_v1_MasterServiceClient, MasterServiceDefinition as _fuxi_v1_MasterServiceDefinition } from './fuxi/v1/MasterService.js';
import type { NodeAdmin as _fuxi_v1_NodeAdmin, NodeAdmin__Output as _fuxi_v1_NodeAdmin__Output } from './fuxi/v1/NodeAdmin.js';
import type { NodeAdminResponse as _fuxi_v1_NodeAdminResponse, NodeAdminResponse__Output as _fuxi_v1_NodeAdminResponse__Output } from './fuxi/v1/NodeAdminResponse.js';
import type { NodeInfo as _fuxi_v1_NodeInfo, NodeInfo__Output as _fuxi_v1_NodeInfo__Output } from './fuxi/v1/NodeInfo.js';
import type { NodeStatus as _fuxi_v1_NodeStatus, NodeStatus__Output as _fuxi_v1_NodeStatus__Output } from './fuxi/v1/NodeStatus.js';
import type { OutstandingRequest as _fuxi_v1_OutstandingRequest, OutstandingRequest__Output as _fuxi_v1_OutstandingRequest__Output } from './fuxi/v1/OutstandingRequest.js';
import type { PathRecord as _fuxi_v1_PathRecord, PathRecord__Output as _fuxi_v1_PathRecord__Output } from './fuxi/v1/PathRecord.js';
import type { PlacementConstraints as _fuxi_v1_PlacementConstraints, PlacementConstraints__Output as _fuxi_v1_PlacementConstraints__Output } from './fuxi/v1/PlacementConstraints.js';
import type { ProbePeer as _fuxi_v1_ProbePeer, ProbePeer__Output as _fuxi_v1_ProbePeer__Output } from './fuxi/v1/ProbePeer.js';
import type { ProbeTargets as _fuxi_v1_ProbeTargets, ProbeTargets__Output as _fuxi_v1_ProbeTargets__Output } from './fuxi/v1/ProbeTargets.js';
import type { RecoveryProgress as _fuxi_v1_RecoveryProgress, RecoveryProgress__Output as _fuxi_v1_RecoveryProgress__Output } from './fuxi/v1/RecoveryProgress.js';
import type { RegisterAgentRequest as _fuxi_v1_RegisterAgentRequest, RegisterAgentRequest__Output as _fuxi_v1_RegisterAgentRequest__Output } from './fuxi/v1/RegisterAgentRequest.js';
import type { RegisterAgentResponse as _fuxi_v1_RegisterAgentResponse, RegisterAgentResponse__Output as _fuxi_v1_RegisterAgentResponse__Output } from './fuxi/v1/RegisterAgentResponse.js';
import type { RegisterAppRequest as _fuxi_v1_RegisterAppRequest, RegisterAppRequest__Output as _fuxi_v1_RegisterAppRequest__Output } from './fuxi/v1/RegisterAppRequest.js';
import type { RegisterAppResponse as _fuxi_v1_RegisterAppResponse, RegisterAppResponse__Output as _fuxi_v1_RegisterAppResponse__Output } from './fuxi/v1/RegisterAppResponse.js';
import type { ReportAgentStateRequest as _fuxi_v1_ReportAgentStateRequest, ReportAgentStateRequest__Output as _fuxi_v1_ReportAgentStateRequest__Output } from './fuxi/v1/ReportAgentStateRequest.js';
import type { ReportAgentStateResponse as _fuxi_v1_ReportAgentStateResponse, ReportAgentStateResponse__Output as _fuxi_v1_ReportAgentStateResponse__Output } from './fuxi/v1/ReportAgentStateResponse.js';
import type { ReportAppStateRequest as _fuxi_v1_ReportAppStateRequest, ReportAppStateRequest__Output as _fuxi_v1_ReportAppStateRequest__Output } from './fuxi/v1/ReportAppStateRequest.js';
import type { ReportAppStateResponse as _fuxi_v1_ReportAppStateResponse, ReportAppStateResponse__Output as _fuxi_v1_ReportAppStateResponse__Output } from './fuxi/v1/ReportAppStateResponse.js';
import type { RequestDelta as _fuxi_v1_RequestDelta, RequestDelta__Output as _fuxi_v1_RequestDelta__Output } from './fuxi/v1/RequestDelta.js';
import type { Resource as _fuxi_v1_Resource, Resource__Output as _fuxi_v1_Resource__Output } from './fuxi/v1/Resource.js';
import type { ReturnSlotsRequest as _fuxi_v1_ReturnSlotsRequest, ReturnSlotsRequest__Output as _fuxi_v1_ReturnSlotsRequest__Output } from './fuxi/v1/ReturnSlotsRequest.js';
import type { ReturnSlotsResponse as _fuxi_v1_ReturnSlotsResponse, ReturnSlotsResponse__Output as _fuxi_v1_ReturnSlotsResponse__Output } from './fuxi/v1/ReturnSlotsResponse.js';
import type { SaveAppSnapshotRequest as _fuxi_v1_SaveAppSnapshotRequest, SaveAppSnapshotRequest__Output as _fuxi_v1_SaveAppSnapshotRequest__Output } from './fuxi/v1/SaveAppSnapshotRequest.js';
import type { SaveAppSnapshotResponse as _fuxi_v1_SaveAppSnapshotResponse, SaveAppSnapshotResponse__Output as _fuxi_v1_SaveAppSnapshotResponse__Output } from './fuxi/v1/SaveAppSnapshotResponse.js';
import type { ScheduleUnitConfig as _fuxi_v1_ScheduleUnitConfig, ScheduleUnitConfig__Output as _fuxi_v1_ScheduleUnitConfig__Output } from './fuxi/v1/ScheduleUnitConfig.js';
import type { SlotReturn as _fuxi_v1_SlotReturn, SlotReturn__Output as _fuxi_v1_SlotReturn__Output } from './fuxi/v1/SlotReturn.js';
import type { SubmitJobRequest as _fuxi_v1_SubmitJobRequest, SubmitJobRequest__Output as _fuxi_v1_SubmitJobRequest__Output } from './fuxi/v1/SubmitJobRequest.js';
import type { SubmitJobResponse as _fuxi_v1_SubmitJobResponse, SubmitJobResponse__Output as _fuxi_v1_SubmitJobResponse__Output } from './fuxi/v1/SubmitJobResponse.js';
import type { SubmitJobResult as _fuxi_v1_SubmitJobResult, SubmitJobResult__Output as _fuxi_v1_SubmitJobResult__Output } from './fuxi/v1/SubmitJobResult.js';
import type { SubmitJobsRequest as _fuxi_v1_SubmitJobsRequest, SubmitJobsRequest__Output as _fuxi_v1_SubmitJobsRequest__Output } from './fuxi/v1/SubmitJobsRequest.js';
import type { SubmitJobsResponse as _fuxi_v1_SubmitJobsResponse, SubmitJobsResponse__Output as _fuxi_v1_SubmitJobsResponse__Output } from './fuxi/v1/SubmitJobsResponse.js';
import type { TaskProgress as _fuxi_v1_TaskProgress, TaskProgress__Output as _fuxi_v1_TaskProgress__Output } from './fuxi/v1/TaskProgress.js';
import type { TaskSpec as _fuxi_v1_TaskSpec, TaskSpec__Output as _fuxi_v1_TaskSpec__Output } from './fuxi/v1/TaskSpec.js';
import type { Testbed as _fuxi_v1_Testbed, Testbed__Output as _fuxi_v1_Testbed__Output } from './fuxi/v1/Testbed.js';
import type { UncordonNodeRequest as _fuxi_v1_UncordonNodeRequest, UncordonNodeRequest__Output as _fuxi_v1_UncordonNodeRequest__Output } from './fuxi/v1/UncordonNodeRequest.js';
import type { UpdateRequestsRequest as _fuxi_v1_UpdateRequestsRequest, UpdateRequestsRequest__Output as _fuxi_v1_UpdateRequestsRequest__Output } from './fuxi/v1/UpdateRequestsRequest.js';
import type { UpdateRequestsResponse as _fuxi_v1_UpdateRequestsResponse, UpdateRequestsResponse__Output as _fuxi_v1_UpdateRequestsResponse__Output } from './fuxi/v1/UpdateRequestsResponse.js';
import type { WatchAssignmentsRequest as _fuxi_v1_WatchAssignmentsRequest, WatchAssignmentsRequest__Output as _fuxi_v1_WatchAssignmentsRequest__Output } from './fuxi/v1/WatchAssignmentsRequest.js';
import type { WatchGrantsRequest as _fuxi_v1_WatchGrantsRequest, WatchGrantsRequest__Output as _fuxi_v1_WatchGrantsRequest__Output } from './fuxi/v1/WatchGrantsRequest.js';
import type { WatchJobRequest as _fuxi_v1_WatchJobRequest, WatchJobRequest__Output as _fuxi_v1_WatchJobRequest__Output } from './fuxi/v1/WatchJobRequest.js';
import type { WatchJobsRequest as _fuxi_v1_WatchJobsRequest, WatchJobsRequest__Output as _fuxi_v1_WatchJobsRequest__Output } from './fuxi/v1/WatchJobsRequest.js';
import type { WorkerStatus as _fuxi_v1_WorkerStatus, WorkerStatus__Output as _fuxi_v1_WorkerStatus__Output } from './fuxi/v1/WorkerStatus.js';
import type { WorkerSummary as _fuxi_v1_WorkerSummary, WorkerSummary__Output as _fuxi_v1_WorkerSummary__Output } from './fuxi/v1/WorkerSummary.js';

type SubtypeConstructor<Constructor extends new (...args: any) => any, Subtype> = {
  new(...args: ConstructorParameters<Constructor>): Subtype;
};

export interface ProtoGrpcType {
  fuxi: {
    v1: {
      Assignment: MessageTypeDefinition<_fuxi_v1_Assignment, _fuxi_v1_Assignment__Output>
      AssignmentUpdate: MessageTypeDefinition<_fuxi_v1_AssignmentUpdate, _fuxi_v1_AssignmentUpdate__Output>
      AttemptVerdict: MessageTypeDefinition<_fuxi_v1_AttemptVerdict, _fuxi_v1_AttemptVerdict__Output>
      BatchedCall: MessageTypeDefinition<_fuxi_v1_BatchedCall, _fuxi_v1_BatchedCall__Output>
      BatchedResult: MessageTypeDefinition<_fuxi_v1_BatchedResult, _fuxi_v1_BatchedResult__Output>
      CallBatch: MessageTypeDefinition<_fuxi_v1_CallBatch, _fuxi_v1_CallBatch__Output>
      CallBatchResult: MessageTypeDefinition<_fuxi_v1_CallBatchResult, _fuxi_v1_CallBatchResult__Output>
      ClusterStatus: MessageTypeDefinition<_fuxi_v1_ClusterStatus, _fuxi_v1_ClusterStatus__Output>
      Command: MessageTypeDefinition<_fuxi_v1_Command, _fuxi_v1_Command__Output>
      Condition: MessageTypeDefinition<_fuxi_v1_Condition, _fuxi_v1_Condition__Output>
      Connectivity: MessageTypeDefinition<_fuxi_v1_Connectivity, _fuxi_v1_Connectivity__Output>
      ConnectivityDelta: MessageTypeDefinition<_fuxi_v1_ConnectivityDelta, _fuxi_v1_ConnectivityDelta__Output>
      CordonNodeRequest: MessageTypeDefinition<_fuxi_v1_CordonNodeRequest, _fuxi_v1_CordonNodeRequest__Output>
      CreateTestbedRequest: MessageTypeDefinition<_fuxi_v1_CreateTestbedRequest, _fuxi_v1_CreateTestbedRequest__Output>
      CreateTestbedResponse: MessageTypeDefinition<_fuxi_v1_CreateTestbedResponse, _fuxi_v1_CreateTestbedResponse__Output>
      DeleteTestbedRequest: MessageTypeDefinition<_fuxi_v1_DeleteTestbedRequest, _fuxi_v1_DeleteTestbedRequest__Output>
      DeleteTestbedResponse: MessageTypeDefinition<_fuxi_v1_DeleteTestbedResponse, _fuxi_v1_DeleteTestbedResponse__Output>
      DrainNodeRequest: MessageTypeDefinition<_fuxi_v1_DrainNodeRequest, _fuxi_v1_DrainNodeRequest__Output>
      FaultEvent: MessageTypeDefinition<_fuxi_v1_FaultEvent, _fuxi_v1_FaultEvent__Output>
      FinishAppRequest: MessageTypeDefinition<_fuxi_v1_FinishAppRequest, _fuxi_v1_FinishAppRequest__Output>
      FinishAppResponse: MessageTypeDefinition<_fuxi_v1_FinishAppResponse, _fuxi_v1_FinishAppResponse__Output>
      GetAppSnapshotRequest: MessageTypeDefinition<_fuxi_v1_GetAppSnapshotRequest, _fuxi_v1_GetAppSnapshotRequest__Output>
      GetAppSnapshotResponse: MessageTypeDefinition<_fuxi_v1_GetAppSnapshotResponse, _fuxi_v1_GetAppSnapshotResponse__Output>
      GetClusterStatusRequest: MessageTypeDefinition<_fuxi_v1_GetClusterStatusRequest, _fuxi_v1_GetClusterStatusRequest__Output>
      GetJobRequest: MessageTypeDefinition<_fuxi_v1_GetJobRequest, _fuxi_v1_GetJobRequest__Output>
      GetJobResponse: MessageTypeDefinition<_fuxi_v1_GetJobResponse, _fuxi_v1_GetJobResponse__Output>
      Grant: MessageTypeDefinition<_fuxi_v1_Grant, _fuxi_v1_Grant__Output>
      GrantUpdate: MessageTypeDefinition<_fuxi_v1_GrantUpdate, _fuxi_v1_GrantUpdate__Output>
      HeartbeatRequest: MessageTypeDefinition<_fuxi_v1_HeartbeatRequest, _fuxi_v1_HeartbeatRequest__Output>
      HeartbeatResponse: MessageTypeDefinition<_fuxi_v1_HeartbeatResponse, _fuxi_v1_HeartbeatResponse__Output>
      HostWorkers: MessageTypeDefinition<_fuxi_v1_HostWorkers, _fuxi_v1_HostWorkers__Output>
      JobArray: MessageTypeDefinition<_fuxi_v1_JobArray, _fuxi_v1_JobArray__Output>
      JobInfo: MessageTypeDefinition<_fuxi_v1_JobInfo, _fuxi_v1_JobInfo__Output>
      JobSpec: MessageTypeDefinition<_fuxi_v1_JobSpec, _fuxi_v1_JobSpec__Output>
      JobState: EnumTypeDefinition
      KillJobRequest: MessageTypeDefinition<_fuxi_v1_KillJobRequest, _fuxi_v1_KillJobRequest__Output>
      KillJobResponse: MessageTypeDefinition<_fuxi_v1_KillJobResponse, _fuxi_v1_KillJobResponse__Output>
      Link: MessageTypeDefinition<_fuxi_v1_Link, _fuxi_v1_Link__Output>
      ListJobsRequest: MessageTypeDefinition<_fuxi_v1_ListJobsRequest, _fuxi_v1_ListJobsRequest__Output>
      ListJobsResponse: MessageTypeDefinition<_fuxi_v1_ListJobsResponse, _fuxi_v1_ListJobsResponse__Output>
      ListNodesRequest: MessageTypeDefinition<_fuxi_v1_ListNodesRequest, _fuxi_v1_ListNodesRequest__Output>
      ListNodesResponse: MessageTypeDefinition<_fuxi_v1_ListNodesResponse, _fuxi_v1_ListNodesResponse__Output>
      ListTestbedsRequest: MessageTypeDefinition<_fuxi_v1_ListTestbedsRequest, _fuxi_v1_ListTestbedsRequest__Output>
      ListTestbedsResponse: MessageTypeDefinition<_fuxi_v1_ListTestbedsResponse, _fuxi_v1_ListTestbedsResponse__Output>
      LocalityHint: MessageTypeDefinition<_fuxi_v1_LocalityHint, _fuxi_v1_LocalityHint__Output>
      /**
       * The master: agents, application masters and clients all talk to it.
       * A standby answers every call with FAILED_PRECONDITION / UNAVAILABLE and the
       * leader's address in the `fuxi-leader` trailer metadata so callers redirect.
       */
      MasterService: SubtypeConstructor<typeof grpc.Client, _fuxi_v1_MasterServiceClient> & { service: _fuxi_v1_MasterServiceDefinition }
      NodeAdmin: MessageTypeDefinition<_fuxi_v1_NodeAdmin, _fuxi_v1_NodeAdmin__Output>
      NodeAdminResponse: MessageTypeDefinition<_fuxi_v1_NodeAdminResponse, _fuxi_v1_NodeAdminResponse__Output>
      NodeInfo: MessageTypeDefinition<_fuxi_v1_NodeInfo, _fuxi_v1_NodeInfo__Output>
      NodeStatus: MessageTypeDefinition<_fuxi_v1_NodeStatus, _fuxi_v1_NodeStatus__Output>
      OutstandingRequest: MessageTypeDefinition<_fuxi_v1_OutstandingRequest, _fuxi_v1_OutstandingRequest__Output>
      PathRecord: MessageTypeDefinition<_fuxi_v1_PathRecord, _fuxi_v1_PathRecord__Output>
      PlacementConstraints: MessageTypeDefinition<_fuxi_v1_PlacementConstraints, _fuxi_v1_PlacementConstraints__Output>
      ProbePeer: MessageTypeDefinition<_fuxi_v1_ProbePeer, _fuxi_v1_ProbePeer__Output>
      ProbeTargets: MessageTypeDefinition<_fuxi_v1_ProbeTargets, _fuxi_v1_ProbeTargets__Output>
      RecoveryProgress: MessageTypeDefinition<_fuxi_v1_RecoveryProgress, _fuxi_v1_RecoveryProgress__Output>
      RegisterAgentRequest: MessageTypeDefinition<_fuxi_v1_RegisterAgentRequest, _fuxi_v1_RegisterAgentRequest__Output>
      RegisterAgentResponse: MessageTypeDefinition<_fuxi_v1_RegisterAgentResponse, _fuxi_v1_RegisterAgentResponse__Output>
      RegisterAppRequest: MessageTypeDefinition<_fuxi_v1_RegisterAppRequest, _fuxi_v1_RegisterAppRequest__Output>
      RegisterAppResponse: MessageTypeDefinition<_fuxi_v1_RegisterAppResponse, _fuxi_v1_RegisterAppResponse__Output>
      ReportAgentStateRequest: MessageTypeDefinition<_fuxi_v1_ReportAgentStateRequest, _fuxi_v1_ReportAgentStateRequest__Output>
      ReportAgentStateResponse: MessageTypeDefinition<_fuxi_v1_ReportAgentStateResponse, _fuxi_v1_ReportAgentStateResponse__Output>
      ReportAppStateRequest: MessageTypeDefinition<_fuxi_v1_ReportAppStateRequest, _fuxi_v1_ReportAppStateRequest__Output>
      ReportAppStateResponse: MessageTypeDefinition<_fuxi_v1_ReportAppStateResponse, _fuxi_v1_ReportAppStateResponse__Output>
      RequestDelta: MessageTypeDefinition<_fuxi_v1_RequestDelta, _fuxi_v1_RequestDelta__Output>
      Resource: MessageTypeDefinition<_fuxi_v1_Resource, _fuxi_v1_Resource__Output>
      ReturnSlotsRequest: MessageTypeDefinition<_fuxi_v1_ReturnSlotsRequest, _fuxi_v1_ReturnSlotsRequest__Output>
      ReturnSlotsResponse: MessageTypeDefinition<_fuxi_v1_ReturnSlotsResponse, _fuxi_v1_ReturnSlotsResponse__Output>
      SaveAppSnapshotRequest: MessageTypeDefinition<_fuxi_v1_SaveAppSnapshotRequest, _fuxi_v1_SaveAppSnapshotRequest__Output>
      SaveAppSnapshotResponse: MessageTypeDefinition<_fuxi_v1_SaveAppSnapshotResponse, _fuxi_v1_SaveAppSnapshotResponse__Output>
      ScheduleUnitConfig: MessageTypeDefinition<_fuxi_v1_ScheduleUnitConfig, _fuxi_v1_ScheduleUnitConfig__Output>
      SlotReturn: MessageTypeDefinition<_fuxi_v1_SlotReturn, _fuxi_v1_SlotReturn__Output>
      SubmitJobRequest: MessageTypeDefinition<_fuxi_v1_SubmitJobRequest, _fuxi_v1_SubmitJobRequest__Output>
      SubmitJobResponse: MessageTypeDefinition<_fuxi_v1_SubmitJobResponse, _fuxi_v1_SubmitJobResponse__Output>
      SubmitJobResult: MessageTypeDefinition<_fuxi_v1_SubmitJobResult, _fuxi_v1_SubmitJobResult__Output>
      SubmitJobsRequest: MessageTypeDefinition<_fuxi_v1_SubmitJobsRequest, _fuxi_v1_SubmitJobsRequest__Output>
      SubmitJobsResponse: MessageTypeDefinition<_fuxi_v1_SubmitJobsResponse, _fuxi_v1_SubmitJobsResponse__Output>
      TaskProgress: MessageTypeDefinition<_fuxi_v1_TaskProgress, _fuxi_v1_TaskProgress__Output>
      TaskSpec: MessageTypeDefinition<_fuxi_v1_TaskSpec, _fuxi_v1_TaskSpec__Output>
      Testbed: MessageTypeDefinition<_fuxi_v1_Testbed, _fuxi_v1_Testbed__Output>
      UncordonNodeRequest: MessageTypeDefinition<_fuxi_v1_UncordonNodeRequest, _fuxi_v1_UncordonNodeRequest__Output>
      UpdateRequestsRequest: MessageTypeDefinition<_fuxi_v1_UpdateRequestsRequest, _fuxi_v1_UpdateRequestsRequest__Output>
      UpdateRequestsResponse: MessageTypeDefinition<_fuxi_v1_UpdateRequestsResponse, _fuxi_v1_UpdateRequestsResponse__Output>
      WatchAssignmentsRequest: MessageTypeDefinition<_fuxi_v1_WatchAssignmentsRequest, _fuxi_v1_WatchAssignmentsRequest__Output>
      WatchGrantsRequest: MessageTypeDefinition<_fuxi_v1_WatchGrantsRequest, _fuxi_v1_WatchGrantsRequest__Output>
      WatchJobRequest: MessageTypeDefinition<_fuxi_v1_WatchJobRequest, _fuxi_v1_WatchJobRequest__Output>
      WatchJobsRequest: MessageTypeDefinition<_fuxi_v1_WatchJobsRequest, _fuxi_v1_WatchJobsRequest__Output>
      WorkerState: EnumTypeDefinition
      WorkerStatus: MessageTypeDefinition<_fuxi_v1_WorkerStatus, _fuxi_v1_WorkerStatus__Output>
      WorkerSummary: MessageTypeDefinition<_fuxi_v1_WorkerSummary, _fuxi_v1_WorkerSummary__Output>
    }
  }
}

