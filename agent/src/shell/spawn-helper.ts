/**
 * The body of the agent's spawn helper (spawner.ts): a small process of its own (or a thread of the
 * agent) that forks the processes the agent asks for and tells it when each one ends.
 *
 * `child_process.spawn` blocks its thread until the child has exec'd (libuv reads a close-on-exec
 * pipe to learn whether exec failed), and the fork copies the page tables of the process that calls
 * it. Here the wait blocks only the helper, and in a helper process the copy is of the helper's
 * few pages, not of the agent's heap. The children are the helper's (libuv reaps them and reports
 * how they ended): the same exit code or signal, the same sessions and process groups. A helper
 * process ends when its channel to the agent does (the agent stopped or died); the workers it
 * started run on.
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
import { channelPort, type ChannelProcess, type Port } from './helper-channel.js';
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

/** On a thread: its parent port. As a process (forked with a channel): that channel, and it ends with it. */
function openPort(): Port | undefined {
  if (parentPort) return parentPort;
  if (!process.send) return undefined;
  process.title = 'fuxi-spawn-helper';
  return channelPort(process as unknown as ChannelProcess);
}

const port = openPort();
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
