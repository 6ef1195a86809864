/**
 * The one mapping between Fuxi error codes and gRPC status codes, in both directions.
 */
import * as grpc from '@grpc/grpc-js';
import { FuxiError, type ErrorCode } from '@fuxi/common';

export const LEADER_METADATA_KEY = 'fuxi-leader';

const TO_GRPC: Record<ErrorCode, grpc.status> = {
  INVALID_ARGUMENT: grpc.status.INVALID_ARGUMENT,
  NOT_FOUND: grpc.status.NOT_FOUND,
  ALREADY_EXISTS: grpc.status.ALREADY_EXISTS,
  FAILED_PRECONDITION: grpc.status.FAILED_PRECONDITION,
  RESOURCE_EXHAUSTED: grpc.status.RESOURCE_EXHAUSTED,
  UNAVAILABLE: grpc.status.UNAVAILABLE,
  ABORTED: grpc.status.ABORTED,
  DEADLINE_EXCEEDED: grpc.status.DEADLINE_EXCEEDED,
  INTERNAL: grpc.status.INTERNAL,
  PERMISSION_DENIED: grpc.status.PERMISSION_DENIED,
  UNAUTHENTICATED: grpc.status.UNAUTHENTICATED,
};

const FROM_GRPC = new Map<grpc.status, ErrorCode>(Object.entries(TO_GRPC).map(([k, v]) => [v, k as ErrorCode]));

/**
 * Longest status message and detail value sent, in characters. Both travel in HTTP/2 trailers:
 * a message that echoes a huge input (a 2 MB node id) would exceed the peer's header-list limit,
 * the call would never complete and its connection would be left broken.
 */
export const MAX_STATUS_DETAILS = 2048;

/** `text` cut to `max` characters, saying how much was left out. */
export function clipStatusText(text: string, max = MAX_STATUS_DETAILS): string {
  if (text.length <= max) return text;
  return `${text.slice(0, max)}... (${text.length - max} more characters)`;
}

/** A FuxiError (or anything else) as a gRPC error for a server callback. */
export function toGrpcError(e: unknown): Partial<grpc.ServiceError> {
  const b = batchedErrorOf(e);
  const metadata = new grpc.Metadata();
  for (const [k, v] of Object.entries(b.details)) metadata.set(`fuxi-${k}`, v.replace(/[^\x20-\x7e]/g, '?'));
  return { code: TO_GRPC[b.code], details: b.message, metadata };
}

/**
 * A FuxiError (or anything else) as its code, message and details, clipped as they travel: the
 * result of one call of a batch (call-batch.ts), and what `toGrpcError` sends for a call alone.
 */
export function batchedErrorOf(e: unknown): { code: ErrorCode; message: string; details: Record<string, string> } {
  if (e instanceof FuxiError) {
    const details: Record<string, string> = {};
    for (const [k, v] of Object.entries(e.details)) details[k] = clipStatusText(v, 256);
    return { code: e.code, message: clipStatusText(e.message), details };
  }
  const msg = e instanceof Error ? e.message : String(e);
  return { code: 'INTERNAL', message: clipStatusText(`internal error: ${msg}`), details: {} };
}

/** The error of one call of a batch, as the RpcError the call alone would have failed with. */
export function fromBatchedError(r: { code: string; message: string; details: Record<string, string> }, method: string): RpcError {
  const code: ErrorCode = r.code in TO_GRPC ? (r.code as ErrorCode) : 'INTERNAL';
  return new RpcError(code, r.message, TO_GRPC[code], { ...r.details }, method);
}

/** An error from a client call, as a typed FuxiError (with `grpcCode` kept for callers). */
export class RpcError extends FuxiError {
  constructor(
    code: ErrorCode,
    message: string,
    readonly grpcCode: grpc.status,
    details: Record<string, string>,
    readonly method: string,
  ) {
    super(code, message, details);
  }
  /** The leader's address when a standby redirected us. */
  get leader(): string {
    return this.details.leader ?? '';
  }
}

/**
 * INTERNAL statuses that grpc-js makes up on the client when the connection breaks under a call
 * (the peer process died, a link dropped): the server never answered, so they mean what
 * UNAVAILABLE means (the call may or may not have run; retry elsewhere).
 */
const BROKEN_TRANSPORT = /RST_STREAM|Session closed|Connection dropped|ECONNRESET|EPIPE|socket hang up|Stream refused/i;

export function fromGrpcError(err: grpc.ServiceError, method: string): RpcError {
  const broken = err.code === grpc.status.INTERNAL && BROKEN_TRANSPORT.test(err.details || err.message || '');
  const code: ErrorCode = broken ? 'UNAVAILABLE' : (FROM_GRPC.get(err.code) ?? (err.code === grpc.status.CANCELLED ? 'UNAVAILABLE' : 'INTERNAL'));
  const details: Record<string, string> = {};
  const md = err.metadata?.getMap() ?? {};
  for (const [k, v] of Object.entries(md)) {
    if (k.startsWith('fuxi-') && typeof v === 'string') details[k.slice(5)] = v;
  }
  return new RpcError(code, err.details || err.message, err.code, details, method);
}
