/**
 * Mapping between the wire types (`@fuxi/proto`) and the domain types (`@fuxi/common`) of a job
 * spec. Shells call these at the edge so that `__Output` optionality never leaks into cores.
 *
 * ```ts
 * const spec = validateJobSpec(jobSpecFromProto(req.spec ?? {}), { nodeCapacities });  // master
 * await master.call('SubmitJob', { spec: jobSpecToProto(spec) });                      // client
 * ```
 *
 * Missing submessages become zero values (a zero resource, an empty argv), which `validateJobSpec`
 * reports (or, for the AM resource, replaces with the default), never `undefined`.
 */
import type { CommandSpec, JobSpec, Resource, TaskSpec } from '@fuxi/common';
import type {
  Command as ProtoCommand,
  Command__Output as ProtoCommandOut,
  JobSpec as ProtoJobSpec,
  JobSpec__Output as ProtoJobSpecOut,
  Resource as ProtoResource,
  Resource__Output as ProtoResourceOut,
  TaskSpec as ProtoTaskSpec,
  TaskSpec__Output as ProtoTaskSpecOut,
} from '@fuxi/proto';

export function resourceToProto(r: Resource): ProtoResource {
  return { cpuMilli: r.cpuMilli, memoryMb: r.memoryMb };
}

/** A missing (null) resource is zero. */
export function resourceFromProto(p: ProtoResourceOut | ProtoResource | null | undefined): Resource {
  return { cpuMilli: p?.cpuMilli ?? 0, memoryMb: p?.memoryMb ?? 0 };
}

export function commandToProto(c: CommandSpec): ProtoCommand {
  return { argv: [...c.argv], env: { ...c.env }, cwd: c.cwd };
}

export function commandFromProto(p: ProtoCommandOut | ProtoCommand | null | undefined): CommandSpec {
  return { argv: [...(p?.argv ?? [])], env: { ...(p?.env ?? {}) }, cwd: p?.cwd ?? '' };
}

export function taskSpecToProto(t: TaskSpec): ProtoTaskSpec {
  return {
    name: t.name,
    instances: t.instances,
    resource: resourceToProto(t.resource),
    command: commandToProto(t.command),
    maxAttempts: t.maxAttempts,
    dependsOn: [...t.dependsOn],
    locality: { nodes: [...t.locality.nodes], racks: [...t.locality.racks] },
    priority: t.priority,
    minInstances: t.minInstances ?? 0,
  };
}

export function taskSpecFromProto(p: ProtoTaskSpecOut | ProtoTaskSpec): TaskSpec {
  return {
    name: p.name ?? '',
    instances: p.instances ?? 0,
    resource: resourceFromProto(p.resource),
    command: commandFromProto(p.command),
    maxAttempts: p.maxAttempts ?? 0,
    dependsOn: [...(p.dependsOn ?? [])],
    locality: { nodes: [...(p.locality?.nodes ?? [])], racks: [...(p.locality?.racks ?? [])] },
    priority: p.priority ?? 0,
    ...((p.minInstances ?? 0) > 0 ? { minInstances: p.minInstances ?? 0 } : {}),
  };
}

export function jobSpecToProto(spec: JobSpec): ProtoJobSpec {
  return {
    jobId: spec.jobId,
    name: spec.name,
    quotaGroup: spec.quotaGroup,
    priority: spec.priority,
    tasks: spec.tasks.map(taskSpecToProto),
    amResource: resourceToProto(spec.amResource),
    amMode: spec.amMode,
    env: { ...spec.env },
    onAgentTimeout: spec.onAgentTimeout,
    rerunAfterMs: spec.rerunAfterMs,
    network: spec.network ?? '',
    speculation: spec.speculation ?? '',
    failurePrediction: spec.failurePrediction ?? '',
    testbed: spec.testbed ?? '',
    scheduler: spec.scheduler ?? '',
    ...(spec.array ? { array: { id: spec.array.id, index: spec.array.index, maxRunning: spec.array.maxRunning } } : {}),
  };
}

/**
 * Also accepts the input type (e.g. a spec built in memory, not decoded from the wire).
 * `onAgentTimeout`, `amMode`, `network`, `speculation`, `failurePrediction` and `scheduler` are passed on as sent ('' when unset, or an unknown word) and `rerunAfterMs` as
 * sent (0 when unset): `validateJobSpec` checks both and fills the defaults ('rerun', and 30000 ms
 * when the policy is unset too).
 */
export function jobSpecFromProto(p: ProtoJobSpecOut | ProtoJobSpec): JobSpec {
  return {
    jobId: p.jobId ?? '',
    name: p.name ?? '',
    quotaGroup: p.quotaGroup ?? '',
    priority: p.priority ?? 0,
    env: { ...(p.env ?? {}) },
    amResource: resourceFromProto(p.amResource),
    amMode: (p.amMode ?? '') as JobSpec['amMode'],
    tasks: (p.tasks ?? []).map(taskSpecFromProto),
    onAgentTimeout: (p.onAgentTimeout ?? '') as JobSpec['onAgentTimeout'],
    rerunAfterMs: p.rerunAfterMs ?? 0,
    ...(p.network ? { network: p.network as JobSpec['network'] } : {}),
    ...(p.speculation ? { speculation: p.speculation as JobSpec['speculation'] } : {}),
    ...(p.failurePrediction ? { failurePrediction: p.failurePrediction as JobSpec['failurePrediction'] } : {}),
    ...(p.testbed ? { testbed: p.testbed } : {}),
    ...(p.scheduler ? { scheduler: p.scheduler } : {}),
    ...(p.array ? { array: { id: p.array.id ?? '', index: p.array.index ?? 0, maxRunning: p.array.maxRunning ?? 0 } } : {}),
  };
}
