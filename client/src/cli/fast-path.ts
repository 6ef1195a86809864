/**
 * The `fuxi` bin's fast path (bundled alone as client/dist/fuxi-fast.cjs; the bin calls `run`
 * before it loads the CLI's bundle). With `FUXI_CLI_SERVER=1`, a short command (`submit` without
 * --wait, `status`, `list`, `kill`) is handed to the user's `fuxi cli-server` over its Unix
 * socket: this process then loads neither gRPC nor the wire contract nor YAML, and opens no TLS
 * connection; the server, warm and already connected, runs the command as this process would
 * have, in this process's folder with its FUXI_* settings, and streams back its output and exit
 * code. No server there: it is started in the background for the next command, and this one
 * runs in the process. Node's own modules only: the point is what this file does not load.
 */
import { closeSync, openSync, readSync } from 'node:fs';
import { connect } from 'node:net';
import { buildIdOf, cliServerPaths, ensurePrivateDir, servedByServer, type CliServerFrame, type CliServerRequest } from './cli-server-dir.js';

/** The exit code of an error that is not the command's (exit-codes.ts OTHER). */
const EXIT_OTHER = 5;
/** How long a connected server may take to say hello before the command runs here. */
const HELLO_MS = 2000;

function readBuildId(bundle: string): string | undefined {
  try {
    const fd = openSync(bundle, 'r');
    try {
      const head = Buffer.alloc(512);
      const n = readSync(fd, head, 0, head.length, 0);
      return buildIdOf(head.toString('latin1', 0, n));
    } finally {
      closeSync(fd);
    }
  } catch {
    return undefined;
  }
}

/**
 * Starts `fuxi cli-server` in the background, in its own session, for the next command; resolves
 * once it is spawned. child_process loads only here: a command the server runs never needs it.
 */
async function startServer(bin: string, log: string): Promise<void> {
  let fd: number | undefined;
  try {
    const { spawn } = await import('node:child_process');
    // What the server says of itself (why it stopped, why it could not start): server.log.
    fd = openSync(log, 'w', 0o600);
    spawn(process.execPath, [...process.execArgv, bin, 'cli-server'], { detached: true, stdio: ['ignore', 'ignore', fd], cwd: '/' }).unref();
  } catch {
    /* the next command tries again */
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * Runs `fuxi <args>` through the server: its exit code, or undefined when this process must run
 * the command itself (no server, not a served command, FUXI_CLI_SERVER not 1).
 */
export function run(args: string[], where: { bundle: string; bin: string }): Promise<number | undefined> {
  const env = process.env;
  // FUXI_MAX_MESSAGE_BYTES is read once per process: a server would not apply the caller's.
  if (env.FUXI_CLI_SERVER !== '1' || env.FUXI_MAX_MESSAGE_BYTES || !servedByServer(args)) return Promise.resolve(undefined);
  process.stdout.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code === 'EPIPE') process.exit(0); // `fuxi list | head`
    throw e;
  });
  const debug = (s: string) => {
    if (env.FUXI_DEBUG) process.stderr.write(`fuxi: ${s}\n`);
  };
  const paths = cliServerPaths(env);
  const unsafe = ensurePrivateDir(paths.dir);
  if (unsafe) {
    debug(`not using a CLI server: ${unsafe}`);
    return Promise.resolve(undefined);
  }
  const fuxiEnv: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (k.startsWith('FUXI_') && v !== undefined) fuxiEnv[k] = v;
  const request: CliServerRequest = { v: 1, build: readBuildId(where.bundle), args, cwd: process.cwd(), env: fuxiEnv };
  return new Promise((resolve) => {
    const sock = connect(paths.socket);
    let connected = false;
    let sent = false;
    let done = false;
    let buf = '';
    const finish = (code: number | undefined) => {
      if (done) return;
      done = true;
      clearTimeout(helloTimer);
      resolve(code);
    };
    // Before the request is sent, giving up is safe: this process runs the command instead.
    const runHere = (why: string, start: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(helloTimer);
      debug(why);
      sock.destroy();
      if (start) void startServer(where.bin, paths.log).then(() => resolve(undefined));
      else resolve(undefined);
    };
    // The request went out and no exit code came back: the command may have run (a submit may
    // have been accepted), so it is not run again here.
    const lost = () => {
      if (done) return;
      process.stderr.write(
        `error: the CLI server (${paths.socket}) ended before it answered; the command may or may not have run (FUXI_CLI_SERVER=0 runs commands without it)\n`,
      );
      finish(EXIT_OTHER);
    };
    // The request goes out only after the server's hello: a server that is stopped (SIGSTOP) or
    // stuck still has its socket accept connections, and must not hold the command.
    const helloTimer = setTimeout(() => runHere(`the CLI server did not answer within ${HELLO_MS} ms; running the command here`, false), HELLO_MS);
    sock.on('connect', () => (connected = true));
    sock.setEncoding('utf8');
    sock.on('data', (d: string) => {
      buf += d;
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0 && !done) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        let f: CliServerFrame;
        try {
          f = JSON.parse(line) as CliServerFrame;
        } catch {
          if (sent) lost();
          else runHere('the CLI server sent something unreadable; running the command here', false);
          return;
        }
        if ('hello' in f) {
          if (sent) continue;
          sent = true;
          clearTimeout(helloTimer);
          sock.end(`${JSON.stringify(request)}\n`);
        } else if ('o' in f) process.stdout.write(f.o);
        else if ('e' in f) process.stderr.write(f.e);
        else if ('x' in f) {
          debug('ran by the CLI server');
          finish(f.x);
        } else if ('stale' in f) {
          done = true;
          debug('the CLI server runs another build; it stops, a new one starts');
          void startServer(where.bin, paths.log).then(() => resolve(undefined));
        }
      }
    });
    sock.on('error', (e: NodeJS.ErrnoException) => {
      // Nobody listens (ENOENT, ECONNREFUSED: a server that ended): start one, run here.
      if (!sent) runHere(`no CLI server (${e.code ?? e.message}); starting one`, !connected);
      else lost();
    });
    sock.on('close', () => {
      if (!sent) runHere('the CLI server closed the connection; running the command here', false);
      else lost();
    });
  });
}
