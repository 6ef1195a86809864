/**
 * One entry of an application's snapshot log (`SaveAppSnapshot` / `GetAppSnapshot`, kept by the
 * master and opaque to it): an instance that finished, where it ran. The DAG AM writes and reads
 * them (appmaster/src/core/snapshot.ts, its hard state); `fuxi logs` reads them to find the node
 * that ran an instance of a finished job. Pure JSON, one small object per entry:
 *
 * ```json
 * {"task":"map","instance":3,"attempt":2,"nodeId":"n7","workerId":"map.3.2","state":"succeeded","nodeAddress":"10.0.0.7:7071"}
 * ```
 */
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
