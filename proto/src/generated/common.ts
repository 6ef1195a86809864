import type * as grpc from '@grpc/grpc-js';
import type { EnumTypeDefinition, MessageTypeDefinition } from '@grpc/proto-loader';

import type { Assignment as _fuxi_v1_Assignment, Assignment__Output as _fuxi_v1_Assignment__Output } from './fuxi/v1/Assignment.js';
import type { BatchedCall as _fuxi_v1_BatchedCall, BatchedCall__Output as _fuxi_v1_BatchedCall__Output } from './fuxi/v1/BatchedCall.js';
import type { BatchedResult as _fuxi_v1_BatchedResult, BatchedResult__Output as _fuxi_v1_BatchedResult__Output } from './fuxi/v1/BatchedResult.js';
import type { CallBatch as _fuxi_v1_CallBatch, CallBatch__Output as _fuxi_v1_CallBatch__Output } from './fuxi/v1/CallBatch.js';
import type { CallBatchResult as _fuxi_v1_CallBatchResult, CallBatchResult__Output as _fuxi_v1_CallBatchResult__Output } from './fuxi/v1/CallBatchResult.js';
import type { Command as _fuxi_v1_Command, Command__Output as _fuxi_v1_Command__Output } from './fuxi/v1/Command.js';
import type { Connectivity as _fuxi_v1_Connectivity, Connectivity__Output as _fuxi_v1_Connectivity__Output } from './fuxi/v1/Connectivity.js';
import type { Grant as _fuxi_v1_Grant, Grant__Output as _fuxi_v1_Grant__Output } from './fuxi/v1/Grant.js';
import type { JobArray as _fuxi_v1_JobArray, JobArray__Output as _fuxi_v1_JobArray__Output } from './fuxi/v1/JobArray.js';
import type { JobInfo as _fuxi_v1_JobInfo, JobInfo__Output as _fuxi_v1_JobInfo__Output } from './fuxi/v1/JobInfo.js';
import type { JobSpec as _fuxi_v1_JobSpec, JobSpec__Output as _fuxi_v1_JobSpec__Output } from './fuxi/v1/JobSpec.js';
import type { Link as _fuxi_v1_Link, Link__Output as _fuxi_v1_Link__Output } from './fuxi/v1/Link.js';
import type { LocalityHint as _fuxi_v1_LocalityHint, LocalityHint__Output as _fuxi_v1_LocalityHint__Output } from './fuxi/v1/LocalityHint.js';
import type { NodeInfo as _fuxi_v1_NodeInfo, NodeInfo__Output as _fuxi_v1_NodeInfo__Output } from './fuxi/v1/NodeInfo.js';
import type { PathRecord as _fuxi_v1_PathRecord, PathRecord__Output as _fuxi_v1_PathRecord__Output } from './fuxi/v1/PathRecord.js';
import type { Resource as _fuxi_v1_Resource, Resource__Output as _fuxi_v1_Resource__Output } from './fuxi/v1/Resource.js';
import type { TaskProgress as _fuxi_v1_TaskProgress, TaskProgress__Output as _fuxi_v1_TaskProgress__Output } from './fuxi/v1/TaskProgress.js';
import type { TaskSpec as _fuxi_v1_TaskSpec, TaskSpec__Output as _fuxi_v1_TaskSpec__Output } from './fuxi/v1/TaskSpec.js';
import type { WorkerStatus as _fuxi_v1_WorkerStatus, WorkerStatus__Output as _fuxi_v1_WorkerStatus__Output } from './fuxi/v1/WorkerStatus.js';

type SubtypeConstructor<Constructor extends new (...args: any) => any, Subtype> = {
  new(...args: ConstructorParameters<Constructor>): Subtype;
};

export interface ProtoGrpcType {
  fuxi: {
    v1: {
      Assignment: MessageTypeDefinition<_fuxi_v1_Assignment, _fuxi_v1_Assignment__Output>
      BatchedCall: MessageTypeDefinition<_fuxi_v1_BatchedCall, _fuxi_v1_BatchedCall__Output>
      BatchedResult: MessageTypeDefinition<_fuxi_v1_BatchedResult, _fuxi_v1_BatchedResult__Output>
      CallBatch: MessageTypeDefinition<_fuxi_v1_CallBatch, _fuxi_v1_CallBatch__Output>
      CallBatchResult: MessageTypeDefinition<_fuxi_v1_CallBatchResult, _fuxi_v1_CallBatchResult__Output>
      Command: MessageTypeDefinition<_fuxi_v1_Command, _fuxi_v1_Command__Output>
      Connectivity: MessageTypeDefinition<_fuxi_v1_Connectivity, _fuxi_v1_Connectivity__Output>
      Grant: MessageTypeDefinition<_fuxi_v1_Grant, _fuxi_v1_Grant__Output>
      JobArray: MessageTypeDefinition<_fuxi_v1_JobArray, _fuxi_v1_JobArray__Output>
      JobInfo: MessageTypeDefinition<_fuxi_v1_JobInfo, _fuxi_v1_JobInfo__Output>
      JobSpec: MessageTypeDefinition<_fuxi_v1_JobSpec, _fuxi_v1_JobSpec__Output>
      JobState: EnumTypeDefinition
      Link: MessageTypeDefinition<_fuxi_v1_Link, _fuxi_v1_Link__Output>
      LocalityHint: MessageTypeDefinition<_fuxi_v1_LocalityHint, _fuxi_v1_LocalityHint__Output>
      NodeInfo: MessageTypeDefinition<_fuxi_v1_NodeInfo, _fuxi_v1_NodeInfo__Output>
      PathRecord: MessageTypeDefinition<_fuxi_v1_PathRecord, _fuxi_v1_PathRecord__Output>
      Resource: MessageTypeDefinition<_fuxi_v1_Resource, _fuxi_v1_Resource__Output>
      TaskProgress: MessageTypeDefinition<_fuxi_v1_TaskProgress, _fuxi_v1_TaskProgress__Output>
      TaskSpec: MessageTypeDefinition<_fuxi_v1_TaskSpec, _fuxi_v1_TaskSpec__Output>
      WorkerState: EnumTypeDefinition
      WorkerStatus: MessageTypeDefinition<_fuxi_v1_WorkerStatus, _fuxi_v1_WorkerStatus__Output>
    }
  }
}

