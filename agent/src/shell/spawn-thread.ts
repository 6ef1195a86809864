/**
 * The body of the agent's spawner thread (spawner.ts): forks the processes the main thread asks
 * for and tells it when each one ends.
 *
 * `child_process.spawn` blocks its thread until the child has exec'd (libuv reads a close-on-exec
 * pipe to learn whether exec failed). Under load that wait was several milliseconds per worker, on
 * the thread that also answers the AMs and the master; here it blocks only this one. The children
 * are still this process's children (libuv reaps them and reports how they ended), so nothing else
 * changes: the same exit code or signal, the same process groups.
 *
 * Each request may carry the worker's `LaunchPrep` (launch-prep.ts): its directory and files are
 * laid out here first, with synchronous calls, off the agent's loop and without a round trip
 * through libuv's file-system pool for each one.
 *
 * Messages in: `{ t: 'spawn', id, file, args, options, prep? }`. Out: `{ t: 'spawned', id, pid,
 * startTime }` or `{ t: 'failed', id, message, code?, field?, reason? }`, then `{ t: 'exit', pid,
 * code, signal }` when it ends.
 */
import { parentPort } from 'node:worker_threads';
import { launchDetached, LaunchPrepError, type LaunchPrep } from './launch-prep.js';
import { readStartTime } from './proc-table.js';

export interface SpawnMessage {
  t: 'spawn';
  id: number;
  file: string;
  args: string[];
  options: { cwd: string; env: Record<string, string>; uid?: number; gid?: number };
  /** Done first; its working directory replaces `options.cwd`. */
  prep?: LaunchPrep;
}

export type SpawnReply =
  | { t: 'spawned'; id: number; pid: number; startTime: string }
  | { t: 'failed'; id: number; message: string; code?: string; field?: string; reason?: string }
  | { t: 'exit'; pid: number; code: number | null; signal: string | null };

const port = parentPort;
if (port) {
  port.on('message', (m: SpawnMessage) => {
    if (m.t !== 'spawn') return;
    const reply = (r: SpawnReply): void => port.postMessage(r);
    launchDetached(m.file, m.args, m.options, m.prep, {
      started: (pid) => reply({ t: 'spawned', id: m.id, pid, startTime: readStartTime(pid) }),
      failed: (e) => {
        const err = e as NodeJS.ErrnoException;
        const prep = e instanceof LaunchPrepError && e.field ? { field: e.field, reason: e.reason } : {};
        reply({ t: 'failed', id: m.id, message: err instanceof Error ? err.message : String(e), ...(err.code ? { code: err.code } : {}), ...prep });
      },
      exited: (pid, code, signal) => reply({ t: 'exit', pid, code, signal }),
    });
  });
}
