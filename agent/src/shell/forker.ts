/**
 * The spawn helper's forking arm: `fuxi-forker` (agent/native/fuxi-forker.c), a small C process
 * the helper starts once and hands each direct start to (direct-launch.ts). A fork from the helper,
 * a Node process of tens of MB, cost it about 1 ms of CPU per worker (page tables copied,
 * copy-on-write faults until the exec, the copy torn down by the exec) and the child 0.4 ms more;
 * from the forker it costs 0.05-0.08 ms. The forker does what `startDirect` does between the
 * directory's layout and the pid file: creates `stdout` and `stderr` (exclusively, never through a
 * symlink), forks, joins the worker's cgroups in the child, starts a session, changes to the working
 * directory and user, and execs the command, looked up in the `PATH` of the worker's environment. It
 * reaps its children and says how each one ended. Whatever keeps a start from happening (a file in
 * the way, a cgroup it cannot join, a command it cannot exec) comes back as `undefined`, with
 * nothing left behind: the helper then starts the worker its own way, which says why.
 *
 * The binary is built by `make build` when a C compiler is there (agent/dist/native/fuxi-forker);
 * without it, or with `FUXI_SPAWN_FORKER=0` in the agent's environment, the helper forks itself.
 *
 * ```ts
 * const forker = Forker.start(forkerPath(), (pid, code, signal) => ..., onGone);
 * forker.start({ argv, dir, procs }, { cwd, env }, (started) => ...); // undefined: not started
 * ```
 */
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import { constants as osConstants } from 'node:os';
import { fileURLToPath } from 'node:url';
import type { DirectExit, DirectLaunch } from './direct-launch.js';

/** `FUXI_SPAWN_FORKER=0` in the agent's (so the helper's) environment: the helper forks itself. */
export const FORKER_ENV = 'FUXI_SPAWN_FORKER';

/** Where `make build` puts the forker: agent/dist/native/fuxi-forker. */
export function forkerPath(): string {
  return fileURLToPath(new URL('../native/fuxi-forker', import.meta.url));
}

/** The forker's path when it is there and wanted (`env[FORKER_ENV]` not '0'); else undefined. */
export function usableForker(env: NodeJS.ProcessEnv = process.env, file = forkerPath()): string | undefined {
  if (env[FORKER_ENV] === '0') return undefined;
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return file;
  } catch {
    return undefined;
  }
}

const signalNames = new Map<number, string>(Object.entries(osConstants.signals).map(([name, n]) => [n, name]));

/** One request's record: a 4-byte little-endian length, then its fields, each ending with a NUL. */
export function encodeRequest(
  id: number,
  d: DirectLaunch,
  options: { cwd: string; env: Record<string, string>; uid?: number; gid?: number },
): Buffer | undefined {
  const env = Object.entries(options.env).map(([k, v]) => `${k}=${v}`);
  const fields = [
    String(id),
    options.uid === undefined ? '' : String(options.uid),
    options.gid === undefined ? '' : String(options.gid),
    options.cwd,
    d.dir,
    String(d.procs.length),
    ...d.procs,
    String(d.argv.length),
    ...d.argv,
    String(env.length),
    ...env,
  ];
  // A NUL inside a field cannot be said; a variable name with '=' is refused by a start of Node's too.
  if (fields.some((f) => f.includes('\0')) || Object.keys(options.env).some((k) => k.includes('=') || k === '')) return undefined;
  const body = Buffer.from(fields.join('\0') + '\0', 'utf8');
  const head = Buffer.alloc(4);
  head.writeUInt32LE(body.length, 0);
  return Buffer.concat([head, body]);
}

/** How an `X` reply's status reads: an exit code, or a signal's name. */
export function exitOf(status: number): { code: number | null; signal: string | null } {
  if (status >= 0) return { code: status, signal: null };
  return { code: null, signal: signalNames.get(-status) ?? `SIG${-status}` };
}

export class Forker {
  private readonly pending = new Map<number, (r: { pid: number; startTime: string } | undefined) => void>();
  private nextId = 1;
  private partial = '';
  private gone = false;
  private closing = false;
  /** It said `R`: it runs. Until then a failure means it never ran (a binary this host cannot exec). */
  private ready = false;
  /** Why it never ran (it is not used then). */
  unusable: string | undefined;

  private constructor(
    private readonly proc: ChildProcess,
    private readonly exited: DirectExit,
    onGone: (why: string) => void,
  ) {
    proc.stdout?.setEncoding('utf8');
    proc.stdout?.on('data', (chunk: string) => this.onData(chunk));
    proc.stdin?.on('error', () => {}); // its end shows as 'exit' below
    proc.on('error', (e) => this.end(`fuxi-forker failed: ${e.message}`, onGone));
    // 'close', not 'exit': the replies still in its stdout are read first.
    proc.on('close', (code, signal) => this.end(`fuxi-forker ended (${signal ?? `exit ${String(code)}`})`, onGone));
  }

  /**
   * Starts the forker at `file`; `exited` hears of each child's end. If it cannot run at all (it
   * fails before it says it is ready), every start comes back undefined (`unusable` says why).
   * `onGone` is called once if it ends after that and before `close`: whether the starts it had under way happened, and how its
   * children end, is then unknown (their promises never settle), so the helper ends too and its
   * agent finds them as it finds a dead helper's (spawner.ts).
   */
  static start(file: string, exited: DirectExit, onGone: (why: string) => void): Forker {
    const proc = spawn(file, [], { stdio: ['pipe', 'pipe', 'inherit'], env: {} });
    return new Forker(proc, exited, onGone);
  }

  get pid(): number | undefined {
    return this.proc.pid;
  }

  /**
   * Starts `d` as `startDirect` would. `answer` gets its pid and start time, or undefined when it
   * was not started (nothing runs); it is called before the child's end is reported, in the same
   * turn when both come together.
   */
  start(
    d: DirectLaunch,
    options: { cwd: string; env: Record<string, string>; uid?: number; gid?: number },
    answer: (started: { pid: number; startTime: string } | undefined) => void,
  ): void {
    const id = this.nextId++;
    const record = encodeRequest(id, d, options);
    if (!record || this.unusable !== undefined) {
      answer(undefined);
      return;
    }
    this.pending.set(id, answer);
    this.proc.stdin?.write(record);
  }

  /** Closes its input: it reaps what it still has, then exits. */
  close(): void {
    this.closing = true;
    this.proc.stdin?.end();
  }

  private onData(chunk: string): void {
    const text = this.partial + chunk;
    const lines = text.split('\n');
    this.partial = lines.pop() ?? '';
    for (const line of lines) {
      const [t, a = '', b = '', c = ''] = line.split(' ');
      if (t === 'R') {
        this.ready = true;
        continue;
      }
      if (t === 'X') {
        const { code, signal } = exitOf(Number(b));
        this.exited(Number(a), code, signal);
        continue;
      }
      const resolve = this.pending.get(Number(a));
      if (!resolve) continue;
      this.pending.delete(Number(a));
      resolve(t === 'S' ? { pid: Number(b), startTime: c } : undefined);
    }
  }

  private end(why: string, onGone: (why: string) => void): void {
    if (this.gone) return;
    this.gone = true;
    if (this.closing) return;
    if (this.ready) {
      onGone(why);
      return;
    }
    // It never read a request: none was started, each is done the caller's way, as are later ones.
    this.unusable = why;
    const waiting = [...this.pending.values()];
    this.pending.clear();
    for (const r of waiting) r(undefined);
  }
}
