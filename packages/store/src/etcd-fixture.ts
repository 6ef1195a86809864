/**
 * A real etcd for tests: `/usr/bin/etcd` (Debian's etcd-server) on two free loopback ports with a
 * fresh temp data dir, stopped by pid (SIGTERM, then SIGKILL) and its dir removed.
 *
 * Only node builtins here. Also used by the multi-process suites in test/ (test/src/etcd-harness.ts).
 *
 * ```ts
 * const etcd = await startEtcd();           // or: const e = await prepareEtcd(); ... await e.start();
 * const store = await EtcdStore.open({ endpoints: [etcd.endpoint], prefix: '/t1/' });
 * etcd.pause(); etcd.resume();              // SIGSTOP / SIGCONT
 * await etcd.stop();
 * ```
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants, mkdtempSync, openSync, closeSync, readFileSync, rmSync } from 'node:fs';
import { get as httpGet } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';

export interface EtcdProcess {
  /** `http://<host>:<clientPort>` (host 127.0.0.1 unless placed on a rack host): pass to the etcd client. */
  readonly endpoint: string;
  readonly clientPort: number;
  readonly peerPort: number;
  readonly dataDir: string;
  /** Pid of the running etcd, undefined when not running. */
  readonly pid: number | undefined;
  /** Starts etcd (again, on the same ports and data dir) and waits until it answers /health. */
  start(): Promise<void>;
  /** SIGSTOP: etcd stops answering without closing connections (a timing failure). */
  pause(): void;
  /** SIGCONT. */
  resume(): void;
  /** SIGTERM (SIGKILL after `graceMs`); keeps the data dir. */
  kill(graceMs?: number): Promise<void>;
  /** kill() and remove the data dir. */
  stop(): Promise<void>;
  /** The last lines etcd logged (for failure messages). */
  logTail(lines?: number): string;
}

const ETCD_MISSING =
  'etcd binary not found: the etcd suites need a real etcd on PATH (Debian: `apt-get install etcd-server`, ' +
  'which `make test` does), or set FUXI_ETCD_BIN to its path';

/** Finds the etcd binary: $FUXI_ETCD_BIN, else `etcd` on PATH. Throws a clear error if missing. */
export function etcdBinary(): string {
  const candidates: string[] = [];
  if (process.env.FUXI_ETCD_BIN) candidates.push(process.env.FUXI_ETCD_BIN);
  for (const dir of (process.env.PATH ?? '').split(delimiter)) if (dir) candidates.push(join(dir, 'etcd'));
  for (const c of candidates) {
    try {
      accessSync(c, constants.X_OK);
      return c;
    } catch {}
  }
  throw new Error(ETCD_MISSING);
}

/** A free loopback TCP port (bind port 0, read it, close). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => (port ? resolve(port) : reject(new Error('could not allocate a port'))));
    });
  });
}

const running = new Set<ChildProcess>();
let exitHookInstalled = false;
function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // Last resort if a test run dies without stopping its etcds: kill them by pid.
  process.on('exit', () => {
    for (const p of running) {
      if (p.pid === undefined) continue;
      try {
        process.kill(p.pid, 'SIGCONT');
        process.kill(p.pid, 'SIGKILL');
      } catch {}
    }
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Allocates ports and a data dir without starting etcd (for "etcd down at start" tests). */
export interface EtcdOptions {
  startTimeoutMs?: number;
  extraArgs?: string[];
  /**
   * Run etcd on another host of a test rack: the address it listens on and advertises (default
   * 127.0.0.1 on free ports; with a host, ports 2379 and 2380 unless given), and the argv prefix
   * that runs a command there (e.g. `['ip', 'netns', 'exec', 'fxr-etcd']`).
   */
  host?: string;
  clientPort?: number;
  peerPort?: number;
  wrap?: string[];
}

export async function prepareEtcd(opts: EtcdOptions = {}): Promise<EtcdProcess> {
  const bin = etcdBinary();
  const host = opts.host ?? '127.0.0.1';
  const clientPort = opts.clientPort ?? (opts.host ? 2379 : await freePort());
  let peerPort = opts.peerPort ?? (opts.host ? 2380 : await freePort());
  while (peerPort === clientPort) peerPort = await freePort();
  const dataDir = mkdtempSync(join(tmpdir(), 'fuxi-etcd-'));
  const endpoint = `http://${host}:${clientPort}`;
  const peerUrl = `http://${host}:${peerPort}`;
  const logPath = join(dataDir, 'etcd.log');
  const startTimeoutMs = opts.startTimeoutMs ?? 15_000;
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();

  const logTail = (lines = 20): string => {
    try {
      return readFileSync(logPath, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
    } catch {
      return '';
    }
  };

  // Plain node:http without keep-alive: a pooled connection would keep the test process alive.
  const healthy = (): Promise<boolean> =>
    new Promise((resolve) => {
      const req = httpGet(`${endpoint}/health`, { agent: false, timeout: 1000, headers: { connection: 'close' } }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => {
          try {
            resolve((JSON.parse(body) as { health?: string }).health === 'true');
          } catch {
            resolve(false);
          }
        });
        res.on('error', () => resolve(false));
      });
      req.on('timeout', () => req.destroy());
      req.on('error', () => resolve(false));
    });

  const kill = async (graceMs = 5000): Promise<void> => {
    const c = child;
    if (!c || c.pid === undefined) return;
    if (c.exitCode === null && c.signalCode === null) {
      try {
        process.kill(c.pid, 'SIGCONT'); // a stopped process cannot handle SIGTERM
        process.kill(c.pid, 'SIGTERM');
      } catch {}
      let timer: NodeJS.Timeout | undefined;
      const done = await Promise.race([exited.then(() => true), new Promise<boolean>((r) => (timer = setTimeout(() => r(false), graceMs)))]);
      clearTimeout(timer);
      if (!done) {
        try {
          process.kill(c.pid, 'SIGKILL');
        } catch {}
        await exited;
      }
    }
    running.delete(c);
    child = undefined;
  };

  const self: EtcdProcess = {
    endpoint,
    clientPort,
    peerPort,
    dataDir,
    get pid() {
      return child && child.exitCode === null && child.signalCode === null ? child.pid : undefined;
    },
    async start() {
      if (self.pid !== undefined) throw new Error(`etcd already running (pid ${self.pid})`);
      installExitHook();
      const fd = openSync(logPath, 'a');
      const wrap = opts.wrap ?? [];
      const c = spawn(
        wrap[0] ?? bin,
        [
          ...(wrap.length > 0 ? [...wrap.slice(1), bin] : []),
          '--name',
          'default',
          '--data-dir',
          join(dataDir, 'data'),
          '--listen-client-urls',
          endpoint,
          '--advertise-client-urls',
          endpoint,
          '--listen-peer-urls',
          peerUrl,
          '--initial-advertise-peer-urls',
          peerUrl,
          '--initial-cluster',
          `default=${peerUrl}`,
          ...(opts.extraArgs ?? []),
        ],
        { stdio: ['ignore', fd, fd] },
      );
      closeSync(fd);
      child = c;
      running.add(c);
      exited = new Promise<void>((resolve) => c.once('exit', () => resolve()));
      let spawnError: Error | undefined;
      c.once('error', (e) => (spawnError = e));
      const deadline = Date.now() + startTimeoutMs;
      for (;;) {
        if (spawnError) throw new Error(`could not start ${bin}: ${spawnError.message}`);
        if (c.exitCode !== null || c.signalCode !== null) {
          running.delete(c);
          throw new Error(`etcd exited during start (code ${c.exitCode}, signal ${c.signalCode}):\n${logTail()}`);
        }
        if (await healthy()) return;
        if (Date.now() > deadline) {
          await kill();
          throw new Error(`etcd did not answer on ${endpoint} within ${startTimeoutMs} ms:\n${logTail()}`);
        }
        await sleep(50);
      }
    },
    pause() {
      const pid = self.pid;
      if (pid === undefined) throw new Error('etcd is not running');
      process.kill(pid, 'SIGSTOP');
    },
    resume() {
      const pid = self.pid;
      if (pid === undefined) throw new Error('etcd is not running');
      process.kill(pid, 'SIGCONT');
    },
    kill,
    async stop() {
      await kill();
      rmSync(dataDir, { recursive: true, force: true });
    },
    logTail,
  };
  return self;
}

/** Starts a fresh single-member etcd and waits until it is healthy. */
export async function startEtcd(opts: EtcdOptions = {}): Promise<EtcdProcess> {
  const e = await prepareEtcd(opts);
  try {
    await e.start();
  } catch (err) {
    await e.stop();
    throw err;
  }
  return e;
}
