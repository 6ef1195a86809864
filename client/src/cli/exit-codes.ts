/**
 * The `fuxi` CLI's exit codes (stable: scripts rely on them) and the mapping from errors to them.
 * Pure.
 */
import { FuxiError, type ErrorCode } from '@fuxi/common';

export const EXIT = {
  OK: 0,
  /** `submit --wait`: the job failed or was killed. */
  JOB_FAILED: 1,
  /**
   * Bad usage or invalid input (INVALID_ARGUMENT), e.g. a job spec that does not validate; or a
   * job id that already names a job with another spec (ALREADY_EXISTS).
   */
  USAGE: 2,
  NOT_FOUND: 3,
  /** No master answered (UNAVAILABLE, DEADLINE_EXCEEDED). */
  UNAVAILABLE: 4,
  OTHER: 5,
} as const;

export const EXIT_CODES_HELP = [
  'Exit codes:',
  '  0  ok',
  '  1  the job failed or was killed (submit --wait)',
  '  2  usage error or invalid input (INVALID_ARGUMENT), or the job id is taken by another spec',
  '  3  not found (job, task instance, log)',
  '  4  master unavailable',
  '  5  other errors',
].join('\n');

const BY_CODE: Partial<Record<ErrorCode, number>> = {
  INVALID_ARGUMENT: EXIT.USAGE,
  ALREADY_EXISTS: EXIT.USAGE,
  NOT_FOUND: EXIT.NOT_FOUND,
  UNAVAILABLE: EXIT.UNAVAILABLE,
  DEADLINE_EXCEEDED: EXIT.UNAVAILABLE,
};

/** A commander parse error (duck-typed: `code` starting with `commander.`). */
export function isCommanderError(e: unknown): e is { code: string; exitCode: number; message: string } {
  return typeof e === 'object' && e !== null && typeof (e as { code?: unknown }).code === 'string' && (e as { code: string }).code.startsWith('commander.');
}

/** The exit code for an error thrown by a command (a FuxiError / RpcError maps through `.code`). */
export function exitCodeFor(e: unknown): number {
  if (isCommanderError(e)) {
    // --help and --version end with a CommanderError too; they are not failures.
    return e.code === 'commander.helpDisplayed' || e.code === 'commander.version' ? EXIT.OK : EXIT.USAGE;
  }
  if (e instanceof FuxiError) return BY_CODE[e.code] ?? EXIT.OTHER;
  return EXIT.OTHER;
}

/**
 * The one line the CLI prints for an error: `error: <message>`. `masters` adds where we looked
 * when no master answered.
 */
export function errorLine(e: unknown, masters: readonly string[] = []): string {
  // grpc-js appends an empty "Resolution note: " to connection errors.
  let msg = (e instanceof Error ? e.message : String(e)).replace(/\.?\s*Resolution note:\s*$/, '');
  if (e instanceof FuxiError && e.code === 'UNAVAILABLE' && masters.length && isMasterCall(e)) {
    msg = `master unavailable (${masters.join(', ')}): ${msg}`;
  }
  return `error: ${msg.replace(/^error: /, '')}`;
}

function isMasterCall(e: FuxiError): boolean {
  const method = (e as { method?: unknown }).method;
  return method === undefined || method !== 'ReadLog';
}
