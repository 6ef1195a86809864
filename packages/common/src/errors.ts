/**
 * Typed errors. Every error that crosses a component boundary is a FuxiError with a code; the one
 * mapping from codes to gRPC status codes lives in @fuxi/rpc (errors.ts).
 */
export type ErrorCode =
  | 'INVALID_ARGUMENT'
  | 'NOT_FOUND'
  | 'ALREADY_EXISTS'
  | 'FAILED_PRECONDITION'
  | 'RESOURCE_EXHAUSTED'
  | 'UNAVAILABLE'
  | 'ABORTED'
  | 'DEADLINE_EXCEEDED'
  | 'INTERNAL'
  | 'PERMISSION_DENIED'
  | 'UNAUTHENTICATED';

export class FuxiError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details: Readonly<Record<string, string>> = {},
  ) {
    super(message);
    this.name = new.target.name;
  }
}

/** Bad input. `field` is the path of the offending field, e.g. `tasks[1].resources.cpu`. */
export class InvalidArgumentError extends FuxiError {
  constructor(
    readonly field: string,
    readonly reason: string,
  ) {
    super('INVALID_ARGUMENT', field ? `${field}: ${reason}` : reason, { field });
  }
}

export class NotFoundError extends FuxiError {
  constructor(
    readonly kind: string,
    readonly id: string,
  ) {
    super('NOT_FOUND', `${kind} "${id}" not found`);
  }
}

export class AlreadyExistsError extends FuxiError {
  /** `detail` says how the existing one differs from what was asked for, e.g. "with a different spec (...)". */
  constructor(kind: string, id: string, detail = '') {
    super('ALREADY_EXISTS', `${kind} "${id}" already exists${detail ? ` ${detail}` : ''}`);
  }
}

/** The receiver's state forbids the call: a stale epoch or AM attempt, a job already finished. */
export class FailedPreconditionError extends FuxiError {
  constructor(message: string, details: Record<string, string> = {}) {
    super('FAILED_PRECONDITION', message, details);
  }
}

/** Fencing: a command carried an epoch (or AM attempt) older than the newest the receiver has seen. */
export class StaleEpochError extends FailedPreconditionError {
  constructor(what: 'epoch' | 'am attempt', got: string | number, newest: string | number) {
    super(`stale ${what}: got ${got}, newest seen is ${newest}`, { stale: what });
  }
}

/** Not the leader (or not ready yet). `leader` is the address to redirect to, when known. */
export class UnavailableError extends FuxiError {
  constructor(
    message: string,
    readonly leader = '',
  ) {
    super('UNAVAILABLE', message, leader ? { leader } : {});
  }
}

/**
 * A resource the call needs is used up, e.g. the store is out of space (etcd's NOSPACE alarm).
 * `resource` names it; the message says what an operator does about it.
 */
export class ResourceExhaustedError extends FuxiError {
  constructor(
    readonly resource: string,
    message: string,
    /** When to try again (a rate limit): sent as `fuxi-retry-after-ms`. */
    readonly retryAfterMs?: number,
  ) {
    super('RESOURCE_EXHAUSTED', message, retryAfterMs === undefined ? { resource } : { resource, 'retry-after-ms': String(retryAfterMs) });
  }
}

/**
 * The caller is known but may not make this call (wrong role, not the job's owner or group, an
 * older AM attempt's token). `method` is the RPC refused; the message says why. Never names a token.
 */
export class PermissionDeniedError extends FuxiError {
  constructor(
    readonly method: string,
    readonly reason: string,
  ) {
    super('PERMISSION_DENIED', `${method}: permission denied: ${reason}`, { method });
  }
}

/** The call carried no credentials where some are needed, or a token nobody issued. Never names the token. */
export class UnauthenticatedError extends FuxiError {
  constructor(
    readonly method: string,
    readonly reason: string,
  ) {
    super('UNAUTHENTICATED', `${method}: unauthenticated: ${reason}`, { method });
  }
}

export class InternalError extends FuxiError {
  constructor(message: string) {
    super('INTERNAL', message);
  }
}

export function isFuxiError(e: unknown): e is FuxiError {
  return e instanceof FuxiError;
}

/**
 * An outage rather than an answer: UNAVAILABLE (nobody answered, or not the leader) or
 * DEADLINE_EXCEEDED. Such a call may be tried again (elsewhere, or later); `retry`'s default.
 */
export function isTransientError(e: unknown): boolean {
  return e instanceof FuxiError && (e.code === 'UNAVAILABLE' || e.code === 'DEADLINE_EXCEEDED');
}

/** Work given up because its owner is stopping (a retry loop aborted before its first attempt). */
export class AbortedError extends FuxiError {
  constructor(message: string) {
    super('ABORTED', message);
  }
}

export function errorMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
