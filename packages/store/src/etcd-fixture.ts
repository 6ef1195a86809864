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
 *
 * // A static three-member cluster, each member on its own host of a test rack:
 * const members = await startEtcdCluster([
 *   { name: 'e1', host: '10.214.0.31', wrap: ['ip', 'netns', 'exec', 'fxh-e1'] }, ...
 * ]);
 * await members[0].crash();                  // kill -9; start() brings it back with its data
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
  /** SIGKILL (kill -9, after SIGCONT) and wait for the exit; keeps the data dir. */
  crash(): Promise<void>;
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
  /** Member name (default 'default'). */
  name?: string;
  /**
   * `--initial-cluster` of a static multi-member cluster (`name=peerUrl,...`); default this member
   * alone. Used only on the first start: a restart finds the membership in its data dir.
   */
  initialCluster?: string;
  /** `--initial-cluster-token` (default etcd's). */
  clusterToken?: string;
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
  const name = opts.name ?? 'default';
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
          name,
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
          opts.initialCluster ?? `${name}=${peerUrl}`,
          ...(opts.clusterToken ? ['--initial-cluster-token', opts.clusterToken] : []),
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
    async crash() {
      const c = child;
      if (!c || c.pid === undefined) return;
      if (c.exitCode === null && c.signalCode === null) {
        try {
          process.kill(c.pid, 'SIGCONT');
          process.kill(c.pid, 'SIGKILL');
        } catch {}
        await exited;
      }
      running.delete(c);
      child = undefined;
    },
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

/** One member of a static etcd cluster: its name, the address it serves on and where it runs. */
export interface EtcdMemberOptions {
  name: string;
  /** Address the member listens on and advertises (ports 2379 and 2380 there). */
  host: string;
  /** argv prefix that runs a command on that host (e.g. `['ip', 'netns', 'exec', 'fxh-e1']`). */
  wrap?: string[];
}

/**
 * Starts a static etcd cluster (`--initial-cluster` naming every member), all members at once,
 * and waits until every member answers /health (the cluster has a leader). `opts` applies to
 * every member (e.g. `extraArgs: ['--quota-backend-bytes', '...']`).
 */
export async function startEtcdCluster(
  members: EtcdMemberOptions[],
  opts: Omit<EtcdOptions, 'host' | 'wrap' | 'name' | 'initialCluster'> = {},
): Promise<EtcdProcess[]> {
  if (members.length === 0) throw new Error('an etcd cluster needs at least one member');
  const peerPort = opts.peerPort ?? 2380;
  const initialCluster = members.map((m) => `${m.name}=http://${m.host}:${peerPort}`).join(',');
  const token = opts.clusterToken ?? `fuxi-${process.pid}-${Date.now().toString(36)}`;
  const out: EtcdProcess[] = [];
  try {
    for (const m of members) {
      out.push(await prepareEtcd({ ...opts, name: m.name, host: m.host, ...(m.wrap ? { wrap: m.wrap } : {}), initialCluster, clusterToken: token }));
    }
    await Promise.all(out.map((e) => e.start()));
  } catch (err) {
    await Promise.all(out.map((e) => e.stop().catch(() => undefined)));
    throw err;
  }
  return out;
}
