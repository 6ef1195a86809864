// Original file: proto/fuxi/v1/appmaster.proto

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { AgentsTimedOutRequest as _fuxi_v1_AgentsTimedOutRequest, AgentsTimedOutRequest__Output as _fuxi_v1_AgentsTimedOutRequest__Output } from '../../fuxi/v1/AgentsTimedOutRequest.js';
import type { AgentsTimedOutResponse as _fuxi_v1_AgentsTimedOutResponse, AgentsTimedOutResponse__Output as _fuxi_v1_AgentsTimedOutResponse__Output } from '../../fuxi/v1/AgentsTimedOutResponse.js';
import type { CallBatch as _fuxi_v1_CallBatch, CallBatch__Output as _fuxi_v1_CallBatch__Output } from '../../fuxi/v1/CallBatch.js';
import type { CallBatchResult as _fuxi_v1_CallBatchResult, CallBatchResult__Output as _fuxi_v1_CallBatchResult__Output } from '../../fuxi/v1/CallBatchResult.js';
import type { GetAppStateRequest as _fuxi_v1_GetAppStateRequest, GetAppStateRequest__Output as _fuxi_v1_GetAppStateRequest__Output } from '../../fuxi/v1/GetAppStateRequest.js';
import type { GetAppStateResponse as _fuxi_v1_GetAppStateResponse, GetAppStateResponse__Output as _fuxi_v1_GetAppStateResponse__Output } from '../../fuxi/v1/GetAppStateResponse.js';
import type { UpdateAssignmentsRequest as _fuxi_v1_UpdateAssignmentsRequest, UpdateAssignmentsRequest__Output as _fuxi_v1_UpdateAssignmentsRequest__Output } from '../../fuxi/v1/UpdateAssignmentsRequest.js';
import type { UpdateAssignmentsResponse as _fuxi_v1_UpdateAssignmentsResponse, UpdateAssignmentsResponse__Output as _fuxi_v1_UpdateAssignmentsResponse__Output } from '../../fuxi/v1/UpdateAssignmentsResponse.js';
import type { WorkerEventsRequest as _fuxi_v1_WorkerEventsRequest, WorkerEventsRequest__Output as _fuxi_v1_WorkerEventsRequest__Output } from '../../fuxi/v1/WorkerEventsRequest.js';
import type { WorkerEventsResponse as _fuxi_v1_WorkerEventsResponse, WorkerEventsResponse__Output as _fuxi_v1_WorkerEventsResponse__Output } from '../../fuxi/v1/WorkerEventsResponse.js';

/**
 * The application master of one job.
 */
export interface AppMasterServiceClient extends grpc.Client {
  /**
   * Master -> AM (Algorithm 1): these agents are timing out.
   */
  AgentsTimedOut(argument: _fuxi_v1_AgentsTimedOutRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_AgentsTimedOutResponse__Output>): grpc.ClientUnaryCall;
  AgentsTimedOut(argument: _fuxi_v1_AgentsTimedOutRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fuxi_v1_AgentsTimedOutResponse__Output>): grpc.ClientUnaryCall;
  AgentsTimedOut(argument: _fuxi_v1_AgentsTimedOutRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_AgentsTimedOutResponse__Output>): grpc.ClientUnaryCall;
  AgentsTimedOut(argument: _fuxi_v1_AgentsTimedOutRequest, callback: grpc.requestCallback<_fuxi_v1_AgentsTimedOutResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Master -> AM (Algorithm 1): these agents are timing out.
   */
  agentsTimedOut(argument: _fuxi_v1_AgentsTimedOutRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_AgentsTimedOutResponse__Output>): grpc.ClientUnaryCall;
  agentsTimedOut(argument: _fuxi_v1_AgentsTimedOutRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fuxi_v1_AgentsTimedOutResponse__Output>): grpc.ClientUnaryCall;
  agentsTimedOut(argument: _fuxi_v1_AgentsTimedOutRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_AgentsTimedOutResponse__Output>): grpc.ClientUnaryCall;
  agentsTimedOut(argument: _fuxi_v1_AgentsTimedOutRequest, callback: grpc.requestCallback<_fuxi_v1_AgentsTimedOutResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Several WorkerEvents in one, from an agent to the AMs it serves on one AM host: each entry goes
   * to the AM at its `route` (the part after `#` of that AM's address; empty for an AM with a
   * server of its own) and is answered with its own response or error.
   */
  Calls(argument: _fuxi_v1_CallBatch, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_CallBatchResult__Output>): grpc.ClientUnaryCall;
  Calls(argument: _fuxi_v1_CallBatch, metadata: grpc.Metadata, callback: grpc.requestCallback<_fuxi_v1_CallBatchResult__Output>): grpc.ClientUnaryCall;
  Calls(argument: _fuxi_v1_CallBatch, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_CallBatchResult__Output>): grpc.ClientUnaryCall;
  Calls(argument: _fuxi_v1_CallBatch, callback: grpc.requestCallback<_fuxi_v1_CallBatchResult__Output>): grpc.ClientUnaryCall;
  /**
   * Several WorkerEvents in one, from an agent to the AMs it serves on one AM host: each entry goes
   * to the AM at its `route` (the part after `#` of that AM's address; empty for an AM with a
   * server of its own) and is answered with its own response or error.
   */
  calls(argument: _fuxi_v1_CallBatch, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_CallBatchResult__Output>): grpc.ClientUnaryCall;
  calls(argument: _fuxi_v1_CallBatch, metadata: grpc.Metadata, callback: grpc.requestCallback<_fuxi_v1_CallBatchResult__Output>): grpc.ClientUnaryCall;
  calls(argument: _fuxi_v1_CallBatch, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_CallBatchResult__Output>): grpc.ClientUnaryCall;
  calls(argument: _fuxi_v1_CallBatch, callback: grpc.requestCallback<_fuxi_v1_CallBatchResult__Output>): grpc.ClientUnaryCall;
  
  GetAppState(argument: _fuxi_v1_GetAppStateRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_GetAppStateResponse__Output>): grpc.ClientUnaryCall;
  GetAppState(argument: _fuxi_v1_GetAppStateRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fuxi_v1_GetAppStateResponse__Output>): grpc.ClientUnaryCall;
  GetAppState(argument: _fuxi_v1_GetAppStateRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_GetAppStateResponse__Output>): grpc.ClientUnaryCall;
  GetAppState(argument: _fuxi_v1_GetAppStateRequest, callback: grpc.requestCallback<_fuxi_v1_GetAppStateResponse__Output>): grpc.ClientUnaryCall;
  getAppState(argument: _fuxi_v1_GetAppStateRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_GetAppStateResponse__Output>): grpc.ClientUnaryCall;
  getAppState(argument: _fuxi_v1_GetAppStateRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fuxi_v1_GetAppStateResponse__Output>): grpc.ClientUnaryCall;
  getAppState(argument: _fuxi_v1_GetAppStateRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_GetAppStateResponse__Output>): grpc.ClientUnaryCall;
  getAppState(argument: _fuxi_v1_GetAppStateRequest, callback: grpc.requestCallback<_fuxi_v1_GetAppStateResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Master -> AM: assignment changes (absolute per SU/node).
   */
  UpdateAssignments(argument: _fuxi_v1_UpdateAssignmentsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_UpdateAssignmentsResponse__Output>): grpc.ClientUnaryCall;
  UpdateAssignments(argument: _fuxi_v1_UpdateAssignmentsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fuxi_v1_UpdateAssignmentsResponse__Output>): grpc.ClientUnaryCall;
  UpdateAssignments(argument: _fuxi_v1_UpdateAssignmentsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_UpdateAssignmentsResponse__Output>): grpc.ClientUnaryCall;
  UpdateAssignments(argument: _fuxi_v1_UpdateAssignmentsRequest, callback: grpc.requestCallback<_fuxi_v1_UpdateAssignmentsResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Master -> AM: assignment changes (absolute per SU/node).
   */
  updateAssignments(argument: _fuxi_v1_UpdateAssignmentsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_UpdateAssignmentsResponse__Output>): grpc.ClientUnaryCall;
  updateAssignments(argument: _fuxi_v1_UpdateAssignmentsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fuxi_v1_UpdateAssignmentsResponse__Output>): grpc.ClientUnaryCall;
  updateAssignments(argument: _fuxi_v1_UpdateAssignmentsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_UpdateAssignmentsResponse__Output>): grpc.ClientUnaryCall;
  updateAssignments(argument: _fuxi_v1_UpdateAssignmentsRequest, callback: grpc.requestCallback<_fuxi_v1_UpdateAssignmentsResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Agents -> AM: worker state changes.
   */
  WorkerEvents(argument: _fuxi_v1_WorkerEventsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_WorkerEventsResponse__Output>): grpc.ClientUnaryCall;
  WorkerEvents(argument: _fuxi_v1_WorkerEventsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fuxi_v1_WorkerEventsResponse__Output>): grpc.ClientUnaryCall;
  WorkerEvents(argument: _fuxi_v1_WorkerEventsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_WorkerEventsResponse__Output>): grpc.ClientUnaryCall;
  WorkerEvents(argument: _fuxi_v1_WorkerEventsRequest, callback: grpc.requestCallback<_fuxi_v1_WorkerEventsResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Agents -> AM: worker state changes.
   */
  workerEvents(argument: _fuxi_v1_WorkerEventsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_WorkerEventsResponse__Output>): grpc.ClientUnaryCall;
  workerEvents(argument: _fuxi_v1_WorkerEventsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fuxi_v1_WorkerEventsResponse__Output>): grpc.ClientUnaryCall;
  workerEvents(argument: _fuxi_v1_WorkerEventsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_WorkerEventsResponse__Output>): grpc.ClientUnaryCall;
  workerEvents(argument: _fuxi_v1_WorkerEventsRequest, callback: grpc.requestCallback<_fuxi_v1_WorkerEventsResponse__Output>): grpc.ClientUnaryCall;
  
}

/**
 * The application master of one job.
 */
export interface AppMasterServiceHandlers extends grpc.UntypedServiceImplementation {
  /**
   * Master -> AM (Algorithm 1): these agents are timing out.
   */
  AgentsTimedOut: grpc.handleUnaryCall<_fuxi_v1_AgentsTimedOutRequest__Output, _fuxi_v1_AgentsTimedOutResponse>;
  
  /**
   * Several WorkerEvents in one, from an agent to the AMs it serves on one AM host: each entry goes
   * to the AM at its `route` (the part after `#` of that AM's address; empty for an AM with a
   * server of its own) and is answered with its own response or error.
   */
  Calls: grpc.handleUnaryCall<_fuxi_v1_CallBatch__Output, _fuxi_v1_CallBatchResult>;
  
  GetAppState: grpc.handleUnaryCall<_fuxi_v1_GetAppStateRequest__Output, _fuxi_v1_GetAppStateResponse>;
  
  /**
   * Master -> AM: assignment changes (absolute per SU/node).
   */
  UpdateAssignments: grpc.handleUnaryCall<_fuxi_v1_UpdateAssignmentsRequest__Output, _fuxi_v1_UpdateAssignmentsResponse>;
  
  /**
   * Agents -> AM: worker state changes.
   */
  WorkerEvents: grpc.handleUnaryCall<_fuxi_v1_WorkerEventsRequest__Output, _fuxi_v1_WorkerEventsResponse>;
  
}

export interface AppMasterServiceDefinition extends grpc.ServiceDefinition {
  AgentsTimedOut: MethodDefinition<_fuxi_v1_AgentsTimedOutRequest, _fuxi_v1_AgentsTimedOutResponse, _fuxi_v1_AgentsTimedOutRequest__Output, _fuxi_v1_AgentsTimedOutResponse__Output>
  Calls: MethodDefinition<_fuxi_v1_CallBatch, _fuxi_v1_CallBatchResult, _fuxi_v1_CallBatch__Output, _fuxi_v1_CallBatchResult__Output>
  GetAppState: MethodDefinition<_fuxi_v1_GetAppStateRequest, _fuxi_v1_GetAppStateResponse, _fuxi_v1_GetAppStateRequest__Output, _fuxi_v1_GetAppStateResponse__Output>
  UpdateAssignments: MethodDefinition<_fuxi_v1_UpdateAssignmentsRequest, _fuxi_v1_UpdateAssignmentsResponse, _fuxi_v1_UpdateAssignmentsRequest__Output, _fuxi_v1_UpdateAssignmentsResponse__Output>
  WorkerEvents: MethodDefinition<_fuxi_v1_WorkerEventsRequest, _fuxi_v1_WorkerEventsResponse, _fuxi_v1_WorkerEventsRequest__Output, _fuxi_v1_WorkerEventsResponse__Output>
}
