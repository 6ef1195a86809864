import type * as grpc from '@grpc/grpc-js';
import type { EnumTypeDefinition, MessageTypeDefinition } from '@grpc/proto-loader';

import type { AgentServiceClient as _fuxi_v1_AgentServiceClient, AgentServiceDefinition as _fuxi_v1_AgentServiceDefinition } from './fuxi/v1/AgentService.js';
import type { Assignment as _fuxi_v1_Assignment, Assignment__Output as _fuxi_v1_Assignment__Output } from './fuxi/v1/Assignment.js';
import type { BatchedCall as _fuxi_v1_BatchedCall, BatchedCall__Output as _fuxi_v1_BatchedCall__Output } from './fuxi/v1/BatchedCall.js';
import type { BatchedResult as _fuxi_v1_BatchedResult, BatchedResult__Output as _fuxi_v1_BatchedResult__Output } from './fuxi/v1/BatchedResult.js';
import type { CallBatch as _fuxi_v1_CallBatch, CallBatch__Output as _fuxi_v1_CallBatch__Output } from './fuxi/v1/CallBatch.js';
import type { CallBatchResult as _fuxi_v1_CallBatchResult, CallBatchResult__Output as _fuxi_v1_CallBatchResult__Output } from './fuxi/v1/CallBatchResult.js';
import type { Command as _fuxi_v1_Command, Command__Output as _fuxi_v1_Command__Output } from './fuxi/v1/Command.js';
import type { Connectivity as _fuxi_v1_Connectivity, Connectivity__Output as _fuxi_v1_Connectivity__Output } from './fuxi/v1/Connectivity.js';
import type { FetchOutputRequest as _fuxi_v1_FetchOutputRequest, FetchOutputRequest__Output as _fuxi_v1_FetchOutputRequest__Output } from './fuxi/v1/FetchOutputRequest.js';
import type { GetAgentStateRequest as _fuxi_v1_GetAgentStateRequest, GetAgentStateRequest__Output as _fuxi_v1_GetAgentStateRequest__Output } from './fuxi/v1/GetAgentStateRequest.js';
import type { GetAgentStateResponse as _fuxi_v1_GetAgentStateResponse, GetAgentStateResponse__Output as _fuxi_v1_GetAgentStateResponse__Output } from './fuxi/v1/GetAgentStateResponse.js';
import type { Grant as _fuxi_v1_Grant, Grant__Output as _fuxi_v1_Grant__Output } from './fuxi/v1/Grant.js';
import type { JobArray as _fuxi_v1_JobArray, JobArray__Output as _fuxi_v1_JobArray__Output } from './fuxi/v1/JobArray.js';
import type { JobInfo as _fuxi_v1_JobInfo, JobInfo__Output as _fuxi_v1_JobInfo__Output } from './fuxi/v1/JobInfo.js';
import type { JobSpec as _fuxi_v1_JobSpec, JobSpec__Output as _fuxi_v1_JobSpec__Output } from './fuxi/v1/JobSpec.js';
import type { Link as _fuxi_v1_Link, Link__Output as _fuxi_v1_Link__Output } from './fuxi/v1/Link.js';
import type { ListWorkersRequest as _fuxi_v1_ListWorkersRequest, ListWorkersRequest__Output as _fuxi_v1_ListWorkersRequest__Output } from './fuxi/v1/ListWorkersRequest.js';
import type { ListWorkersResponse as _fuxi_v1_ListWorkersResponse, ListWorkersResponse__Output as _fuxi_v1_ListWorkersResponse__Output } from './fuxi/v1/ListWorkersResponse.js';
import type { LocalityHint as _fuxi_v1_LocalityHint, LocalityHint__Output as _fuxi_v1_LocalityHint__Output } from './fuxi/v1/LocalityHint.js';
import type { LogChunk as _fuxi_v1_LogChunk, LogChunk__Output as _fuxi_v1_LogChunk__Output } from './fuxi/v1/LogChunk.js';
import type { NodeInfo as _fuxi_v1_NodeInfo, NodeInfo__Output as _fuxi_v1_NodeInfo__Output } from './fuxi/v1/NodeInfo.js';
import type { OutputChunk as _fuxi_v1_OutputChunk, OutputChunk__Output as _fuxi_v1_OutputChunk__Output } from './fuxi/v1/OutputChunk.js';
import type { PathRecord as _fuxi_v1_PathRecord, PathRecord__Output as _fuxi_v1_PathRecord__Output } from './fuxi/v1/PathRecord.js';
import type { ReadLogRequest as _fuxi_v1_ReadLogRequest, ReadLogRequest__Output as _fuxi_v1_ReadLogRequest__Output } from './fuxi/v1/ReadLogRequest.js';
import type { Resource as _fuxi_v1_Resource, Resource__Output as _fuxi_v1_Resource__Output } from './fuxi/v1/Resource.js';
import type { StartWorkersRequest as _fuxi_v1_StartWorkersRequest, StartWorkersRequest__Output as _fuxi_v1_StartWorkersRequest__Output } from './fuxi/v1/StartWorkersRequest.js';
import type { StartWorkersResponse as _fuxi_v1_StartWorkersResponse, StartWorkersResponse__Output as _fuxi_v1_StartWorkersResponse__Output } from './fuxi/v1/StartWorkersResponse.js';
import type { StopWorkersRequest as _fuxi_v1_StopWorkersRequest, StopWorkersRequest__Output as _fuxi_v1_StopWorkersRequest__Output } from './fuxi/v1/StopWorkersRequest.js';
import type { StopWorkersResponse as _fuxi_v1_StopWorkersResponse, StopWorkersResponse__Output as _fuxi_v1_StopWorkersResponse__Output } from './fuxi/v1/StopWorkersResponse.js';
import type { TaskProgress as _fuxi_v1_TaskProgress, TaskProgress__Output as _fuxi_v1_TaskProgress__Output } from './fuxi/v1/TaskProgress.js';
import type { TaskSpec as _fuxi_v1_TaskSpec, TaskSpec__Output as _fuxi_v1_TaskSpec__Output } from './fuxi/v1/TaskSpec.js';
import type { UpdateGrantsRequest as _fuxi_v1_UpdateGrantsRequest, UpdateGrantsRequest__Output as _fuxi_v1_UpdateGrantsRequest__Output } from './fuxi/v1/UpdateGrantsRequest.js';
import type { UpdateGrantsResponse as _fuxi_v1_UpdateGrantsResponse, UpdateGrantsResponse__Output as _fuxi_v1_UpdateGrantsResponse__Output } from './fuxi/v1/UpdateGrantsResponse.js';
import type { WorkerPlan as _fuxi_v1_WorkerPlan, WorkerPlan__Output as _fuxi_v1_WorkerPlan__Output } from './fuxi/v1/WorkerPlan.js';
import type { WorkerStatus as _fuxi_v1_WorkerStatus, WorkerStatus__Output as _fuxi_v1_WorkerStatus__Output } from './fuxi/v1/WorkerStatus.js';

type SubtypeConstructor<Constructor extends new (...args: any) => any, Subtype> = {
  new(...args: ConstructorParameters<Constructor>): Subtype;
};

export interface ProtoGrpcType {
  fuxi: {
    v1: {
      /**
       * The node agent. Starts a worker only when it holds both a grant with room
       * (from the master) and a plan (from the application master).
       */
      AgentService: SubtypeConstructor<typeof grpc.Client, _fuxi_v1_AgentServiceClient> & { service: _fuxi_v1_AgentServiceDefinition }
      Assignment: MessageTypeDefinition<_fuxi_v1_Assignment, _fuxi_v1_Assignment__Output>
      BatchedCall: MessageTypeDefinition<_fuxi_v1_BatchedCall, _fuxi_v1_BatchedCall__Output>
      BatchedResult: MessageTypeDefinition<_fuxi_v1_BatchedResult, _fuxi_v1_BatchedResult__Output>
      CallBatch: MessageTypeDefinition<_fuxi_v1_CallBatch, _fuxi_v1_CallBatch__Output>
      CallBatchResult: MessageTypeDefinition<_fuxi_v1_CallBatchResult, _fuxi_v1_CallBatchResult__Output>
      Command: MessageTypeDefinition<_fuxi_v1_Command, _fuxi_v1_Command__Output>
      Connectivity: MessageTypeDefinition<_fuxi_v1_Connectivity, _fuxi_v1_Connectivity__Output>
      FetchOutputRequest: MessageTypeDefinition<_fuxi_v1_FetchOutputRequest, _fuxi_v1_FetchOutputRequest__Output>
      GetAgentStateRequest: MessageTypeDefinition<_fuxi_v1_GetAgentStateRequest, _fuxi_v1_GetAgentStateRequest__Output>
      GetAgentStateResponse: MessageTypeDefinition<_fuxi_v1_GetAgentStateResponse, _fuxi_v1_GetAgentStateResponse__Output>
      Grant: MessageTypeDefinition<_fuxi_v1_Grant, _fuxi_v1_Grant__Output>
      JobArray: MessageTypeDefinition<_fuxi_v1_JobArray, _fuxi_v1_JobArray__Output>
      JobInfo: MessageTypeDefinition<_fuxi_v1_JobInfo, _fuxi_v1_JobInfo__Output>
      JobSpec: MessageTypeDefinition<_fuxi_v1_JobSpec, _fuxi_v1_JobSpec__Output>
      JobState: EnumTypeDefinition
      Link: MessageTypeDefinition<_fuxi_v1_Link, _fuxi_v1_Link__Output>
      ListWorkersRequest: MessageTypeDefinition<_fuxi_v1_ListWorkersRequest, _fuxi_v1_ListWorkersRequest__Output>
      ListWorkersResponse: MessageTypeDefinition<_fuxi_v1_ListWorkersResponse, _fuxi_v1_ListWorkersResponse__Output>
      LocalityHint: MessageTypeDefinition<_fuxi_v1_LocalityHint, _fuxi_v1_LocalityHint__Output>
      LogChunk: MessageTypeDefinition<_fuxi_v1_LogChunk, _fuxi_v1_LogChunk__Output>
      NodeInfo: MessageTypeDefinition<_fuxi_v1_NodeInfo, _fuxi_v1_NodeInfo__Output>
      OutputChunk: MessageTypeDefinition<_fuxi_v1_OutputChunk, _fuxi_v1_OutputChunk__Output>
      PathRecord: MessageTypeDefinition<_fuxi_v1_PathRecord, _fuxi_v1_PathRecord__Output>
      ReadLogRequest: MessageTypeDefinition<_fuxi_v1_ReadLogRequest, _fuxi_v1_ReadLogRequest__Output>
      Resource: MessageTypeDefinition<_fuxi_v1_Resource, _fuxi_v1_Resource__Output>
      StartWorkersRequest: MessageTypeDefinition<_fuxi_v1_StartWorkersRequest, _fuxi_v1_StartWorkersRequest__Output>
      StartWorkersResponse: MessageTypeDefinition<_fuxi_v1_StartWorkersResponse, _fuxi_v1_StartWorkersResponse__Output>
      StopWorkersRequest: MessageTypeDefinition<_fuxi_v1_StopWorkersRequest, _fuxi_v1_StopWorkersRequest__Output>
      StopWorkersResponse: MessageTypeDefinition<_fuxi_v1_StopWorkersResponse, _fuxi_v1_StopWorkersResponse__Output>
      TaskProgress: MessageTypeDefinition<_fuxi_v1_TaskProgress, _fuxi_v1_TaskProgress__Output>
      TaskSpec: MessageTypeDefinition<_fuxi_v1_TaskSpec, _fuxi_v1_TaskSpec__Output>
      UpdateGrantsRequest: MessageTypeDefinition<_fuxi_v1_UpdateGrantsRequest, _fuxi_v1_UpdateGrantsRequest__Output>
      UpdateGrantsResponse: MessageTypeDefinition<_fuxi_v1_UpdateGrantsResponse, _fuxi_v1_UpdateGrantsResponse__Output>
      WorkerPlan: MessageTypeDefinition<_fuxi_v1_WorkerPlan, _fuxi_v1_WorkerPlan__Output>
      WorkerState: EnumTypeDefinition
      WorkerStatus: MessageTypeDefinition<_fuxi_v1_WorkerStatus, _fuxi_v1_WorkerStatus__Output>
    }
  }
}

