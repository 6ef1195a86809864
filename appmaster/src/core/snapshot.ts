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

// The log's entries are read by clients too (`fuxi logs` finds the node that ran an instance).
export { decodeEntry, encodeEntry, type SnapshotEntry } from '@fuxi/common';

export const TOPOLOGY_VERSION = 1;

/** What a restarted AM checks to know the snapshot is about the same job. */
export interface Topology {
  v: number;
  job: string;
  tasks: Array<{ name: string; instances: number; dependsOn: string[] }>;
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
