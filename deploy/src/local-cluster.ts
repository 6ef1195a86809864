/**
 * A local cluster: one master and N agents on loopback, each a real process with its own work dir
 * and log file. Used by `make demo`, the integration tests and `fuxi-local-cluster`. Mutual TLS by
 * default: a CA and certificates under `<dir>/pki` (`master`, `node-<i>`, an `admin` client);
 * `insecure: true` runs plaintext.
 *
 * ```ts
 * const cluster = await LocalCluster.start({ dir: '/tmp/c1', agents: 3 });
 * console.log(cluster.masterAddress);
 * await cluster.stop();
 * ```
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { FuxiClient } from '@fuxi/client';
import { sharedTransport, type Transport } from '@fuxi/rpc';
import { ClusterPki, tlsArgs, tlsEnv } from './cluster-pki.js';

const here = dirname(fileURLToPath(import.meta.url));
/** The root of this installation (the repository checkout, or /opt/fuxi). */
export const REPO_ROOT = join(here, '..', '..');
const repo = REPO_ROOT;
/** The bundle (`make build`, scripts/bundle.mjs) when there is one, else the module tree (`tsc -b` alone). */
const bundled = (bundle: string, tree: string) => (existsSync(bundle) ? bundle : tree);
export const BIN = {
  master: join(repo, 'master', 'dist', 'shell', 'main.js'),
  agent: join(repo, 'agent', 'dist', 'shell', 'main.js'),
  appmaster: bundled(join(repo, 'appmaster', 'dist', 'fuxi-appmaster.cjs'), join(repo, 'appmaster', 'dist', 'shell', 'main.js')),
  amhost: join(repo, 'appmaster', 'dist', 'shell', 'am-host-main.js'),
  cli: bundled(join(repo, 'client', 'dist', 'fuxi.cjs'), join(repo, 'client', 'dist', 'cli', 'main.js')),
};

/** The shipped example jobs (deploy/examples): a root every local agent allows for jobs' `cwd`. */
export const EXAMPLES_DIR = join(repo, 'deploy', 'examples');

/**
 * Lets every user traverse `dir` (x bits added, nothing else): workers run as an unprivileged
 * user and must reach their own directories below it (a mkdtemp folder is 0700).
 */
export function passThrough(dir: string): void {
  const mode = statSync(dir).mode & 0o7777;
  if ((mode & 0o111) !== 0o111) chmodSync(dir, mode | 0o111);
}

export interface LocalClusterOptions {
  /** Root folder: master data, agent work dirs and logs go under it. */
  dir: string;
  agents: number;
  /** Per agent, e.g. '2' cores and '4Gi'. */
  agentCpu?: string;
  agentMemory?: string;
  /** Rack of agent i is racks[i % racks.length]. */
  racks?: string[];
  heartbeatIntervalMs?: number;
  agentTimeoutMs?: number;
  logLevel?: string;
  /** Extra flags for the master. */
  masterArgs?: string[];
  /** Extra flags for every agent. */
  agentArgs?: string[];
  /**
   * Directories besides the shipped examples (always allowed) that jobs' `cwd` may name on every
   * agent (`--allowed-paths`). Workers run as `nobody` when the agents run as root: what they read
   * there must be readable by it.
   */
  allowedPaths?: string[];
  /**
   * Prometheus metrics on every daemon (`--metrics-listen` on loopback: the master on a port it
   * keeps across restarts, each agent on a free one); `metricsUrl` of each process says where,
   * and the master's `dashboardUrl` where its web dashboard is (on the same port).
   */
  metrics?: boolean;
  /** Plaintext, no TLS (default: mutual TLS with certificates under `<dir>/pki`). */
  insecure?: boolean;
}

export interface ProcessInfo {
  name: string;
  pid: number;
  address: string;
  logFile: string;
  child: ChildProcess;
  /** `http://host:port/metrics` when the cluster serves metrics, else ''. */
  metricsUrl?: string;
  /** The master's web dashboard, `http://host:port/` (beside its metrics), else ''. */
  dashboardUrl?: string;
}

export interface AgentProcess extends ProcessInfo {
  nodeId: string;
  workDir: string;
}

/** Waits until `file` has a pino line with msg === `msg` logged by `child`; returns that record. */
export async function waitForLogLine(file: string, msg: string, child: ChildProcess, timeoutMs = 30_000): Promise<Record<string, unknown>> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    let text = '';
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      /* not yet created */
    }
    for (const line of text.split('\n')) {
      if (!line.includes(msg)) continue;
      try {
        const rec = JSON.parse(line) as Record<string, unknown>;
        if (rec.msg === msg && Number(rec.pid) === child.pid) return rec;
      } catch {
        /* partial line */
      }
    }
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`${file}: process exited (${child.exitCode ?? child.signalCode}) before "${msg}":\n${text.slice(-2000)}`);
    }
    if (Date.now() > until) throw new Error(`${file}: no "${msg}" within ${timeoutMs} ms:\n${text.slice(-2000)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Waits for a daemon just started to say it is ready; one that does not (it never logs the line, or
 * times out) is killed by its pid before the error goes on, so a cluster that failed to start
 * leaves no daemon behind that nobody holds (`stop` knows only the daemons that came up).
 */
export async function killedUnlessReady<T>(child: ChildProcess, ready: () => Promise<T>): Promise<T> {
  try {
    return await ready();
  } catch (e) {
    if (child.pid !== undefined && isAlive(child.pid)) {
      try {
        process.kill(child.pid, 'SIGKILL');
      } catch {
        /* gone meanwhile */
      }
      await waitExit(child, 5000);
    }
    throw e;
  }
}

/**
 * Starts `node <args>` with stdout and stderr appended to `logFile`. `wrap` is an argv prefix that
 * runs it on another host of a test rack (e.g. `['ip', 'netns', 'exec', 'fxr-a1']`, which execs in
 * place: the child's pid is the daemon's).
 */
export function startNodeProcess(args: string[], logFile: string, env: NodeJS.ProcessEnv = {}, wrap: readonly string[] = []): ChildProcess {
  mkdirSync(dirname(logFile), { recursive: true });
  const fd = openSync(logFile, 'a');
  // FUXI_DAEMON_NODE_ARGS: node flags for the daemons a harness starts (a benchmark's --cpu-prof).
  const nodeArgs = (process.env.FUXI_DAEMON_NODE_ARGS ?? '').split(/\s+/).filter(Boolean);
  const argv = [...wrap, process.execPath, ...nodeArgs, ...args];
  const child = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', fd, fd], env: { ...process.env, ...env } });
  closeSync(fd);
  child.on('error', () => undefined);
  return child;
}

export function hasExited(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null;
}

/** Waits up to `timeoutMs` for `child` to exit; true when it did. */
export async function waitExit(child: ChildProcess, timeoutMs: number): Promise<boolean> {
  if (hasExited(child)) return true;
  return new Promise((resolve) => {
    const t = setTimeout(() => resolve(false), timeoutMs);
    child.once('exit', () => {
      clearTimeout(t);
      resolve(true);
    });
  });
}

/** A free TCP port on loopback (bind port 0, read it, close). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => (port ? resolve(port) : reject(new Error('could not allocate a port'))));
    });
  });
}

/**
 * Command line of agent `i` of a local cluster (`node-<i+1>`, racks alternating); with `config`,
 * the agent reads its masters and listen address from that file instead.
 */
export function agentArgs(
  o: Pick<LocalClusterOptions, 'racks' | 'agentCpu' | 'agentMemory' | 'logLevel' | 'agentArgs' | 'allowedPaths'>,
  i: number,
  masters: string,
  workDir: string,
  config?: string,
): string[] {
  const racks = o.racks ?? ['rack-a', 'rack-b'];
  return [
    BIN.agent,
    // With a config file, the masters and where to listen are the file's (as an operator wrote it).
    ...(config ? ['--config', config] : ['--master', masters, '--listen', '127.0.0.1:0']),
    '--node-id',
    `node-${i + 1}`,
    '--rack',
    racks[i % racks.length] ?? 'default',
    '--cpu',
    o.agentCpu ?? '2',
    '--memory',
    o.agentMemory ?? '4Gi',
    '--work-dir',
    workDir,
    '--log-level',
    o.logLevel ?? 'info',
    // The example jobs run their programs from the shipped examples folder.
    '--allowed-paths',
    [EXAMPLES_DIR, ...(o.allowedPaths ?? [])].join(','),
    ...(o.agentArgs ?? []),
  ];
}

/**
 * The pid of the AM host an agent started (its work dir's `amhost/host.json`), when that process
 * still runs with the recorded start time (never a reused pid); undefined otherwise.
 */
export function amHostPid(workDir: string): number | undefined {
  let rec: { pid?: unknown; startTime?: unknown };
  try {
    rec = JSON.parse(readFileSync(join(workDir, 'amhost', 'host.json'), 'utf8')) as typeof rec;
  } catch {
    return undefined;
  }
  if (typeof rec.pid !== 'number' || rec.pid <= 0) return undefined;
  try {
    const stat = readFileSync(`/proc/${rec.pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (fields[0] === 'Z' || fields[19] !== rec.startTime) return undefined;
  } catch {
    return undefined;
  }
  return rec.pid;
}

/** Kills the AM hosts of these agent work dirs (their process groups), by recorded pid and start time. */
export function killAmHosts(workDirs: Iterable<string>): void {
  for (const dir of workDirs) {
    const pid = amHostPid(dir);
    if (pid === undefined) continue;
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
}

/**
 * Removes a cluster's directory tree, again when something made an entry in it meanwhile: a spawn
 * helper outlives its agent until its workers have ended, and writes the exit file of a worker
 * killed just before (fs.rmSync's own retries only retry the directory's rmdir, never what was
 * made after it listed the directory).
 */
export function removeTree(dir: string, attempts = 30): void {
  for (let i = 1; ; i++) {
    try {
      rmSync(dir, { recursive: true, force: true });
      return;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOTEMPTY' || i >= attempts) throw e;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 100);
    }
  }
}

/**
 * Whether process `pid` exists (a zombie included). False for 0 and negative numbers, which
 * `kill(2)` takes for process groups: `isAlive(0)` asked about the caller's own group, always there.
 */
export function isAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export class LocalCluster {
  master!: ProcessInfo;
  readonly agents: AgentProcess[] = [];
  /** The master keeps its address across restarts (agents and AMs know only this one). */
  private masterPort = 0;
  /** And its metrics address (a scrape target stays one). */
  private masterMetricsPort = 0;
  /** The cluster's CA and certificates (`<dir>/pki`); undefined when it runs `insecure`. */
  readonly pki: ClusterPki | undefined;
  private constructor(readonly opts: LocalClusterOptions) {
    mkdirSync(opts.dir, { recursive: true });
    this.pki = opts.insecure ? undefined : ClusterPki.create(join(opts.dir, 'pki'));
  }

  get masterAddress(): string {
    return this.master.address;
  }

  /** A client with the `admin` certificate (or plaintext when the cluster is insecure). */
  client(opts: { retryForMs?: number; deadlineMs?: number } = {}): FuxiClient {
    return new FuxiClient({ masters: [this.masterAddress], ...opts, ...(this.pki ? { tls: this.pki.admin() } : { insecure: true }) });
  }

  /** The environment the `fuxi` CLI needs for this cluster (`FUXI_TLS_*` of the admin certificate, or `FUXI_INSECURE=1`). */
  clientEnv(): Record<string, string> {
    return tlsEnv(this.pki?.admin());
  }

  /** Daemon flags for `name`'s certificate (`--insecure` when the cluster is insecure). */
  tlsArgs(name: string, role: 'master' | 'agent'): string[] {
    if (this.pki && role === 'agent') return this.pki.agentArgs(name);
    return tlsArgs(this.pki ? this.pki.issue(name, role) : undefined);
  }

  static async start(opts: LocalClusterOptions): Promise<LocalCluster> {
    const c = new LocalCluster(opts);
    mkdirSync(opts.dir, { recursive: true });
    passThrough(opts.dir);
    try {
      await c.startMaster();
      await Promise.all(Array.from({ length: opts.agents }, (_, i) => c.startAgent(i)));
      await c.waitForNodes(opts.agents);
    } catch (e) {
      await c.stop({ killWorkers: true });
      throw e;
    }
    return c;
  }

  /** Starts the master (again: same port, same data dir, so a restart is a failover in place). */
  async startMaster(): Promise<ProcessInfo> {
    const o = this.opts;
    const logFile = join(o.dir, 'master.log');
    this.masterPort ||= await freePort();
    if (o.metrics) this.masterMetricsPort ||= await freePort();
    const args = [
      BIN.master,
      '--listen',
      `127.0.0.1:${this.masterPort}`,
      '--store',
      'embedded',
      '--data-dir',
      join(o.dir, 'master-data'),
      '--heartbeat-interval-ms',
      String(o.heartbeatIntervalMs ?? 500),
      '--agent-timeout-ms',
      String(o.agentTimeoutMs ?? 10_000),
      '--am-heartbeat-interval-ms',
      String(o.heartbeatIntervalMs ?? 500),
      '--log-level',
      o.logLevel ?? 'info',
      ...(o.metrics ? ['--metrics-listen', `127.0.0.1:${this.masterMetricsPort}`] : []),
      ...this.tlsArgs('master', 'master'),
      ...(o.masterArgs ?? []),
    ];
    const child = startNodeProcess(args, logFile);
    const { rec, served } = await killedUnlessReady(child, async () => ({
      rec: await waitForLogLine(logFile, 'master ready', child),
      served: o.metrics ? await waitForLogLine(logFile, 'metrics served', child) : {},
    }));
    const metricsUrl = typeof served.metrics === 'string' ? served.metrics : '';
    const dashboardUrl = typeof served.dashboard === 'string' ? served.dashboard : '';
    this.master = { name: 'master', pid: child.pid!, address: String(rec.address), logFile, child, metricsUrl, dashboardUrl };
    return this.master;
  }

  async startAgent(i: number): Promise<AgentProcess> {
    const o = this.opts;
    const nodeId = `node-${i + 1}`;
    const workDir = join(o.dir, nodeId);
    const logFile = join(o.dir, `${nodeId}.log`);
    const args = [...agentArgs(o, i, this.masterAddress, workDir), ...(o.metrics ? ['--metrics-listen', '127.0.0.1:0'] : []), ...this.tlsArgs(nodeId, 'agent')];
    const child = startNodeProcess(args, logFile);
    const rec = await killedUnlessReady(child, () => waitForLogLine(logFile, 'agent ready', child));
    const metricsUrl = typeof rec.metrics === 'string' ? rec.metrics : '';
    const agent: AgentProcess = { name: nodeId, nodeId, pid: child.pid!, address: String(rec.address), logFile, child, workDir, metricsUrl };
    this.agents[i] = agent;
    return agent;
  }

  async waitForNodes(n: number, timeoutMs = 30_000): Promise<void> {
    const client = this.client();
    const until = Date.now() + timeoutMs;
    try {
      for (;;) {
        const nodes = await client.nodes().catch(() => []);
        if (nodes.filter((x) => x.healthy).length >= n) return;
        if (Date.now() > until) throw new Error(`only ${nodes.length} of ${n} agents registered`);
        await new Promise((r) => setTimeout(r, 100));
      }
    } finally {
      client.close();
    }
  }

  /** Sends a signal to a process of the cluster (kill -9, SIGSTOP, SIGCONT ...). */
  signal(p: ProcessInfo, sig: NodeJS.Signals): void {
    if (isAlive(p.pid)) process.kill(p.pid, sig);
  }

  /** The admin client's transport, for raw gRPC clients of the cluster's daemons (`connect(..., cluster.transport())`). */
  transport(): Transport {
    this.adminTransport ??= this.pki ? sharedTransport({ tls: this.pki.admin() }) : sharedTransport({ insecure: true });
    return this.adminTransport;
  }
  private adminTransport: Transport | undefined;

  /** Pids of every worker process the agents know of (running ones). */
  async workerPids(): Promise<number[]> {
    const { loadFuxiProto } = await import('@fuxi/proto');
    const { connect } = await import('@fuxi/rpc');
    const pids: number[] = [];
    for (const a of this.agents) {
      if (!a || !isAlive(a.pid)) continue;
      const c = connect(loadFuxiProto().AgentService, a.address, this.transport());
      try {
        const st = await c.GetAgentState({}, { deadlineMs: 3000 });
        for (const w of st.workers) if (w.pid > 0 && w.state === 'WORKER_STATE_RUNNING') pids.push(w.pid);
      } catch {
        /* agent gone */
      } finally {
        c.close();
      }
    }
    return pids;
  }

  /**
   * Stops agents, then the master (SIGTERM, then SIGKILL). Workers (and AM hosts) survive agent
   * stops by design; with `killWorkers` their process groups are killed too, by pid.
   */
  async stop(opts: { killWorkers?: boolean } = {}): Promise<void> {
    const workers = opts.killWorkers ? await this.workerPids().catch(() => []) : [];
    const procs: ProcessInfo[] = [...this.agents.filter(Boolean), ...(this.master ? [this.master] : [])];
    for (const p of procs) {
      if (isAlive(p.pid)) {
        try {
          process.kill(p.pid, 'SIGCONT');
          process.kill(p.pid, 'SIGTERM');
        } catch {
          /* gone */
        }
      }
    }
    for (const p of procs) {
      if (!(await waitExit(p.child, 5000)) && isAlive(p.pid)) process.kill(p.pid, 'SIGKILL');
    }
    for (const pid of workers) {
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        /* already gone */
      }
    }
    if (opts.killWorkers) killAmHosts(this.agents.filter(Boolean).map((a) => a.workDir));
  }
}
