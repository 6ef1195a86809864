/**
 * The cluster the fault matrix runs against: an `HaCluster` (real etcd, three masters, real agents)
 * with the short failure-detection timings of the matrix, plus what fault injection needs on top:
 *
 * - every master's and agent's log followed in full (`masterRecords`, `agentLog`), so a row can
 *   time recovery from the lines the daemons write;
 * - `restartAgent(i)`: the agent again with the same node id, flags and work dir (its local
 *   checkpoint is there, so it re-adopts its workers);
 * - signals to a worker's process group (the `sh` wrapper an agent starts every worker under),
 *   checked against /proc first so that a reused pid is never hit;
 * - a hosted AM's faults through its node's AM host (`faultHostedAm`: an exception inside it, a
 *   stall of its master traffic and its end) and signals to the AM host itself (`signalAmHost`);
 * - `heal()`: back to every master and agent running, a leader, every node healthy.
 *
 * Everything is stopped by pid (`stop()`), worker groups included.
 *
 * ```ts
 * const fc = await FaultCluster.start({ dir, etcdEndpoint: etcd.endpoint, prefix: '/faults-1/' });
 * const ws = await fc.workers();
 * fc.signalWorkerGroup(am.pid, am.appId, 'SIGSTOP');
 * await fc.heal();
 * await fc.stop();
 * ```
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { AmHostConnection, readHostRecord, type HostRecord } from '@fuxi/agent';
import type { HostedAmFault } from '@fuxi/common';
import { amHostPid, HaCluster, hasExited, isAlive, LogTail, waitExit, type AgentProcess, type ClusterPlacement, type LogRecord } from '@fuxi/deploy';
import type { FuxiClient } from '@fuxi/client';
import type { WorkerStatus__Output } from '@fuxi/proto';
import type { WorkerRef } from './metrics.js';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** The failure-detection timings of the matrix (short, so 13 rows fit in a few minutes on 2 cores). */
export const TIMINGS = {
  masters: 3,
  agents: 2,
  leaseTtlSec: 2,
  heartbeatIntervalMs: 300,
  amHeartbeatIntervalMs: 300,
  /** Silent this long: timing out (slots reserved, AMs told). */
  agentTimingOutMs: 1200,
  /** Silent this long: lost. Far above every agent hold of the matrix: a stopped agent is timing out, never lost. */
  agentTimeoutMs: 20_000,
  /** An AM silent this long gets a new attempt. */
  amStallTimeoutMs: 4000,
  recoveryDeadlineMs: 3000,
  /** After a master failover, an app whose AM has not reported by then fails: above every AM hold. */
  amTimeoutMs: 20_000,
  /** SIGTERM -> SIGKILL grace of the agents (a SIGSTOPped AM only dies of SIGKILL). */
  stopGraceMs: 1000,
  agentCpu: '2',
  agentMemory: '2Gi',
} as const;

export interface FaultClusterOptions {
  dir: string;
  etcdEndpoint: string;
  prefix: string;
  logLevel?: string;
  /** Each daemon on a host of the rack (undefined: loopback). */
  placement?: ClusterPlacement;
}

/** How a worker's `sh` wrapper is identified in /proc (its argv). */
const WRAPPER_MARK = 'fuxi-worker';

export class FaultCluster {
  /** Every line of every master's log file (all incarnations; records carry their pid). */
  readonly masterLogs: LogTail[];
  private readonly agentLogs: LogTail[] = [];

  private constructor(
    readonly ha: HaCluster,
    readonly opts: FaultClusterOptions,
  ) {
    this.masterLogs = ha.masters.map((m) => new LogTail(m.logFile));
    ha.agents.forEach((a, i) => (this.agentLogs[i] = new LogTail(a.logFile)));
  }

  static async start(opts: FaultClusterOptions): Promise<FaultCluster> {
    const t = TIMINGS;
    const ha = await HaCluster.start({
      dir: opts.dir,
      masters: t.masters,
      agents: t.agents,
      etcd: { endpoints: [opts.etcdEndpoint], prefix: opts.prefix },
      leaseTtlSec: t.leaseTtlSec,
      recoveryDeadlineMs: t.recoveryDeadlineMs,
      amTimeoutMs: t.amTimeoutMs,
      heartbeatIntervalMs: t.heartbeatIntervalMs,
      amHeartbeatIntervalMs: t.amHeartbeatIntervalMs,
      agentTimeoutMs: t.agentTimeoutMs,
      agentCpu: t.agentCpu,
      agentMemory: t.agentMemory,
      logLevel: opts.logLevel ?? 'info',
      masterArgs: ['--agent-timing-out-ms', String(t.agentTimingOutMs), '--am-stall-timeout-ms', String(t.amStallTimeoutMs)],
      agentArgs: ['--stop-grace-ms', String(t.stopGraceMs)],
      ...(opts.placement ? { placement: opts.placement, startTimeoutMs: 60_000 } : {}),
    });
    return new FaultCluster(ha, opts);
  }

  client(opts: { retryForMs?: number; deadlineMs?: number } = {}): FuxiClient {
    return this.ha.client(opts);
  }

  get agents(): AgentProcess[] {
    return this.ha.agents;
  }

  agentLog(i: number): LogTail {
    return (this.agentLogs[i] ??= new LogTail(this.ha.agents[i]!.logFile));
  }

  /** Master log records matching `pred`, from every master, oldest first. */
  masterRecords(pred: (r: LogRecord) => boolean): LogRecord[] {
    const out: LogRecord[] = [];
    for (const t of this.masterLogs) {
      t.poll();
      for (const r of t.records) if (pred(r)) out.push(r);
    }
    return out.sort((a, b) => a.timeMs - b.timeMs);
  }

  /** Waits for a master log record matching `pred` (any master); the earliest one. */
  async waitMasterRecord(pred: (r: LogRecord) => boolean, what: string, timeoutMs: number): Promise<LogRecord> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const hit = this.masterRecords(pred)[0];
      if (hit) return hit;
      if (Date.now() > until) throw new Error(`no master logged ${what} within ${timeoutMs} ms`);
      await sleep(50);
    }
  }

  /** Every worker every answering agent lists (a stopped or dead agent lists none). */
  async workers(): Promise<WorkerRef[]> {
    const out: WorkerRef[] = [];
    for (const { agent, state } of await this.ha.agentStates()) {
      for (const w of state.workers as WorkerStatus__Output[]) {
        out.push({
          nodeId: agent.nodeId,
          appId: w.appId,
          workerId: w.workerId,
          suId: w.suId,
          task: w.task,
          instance: w.instance,
          attempt: w.attempt,
          amAttempt: w.amAttempt,
          pid: w.pid,
          state: w.state,
        });
      }
    }
    return out;
  }

  /**
   * Sends `sig` to the process group of the worker whose root has pid `pid`, after checking in
   * /proc that this pid still is that worker's root (`isWorkerWrapper`). False when it is gone (or
   * is not that worker any more).
   */
  signalWorkerGroup(pid: number, appId: string, sig: NodeJS.Signals): boolean {
    if (!isWorkerWrapper(pid, appId)) return false;
    try {
      process.kill(-pid, sig);
      return true;
    } catch {
      return false;
    }
  }

  /** The AM host of node `nodeId`, when its recorded process runs (pid and start time). */
  amHost(nodeId: string): HostRecord | undefined {
    const a = this.ha.agents.find((x) => x.nodeId === nodeId);
    if (!a) return undefined;
    const rec = readHostRecord(a.workDir);
    return rec && amHostPid(a.workDir) === rec.pid ? rec : undefined;
  }

  /** True when an AM worker runs in its node's AM host (its pid is the host's). */
  isHosted(w: Pick<WorkerRef, 'nodeId' | 'pid'>): boolean {
    return w.pid > 0 && this.amHost(w.nodeId)?.pid === w.pid;
  }

  /** Injects a fault into a hosted AM through its node's AM host; false when the host does not run it. */
  async faultHostedAm(w: Pick<WorkerRef, 'nodeId' | 'appId' | 'workerId'>, fault: HostedAmFault): Promise<boolean> {
    return this.withHost(w.nodeId, async (c) => {
      await c.request({ op: 'fault', key: `${w.appId}/${w.workerId}`, fault });
      return true;
    }).catch(() => false);
  }

  /** True while the node's AM host runs the AM worker (false when the host is gone). */
  async hostedAmRunning(w: Pick<WorkerRef, 'nodeId' | 'appId' | 'workerId'>): Promise<boolean> {
    return this.withHost(w.nodeId, async (c) => ((await c.request({ op: 'list' })).ams ?? []).some((a) => a.key === `${w.appId}/${w.workerId}`)).catch(
      () => false,
    );
  }

  /** Sends `sig` to the process group of node `nodeId`'s AM host (checked by pid and start time); false when none runs. */
  signalAmHost(nodeId: string, sig: NodeJS.Signals): boolean {
    const rec = this.amHost(nodeId);
    if (!rec) return false;
    try {
      process.kill(-rec.pid, sig);
      return true;
    } catch {
      return false;
    }
  }

  private async withHost<T>(nodeId: string, fn: (c: AmHostConnection) => Promise<T>): Promise<T> {
    const rec = this.amHost(nodeId);
    if (!rec) throw new Error(`no AM host runs on ${nodeId}`);
    const c = await AmHostConnection.open(rec.socket, { timeoutMs: 3000 });
    try {
      await c.request({ op: 'hello', role: 'control' }, 3000);
      return await fn(c);
    } finally {
      c.close();
    }
  }

  /** Sends a signal to agent `i` by pid. */
  signalAgent(i: number, sig: NodeJS.Signals): void {
    const a = this.ha.agents[i]!;
    if (!hasExited(a.child) && isAlive(a.pid)) process.kill(a.pid, sig);
  }

  /** Starts agent `i` again (same node id, flags and work dir) once its old process has exited. */
  async restartAgent(i: number): Promise<AgentProcess> {
    const old = this.ha.agents[i]!;
    if (!hasExited(old.child)) {
      if (!(await waitExit(old.child, 5000))) throw new Error(`agent ${old.nodeId} (pid ${old.pid}) is still running`);
    }
    return this.ha.startAgent(i);
  }

  /**
   * Back to normal after a row: SIGCONT for the agents, every exited master and agent started again,
   * a serving leader and every node healthy. Returns what it had to do.
   */
  async heal(timeoutMs = 30_000): Promise<string[]> {
    const did: string[] = [];
    for (let i = 0; i < this.ha.agents.length; i++) {
      const a = this.ha.agents[i]!;
      if (!hasExited(a.child) && isAlive(a.pid)) process.kill(a.pid, 'SIGCONT');
      this.signalAmHost(a.nodeId, 'SIGCONT');
    }
    for (const m of this.ha.masters) {
      if (hasExited(m.child)) {
        await this.ha.startMaster(m.index);
        did.push(`restarted ${m.name}`);
      } else if (m.stopped) {
        this.ha.kill(m, 'SIGCONT');
        did.push(`SIGCONT ${m.name}`);
      }
    }
    for (let i = 0; i < this.ha.agents.length; i++) {
      if (hasExited(this.ha.agents[i]!.child)) {
        await this.restartAgent(i);
        did.push(`restarted ${this.ha.agents[i]!.nodeId}`);
      }
    }
    await this.ha.waitForLeader({ timeoutMs });
    await this.ha.waitForNodes(this.ha.agents.length, timeoutMs);
    return did;
  }

  /** Masters and agents stopped by pid; every worker group they ran too (running ones, and `extraPids`). */
  async stop(extraPids: Iterable<number> = []): Promise<void> {
    for (let i = 0; i < this.ha.agents.length; i++) {
      const a = this.ha.agents[i];
      if (a && !hasExited(a.child) && isAlive(a.pid)) process.kill(a.pid, 'SIGCONT');
    }
    await this.ha.stop({ killWorkers: true });
    for (const pid of extraPids) {
      if (!isWorkerWrapper(pid)) continue;
      try {
        process.kill(-pid, 'SIGCONT');
        process.kill(-pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
  }

  /** The last `n` lines of a file (logs for failure reports). */
  static tail(file: string, n = 20): string[] {
    try {
      return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-n);
    } catch {
      return [];
    }
  }

  /** Where an agent keeps a worker's stdout (the AM's pino log, for AM workers). */
  static workerStdout(agent: AgentProcess, appId: string, workerId: string): string {
    return join(agent.workDir, 'apps', appId, workerId, 'stdout');
  }
}

/**
 * True when `pid` is the root of an agent's worker (of `appId`, when given): a process started with
 * the worker's family marker and output dir (`/apps/<appId>/` in it) in its environment, as the
 * agent starts the command itself, or an `sh` wrapper with the worker's directory in its argv.
 */
export function isWorkerWrapper(pid: number, appId?: string): boolean {
  if (!(pid > 0) || !isAlive(pid)) return false;
  let argv: string[];
  let env: string[];
  try {
    argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    env = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
  } catch {
    return false;
  }
  if (argv.includes(WRAPPER_MARK)) return appId === undefined || argv.some((a) => a.includes(appId));
  const out = env.find((e) => e.startsWith('FUXI_OUTPUT_DIR='));
  if (!out || !env.some((e) => e.startsWith('FUXI_WORKER_FAMILY='))) return false;
  return appId === undefined || out.includes(`/apps/${appId}/`);
}
