/**
 * The spawn helper's channel to its agent when it runs as a process (spawn-helper.ts): messages
 * both ways, and the helper's end with the channel's.
 */
import type { SpawnMessage, SpawnReply } from './spawn-helper.js';

/**
 * For tests only: `FUXI_TEST_SPAWN_HELPER_DIE_BEFORE_REPLY=1` in its environment makes a helper
 * process kill itself (SIGKILL) right after it has started a process and before it says so (a crash
 * between the fork and the `spawned` reply). Never set outside the agent's test suites; a helper on
 * a thread ignores it (it would kill the agent).
 */
export const DIE_BEFORE_REPLY_ENV = 'FUXI_TEST_SPAWN_HELPER_DIE_BEFORE_REPLY';

export interface Port {
  on(ev: 'message', f: (m: SpawnMessage) => void): unknown;
  postMessage(r: SpawnReply): void;
}

/** What `channelPort` needs of a process forked with a channel. */
export interface ChannelProcess {
  readonly connected: boolean;
  send?(message: unknown, sendHandle: undefined, options: undefined, callback: (error: Error | null) => void): boolean;
  on(ev: string, f: (...args: never[]) => void): unknown;
  exit(code: number): void;
}

/** A helper process's channel: a Port, and the helper's end once it is gone and nothing is left to do. */
export interface ChannelPort extends Port {
  /** Ends the helper when the channel is gone and nothing is `busy` (called as work ends). */
  endIfIdle(): void;
}

/**
 * The channel to the agent of a helper process. The helper ends with it, unless `busy` (processes
 * whose exit codes it still has to record): then it ends at the first `endIfIdle` once idle. A reply
 * to an agent that is gone counts as the channel gone: its end can reach the helper before the
 * channel's (a worker exits just as the agent is killed), and a write to the closed channel then
 * fails (EPIPE), which without a callback would be an unhandled 'error' event.
 */
export function channelPort(proc: ChannelProcess, busy: () => boolean = () => false): ChannelPort {
  let gone = false;
  const endIfIdle = (): void => {
    if ((gone || !proc.connected) && !busy()) proc.exit(0);
  };
  proc.on('disconnect', () => {
    gone = true;
    endIfIdle();
  });
  return {
    on: (ev, f) => proc.on(ev, f),
    postMessage: (r) => {
      if (gone || !proc.connected) return;
      proc.send?.(r, undefined, undefined, (e) => {
        if (!e) return;
        gone = true;
        endIfIdle();
      });
    },
    endIfIdle,
  };
}
