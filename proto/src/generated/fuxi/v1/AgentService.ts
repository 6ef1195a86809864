// Original file: proto/fuxi/v1/agent.proto

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { CallBatch as _fuxi_v1_CallBatch, CallBatch__Output as _fuxi_v1_CallBatch__Output } from '../../fuxi/v1/CallBatch.js';
import type { CallBatchResult as _fuxi_v1_CallBatchResult, CallBatchResult__Output as _fuxi_v1_CallBatchResult__Output } from '../../fuxi/v1/CallBatchResult.js';
import type { FetchOutputRequest as _fuxi_v1_FetchOutputRequest, FetchOutputRequest__Output as _fuxi_v1_FetchOutputRequest__Output } from '../../fuxi/v1/FetchOutputRequest.js';
import type { GetAgentStateRequest as _fuxi_v1_GetAgentStateRequest, GetAgentStateRequest__Output as _fuxi_v1_GetAgentStateRequest__Output } from '../../fuxi/v1/GetAgentStateRequest.js';
import type { GetAgentStateResponse as _fuxi_v1_GetAgentStateResponse, GetAgentStateResponse__Output as _fuxi_v1_GetAgentStateResponse__Output } from '../../fuxi/v1/GetAgentStateResponse.js';
import type { ListWorkersRequest as _fuxi_v1_ListWorkersRequest, ListWorkersRequest__Output as _fuxi_v1_ListWorkersRequest__Output } from '../../fuxi/v1/ListWorkersRequest.js';
import type { ListWorkersResponse as _fuxi_v1_ListWorkersResponse, ListWorkersResponse__Output as _fuxi_v1_ListWorkersResponse__Output } from '../../fuxi/v1/ListWorkersResponse.js';
import type { LogChunk as _fuxi_v1_LogChunk, LogChunk__Output as _fuxi_v1_LogChunk__Output } from '../../fuxi/v1/LogChunk.js';
import type { OutputChunk as _fuxi_v1_OutputChunk, OutputChunk__Output as _fuxi_v1_OutputChunk__Output } from '../../fuxi/v1/OutputChunk.js';
import type { ReadLogRequest as _fuxi_v1_ReadLogRequest, ReadLogRequest__Output as _fuxi_v1_ReadLogRequest__Output } from '../../fuxi/v1/ReadLogRequest.js';
import type { StartWorkersRequest as _fuxi_v1_StartWorkersRequest, StartWorkersRequest__Output as _fuxi_v1_StartWorkersRequest__Output } from '../../fuxi/v1/StartWorkersRequest.js';
import type { StartWorkersResponse as _fuxi_v1_StartWorkersResponse, StartWorkersResponse__Output as _fuxi_v1_StartWorkersResponse__Output } from '../../fuxi/v1/StartWorkersResponse.js';
import type { StopWorkersRequest as _fuxi_v1_StopWorkersRequest, StopWorkersRequest__Output as _fuxi_v1_StopWorkersRequest__Output } from '../../fuxi/v1/StopWorkersRequest.js';
import type { StopWorkersResponse as _fuxi_v1_StopWorkersResponse, StopWorkersResponse__Output as _fuxi_v1_StopWorkersResponse__Output } from '../../fuxi/v1/StopWorkersResponse.js';
import type { UpdateGrantsRequest as _fuxi_v1_UpdateGrantsRequest, UpdateGrantsRequest__Output as _fuxi_v1_UpdateGrantsRequest__Output } from '../../fuxi/v1/UpdateGrantsRequest.js';
import type { UpdateGrantsResponse as _fuxi_v1_UpdateGrantsResponse, UpdateGrantsResponse__Output as _fuxi_v1_UpdateGrantsResponse__Output } from '../../fuxi/v1/UpdateGrantsResponse.js';

/**
 * The node agent. Starts a worker only when it holds both a grant with room
 * (from the master) and a plan (from the application master).
 */
export interface AgentServiceClient extends grpc.Client {
  /**
   * Several StartWorkers / StopWorkers in one (the hosted AMs of an AM host, the master's AM
   * launches): each entry authorized and run as that call alone would be, with its own token, and
   * answered with its own response or error.
   */
  Calls(argument: _fuxi_v1_CallBatch, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_CallBatchResult__Output>): grpc.ClientUnaryCall;
  Calls(argument: _fuxi_v1_CallBatch, metadata: grpc.Metadata, callback: grpc.requestCallback<_fuxi_v1_CallBatchResult__Output>): grpc.ClientUnaryCall;
  Calls(argument: _fuxi_v1_CallBatch, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_CallBatchResult__Output>): grpc.ClientUnaryCall;
  Calls(argument: _fuxi_v1_CallBatch, callback: grpc.requestCallback<_fuxi_v1_CallBatchResult__Output>): grpc.ClientUnaryCall;
  /**
   * Several StartWorkers / StopWorkers in one (the hosted AMs of an AM host, the master's AM
   * launches): each entry authorized and run as that call alone would be, with its own token, and
   * answered with its own response or error.
   */
  calls(argument: _fuxi_v1_CallBatch, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_CallBatchResult__Output>): grpc.ClientUnaryCall;
  calls(argument: _fuxi_v1_CallBatch, metadata: grpc.Metadata, callback: grpc.requestCallback<_fuxi_v1_CallBatchResult__Output>): grpc.ClientUnaryCall;
  calls(argument: _fuxi_v1_CallBatch, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_CallBatchResult__Output>): grpc.ClientUnaryCall;
  calls(argument: _fuxi_v1_CallBatch, callback: grpc.requestCallback<_fuxi_v1_CallBatchResult__Output>): grpc.ClientUnaryCall;
  
  /**
   * The data service: a file a finished (succeeded) worker wrote into its output directory
   * ($FUXI_OUTPUT_DIR), for other workers of the same job on other hosts (as YARN's NodeManager
   * serves map output to reducers). NOT_FOUND when this agent has no such worker or file;
   * FAILED_PRECONDITION while the worker has not succeeded.
   */
  FetchOutput(argument: _fuxi_v1_FetchOutputRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_fuxi_v1_OutputChunk__Output>;
  FetchOutput(argument: _fuxi_v1_FetchOutputRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_fuxi_v1_OutputChunk__Output>;
  /**
   * The data service: a file a finished (succeeded) worker wrote into its output directory
   * ($FUXI_OUTPUT_DIR), for other workers of the same job on other hosts (as YARN's NodeManager
   * serves map output to reducers). NOT_FOUND when this agent has no such worker or file;
   * FAILED_PRECONDITION while the worker has not succeeded.
   */
  fetchOutput(argument: _fuxi_v1_FetchOutputRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_fuxi_v1_OutputChunk__Output>;
  fetchOutput(argument: _fuxi_v1_FetchOutputRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_fuxi_v1_OutputChunk__Output>;
  
  GetAgentState(argument: _fuxi_v1_GetAgentStateRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_GetAgentStateResponse__Output>): grpc.ClientUnaryCall;
  GetAgentState(argument: _fuxi_v1_GetAgentStateRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fuxi_v1_GetAgentStateResponse__Output>): grpc.ClientUnaryCall;
  GetAgentState(argument: _fuxi_v1_GetAgentStateRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_GetAgentStateResponse__Output>): grpc.ClientUnaryCall;
  GetAgentState(argument: _fuxi_v1_GetAgentStateRequest, callback: grpc.requestCallback<_fuxi_v1_GetAgentStateResponse__Output>): grpc.ClientUnaryCall;
  getAgentState(argument: _fuxi_v1_GetAgentStateRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_GetAgentStateResponse__Output>): grpc.ClientUnaryCall;
  getAgentState(argument: _fuxi_v1_GetAgentStateRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fuxi_v1_GetAgentStateResponse__Output>): grpc.ClientUnaryCall;
  getAgentState(argument: _fuxi_v1_GetAgentStateRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_GetAgentStateResponse__Output>): grpc.ClientUnaryCall;
  getAgentState(argument: _fuxi_v1_GetAgentStateRequest, callback: grpc.requestCallback<_fuxi_v1_GetAgentStateResponse__Output>): grpc.ClientUnaryCall;
  
  ListWorkers(argument: _fuxi_v1_ListWorkersRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_ListWorkersResponse__Output>): grpc.ClientUnaryCall;
  ListWorkers(argument: _fuxi_v1_ListWorkersRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fuxi_v1_ListWorkersResponse__Output>): grpc.ClientUnaryCall;
  ListWorkers(argument: _fuxi_v1_ListWorkersRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_ListWorkersResponse__Output>): grpc.ClientUnaryCall;
  ListWorkers(argument: _fuxi_v1_ListWorkersRequest, callback: grpc.requestCallback<_fuxi_v1_ListWorkersResponse__Output>): grpc.ClientUnaryCall;
  listWorkers(argument: _fuxi_v1_ListWorkersRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_ListWorkersResponse__Output>): grpc.ClientUnaryCall;
  listWorkers(argument: _fuxi_v1_ListWorkersRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fuxi_v1_ListWorkersResponse__Output>): grpc.ClientUnaryCall;
  listWorkers(argument: _fuxi_v1_ListWorkersRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_ListWorkersResponse__Output>): grpc.ClientUnaryCall;
  listWorkers(argument: _fuxi_v1_ListWorkersRequest, callback: grpc.requestCallback<_fuxi_v1_ListWorkersResponse__Output>): grpc.ClientUnaryCall;
  
  ReadLog(argument: _fuxi_v1_ReadLogRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_fuxi_v1_LogChunk__Output>;
  ReadLog(argument: _fuxi_v1_ReadLogRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_fuxi_v1_LogChunk__Output>;
  readLog(argument: _fuxi_v1_ReadLogRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_fuxi_v1_LogChunk__Output>;
  readLog(argument: _fuxi_v1_ReadLogRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_fuxi_v1_LogChunk__Output>;
  
  /**
   * AM (or the master, for AM processes) -> agent: plans.
   */
  StartWorkers(argument: _fuxi_v1_StartWorkersRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_StartWorkersResponse__Output>): grpc.ClientUnaryCall;
  StartWorkers(argument: _fuxi_v1_StartWorkersRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fuxi_v1_StartWorkersResponse__Output>): grpc.ClientUnaryCall;
  StartWorkers(argument: _fuxi_v1_StartWorkersRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_StartWorkersResponse__Output>): grpc.ClientUnaryCall;
  StartWorkers(argument: _fuxi_v1_StartWorkersRequest, callback: grpc.requestCallback<_fuxi_v1_StartWorkersResponse__Output>): grpc.ClientUnaryCall;
  /**
   * AM (or the master, for AM processes) -> agent: plans.
   */
  startWorkers(argument: _fuxi_v1_StartWorkersRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_StartWorkersResponse__Output>): grpc.ClientUnaryCall;
  startWorkers(argument: _fuxi_v1_StartWorkersRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fuxi_v1_StartWorkersResponse__Output>): grpc.ClientUnaryCall;
  startWorkers(argument: _fuxi_v1_StartWorkersRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_StartWorkersResponse__Output>): grpc.ClientUnaryCall;
  startWorkers(argument: _fuxi_v1_StartWorkersRequest, callback: grpc.requestCallback<_fuxi_v1_StartWorkersResponse__Output>): grpc.ClientUnaryCall;
  
  StopWorkers(argument: _fuxi_v1_StopWorkersRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_StopWorkersResponse__Output>): grpc.ClientUnaryCall;
  StopWorkers(argument: _fuxi_v1_StopWorkersRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fuxi_v1_StopWorkersResponse__Output>): grpc.ClientUnaryCall;
  StopWorkers(argument: _fuxi_v1_StopWorkersRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_StopWorkersResponse__Output>): grpc.ClientUnaryCall;
  StopWorkers(argument: _fuxi_v1_StopWorkersRequest, callback: grpc.requestCallback<_fuxi_v1_StopWorkersResponse__Output>): grpc.ClientUnaryCall;
  stopWorkers(argument: _fuxi_v1_StopWorkersRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_StopWorkersResponse__Output>): grpc.ClientUnaryCall;
  stopWorkers(argument: _fuxi_v1_StopWorkersRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fuxi_v1_StopWorkersResponse__Output>): grpc.ClientUnaryCall;
  stopWorkers(argument: _fuxi_v1_StopWorkersRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_StopWorkersResponse__Output>): grpc.ClientUnaryCall;
  stopWorkers(argument: _fuxi_v1_StopWorkersRequest, callback: grpc.requestCallback<_fuxi_v1_StopWorkersResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Master -> agent: the grant table changes (absolute per app/SU).
   */
  UpdateGrants(argument: _fuxi_v1_UpdateGrantsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_UpdateGrantsResponse__Output>): grpc.ClientUnaryCall;
  UpdateGrants(argument: _fuxi_v1_UpdateGrantsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fuxi_v1_UpdateGrantsResponse__Output>): grpc.ClientUnaryCall;
  UpdateGrants(argument: _fuxi_v1_UpdateGrantsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_UpdateGrantsResponse__Output>): grpc.ClientUnaryCall;
  UpdateGrants(argument: _fuxi_v1_UpdateGrantsRequest, callback: grpc.requestCallback<_fuxi_v1_UpdateGrantsResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Master -> agent: the grant table changes (absolute per app/SU).
   */
  updateGrants(argument: _fuxi_v1_UpdateGrantsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_UpdateGrantsResponse__Output>): grpc.ClientUnaryCall;
  updateGrants(argument: _fuxi_v1_UpdateGrantsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fuxi_v1_UpdateGrantsResponse__Output>): grpc.ClientUnaryCall;
  updateGrants(argument: _fuxi_v1_UpdateGrantsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_UpdateGrantsResponse__Output>): grpc.ClientUnaryCall;
  updateGrants(argument: _fuxi_v1_UpdateGrantsRequest, callback: grpc.requestCallback<_fuxi_v1_UpdateGrantsResponse__Output>): grpc.ClientUnaryCall;
  
}

/**
 * The node agent. Starts a worker only when it holds both a grant with room
 * (from the master) and a plan (from the application master).
 */
export interface AgentServiceHandlers extends grpc.UntypedServiceImplementation {
  /**
   * Several StartWorkers / StopWorkers in one (the hosted AMs of an AM host, the master's AM
   * launches): each entry authorized and run as that call alone would be, with its own token, and
   * answered with its own response or error.
   */
  Calls: grpc.handleUnaryCall<_fuxi_v1_CallBatch__Output, _fuxi_v1_CallBatchResult>;
  
  /**
   * The data service: a file a finished (succeeded) worker wrote into its output directory
   * ($FUXI_OUTPUT_DIR), for other workers of the same job on other hosts (as YARN's NodeManager
   * serves map output to reducers). NOT_FOUND when this agent has no such worker or file;
   * FAILED_PRECONDITION while the worker has not succeeded.
   */
  FetchOutput: grpc.handleServerStreamingCall<_fuxi_v1_FetchOutputRequest__Output, _fuxi_v1_OutputChunk>;
  
  GetAgentState: grpc.handleUnaryCall<_fuxi_v1_GetAgentStateRequest__Output, _fuxi_v1_GetAgentStateResponse>;
  
  ListWorkers: grpc.handleUnaryCall<_fuxi_v1_ListWorkersRequest__Output, _fuxi_v1_ListWorkersResponse>;
  
  ReadLog: grpc.handleServerStreamingCall<_fuxi_v1_ReadLogRequest__Output, _fuxi_v1_LogChunk>;
  
  /**
   * AM (or the master, for AM processes) -> agent: plans.
   */
  StartWorkers: grpc.handleUnaryCall<_fuxi_v1_StartWorkersRequest__Output, _fuxi_v1_StartWorkersResponse>;
  
  StopWorkers: grpc.handleUnaryCall<_fuxi_v1_StopWorkersRequest__Output, _fuxi_v1_StopWorkersResponse>;
  
  /**
   * Master -> agent: the grant table changes (absolute per app/SU).
   */
  UpdateGrants: grpc.handleUnaryCall<_fuxi_v1_UpdateGrantsRequest__Output, _fuxi_v1_UpdateGrantsResponse>;
  
}

export interface AgentServiceDefinition extends grpc.ServiceDefinition {
  Calls: MethodDefinition<_fuxi_v1_CallBatch, _fuxi_v1_CallBatchResult, _fuxi_v1_CallBatch__Output, _fuxi_v1_CallBatchResult__Output>
  FetchOutput: MethodDefinition<_fuxi_v1_FetchOutputRequest, _fuxi_v1_OutputChunk, _fuxi_v1_FetchOutputRequest__Output, _fuxi_v1_OutputChunk__Output>
  GetAgentState: MethodDefinition<_fuxi_v1_GetAgentStateRequest, _fuxi_v1_GetAgentStateResponse, _fuxi_v1_GetAgentStateRequest__Output, _fuxi_v1_GetAgentStateResponse__Output>
  ListWorkers: MethodDefinition<_fuxi_v1_ListWorkersRequest, _fuxi_v1_ListWorkersResponse, _fuxi_v1_ListWorkersRequest__Output, _fuxi_v1_ListWorkersResponse__Output>
  ReadLog: MethodDefinition<_fuxi_v1_ReadLogRequest, _fuxi_v1_LogChunk, _fuxi_v1_ReadLogRequest__Output, _fuxi_v1_LogChunk__Output>
  StartWorkers: MethodDefinition<_fuxi_v1_StartWorkersRequest, _fuxi_v1_StartWorkersResponse, _fuxi_v1_StartWorkersRequest__Output, _fuxi_v1_StartWorkersResponse__Output>
  StopWorkers: MethodDefinition<_fuxi_v1_StopWorkersRequest, _fuxi_v1_StopWorkersResponse, _fuxi_v1_StopWorkersRequest__Output, _fuxi_v1_StopWorkersResponse__Output>
  UpdateGrants: MethodDefinition<_fuxi_v1_UpdateGrantsRequest, _fuxi_v1_UpdateGrantsResponse, _fuxi_v1_UpdateGrantsRequest__Output, _fuxi_v1_UpdateGrantsResponse__Output>
}
