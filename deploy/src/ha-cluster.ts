/**
 * An HA cluster on loopback: N masters sharing a real etcd (one leader, warm standbys) and M agents
 * that know every master, each a real process with its own log file. Used by the master-failover
 * integration tests and the failover benchmark.
 *
 * Masters listen on ports picked up front (every master and agent must know all addresses), so a
 * killed master restarts on the same address. Which master leads is read from the masters' own log
 * lines ("became leader" / "stepped down"), per pid.
 *
 * ```ts
 * const ha = await HaCluster.start({ dir: '/tmp/ha', masters: 3, agents: 3, etcd: { endpoints: [etcd.endpoint] }, leaseTtlSec: 5 });
 * const { master: old } = await ha.waitForLeader();
 * ha.kill(old, 'SIGKILL');
 * const { master, epoch } = await ha.waitForLeader({ notPids: [old.pid] });
 * await ha.waitForRecovery(master, epoch);
 * await ha.restartMaster(old.index);            // back as a standby
 * await ha.stop({ killWorkers: true });
 * ```
 */
import type { ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { FuxiClient } from '@fuxi/client';
import { loadFuxiProto, type GetAgentStateResponse__Output } from '@fuxi/proto';
import { connect, sharedTransport, type Transport } from '@fuxi/rpc';
import { hostOf } from '@fuxi/common';
import { ClusterPki, tlsArgs, tlsEnv } from './cluster-pki.js';
import {
  agentArgs,
  BIN,
  freePort,
  hasExited,
  isAlive,
  killAmHosts,
  killedUnlessReady,
  passThrough,
  startNodeProcess,
  waitExit,
  type AgentProcess,
  type ProcessInfo,
} from './local-cluster.js';

// ------------------------------------------------------------------------------------ log tail

/** One pino JSON line: `msg`, `pid`, `time` (ms since the epoch) and the line's own fields. */
export interface LogRecord {
  msg: string;
  pid: number;
  /** Parsed from pino's ISO `time`; the time the line was written (same clock as Date.now). */
  timeMs: number;
  [field: string]: unknown;
}

/**
 * Reads a pino log file incrementally (from where the last poll stopped) and keeps the records
 * whose `msg` is one of `msgs` (all records when `msgs` is omitted). Cheap on large debug logs:
 * only lines containing a wanted `"msg":"..."` are parsed.
 */
export class LogTail {
  readonly records: LogRecord[] = [];
  private offset = 0;
  private partial = '';
  private readonly needles: string[] | undefined;

  constructor(
    readonly file: string,
    msgs?: readonly string[],
  ) {
    this.needles = msgs?.map((m) => `"msg":${JSON.stringify(m)}`);
  }

  /** Reads what was appended since the last poll; returns the new records kept. */
  poll(): LogRecord[] {
    let size: number;
    try {
      size = statSync(this.file).size;
    } catch {
      return [];
    }
    if (size < this.offset) {
      // Truncated or replaced: start over.
      this.offset = 0;
      this.partial = '';
    }
    if (size === this.offset) return [];
    const fd = openSync(this.file, 'r');
    let text: string;
    try {
      const buf = Buffer.alloc(size - this.offset);
      let read = 0;
      while (read < buf.length) {
        const n = readSync(fd, buf, read, buf.length - read, this.offset + read);
        if (n === 0) break;
        read += n;
      }
      this.offset += read;
      text = this.partial + buf.subarray(0, read).toString('utf8');
    } finally {
      closeSync(fd);
    }
    const lines = text.split('\n');
    this.partial = lines.pop() ?? '';
    const fresh: LogRecord[] = [];
    for (const line of lines) {
      if (this.needles && !this.needles.some((n) => line.includes(n))) continue;
      let rec: Record<string, unknown>;
      try {
        rec = JSON.parse(line) as Record<string, unknown>;
      } catch {
        continue;
      }
      if (typeof rec.msg !== 'string') continue;
      const timeMs = typeof rec.time === 'string' ? Date.parse(rec.time) : typeof rec.time === 'number' ? rec.time : NaN;
      const r = { ...rec, msg: rec.msg, pid: Number(rec.pid), timeMs } as LogRecord;
      this.records.push(r);
      fresh.push(r);
    }
    return fresh;
  }

  /** The last kept record (after a poll) matching `pred`. */
  last(pred: (r: LogRecord) => boolean): LogRecord | undefined {
    this.poll();
    for (let i = this.records.length - 1; i >= 0; i--) if (pred(this.records[i]!)) return this.records[i];
    return undefined;
  }

  /**
   * Waits for a record matching `pred` (already logged or new). Fails early when `child` exits, and
   * after `timeoutMs` with the file's tail in the message.
   */
  async waitFor(pred: (r: LogRecord) => boolean, opts: { what: string; timeoutMs?: number; child?: ChildProcess }): Promise<LogRecord> {
    const until = Date.now() + (opts.timeoutMs ?? 30_000);
    for (;;) {
      this.poll();
      const hit = this.records.find(pred);
      if (hit) return hit;
      const c = opts.child;
      if (c && (c.exitCode !== null || c.signalCode !== null)) {
        this.poll();
        const again = this.records.find(pred);
        if (again) return again;
        throw new Error(`${this.file}: process ${c.pid} exited (${c.exitCode ?? c.signalCode}) before ${opts.what}`);
      }
      if (Date.now() > until) throw new Error(`${this.file}: no ${opts.what} within ${opts.timeoutMs ?? 30_000} ms`);
      await sleep(50);
    }
  }
}

// ------------------------------------------------------------------------------------ helpers

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** `n` distinct free loopback ports. */
export async function freeLoopbackPorts(n: number): Promise<number[]> {
  const out = new Set<number>();
  while (out.size < n) out.add(await freePort());
  return [...out];
}

/** SIGCONT + SIGTERM, then SIGKILL after `graceMs`; by pid. */
export async function terminate(child: ChildProcess, graceMs = 5000): Promise<void> {
  const pid = child.pid;
  if (pid === undefined || hasExited(child)) return;
  try {
    process.kill(pid, 'SIGCONT'); // a stopped process cannot handle SIGTERM
    process.kill(pid, 'SIGTERM');
  } catch {
    /* gone */
  }
  if (!(await waitExit(child, graceMs)) && isAlive(pid)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* gone */
    }
    await waitExit(child, 2000);
  }
}

function cmpEpoch(a: string, b: string): number {
  const x = BigInt(a || 0);
  const y = BigInt(b || 0);
  return x < y ? -1 : x > y ? 1 : 0;
}

// ------------------------------------------------------------------------------------ cluster

/** Log messages of masters and agents that the cluster follows. */
export const MASTER_LOG_MSGS = ['master ready', 'became leader', 'recovery complete', 'stepped down'] as const;

export interface HaClusterOptions {
  /** Root folder: logs and agent work dirs go under it. */
  dir: string;
  /** Number of masters (default 3). */
  masters?: number;
  /** Number of real agent processes (0 when the caller brings its own, e.g. simulated hosts). */
  agents: number;
  etcd: { endpoints: string[]; prefix?: string };
  /** Leader lease TTL in seconds (default 5). */
  leaseTtlSec?: number;
  /** Upper bound of the aggregation window after a takeover (default: the master's). */
  recoveryDeadlineMs?: number;
  amTimeoutMs?: number;
  heartbeatIntervalMs?: number;
  agentTimeoutMs?: number;
  amHeartbeatIntervalMs?: number;
  /** Per agent, e.g. '2' cores and '4Gi'. */
  agentCpu?: string;
  agentMemory?: string;
  /** Rack of agent i is racks[i % racks.length]. */
  racks?: string[];
  logLevel?: string;
  masterArgs?: string[];
  agentArgs?: string[];
  /** Node.js flags for the masters (before the script), e.g. `['--cpu-prof', '--cpu-prof-dir', dir]`. */
  masterNodeArgs?: string[];
  /** How long to wait for the first leader, and for agents to register (default 30 s). */
  startTimeoutMs?: number;
  /**
   * Each daemon on its own host (a rack of network namespaces) instead of loopback: where each
   * master and agent runs and with which config file. Without it everything runs here on loopback.
   */
  placement?: ClusterPlacement;
  /** Plaintext, no TLS (default: mutual TLS with a CA and certificates made under `<dir>/pki`). */
  insecure?: boolean;
}

/** One daemon's host in a placed cluster. */
export interface HostSlot {
  /** host:port the daemon serves at, as peers and this harness dial it (masters: required). */
  address: string;
  /** argv prefix that runs a command on that host (`[]`: here). */
  wrap?: readonly string[];
  /**
   * The daemon's config file (`--config`): it holds listen, masters, etcd endpoints and the like,
   * as an operator writes it; the harness adds only the node id, paths, timings and log level.
   */
  config?: string;
  /** The host's IP addresses, as peers dial it: the SANs of its certificate (loopback is always one). */
  ips?: readonly string[];
}

export interface ClusterPlacement {
  masters: HostSlot[];
  /** Agent i runs on agents[i % agents.length]. */
  agents: HostSlot[];
}

export interface MasterProcess extends ProcessInfo {
  /** Position in `masters` (stable across restarts). */
  readonly index: number;
  /** Follows this master's log file (all incarnations; records carry their pid). */
  readonly log: LogTail;
  /** True between kill(m, 'SIGSTOP') and kill(m, 'SIGCONT'). */
  stopped: boolean;
}

export interface LeaderInfo {
  master: MasterProcess;
  epoch: string;
  /** The "became leader" record. */
  record: LogRecord;
}

export class HaCluster {
  readonly masters: MasterProcess[] = [];
  readonly agents: AgentProcess[] = [];
  private addresses: string[] = [];
  private stoppedAll = false;

  /** The cluster's CA and certificates (`<dir>/pki`); undefined when it runs `insecure`. */
  readonly pki: ClusterPki | undefined;
  private adminTransport: Transport | undefined;

  private constructor(readonly opts: HaClusterOptions) {
    mkdirSync(opts.dir, { recursive: true });
    this.pki = opts.insecure ? undefined : ClusterPki.create(join(opts.dir, 'pki'));
  }

  /** Starts the masters, waits for a leader, starts the agents and waits until all are registered. */
  static async start(opts: HaClusterOptions): Promise<HaCluster> {
    const c = new HaCluster(opts);
    mkdirSync(opts.dir, { recursive: true });
    passThrough(opts.dir);
    c.addresses = opts.placement ? opts.placement.masters.map((m) => m.address) : (await freeLoopbackPorts(opts.masters ?? 3)).map((p) => `127.0.0.1:${p}`);
    try {
      await Promise.all(c.addresses.map((_, i) => c.startMaster(i)));
      await c.waitForLeader({ timeoutMs: opts.startTimeoutMs ?? 30_000 });
      await Promise.all(Array.from({ length: opts.agents }, (_, i) => c.startAgent(i)));
      await c.waitForNodes(opts.agents, opts.startTimeoutMs ?? 30_000);
    } catch (e) {
      await c.stop({ killWorkers: true });
      throw e;
    }
    return c;
  }

  /** Every master's address (host:port), in index order: what agents, AMs and clients are given. */
  get masterAddresses(): string[] {
    return [...this.addresses];
  }

  /** Where master `i` runs (undefined: here, on loopback). */
  masterSlot(i: number): HostSlot | undefined {
    return this.opts.placement?.masters[i];
  }

  /** Where agent `i` runs (undefined: here, on loopback). */
  agentSlot(i: number): HostSlot | undefined {
    const list = this.opts.placement?.agents;
    return list && list.length > 0 ? list[i % list.length] : undefined;
  }

  /** A client that knows every master (follows redirects to the leader). */
  client(opts: { retryForMs?: number; deadlineMs?: number } = {}): FuxiClient {
    return new FuxiClient({ masters: this.masterAddresses, ...opts, ...(this.pki ? { tls: this.pki.admin() } : { insecure: true }) });
  }

  /** The environment the `fuxi` CLI needs for this cluster (`FUXI_TLS_*` of the admin certificate, or `FUXI_INSECURE=1`). */
  clientEnv(): Record<string, string> {
    return tlsEnv(this.pki?.admin());
  }

  /** The admin client's transport, for raw gRPC clients of the cluster's daemons. */
  transport(): Transport {
    this.adminTransport ??= sharedTransport(this.pki ? { tls: this.pki.admin() } : { insecure: true });
    return this.adminTransport;
  }

  /**
   * Daemon flags of `name`'s certificate with the slot's IPs as SANs (`--insecure` when the cluster
   * is insecure). The masters share one certificate (CN=master) naming every master host.
   */
  private tlsArgs(name: string, role: 'master' | 'agent', slot: HostSlot | undefined): string[] {
    const slots = role === 'master' ? (this.opts.placement?.masters ?? []) : slot ? [slot] : [];
    const ips = slots.flatMap((s) => [...(s.ips ?? []), ...(s.address ? [hostOf(s.address)] : [])]);
    if (this.pki && role === 'agent') return this.pki.agentArgs(name, ips);
    return tlsArgs(this.pki ? this.pki.issue(name, role, ips) : undefined);
  }

  private masterArgs(i: number): string[] {
    const o = this.opts;
    const address = this.masterAddresses[i]!;
    const opt = (flag: string, v: number | string | undefined): string[] => (v === undefined ? [] : [flag, String(v)]);
    const config = this.masterSlot(i)?.config;
    // With a config file, where to listen and whom to know are the operator's (the file's).
    const where = config
      ? ['--config', config, ...opt('--etcd-prefix', o.etcd.prefix)]
      : [
          '--listen',
          address,
          '--advertise',
          address,
          '--store',
          'etcd',
          '--etcd-endpoints',
          o.etcd.endpoints.join(','),
          '--etcd-prefix',
          o.etcd.prefix ?? '/fuxi/',
          '--masters',
          this.masterAddresses.join(','),
        ];
    return [
      ...(o.masterNodeArgs ?? []),
      BIN.master,
      ...where,
      '--lease-ttl-sec',
      String(o.leaseTtlSec ?? 5),
      '--heartbeat-interval-ms',
      String(o.heartbeatIntervalMs ?? 500),
      '--agent-timeout-ms',
      String(o.agentTimeoutMs ?? 10_000),
      '--am-heartbeat-interval-ms',
      String(o.amHeartbeatIntervalMs ?? o.heartbeatIntervalMs ?? 500),
      ...opt('--recovery-deadline-ms', o.recoveryDeadlineMs),
      ...opt('--am-timeout-ms', o.amTimeoutMs),
      '--log-level',
      o.logLevel ?? 'info',
      ...this.tlsArgs('master', 'master', this.masterSlot(i)),
      ...(o.masterArgs ?? []),
    ];
  }

  /** Starts master `i` (its first start or a restart) and waits until it serves ("master ready"). */
  async startMaster(i: number): Promise<MasterProcess> {
    const old = this.masters[i];
    if (old && !hasExited(old.child)) throw new Error(`master ${i} (pid ${old.pid}) is still running`);
    const logFile = join(this.opts.dir, `master-${i + 1}.log`);
    const child = startNodeProcess(this.masterArgs(i), logFile, {}, this.masterSlot(i)?.wrap);
    const log = old?.log ?? new LogTail(logFile, MASTER_LOG_MSGS);
    const m: MasterProcess = { name: `master-${i + 1}`, index: i, pid: child.pid!, address: this.masterAddresses[i]!, logFile, child, log, stopped: false };
    this.masters[i] = m;
    await log.waitFor((r) => r.msg === 'master ready' && r.pid === m.pid, { what: '"master ready"', child, timeoutMs: this.opts.startTimeoutMs ?? 30_000 });
    return m;
  }

  /** Starts master `i` again (as a standby, on the same address); SIGKILLs it first if it runs. */
  async restartMaster(i: number): Promise<MasterProcess> {
    const m = this.masters[i];
    if (m && !hasExited(m.child)) {
      this.kill(m, 'SIGKILL');
      await waitExit(m.child, 5000);
    }
    return this.startMaster(i);
  }

  /** Sends a signal to master `m` by pid. SIGKILL resolves nothing more: use `waitExit(m.child)`. */
  kill(m: MasterProcess | ProcessInfo, sig: 'SIGKILL' | 'SIGSTOP' | 'SIGCONT' | 'SIGTERM'): void {
    if (!isAlive(m.pid) || hasExited(m.child)) return;
    process.kill(m.pid, sig);
    if ('stopped' in m) {
      if (sig === 'SIGSTOP') m.stopped = true;
      else if (sig === 'SIGCONT') m.stopped = false;
    }
  }

  /** True while the master's current process runs (a SIGSTOPped one counts as not alive). */
  isServing(m: MasterProcess): boolean {
    return !m.stopped && !hasExited(m.child) && isAlive(m.pid);
  }

  /**
   * The leader as the logs tell it: among running, not stopped masters, the one whose current
   * process logged "became leader" (and not "stepped down" after it) with the highest epoch.
   */
  leader(): LeaderInfo | undefined {
    let best: LeaderInfo | undefined;
    for (const m of this.masters) {
      if (!m || !this.isServing(m)) continue;
      const info = this.leadershipOf(m);
      if (info && (!best || cmpEpoch(info.epoch, best.epoch) > 0)) best = info;
    }
    return best;
  }

  /** Master `m`'s current leadership per its log (latest "became leader" not followed by "stepped down"). */
  leadershipOf(m: MasterProcess): LeaderInfo | undefined {
    m.log.poll();
    let rec: LogRecord | undefined;
    for (const r of m.log.records) {
      if (r.pid !== m.pid) continue;
      if (r.msg === 'became leader') rec = r;
      else if (r.msg === 'stepped down') rec = undefined;
    }
    return rec ? { master: m, epoch: String(rec.epoch ?? ''), record: rec } : undefined;
  }

  /**
   * Waits for a serving leader whose pid is not in `notPids` (e.g. the one just killed) and, when
   * given, whose epoch is above `afterEpoch`.
   */
  async waitForLeader(opts: { notPids?: number[]; afterEpoch?: string; timeoutMs?: number } = {}): Promise<LeaderInfo> {
    const until = Date.now() + (opts.timeoutMs ?? 30_000);
    const not = new Set(opts.notPids ?? []);
    for (;;) {
      const l = this.leader();
      if (l && !not.has(l.master.pid) && (opts.afterEpoch === undefined || cmpEpoch(l.epoch, opts.afterEpoch) > 0)) return l;
      if (Date.now() > until) {
        const seen = this.masters
          .map((m) => `${m.name} pid ${m.pid} ${this.isServing(m) ? 'up' : 'down'} ${JSON.stringify(this.leadershipOf(m)?.epoch ?? null)}`)
          .join('; ');
        throw new Error(`no new leader within ${opts.timeoutMs ?? 30_000} ms (${seen})`);
      }
      await sleep(50);
    }
  }

  /** Waits for master `m` (current pid) to log "recovery complete" (for `epoch`, when given). */
  async waitForRecovery(m: MasterProcess, epoch?: string, timeoutMs = 30_000): Promise<LogRecord> {
    const pid = m.pid;
    return m.log.waitFor((r) => r.msg === 'recovery complete' && r.pid === pid && (epoch === undefined || String(r.epoch) === epoch), {
      what: `"recovery complete"${epoch ? ` for epoch ${epoch}` : ''} from pid ${pid}`,
      child: m.child,
      timeoutMs,
    });
  }

  async startAgent(i: number): Promise<AgentProcess> {
    const o = this.opts;
    const nodeId = `node-${i + 1}`;
    const workDir = join(o.dir, nodeId);
    const logFile = join(o.dir, `${nodeId}.log`);
    const slot = this.agentSlot(i);
    const args = [...agentArgs(o, i, this.masterAddresses.join(','), workDir, slot?.config), ...this.tlsArgs(nodeId, 'agent', slot)];
    const child = startNodeProcess(args, logFile, {}, slot?.wrap);
    const tail = new LogTail(logFile, ['agent ready']);
    const rec = await killedUnlessReady(child, () => tail.waitFor((r) => r.msg === 'agent ready' && r.pid === child.pid, { what: '"agent ready"', child }));
    const agent: AgentProcess = { name: nodeId, nodeId, pid: child.pid!, address: String(rec.address), logFile, child, workDir };
    this.agents[i] = agent;
    return agent;
  }

  /** Waits until the leader lists at least `n` healthy nodes. */
  async waitForNodes(n: number, timeoutMs = 30_000): Promise<void> {
    if (n <= 0) return;
    const client = this.client({ retryForMs: 2000, deadlineMs: 3000 });
    const until = Date.now() + timeoutMs;
    let seen = 0;
    try {
      for (;;) {
        const nodes = await client.nodes().catch(() => []);
        seen = nodes.filter((x) => x.healthy).length;
        if (seen >= n) return;
        if (Date.now() > until) throw new Error(`only ${seen} of ${n} agents registered within ${timeoutMs} ms`);
        await sleep(100);
      }
    } finally {
      client.close();
    }
  }

  /** GetAgentState of every running agent process (agents that do not answer are left out). */
  async agentStates(deadlineMs = 3000): Promise<Array<{ agent: AgentProcess; state: GetAgentStateResponse__Output }>> {
    const out: Array<{ agent: AgentProcess; state: GetAgentStateResponse__Output }> = [];
    await Promise.all(
      this.agents.map(async (a) => {
        if (!a || !isAlive(a.pid)) return;
        const c = connect(loadFuxiProto().AgentService, a.address, this.transport());
        try {
          out.push({ agent: a, state: await c.GetAgentState({}, { deadlineMs }) });
        } catch {
          /* agent gone or stopped */
        } finally {
          c.close();
        }
      }),
    );
    return out.sort((x, y) => x.agent.nodeId.localeCompare(y.agent.nodeId));
  }

  /** Pids of every running worker the agents know of. */
  async workerPids(): Promise<number[]> {
    const pids: number[] = [];
    for (const { state } of await this.agentStates()) {
      for (const w of state.workers) if (w.pid > 0 && w.state === 'WORKER_STATE_RUNNING') pids.push(w.pid);
    }
    return pids;
  }

  /**
   * Stops agents, then masters (SIGCONT + SIGTERM, then SIGKILL), by pid. Workers survive agent
   * stops by design; with `killWorkers` their process groups are killed too, by pid.
   */
  async stop(opts: { killWorkers?: boolean } = {}): Promise<void> {
    if (this.stoppedAll) return;
    this.stoppedAll = true;
    const workers = opts.killWorkers ? await this.workerPids().catch(() => []) : [];
    await Promise.all(this.agents.filter(Boolean).map((a) => terminate(a.child)));
    await Promise.all(this.masters.filter(Boolean).map((m) => terminate(m.child)));
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
