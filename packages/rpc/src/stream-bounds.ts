/**
 * Bounded server streams: what a server writes to a slow or stalled reader never piles up without
 * bound. Two kinds of stream, two rules:
 *
 * - Pulled streams (logs, outputs: the server reads a file at its own pace) wait for 'drain' when
 *   the transport's buffer is full (`writeBounded`); a reader that takes nothing for `stallMs` gets
 *   RESOURCE_EXHAUSTED and resumes with a new call (FetchOutput from its offset).
 * - Pushed streams (watches: the server writes when something changes) never wait; once
 *   `maxQueued` messages are queued for the reader (`queueFull`), the stream is ended with
 *   RESOURCE_EXHAUSTED (`endExhausted`) and the client watches again, getting the current state
 *   first.
 *
 * ```ts
 * if (queueFull(call, DEFAULT_STREAM_MAX_QUEUED)) return endExhausted(call, 'WatchJobs', DEFAULT_STREAM_MAX_QUEUED);
 * call.write(msg);
 * await writeBounded(call, chunk); // logs
 * ```
 */
import { ResourceExhaustedError } from '@fuxi/common';
import { toGrpcError } from './errors.js';

/** A pulled stream whose reader took nothing this long is ended (60 s). */
export const DEFAULT_STREAM_STALL_MS = 60_000;
/** Messages queued on a pushed stream beyond which its reader is taken for not reading. */
export const DEFAULT_STREAM_MAX_QUEUED = 1000;

/** What of a gRPC server stream this needs (grpc-js ServerWritableStream). */
export interface WritableCall {
  write(msg: unknown): boolean;
  readonly writableLength: number;
  once(ev: 'drain' | 'cancelled' | 'close', cb: () => void): unknown;
  removeListener(ev: string, cb: () => void): unknown;
  emit(ev: 'error', e: unknown): boolean;
}

/**
 * Writes `msg`; when the transport's buffer is full, waits until it drains or the call ends.
 * Rejects with ResourceExhaustedError when the reader took nothing for `stallMs`.
 */
export async function writeBounded(call: WritableCall, msg: unknown, stallMs = DEFAULT_STREAM_STALL_MS, what = 'stream'): Promise<void> {
  if (call.write(msg)) return;
  await new Promise<void>((resolve, reject) => {
    const finish = () => {
      clearTimeout(timer);
      call.removeListener('drain', finish);
      call.removeListener('cancelled', finish);
      call.removeListener('close', finish);
      resolve();
    };
    const timer = setTimeout(() => {
      call.removeListener('drain', finish);
      call.removeListener('cancelled', finish);
      call.removeListener('close', finish);
      reject(new ResourceExhaustedError(what, `the reader took nothing for ${stallMs} ms: ${what} ended; call again to resume`));
    }, stallMs);
    call.once('drain', finish);
    call.once('cancelled', finish);
    call.once('close', finish);
  });
}

/** True when `max` or more messages wait in the stream's queue for its reader. */
export function queueFull(call: Pick<WritableCall, 'writableLength'>, max = DEFAULT_STREAM_MAX_QUEUED): boolean {
  return call.writableLength >= max;
}

/** Ends a pushed stream whose reader fell behind with RESOURCE_EXHAUSTED (the client watches again). */
export function endExhausted(call: Pick<WritableCall, 'emit'>, what: string, max: number): void {
  const e = new ResourceExhaustedError(what, `${what}: the reader fell ${max} messages behind; the stream is ended: watch again to resume`);
  call.emit('error', Object.assign(new Error(e.message), toGrpcError(e)));
}
