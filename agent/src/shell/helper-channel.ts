/**
 * The spawn helper's channel to its agent when it runs as a process (spawn-helper.ts): messages
 * both ways, and the helper's end with the channel's.
 */
import type { SpawnMessage, SpawnReply } from './spawn-helper.js';

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

/**
 * The channel to the agent of a helper process, which ends with it. A reply to an agent that is
 * gone ends this process too: its end can reach the helper before the channel's (a worker exits
 * just as the agent is killed), and a write to the closed channel then fails (EPIPE), which
 * without a callback would be an unhandled 'error' event.
 */
export function channelPort(proc: ChannelProcess): Port {
  proc.on('disconnect', () => proc.exit(0));
  return {
    on: (ev, f) => proc.on(ev, f),
    postMessage: (r) => {
      if (!proc.connected) return;
      proc.send?.(r, undefined, undefined, (e) => {
        if (e) proc.exit(0);
      });
    },
  };
}
