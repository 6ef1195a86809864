/**
 * Which finished worker directories (`<workDir>/apps/<app>/<worker>/`) the agent deletes: a pure
 * choice over what the shell measured (the directories, what the worker table says of each, their
 * sizes, the disk's usage) and the configuration. The shell (shell/workdir-sweeper.ts) measures
 * and deletes.
 *
 * - A running worker's directory is never deleted (nor one whose finish time is unknown).
 * - A finished worker's directory goes once `retentionMs` has passed since it finished, unless its
 *   app is still active on this node (a running worker of the app here, or a grant of it here):
 *   its logs and its output (served to the job's later tasks) are kept until the app is done.
 * - Above `maxDiskPercent` of the work dir's file system, finished directories go oldest-finished
 *   first, active apps or not, retention or not, until the disk is back at or below the threshold
 *   (as far as deleting finished directories can get it there).
 *
 * ```ts
 * const doomed = selectWorkDirsToDelete({ dirs, activeApps, disk, now }, { retentionMs: 86_400_000, maxDiskPercent: 90 });
 * ```
 */

export interface WorkDirEntry {
  appId: string;
  workerId: string;
  /** Whether the worker may still run: it is not terminal in the worker table. */
  running: boolean;
  /** When it finished (ms); undefined when not known (such a directory is kept). */
  finishedAtMs: number | undefined;
  /** Bytes the directory holds (only needed above the disk threshold; 0 when not measured). */
  bytes: number;
}

export interface DiskUsage {
  totalBytes: number;
  usedBytes: number;
}

export interface WorkDirPolicy {
  /** Finished directories older than this go (apps still active on the node excepted). */
  retentionMs: number;
  /** Disk usage (percent of the file system) above which finished directories go, oldest first. 100: never. */
  maxDiskPercent: number;
}

export interface WorkDirInput {
  dirs: readonly WorkDirEntry[];
  /** Apps with a running worker or a grant on this node. */
  activeApps: ReadonlySet<string>;
  disk: DiskUsage;
  now: number;
}

export type DeleteReason = 'retention' | 'disk';

export interface WorkDirDeletion {
  appId: string;
  workerId: string;
  reason: DeleteReason;
}

/** Whether the disk is above the threshold (the shell measures directory sizes only then). */
export function diskOverThreshold(disk: DiskUsage, policy: WorkDirPolicy): boolean {
  if (disk.totalBytes <= 0 || policy.maxDiskPercent >= 100) return false;
  return (disk.usedBytes / disk.totalBytes) * 100 > policy.maxDiskPercent;
}

/** The directories to delete, each once, in the order to delete them (oldest finished first). */
export function selectWorkDirsToDelete(input: WorkDirInput, policy: WorkDirPolicy): WorkDirDeletion[] {
  const finished = input.dirs
    .filter((d): d is WorkDirEntry & { finishedAtMs: number } => !d.running && d.finishedAtMs !== undefined)
    .sort((a, b) => a.finishedAtMs - b.finishedAtMs || cmp(a.appId, b.appId) || cmp(a.workerId, b.workerId));
  const out: WorkDirDeletion[] = [];
  let used = input.disk.usedBytes;
  const over = (): boolean => diskOverThreshold({ totalBytes: input.disk.totalBytes, usedBytes: used }, policy);
  for (const d of finished) {
    const expired = input.now - d.finishedAtMs >= policy.retentionMs && !input.activeApps.has(d.appId);
    let reason: DeleteReason | undefined;
    if (expired) reason = 'retention';
    else if (over()) reason = 'disk';
    if (!reason) continue;
    out.push({ appId: d.appId, workerId: d.workerId, reason });
    used = Math.max(0, used - d.bytes);
  }
  return out;
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
