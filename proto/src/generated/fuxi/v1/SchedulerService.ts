// Original file: proto/fuxi/v1/scheduler.proto

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { PlaceRequest as _fuxi_v1_PlaceRequest, PlaceRequest__Output as _fuxi_v1_PlaceRequest__Output } from '../../fuxi/v1/PlaceRequest.js';
import type { PlaceResponse as _fuxi_v1_PlaceResponse, PlaceResponse__Output as _fuxi_v1_PlaceResponse__Output } from '../../fuxi/v1/PlaceResponse.js';
import type { RegisterSchedulerRequest as _fuxi_v1_RegisterSchedulerRequest, RegisterSchedulerRequest__Output as _fuxi_v1_RegisterSchedulerRequest__Output } from '../../fuxi/v1/RegisterSchedulerRequest.js';
import type { SchedulerEvent as _fuxi_v1_SchedulerEvent, SchedulerEvent__Output as _fuxi_v1_SchedulerEvent__Output } from '../../fuxi/v1/SchedulerEvent.js';

/**
 * External schedulers: a process that decides where the task slots of some jobs go (the jobs whose
 * spec says `scheduler: <its name>`), on the hosts of one scope (a testbed or a quota group).
 * It opens Watch, which registers it and streams the state it needs; it answers with Place calls.
 * A standby answers both with UNAVAILABLE and the leader's address, like every MasterService call.
 */
export interface SchedulerServiceClient extends grpc.Client {
  /**
   * Placements decided on a view; each is applied (granted as the built-in scheduler grants) or
   * rejected with a reason. An empty call is a keepalive: a scheduler silent for the master's
   * externalSchedulerStallMs counts as gone.
   */
  Place(argument: _fuxi_v1_PlaceRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_PlaceResponse__Output>): grpc.ClientUnaryCall;
  Place(argument: _fuxi_v1_PlaceRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fuxi_v1_PlaceResponse__Output>): grpc.ClientUnaryCall;
  Place(argument: _fuxi_v1_PlaceRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_PlaceResponse__Output>): grpc.ClientUnaryCall;
  Place(argument: _fuxi_v1_PlaceRequest, callback: grpc.requestCallback<_fuxi_v1_PlaceResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Placements decided on a view; each is applied (granted as the built-in scheduler grants) or
   * rejected with a reason. An empty call is a keepalive: a scheduler silent for the master's
   * externalSchedulerStallMs counts as gone.
   */
  place(argument: _fuxi_v1_PlaceRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_PlaceResponse__Output>): grpc.ClientUnaryCall;
  place(argument: _fuxi_v1_PlaceRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_fuxi_v1_PlaceResponse__Output>): grpc.ClientUnaryCall;
  place(argument: _fuxi_v1_PlaceRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_fuxi_v1_PlaceResponse__Output>): grpc.ClientUnaryCall;
  place(argument: _fuxi_v1_PlaceRequest, callback: grpc.requestCallback<_fuxi_v1_PlaceResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Registers (the first and only request) and streams state: a full view first, then deltas.
   * A newer registration of the same name fences this one: its stream ends, its placements are
   * rejected with FENCED. The stream ends when the master stops leading.
   */
  Watch(argument: _fuxi_v1_RegisterSchedulerRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_fuxi_v1_SchedulerEvent__Output>;
  Watch(argument: _fuxi_v1_RegisterSchedulerRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_fuxi_v1_SchedulerEvent__Output>;
  /**
   * Registers (the first and only request) and streams state: a full view first, then deltas.
   * A newer registration of the same name fences this one: its stream ends, its placements are
   * rejected with FENCED. The stream ends when the master stops leading.
   */
  watch(argument: _fuxi_v1_RegisterSchedulerRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_fuxi_v1_SchedulerEvent__Output>;
  watch(argument: _fuxi_v1_RegisterSchedulerRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_fuxi_v1_SchedulerEvent__Output>;
  
}

/**
 * External schedulers: a process that decides where the task slots of some jobs go (the jobs whose
 * spec says `scheduler: <its name>`), on the hosts of one scope (a testbed or a quota group).
 * It opens Watch, which registers it and streams the state it needs; it answers with Place calls.
 * A standby answers both with UNAVAILABLE and the leader's address, like every MasterService call.
 */
export interface SchedulerServiceHandlers extends grpc.UntypedServiceImplementation {
  /**
   * Placements decided on a view; each is applied (granted as the built-in scheduler grants) or
   * rejected with a reason. An empty call is a keepalive: a scheduler silent for the master's
   * externalSchedulerStallMs counts as gone.
   */
  Place: grpc.handleUnaryCall<_fuxi_v1_PlaceRequest__Output, _fuxi_v1_PlaceResponse>;
  
  /**
   * Registers (the first and only request) and streams state: a full view first, then deltas.
   * A newer registration of the same name fences this one: its stream ends, its placements are
   * rejected with FENCED. The stream ends when the master stops leading.
   */
  Watch: grpc.handleServerStreamingCall<_fuxi_v1_RegisterSchedulerRequest__Output, _fuxi_v1_SchedulerEvent>;
  
}

export interface SchedulerServiceDefinition extends grpc.ServiceDefinition {
  Place: MethodDefinition<_fuxi_v1_PlaceRequest, _fuxi_v1_PlaceResponse, _fuxi_v1_PlaceRequest__Output, _fuxi_v1_PlaceResponse__Output>
  Watch: MethodDefinition<_fuxi_v1_RegisterSchedulerRequest, _fuxi_v1_SchedulerEvent, _fuxi_v1_RegisterSchedulerRequest__Output, _fuxi_v1_SchedulerEvent__Output>
}
