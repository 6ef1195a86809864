/**
 * `fuxi cli-server`: one user's warm CLI, for scripts and workflow engines that run `fuxi` once
 * per task (thousands of times). The bin's fast path (`fast-path.ts`, with `FUXI_CLI_SERVER=1`)
 * starts it in the background and hands it the short commands (`submit` without --wait,
 * `status`, `list`, `kill`) over a Unix socket in the user's private folder
 * (`cli-server-dir.ts`). Each request is run by `runCli`, exactly as the caller's process would
 * have run it: in the caller's folder, with the caller's FUXI_* variables and flags (its master,
 * TLS files, token), its output and exit code streamed back. What the server adds is that it is
 * warm: the modules are loaded and compiled, and a client (its channel, its TLS session) is kept
 * per cluster and credentials, made anew when one of their files changes.
 *
 * It ends after `idleMs` without a request (FUXI_CLI_SERVER_IDLE_S, default 600), when a request
 * comes from another build of the CLI (an upgrade: that caller runs the command itself and starts
 * a new server), and on SIGTERM / SIGINT; it removes its socket and pid file if they are still its.
 */
import { readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { resolve } from 'node:path';
import {
  buildIdOf,
  cliServerPaths,
  ensurePrivateDir,
  servedByServer,
  type CliServerFrame,
  type CliServerPaths,
  type CliServerRequest,
} from './cli-server-dir.js';
import { runCli, type CliClient, type CliDeps, type CliTransport } from './program.js';

export interface CliServerOptions {
  /** Makes a client as the CLI does (main.ts); called once per cluster and credentials. */
  makeClient(masters: string[], transport: CliTransport | undefined, auth: { tokenFile?: string }, env: Record<string, string>): CliClient | Promise<CliClient>;
  /** The bundle this process runs (its build id must match the callers'); undefined: no bundle. */
  bundle?: string;
  idleMs: number;
  /** Progress and errors of the server itself (not of the commands). */
  log?(line: string): void;
}

/** A cached client: kept until the server ends, or replaced when a file it read changes. */
interface Cached {
  client: Promise<CliClient>;
  files: string;
  lastUsedMs: number;
}

/** The files' sizes and mtimes: a renewed certificate or token makes a new client. */
function fileStamps(paths: Array<string | undefined>): string {
  return paths
    .map((p) => {
      if (!p) return '';
      try {
        const st = statSync(p);
        return `${st.size}:${st.mtimeMs}:${st.ino}`;
      } catch {
        return 'missing';
      }
    })
    .join('|');
}

export class CliServer {
  private readonly paths: CliServerPaths;
  private readonly build: string | undefined;
  private server: Server | undefined;
  private socketIno: number | undefined;
  private readonly clients = new Map<string, Cached>();
  private active = 0;
  private idleTimer: NodeJS.Timeout | undefined;
  private stopping = false;
  private stopped!: () => void;
  /** Resolves when the server has ended. */
  readonly done = new Promise<void>((r) => (this.stopped = r));
  /** Commands run (for the log). */
  served = 0;

  constructor(private readonly opts: CliServerOptions) {
    this.paths = cliServerPaths(process.env);
    this.build = opts.bundle ? buildIdOf(readFileSync(opts.bundle, 'latin1').slice(0, 512)) : undefined;
  }

  /** Listens; false when another server already does (this one then has nothing to do). */
  async start(): Promise<boolean> {
    const unsafe = ensurePrivateDir(this.paths.dir);
    if (unsafe) throw new Error(`cannot serve: ${unsafe}`);
    // allowHalfOpen: the caller ends its side after its request; the answer still goes out.
    const server = createServer({ allowHalfOpen: true }, (s) => this.onConnection(s));
    const listen = () =>
      new Promise<NodeJS.ErrnoException | undefined>((res) => {
        server.once('error', res);
        server.listen(this.paths.socket, () => {
          server.off('error', res);
          res(undefined);
        });
      });
    let err = await listen();
    if (err?.code === 'EADDRINUSE') {
      if (await answers(this.paths.socket)) return false;
      rmSync(this.paths.socket, { force: true }); // a server that ended without removing it
      err = await listen();
    }
    if (err) throw err;
    this.server = server;
    this.socketIno = statSync(this.paths.socket).ino;
    writeFileSync(this.paths.pidFile, `${process.pid}\n`, { mode: 0o600 });
    this.armIdle();
    return true;
  }

  private armIdle(): void {
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => {
      if (this.active === 0) void this.stop('idle');
      else this.armIdle();
    }, this.opts.idleMs);
  }

  private onConnection(s: Socket): void {
    this.active++;
    this.armIdle();
    let buf = '';
    let handled = false;
    s.setEncoding('utf8');
    s.write(`${JSON.stringify({ hello: 1 } satisfies CliServerFrame)}\n`);
    s.on('error', () => {
      /* the caller went away (Ctrl-C): its command finishes, its output is dropped */
    });
    s.on('close', () => {
      this.active--;
      this.armIdle();
    });
    s.on('data', (d: string) => {
      if (handled) return;
      buf += d;
      const nl = buf.indexOf('\n');
      if (nl < 0) {
        if (buf.length > 1 << 20) s.destroy();
        return;
      }
      handled = true;
      void this.handle(buf.slice(0, nl), s);
    });
  }

  private async handle(line: string, s: Socket): Promise<void> {
    const send = (f: CliServerFrame) => {
      if (!s.destroyed) s.write(`${JSON.stringify(f)}\n`);
    };
    let req: CliServerRequest;
    try {
      req = JSON.parse(line) as CliServerRequest;
      if (req.v !== 1 || !Array.isArray(req.args) || typeof req.cwd !== 'string' || typeof req.env !== 'object') throw new Error('bad request');
    } catch {
      send({ e: 'error: the CLI server could not read this request\n' });
      send({ x: 5 });
      s.end();
      return;
    }
    if (req.build !== this.build) {
      // Another build of the CLI (an upgrade): it runs its command itself and starts its own server.
      send({ stale: true });
      s.end();
      void this.stop('another build of the CLI called');
      return;
    }
    if (!servedByServer(req.args)) {
      send({ e: `error: the CLI server does not run "${req.args.join(' ')}"\n` });
      send({ x: 5 });
      s.end();
      return;
    }
    const env = req.env;
    const cwd = req.cwd;
    const deps: CliDeps = {
      makeClient: (masters, transport, auth) => this.client(masters, transport, auth ?? {}, env, cwd),
      stdout: { write: (c: string | Uint8Array) => send({ o: text(c) }) },
      stderr: { write: (c: string | Uint8Array) => send({ e: text(c) }) },
      readFile: (p) => readFileSync(resolve(cwd, p), 'utf8'),
      cwd,
      env,
    };
    let code: number;
    try {
      code = await runCli(req.args, deps);
    } catch (e) {
      send({ e: `error: ${e instanceof Error ? e.message : String(e)}\n` });
      code = 5;
    }
    this.served++;
    send({ x: code });
    s.end();
  }

  /** The client for these masters and credentials (files resolved in the caller's folder). */
  private client(
    masters: string[],
    transport: CliTransport | undefined,
    auth: { tokenFile?: string },
    env: Record<string, string>,
    cwd: string,
  ): Promise<CliClient> {
    const tls = transport?.tls
      ? { ca: resolve(cwd, transport.tls.ca), cert: resolve(cwd, transport.tls.cert), key: resolve(cwd, transport.tls.key) }
      : undefined;
    const tokenFile = auth.tokenFile ? resolve(cwd, auth.tokenFile) : undefined;
    const t: CliTransport | undefined = tls ? { tls } : transport;
    const key = JSON.stringify([masters, t ?? null, tokenFile ?? null, env.FUXI_RETRY_MS ?? null]);
    const files = fileStamps([tls?.ca, tls?.cert, tls?.key, tokenFile]);
    const now = Date.now();
    // A cluster no command has called for the idle time: its client closes (the server lives on).
    for (const [k, c] of this.clients) if (k !== key && now - c.lastUsedMs > this.opts.idleMs) this.retire(k, c);
    const cached = this.clients.get(key);
    if (cached && cached.files === files) {
      cached.lastUsedMs = now;
      return cached.client;
    }
    if (cached) this.retire(key, cached); // renewed files: a new client
    const client = Promise.resolve(this.opts.makeClient(masters, t, tokenFile ? { tokenFile } : {}, env)).then(keepOpen);
    client.catch(() => this.clients.delete(key)); // a client that could not be made is not kept
    this.clients.set(key, { client, files, lastUsedMs: now });
    return client;
  }

  /** Forgets a client; it closes after a minute, once the commands that hold it are done. */
  private retire(key: string, c: Cached): void {
    this.clients.delete(key);
    setTimeout(() => void c.client.then(realClose).catch(() => undefined), 60_000).unref();
  }

  /** Stops listening, closes the clients once the running commands end, removes what is its own. */
  async stop(why: string): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    clearTimeout(this.idleTimer);
    this.opts.log?.(`fuxi cli-server ${process.pid}: stopping (${why}) after ${this.served} commands`);
    try {
      if (this.socketIno !== undefined && statSync(this.paths.socket).ino === this.socketIno) rmSync(this.paths.socket, { force: true });
    } catch {
      /* already gone */
    }
    try {
      if (readFileSync(this.paths.pidFile, 'utf8').trim() === String(process.pid)) rmSync(this.paths.pidFile, { force: true });
    } catch {
      /* already gone */
    }
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
    for (const c of this.clients.values()) await c.client.then(realClose).catch(() => undefined);
    this.clients.clear();
    this.stopped();
  }
}

const text = (c: string | Uint8Array): string => (typeof c === 'string' ? c : Buffer.from(c).toString('utf8'));

const REAL_CLOSE = Symbol('close');

/** The client as `runCli` gets it: its `close()` at the end of a command keeps it open. */
function keepOpen(c: CliClient): CliClient {
  return new Proxy(c, {
    get(target, prop) {
      if (prop === 'close') return () => undefined;
      if (prop === REAL_CLOSE) return () => target.close();
      const v = Reflect.get(target, prop, target) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
}

function realClose(c: CliClient): void {
  (c as CliClient & { [REAL_CLOSE]: () => void })[REAL_CLOSE]();
}

/** Whether a server answers on `socket` (a connection is accepted). */
function answers(socket: string): Promise<boolean> {
  return new Promise((res) => {
    const c = connect(socket);
    c.on('connect', () => {
      c.destroy();
      res(true);
    });
    c.on('error', () => res(false));
  });
}
