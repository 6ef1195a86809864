/**
 * How a worker tells its agent how far it is: a small JSON file at `$FUXI_PROGRESS_FILE` (in the
 * worker's directory), replaced atomically by the worker SDK (`reportProgress`, and the fetches of
 * `fetchUpstream`, which record every data path they read), read by the agent while the worker
 * runs and forwarded to the job's AM with the worker's events (speculative execution).
 *
 * ```json
 * {"fraction": 0.4, "paths": [{"srcNode": "n3", "srcWorker": "map.2.1", "bytes": 1048576, "elapsedMs": 8100, "done": false}]}
 * ```
 */

export const PROGRESS_FILE_ENV = 'FUXI_PROGRESS_FILE';
/** The file's name in the worker's directory. */
export const PROGRESS_FILE = 'progress.json';
/** At most this many paths are read from one report (the most recent ones are written last). */
export const MAX_REPORTED_PATHS = 256;

/** One upstream output the worker reads: from `srcNode` (the worker `srcWorker` wrote it). */
export interface ReportedPath {
  srcNode: string;
  srcWorker: string;
  bytes: number;
  elapsedMs: number;
  done: boolean;
}

export interface ProgressReport {
  /** 0-1; 0 when the worker reports no fraction. */
  fraction: number;
  paths: ReportedPath[];
}

/** A report as the agent reads it: anything malformed is dropped, numbers are clamped. */
export function parseProgressReport(text: string): ProgressReport | undefined {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof raw !== 'object' || raw === null) return undefined;
  const r = raw as { fraction?: unknown; paths?: unknown };
  const f = typeof r.fraction === 'number' && Number.isFinite(r.fraction) ? Math.min(1, Math.max(0, r.fraction)) : 0;
  const paths: ReportedPath[] = [];
  if (Array.isArray(r.paths)) {
    for (const p of r.paths.slice(-MAX_REPORTED_PATHS) as unknown[]) {
      if (typeof p !== 'object' || p === null) continue;
      const q = p as Record<string, unknown>;
      if (typeof q.srcNode !== 'string' || !q.srcNode) continue;
      paths.push({
        srcNode: q.srcNode.slice(0, 255),
        srcWorker: typeof q.srcWorker === 'string' ? q.srcWorker.slice(0, 255) : '',
        bytes: nonNegative(q.bytes),
        elapsedMs: nonNegative(q.elapsedMs),
        done: q.done === true,
      });
    }
  }
  return { fraction: f, paths };
}

function nonNegative(v: unknown): number {
  return typeof v === 'number' && Number.isFinite(v) && v > 0 ? Math.floor(v) : 0;
}
