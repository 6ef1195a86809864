/**
 * The AM host's local channel: what an agent (and a test's fault injector) says to the node's
 * `fuxi-amhost` process and what it answers, as one JSON object per line over a unix socket in the
 * agent's work dir (docs/architecture.md, "The AM host"). Types and the line framing only; the host
 * (`@fuxi/appmaster`) and the agent's client (`@fuxi/agent`) do the I/O.
 *
 * Every request carries an `id`; the answer carries the same `id` and `ok` (with `error` when
 * false). The host pushes `exit` events, unasked, to the connection that said `hello` as the agent
 * last.
 *
 * ```ts
 * const lines = new LineDecoder();
 * socket.on('data', (chunk) => { for (const msg of lines.push(chunk)) handle(msg); });
 * socket.write(encodeLine({ id: 1, op: 'start', am: { key, appId, workerId, dir, env } }));
 * ```
 */
import { StringDecoder } from 'node:string_decoder';

/** One hosted AM to start: an `__am__` worker of its agent. */
export interface HostedAmSpec {
  /** Names the AM in every later request and event; unique in the host (the agent uses `appId/workerId`). */
  key: string;
  appId: string;
  workerId: string;
  /** The worker's directory: the AM logs to `stdout` there and the host writes `exit` there when it ends. */
  dir: string;
  /**
   * What a dedicated AM would find in its environment (FUXI_MASTER, FUXI_APP_ID, FUXI_AM_ATTEMPT,
   * FUXI_AM_TOKEN: the attempt's token, which the host hands to that AM alone and never logs, ...).
   */
  env: Record<string, string>;
}

/** A hosted AM as the host lists it (running: started and not ended). */
export interface HostedAmInfo {
  key: string;
  appId: string;
  workerId: string;
  /** Runs in a worker thread of its own (a large job), not on the host's main event loop. */
  thread: boolean;
  startedAtMs: number;
}

/** Fault injection (tests): an exception inside the AM; its master traffic stalled; stall ended. */
export type HostedAmFault = 'throw' | 'pause' | 'resume';

export type AmHostRequest =
  /** `agent`: this connection gets the exit events from now on (an agent after its restart). */
  | { id: number; op: 'hello'; role: 'agent' | 'control' }
  | { id: number; op: 'start'; am: HostedAmSpec }
  /** Stops the AM (its worker is being stopped): ended within `graceMs`, whatever it does. */
  | { id: number; op: 'stop'; key: string; graceMs: number }
  | { id: number; op: 'list' }
  | { id: number; op: 'ping' }
  | { id: number; op: 'fault'; key: string; fault: HostedAmFault }
  /** The host's own numbers (benchmarks); `reset` starts a new event-loop delay window. */
  | { id: number; op: 'stats'; reset?: boolean };

/** The host's process and event loop, as `stats` answers. */
export interface AmHostStats {
  pid: number;
  ams: number;
  threads: number;
  rssMb: number;
  /** CPU time of the whole host process (every thread) since it started. */
  cpuMs: number;
  /**
   * Delay of the host's main event loop since the last reset (perf_hooks.monitorEventLoopDelay,
   * beyond its 10 ms sampling interval), sampled while the host holds at least one AM.
   */
  loopDelayMs: { p50: number; p99: number; p999: number; max: number; samples: number };
  /**
   * The hosted AMs' task instances by state, summed over every AM it holds (an AM in a thread: as
   * it last told, at most a stats call old). Absent from hosts older than this field.
   */
  instances?: AmInstanceCounts;
  /** Failed attempts the hosted AMs retried, since this host started (ended AMs included; never decreases). */
  retries?: number;
}

/** Task instances of application masters by state (`pending`: not started yet, waiting for dependencies or a slot). */
export interface AmInstanceCounts {
  pending: number;
  running: number;
  succeeded: number;
  failed: number;
}

export type AmHostAnswer =
  { id: number; ok: true; pid: number; ams?: HostedAmInfo[]; thread?: boolean; stats?: AmHostStats } | { id: number; ok: false; error: string };

/** A hosted AM ended (finished, failed, stopped, or thrown out by the host's wall). */
export interface AmHostExitEvent {
  ev: 'exit';
  key: string;
  appId: string;
  workerId: string;
  /** 0: FinishApp went through; 1: a fatal error (or an exception the wall caught); null with `signal`. */
  exitCode: number | null;
  /** 'SIGKILL' when the host had to abandon it (a thread terminated, a stop past its grace). */
  signal: string | null;
  message: string;
}

export type AmHostEvent = AmHostExitEvent;

/** One message as a line. */
export function encodeLine(msg: unknown): string {
  return JSON.stringify(msg) + '\n';
}

/** The longest line either end takes (a start's environment, a stats answer of many AMs fit well below). */
export const MAX_LINE_CHARS = 16 * 1024 * 1024;

/**
 * Splits a byte stream into JSON messages, one per line; a line that is not JSON is skipped
 * (counted). A character whose bytes a read split in two is decoded whole (the decoder keeps the
 * first part for the next chunk). A line longer than `maxChars` throws `LineTooLongError` (the
 * caller ends the connection): a peer that never sends a newline cannot grow the buffer without end.
 */
export class LineDecoder {
  private readonly utf8 = new StringDecoder('utf8');
  private rest = '';
  /** Lines that were not JSON. */
  malformed = 0;

  constructor(private readonly maxChars = MAX_LINE_CHARS) {}

  push(chunk: Buffer | string): unknown[] {
    const text = typeof chunk === 'string' ? chunk : this.utf8.write(chunk);
    const out: unknown[] = [];
    let start = 0;
    for (let nl = text.indexOf('\n'); nl >= 0; nl = text.indexOf('\n', start)) {
      const line = this.rest + text.slice(start, nl);
      this.rest = '';
      start = nl + 1;
      if (line.length > this.maxChars) throw new LineTooLongError(line.length, this.maxChars);
      if (line.trim() === '') continue;
      try {
        out.push(JSON.parse(line));
      } catch {
        this.malformed++;
      }
    }
    this.rest += text.slice(start);
    if (this.rest.length > this.maxChars) throw new LineTooLongError(this.rest.length, this.maxChars);
    return out;
  }
}

/** A line past the decoder's limit. */
export class LineTooLongError extends Error {
  constructor(
    readonly chars: number,
    readonly maxChars: number,
  ) {
    super(`a line of ${chars} characters or more, past the limit of ${maxChars}`);
    this.name = 'LineTooLongError';
  }
}
