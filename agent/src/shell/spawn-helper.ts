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
 * A request with `direct` (direct-launch.ts) is started with no wrapper when the helper is a process
 * of its own: the command forked here, born in its cgroups, its pid and exit code recorded here. The
 * helper then outlives its channel until every process it started that way has ended and its exit
 * code is on disk (helper-channel.ts); Ctrl-C and hangups, meant for the agent, leave it be. When
 * the command cannot be started directly, `file` and `args` (the wrapper) are started instead, as
 * on a thread, where `direct` is never used (the agent's process is never moved between cgroups).
 * A helper process hands its direct starts to `fuxi-forker` (forker.ts), a small C process it starts
 * once, when the binary is there: a fork from the helper itself costs about 1 ms of CPU more per
 * worker. The forker's children are the workers; their pid and exit files are still written here.
 * A start the forker cannot do is done here, as without it; if the forker dies, the helper ends
 * too, and the agent looks for its workers as it does for a dead helper's.
 *
 * Messages in: `{ t: 'spawn', id, file, args, options, prep?, direct? }`. Out: `{ t: 'spawned',
 * id, pid, startTime }` or `{ t: 'failed', id, message, code?, field?, reason? }`, then `{ t:
 * 'exit', pid, code, signal }` when it ends.
 */
import * as path from 'node:path';
import { parentPort } from 'node:worker_threads';
import { launchDetached, LaunchPrepError, runLaunchPrep, type LaunchPrep } from './launch-prep.js';
import { channelPort, DIE_BEFORE_REPLY_ENV, type ChannelPort, type ChannelProcess } from './helper-channel.js';
import { CgroupHomes, pidRecord, shellExitCode, startDirect, type DirectLaunch } from './direct-launch.js';
import { Forker, usableForker } from './forker.js';
import { readStartTime } from './proc-table.js';
import { writeFresh } from './worker-files.js';

export interface SpawnMessage {
  t: 'spawn';
  id: number;
  file: string;
  args: string[];
  options: { cwd: string; env: Record<string, string>; uid?: number; gid?: number };
  /** Done first; its working directory replaces `options.cwd`. */
  prep?: LaunchPrep;
  /** Start this with no wrapper when possible (a helper process only); else `file` and `args`. */
  direct?: DirectLaunch;
}

export type SpawnReply =
  | { t: 'spawned'; id: number; pid: number; startTime: string }
  | { t: 'failed'; id: number; message: string; code?: string; field?: string; reason?: string }
  | { t: 'exit'; pid: number; code: number | null; signal: string | null };

/** Processes started directly and not yet ended (their exit codes are this helper's to record). */
let directRunning = 0;

/** On a thread: its parent port. As a process (forked with a channel): that channel. */
function openPort(): { port: ChannelPort | NonNullable<typeof parentPort>; ownProcess: boolean } | undefined {
  if (parentPort) return { port: parentPort, ownProcess: false };
  if (!process.send) return undefined;
  process.title = 'fuxi-spawn-helper';
  for (const sig of ['SIGINT', 'SIGHUP'] as const) process.on(sig, () => {});
  // Its stderr is the agent's: once the agent is gone it may be a pipe nobody reads, and a write
  // there (a problem worth saying) must not end the helper and lose its other workers' exit codes.
  process.stderr.on('error', () => {});
  return { port: channelPort(process as unknown as ChannelProcess, () => directRunning > 0), ownProcess: true };
}

const opened = openPort();
if (opened) {
  const { port, ownProcess } = opened;
  const dieBeforeReply = ownProcess && process.env[DIE_BEFORE_REPLY_ENV] === '1';
  const homes = new CgroupHomes();
  const problem = (message: string): void => void process.stderr.write(`fuxi-spawn-helper: ${message}\n`);
  const reply = (r: SpawnReply): void => {
    if (r.t === 'spawned' && dieBeforeReply) process.kill(process.pid, 'SIGKILL');
    port.postMessage(r);
  };
  /** A direct start's end: its exit code on disk (written before), then said. */
  const directEnded = (pid: number, code: number | null, signal: string | null): void => {
    directRunning--;
    reply({ t: 'exit', pid, code, signal });
    (port as ChannelPort).endIfIdle();
  };
  /** The worker directories of the forker's children, by pid (their exit files are written here). */
  const forked = new Map<number, string>();
  const forkerFile = ownProcess ? usableForker() : undefined;
  const forker = forkerFile
    ? Forker.start(
        forkerFile,
        (pid, code, signal) => {
          const dir = forked.get(pid);
          if (dir === undefined) return;
          forked.delete(pid);
          try {
            writeFresh(path.join(dir, 'exit'), `${shellExitCode(code, signal)}\n`);
          } catch (e) {
            problem(`cannot write the exit file of worker ${dir}: ${(e as Error).message}`);
          }
          directEnded(pid, code, signal);
        },
        // Its children's ends can no longer be heard, and a start under way may or may not have
        // happened: this helper ends too, and its agent finds them as it finds a dead helper's.
        (why) => {
          problem(`${why}; ending, so that the agent looks for this helper's workers itself`);
          process.exit(1);
        },
      )
    : undefined;

  port.on('message', (m: SpawnMessage) => {
    if (m.t !== 'spawn') return;
    const failed = (e: unknown): void => {
      const err = e as NodeJS.ErrnoException;
      const prep = e instanceof LaunchPrepError && e.field ? { field: e.field, reason: e.reason } : {};
      reply({ t: 'failed', id: m.id, message: err instanceof Error ? err.message : String(e), ...(err.code ? { code: err.code } : {}), ...prep });
    };
    const callbacks = {
      started: (pid: number) => reply({ t: 'spawned', id: m.id, pid, startTime: readStartTime(pid) }),
      failed,
      exited: (pid: number, code: number | null, signal: string | null) => reply({ t: 'exit', pid, code, signal }),
    };
    if (!ownProcess || !m.direct) {
      launchDetached(m.file, m.args, m.options, m.prep, callbacks);
      return;
    }
    let cwd: string;
    try {
      cwd = m.prep ? runLaunchPrep(m.prep) : m.options.cwd;
    } catch (e) {
      failed(e);
      return;
    }
    const options = { ...m.options, cwd };
    const direct = m.direct;
    /** Forked here (no forker, or a start it could not do); the wrapper when not even that. */
    const startHere = (): void => {
      const started = startDirect(direct, options, homes, directEnded, problem);
      if (!started) {
        launchDetached(m.file, m.args, options, undefined, callbacks);
        return;
      }
      directRunning++;
      reply({ t: 'spawned', id: m.id, pid: started.pid, startTime: started.startTime });
    };
    if (!forker) {
      startHere();
      return;
    }
    // Counted from here: a helper whose channel ends now still waits for the forker's answer.
    directRunning++;
    forker.start(direct, options, (started) => {
      directRunning--;
      if (!started) {
        startHere();
        return;
      }
      directRunning++;
      forked.set(started.pid, direct.dir);
      try {
        writeFresh(path.join(direct.dir, 'pid'), pidRecord(started.pid, started.startTime));
      } catch (e) {
        problem(`cannot write the pid file of worker ${direct.dir}: ${(e as Error).message}`);
      }
      reply({ t: 'spawned', id: m.id, pid: started.pid, startTime: started.startTime });
    });
  });
}
