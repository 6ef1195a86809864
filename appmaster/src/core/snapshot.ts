/**
 * The DAG AM's hard state (docs/design.md, "Hard state and soft state"): the task topology, written once per app, and an
 * append-only log of instances that finished, kept by the master (`SaveAppSnapshot` /
 * `GetAppSnapshot`) and opaque to it. A restarted AM reads both: a logged success is never run
 * again; a logged failure for good fails the job again with the same message.
 *
 * Pure (JSON only). Entries are small JSON objects, one per instance:
 *
 * ```json
 * {"task":"map","instance":3,"attempt":2,"nodeId":"n7","workerId":"map.3.2","state":"succeeded","nodeAddress":"10.0.0.7:7071"}
 * {"task":"map","instance":1,"attempt":3,"nodeId":"n2","workerId":"map.1.3","state":"failed","message":"task \"map\" instance 1 failed after 3 attempts: exit code 1"}
 * ```
 */
import type { JobSpec } from './types.js';

export const TOPOLOGY_VERSION = 1;

/** What a restarted AM checks to know the snapshot is about the same job. */
export interface Topology {
  v: number;
  job: string;
  tasks: Array<{ name: string; instances: number; dependsOn: string[] }>;
}

export interface SnapshotEntry {
  task: string;
  instance: number;
  attempt: number;
  /** '' when unknown (a success inferred from a later task's workers). */
  nodeId: string;
  workerId: string;
  /** A success: its agent's address (where its output is served); may be absent in older logs. */
  nodeAddress?: string;
  state: 'succeeded' | 'failed';
  /** For a failure for good: the job's failure message. */
  message?: string;
}

export function topologyOf(spec: JobSpec): Topology {
  return {
    v: TOPOLOGY_VERSION,
    job: spec.jobId || spec.name,
    tasks: spec.tasks.map((t) => ({ name: t.name, instances: t.instances, dependsOn: [...t.dependsOn] })),
  };
}

export function encodeTopology(spec: JobSpec): string {
  return JSON.stringify(topologyOf(spec));
}

/** True when `text` (a stored topology) describes `spec`'s task graph. False for unreadable text. */
export function sameTopology(text: string, spec: JobSpec): boolean {
  let t: unknown;
  try {
    t = JSON.parse(text);
  } catch {
    return false;
  }
  return JSON.stringify(t) === encodeTopology(spec);
}

export function encodeEntry(e: SnapshotEntry): string {
  const base = { task: e.task, instance: e.instance, attempt: e.attempt, nodeId: e.nodeId, workerId: e.workerId, state: e.state };
  return JSON.stringify({ ...base, ...(e.nodeAddress ? { nodeAddress: e.nodeAddress } : {}), ...(e.message !== undefined ? { message: e.message } : {}) });
}

/** A log entry, or undefined when it is not one this AM can read. */
export function decodeEntry(text: string): SnapshotEntry | undefined {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (v === null || typeof v !== 'object') return undefined;
  const o = v as Record<string, unknown>;
  const int = (x: unknown): x is number => typeof x === 'number' && Number.isInteger(x) && x >= 0;
  if (typeof o.task !== 'string' || !int(o.instance) || !int(o.attempt)) return undefined;
  if (o.state !== 'succeeded' && o.state !== 'failed') return undefined;
  return {
    task: o.task,
    instance: o.instance,
    attempt: o.attempt,
    nodeId: typeof o.nodeId === 'string' ? o.nodeId : '',
    workerId: typeof o.workerId === 'string' ? o.workerId : '',
    ...(typeof o.nodeAddress === 'string' && o.nodeAddress ? { nodeAddress: o.nodeAddress } : {}),
    state: o.state,
    ...(typeof o.message === 'string' ? { message: o.message } : {}),
  };
}
