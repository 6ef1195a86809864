/**
 * Where a user's `fuxi cli-server` listens and what it says, shared by the server (`cli-server.ts`) and the bin's
 * fast path (`fast-path.ts`, bundled alone: Node's own modules only).
 *
 * One folder per user, `$XDG_RUNTIME_DIR/fuxi-cli-<uid>` (else the temp dir), mode 0700 and owned
 * by that user: whoever can reach the socket runs commands with that user's files and
 * credentials, so a folder another user could enter, or one that is not the user's own, is never
 * used.
 */
import { lstatSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface CliServerPaths {
  dir: string;
  socket: string;
  /** The running server's pid (written when it listens). */
  pidFile: string;
  /** The stderr of the server the fast path last started. */
  log: string;
}

export function cliServerPaths(env: NodeJS.ProcessEnv): CliServerPaths {
  const dir = join(env.XDG_RUNTIME_DIR || tmpdir(), `fuxi-cli-${process.getuid?.() ?? 'u'}`);
  return { dir, socket: join(dir, 'server.sock'), pidFile: join(dir, 'server.pid'), log: join(dir, 'server.log') };
}

/**
 * Makes the folder when it is missing; undefined when it is safe to use, else why not (owned by
 * another user, open to others, not a folder).
 */
export function ensurePrivateDir(dir: string): string | undefined {
  try {
    mkdirSync(dir, { mode: 0o700 });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') return `cannot make ${dir}: ${(e as Error).message}`;
  }
  const st = lstatSync(dir);
  if (!st.isDirectory()) return `${dir} is not a folder`;
  if (process.getuid && st.uid !== process.getuid()) return `${dir} belongs to uid ${st.uid}`;
  if ((st.mode & 0o077) !== 0) return `${dir} is open to other users (mode ${(st.mode & 0o777).toString(8)})`;
  return undefined;
}

/** The build id a bundle carries near its top (`/* fuxi-build <id> *\/`, scripts/bundle.mjs). */
export function buildIdOf(head: string): string | undefined {
  return /\/\* fuxi-build ([0-9a-f]{16}) \*\//.exec(head)?.[1];
}

/** The commands the fast path hands to a server: short calls whose whole output is text. */
export const SERVED_COMMANDS: ReadonlySet<string> = new Set(['submit', 'status', 'list', 'kill']);

/** The global options that take a value (`--master X`), as `fuxi --help` lists them. */
const VALUE_OPTIONS = new Set(['--master', '--token-file', '--tls-ca', '--tls-cert', '--tls-key', '-o', '--output']);

/**
 * Paths that name something of the calling process (its stdin, its open files, `-`): the server,
 * another process, would open its own.
 */
const CALLERS_OWN = /^(-|\/dev\/(stdin|fd\/\d+)|\/proc\/(self|thread-self)\/fd\/\d+)$/;

/**
 * Whether `fuxi <args>` is one the server runs: a served command, without --wait, help or the
 * version, and naming no file only the caller can open (`/dev/stdin`, `/dev/fd/N`, as `<(...)`
 * gives); anything else, and anything this cannot tell, runs in the process.
 */
export function servedByServer(args: readonly string[]): boolean {
  let command: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '--wait' || a === '-h' || a === '--help' || a === '-V' || a === '--version' || a === '--') return false;
    if (CALLERS_OWN.test(a) || (/^--?[a-z-]+=/.test(a) && CALLERS_OWN.test(a.slice(a.indexOf('=') + 1)))) return false;
    if (command !== undefined) continue;
    if (VALUE_OPTIONS.has(a)) i++;
    else if (!a.startsWith('-')) command = a;
  }
  return command !== undefined && SERVED_COMMANDS.has(command);
}

/** A request: one JSON line. */
export interface CliServerRequest {
  v: 1;
  /** The build id of the bundle this bin would run; a server of another build answers `stale`. */
  build: string | undefined;
  args: string[];
  cwd: string;
  /** The caller's FUXI_* variables (the server's own environment is not used for commands). */
  env: Record<string, string>;
}

/**
 * A frame from the server, one JSON line each: `hello` when a connection is accepted (the request
 * is sent after it), then stdout, stderr and the exit code; or `stale`.
 */
export type CliServerFrame = { hello: 1 } | { o: string } | { e: string } | { x: number } | { stale: true };
