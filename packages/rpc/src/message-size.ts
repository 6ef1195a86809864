/**
 * The largest gRPC message a process sends or receives: one setting for every server
 * (`startServer`) and client (`connect`) of the process, set once at start from the daemon's
 * config (`maxMessageBytes`); processes without a config of their own (AMs, the AM host and its
 * threads, the CLI) take `FUXI_MAX_MESSAGE_BYTES` from their environment, which the agent sets for
 * the system components it starts. A bigger message is refused by gRPC with RESOURCE_EXHAUSTED
 * before any handler sees it.
 *
 * ```ts
 * setMaxMessageBytes(parseMaxMessageBytes('maxMessageBytes', cfg.maxMessageBytes));
 * ```
 */
import { InvalidArgumentError } from '@fuxi/common';

/** 64 MiB: Hadoop IPC's limit; a SubmitJobs batch of 1,000 specs of up to 1 MiB is split by the SDK. */
export const DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024;
/** Below this no real call fits (a node table, a grant table). */
export const MIN_MAX_MESSAGE_BYTES = 64 * 1024;

/** The environment variable that carries the setting to processes without a config file. */
export const MAX_MESSAGE_BYTES_ENV = 'FUXI_MAX_MESSAGE_BYTES';

let current = fromEnv(process.env[MAX_MESSAGE_BYTES_ENV]);

function fromEnv(v: string | undefined): number {
  if (!v) return DEFAULT_MAX_MESSAGE_BYTES;
  try {
    return parseMaxMessageBytes(MAX_MESSAGE_BYTES_ENV, v);
  } catch {
    return DEFAULT_MAX_MESSAGE_BYTES;
  }
}

/** Sets it for this process, and for the system components it starts (their environment). */
export function setMaxMessageBytes(n: number): void {
  current = n;
  process.env[MAX_MESSAGE_BYTES_ENV] = String(n);
}

export function maxMessageBytes(): number {
  return current;
}

/** Bytes as an integer or with a binary suffix (`16Mi`, `512Ki`, `1Gi`); InvalidArgumentError naming `key`. */
export function parseMaxMessageBytes(key: string, v: unknown): number {
  const m = typeof v === 'number' ? [String(v), String(v), ''] : typeof v === 'string' ? /^\s*(\d+)\s*(Ki|Mi|Gi)?\s*$/.exec(v) : null;
  const n = m ? Number(m[1]) * ({ Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3 }[m[2] ?? ''] ?? 1) : NaN;
  if (!Number.isSafeInteger(n) || n < MIN_MAX_MESSAGE_BYTES || n > 2 ** 31 - 1)
    throw new InvalidArgumentError(key, `must be bytes from ${MIN_MAX_MESSAGE_BYTES} to 2Gi (e.g. 67108864 or "64Mi"), got ${JSON.stringify(v)}`);
  return n;
}
