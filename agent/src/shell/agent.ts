/**
 * The agent shell: the AgentService gRPC server, registration and heartbeats with the master,
 * worker processes (via a ProcessDriver) and worker events to AMs. Every decision is the core's;
 * this file turns RPCs, process exits and ticks into core inputs and carries out the effects.
 *
 * Master failover: every `--master` address is used. RegisterAgent, Heartbeat and
 * ReportAgentState are retried across them (UNAVAILABLE / DEADLINE_EXCEEDED move on to the next
 * one) and follow a standby's redirect. An answer with an older epoch than the newest seen comes
 * from a deposed master: ignored, and the connection moves on. When an answer asks for
 * `reportState`, ReportAgentState (every grant, every worker) goes out before the next heartbeat,
 * and again before each later one until it succeeds or a newer epoch takes over. Workers are never
 * touched by any of this.
 *
 * Local checkpoint and restart (docs/design.md, "Failover", agent crash): every change of the core (grants
 * with their (epoch, seq), master epoch, AM attempt bars, the worker registry) is written to
 * `<workDir>/checkpoint` as one atomic batch before the RPC that caused it is answered, and before
 * a worker is spawned. On start the checkpoint is loaded: workers that still run as the same process
 * are re-adopted (and watched by polling /proc), ended ones are reported with the exit code their
 * wrapper recorded, and every such status is pushed to its AM. Then the agent registers with the
 * epoch and heartbeats with the grant seq of the checkpoint, so the master answers with its full
 * table when ours is behind (or asks for our report when it is failing over itself). Pending plans
 * start once the master has answered a heartbeat, or after `restoreGrantWaitMs` from the
 * checkpoint's grants when it cannot be reached.
 *
 * ```ts
 * const agent = new Agent(resolveConfig({ master: '127.0.0.1:7070' }, {}), { log });
 * await agent.start();           // serving; registers in the background
 * console.log(agent.address);
 * await agent.stop();            // workers keep running
 * ```
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type * as grpc from '@grpc/grpc-js';
import {
  AM_SU,
  backoffMs,
  DEFAULT_AM_MODE,
  sub,
  cmpInt64,
  FailedPreconditionError,
  errorMessage,
  isWorkerTerminal,
  hostOf,
  InvalidArgumentError,
  portOf,
  loopbackAdvertiseProblem,
  NotFoundError,
  nullLogger,
  UnavailableError,
  type Logger,
  type Resource,
  PermissionDeniedError,
} from '@fuxi/common';
import {
  loadFuxiProto,
  type AgentServiceDefinition,
  type GetAgentStateResponse,
  type Grant__Output,
  type HeartbeatRequest,
  type HeartbeatResponse__Output,
  type ProbeTargets__Output,
  type RegisterAgentResponse__Output,
  type FetchOutputRequest__Output,
  type LogChunk,
  type OutputChunk,
  type NodeInfo,
  type RegisterAgentRequest,
  type ReportAgentStateRequest,
  type ListWorkersRequest__Output,
  type ListWorkersResponse,
  type ReadLogRequest__Output,
  type StartWorkersRequest__Output,
  type StartWorkersResponse,
  type StopWorkersRequest__Output,
  type StopWorkersResponse,
  type UpdateGrantsRequest__Output,
  type UpdateGrantsResponse,
} from '@fuxi/proto';
import {
  AGENT_BATCHED,
  batchedCalls,
  bearerToken,
  callerOf,
  DEFAULT_STREAM_STALL_MS,
  defaultTransport,
  implement,
  MasterConnection,
  readTokenFile,
  retry,
  startServer,
  tokenHash,
  toGrpcError,
  transportEnv,
  writeBounded,
  type RunningServer,
  type ServiceImpl,
} from '@fuxi/rpc';
import { startMetricsServer, type MetricsServer } from '@fuxi/rpc/metrics';
import { AgentCore, type AgentState, type Effect, type StateDelta, type WorkerInfo } from '../core/agent-core.js';
import { isEmptyState, mergeDeltas } from '../core/state-delta.js';
import type { PlanAuthInput } from '../core/plan-tokens.js';
import type { AgentCheckpoint } from './checkpoint.js';
import { JournalCheckpoint } from './checkpoint-journal.js';
import { EventSender, type SendFn } from './event-sender.js';
import { RealProcessDriver, readBootId, workerDir, type ProcessDriver, type RealProcessDriverOptions } from './process-driver.js';
import { describeIdentity, userFor, type WorkerIdentity } from '../core/worker-identity.js';
import { firstClosedParent, openWorkerIdentity } from './worker-users.js';
import { AmHostSupervisor } from './am-host-supervisor.js';
import { AgentMetrics } from './agent-metrics.js';
import { AM_HOSTED_ENV, HostedAmDriver } from './hosted-am-driver.js';
import { DataService } from './data-service.js';
import { ProgressWatcher } from './progress-watcher.js';
import { TransferMeter } from './transfer-meter.js';
import { Prober } from './prober.js';
import { openEnforcer, type ResourceEnforcer } from './cgroups.js';
import { WorkDirSweeper, type SweepResult, type WorkerTableView } from './workdir-sweeper.js';
import type { AgentConfig } from './config.js';
import { fromWireGrant, fromWireStartWorkers, fromWireStopWorkers, fromWireUpdateGrants, toWireGrant, toWireResource, toWireStatus } from './wire.js';
import { openRegular, readRegularAsync } from './worker-files.js';

export interface AgentDeps {
  log?: Logger;
  /**
   * Default: RealProcessDriver in `workDir`, behind HostedAmDriver (the node's AM host) when
   * `amHost` is on. A driver given here hosts no AMs.
   */
  driver?: ProcessDriver;
  /** Replaces the WorkerEvents gRPC call (tests). */
  sendEvents?: SendFn;
  /** Clock (default Date.now). */
  now?: () => number;
  /** Core tick period (default 1000 ms). */
  tickMs?: number;
  /**
   * The local checkpoint (default: LevelDB in `<workDir>/checkpoint`, opened by start() and closed
   * by stop()). One given here is the caller's to close.
   */
  checkpoint?: AgentCheckpoint;
  /** How often finished worker directories are swept (workdir-sweeper.ts; default 60 000 ms). */
  workDirSweepMs?: number;
}

/** What start() found in the local checkpoint. */
export interface RestoreReport {
  /** Workers still running as the same process, now watched again. */
  adopted: number;
  /** Workers that ended while the agent was down (reported with their exit codes). */
  ended: number;
  /** Plans kept pending. */
  pending: number;
  grants: number;
  /** Time to load the checkpoint, probe every worker and write the outcome back. */
  ms: number;
}

const LOG_CHUNK = 64 * 1024;
const FOLLOW_POLL_MS = 200;
/** After losing the grant stream, the next heartbeat goes out within this (jittered). */
const STREAM_LOSS_HEARTBEAT_MS = 1000;
/** A heartbeat the master must have soon (heartbeatPromptly) waits this long for company... */
const PROMPT_HEARTBEAT_MS = 20;
/** ...and at least this long after the last such one. */
const PROMPT_HEARTBEAT_GAP_MS = 200;
/** How long a command under an unconfirmed newer master epoch waits for an answer confirming it. */
const PUSH_EPOCH_CONFIRM_MS = 3000;
/**
 * How long an AM's plan or stop waits for the grant its token is checked against. The master sends
 * the AM its assignment and this agent the grant at the same moment, so the plan can come first.
 */
const PLAN_GRANT_WAIT_MS = 2000;

export class Agent {
  readonly core: AgentCore;
  private readonly log: Logger;
  private readonly driver: ProcessDriver;
  /** Set when AMs of this node run in its AM host. */
  private readonly hosted: HostedAmDriver | undefined;
  /** How workers are held to their grants (shell/cgroups.ts); undefined with an injected driver. */
  readonly enforcer: ResourceEnforcer | undefined;
  /** Who job processes run as (absent with an injected driver). */
  readonly identity: WorkerIdentity | undefined;
  /** What this node offers the cluster: its capacity, less the AM host's reserve when it hosts AMs. */
  readonly capacity: Resource;
  private readonly events: EventSender;
  private readonly data: DataService;
  private readonly progress: ProgressWatcher;
  private master: MasterConnection;
  private readonly now: () => number;
  private server: RunningServer | undefined;
  private stopped = false;
  /** Aborted by stop(): ends the registration retries at once. */
  private readonly stopping = new AbortController();
  private registeredOnce = false;
  private needRegister = true;
  private heartbeatIntervalMs = 1000;
  private tickTimer: NodeJS.Timeout | undefined;
  private loop: Promise<void> | undefined;
  private readonly sleepers = new Set<() => void>();
  /** Commands held until an answer confirms their master epoch (confirmPushEpoch). */
  private readonly epochWaiters = new Set<() => void>();
  /** Woken each time grants were applied (plans waiting for their grant: checkPlanTokenSoon). */
  private readonly grantWaiters = new Set<() => void>();
  private hbFailures = 0;
  /** Epoch of the master that asked for our full state and has not got it yet ('' = none). */
  private reportEpoch = '';
  private reportFailures = 0;
  private readonly tickMs: number;
  private readonly workDirSweepMs: number;
  private readonly sweeper: WorkDirSweeper;
  private sweepTimer: NodeJS.Timeout | undefined;
  private checkpoint: AgentCheckpoint | undefined;
  private readonly ownsCheckpoint: boolean;
  private checkpointClosed = false;
  /** The checkpoint writes in flight, in order. */
  private persistChain: Promise<void> = Promise.resolve();
  /** A delta whose write failed: written together with the next one. */
  private unwritten: StateDelta | undefined;
  private checkpointFailures = 0;
  private grantWaitTimer: NodeJS.Timeout | undefined;
  /** A registration just succeeded: heartbeat at once (no interval wait). */
  private heartbeatNow = false;
  /** A prompt heartbeat is due (heartbeatPromptly), and when the last one went. */
  private promptHeartbeat: NodeJS.Timeout | undefined;
  private promptHeartbeatAtMs = 0;
  /** How many of the core's worker ends the heartbeat in flight carries. */
  private endsInFlight = 0;
  private startedAtMs = 0;
  private firstHeartbeatMs = 0;
  private restoreReport: RestoreReport | undefined;
  /**
   * The grant stream was cut (the leader went away): heartbeats carry our registration, with our
   * state, until a master answers one (HeartbeatRequest.rejoin).
   */
  private rejoin = false;
  /** The open WatchGrants stream: to which master, in which epoch. */
  private grantWatch: { address: string; epoch: string; cancel(): void } | undefined;
  /** Peer probing (config `probe`): started with the server, on its advertised host. */
  private prober: Prober | undefined;
  /** Prometheus metrics, when `metricsListen` is set. */
  private readonly metrics: AgentMetrics | undefined;
  private metricsServer: MetricsServer | undefined;

  constructor(
    readonly config: AgentConfig,
    deps: AgentDeps = {},
  ) {
    this.log = deps.log ?? nullLogger;
    this.now = deps.now ?? Date.now;
    // Probed once: the mode is logged at start and told to the master with the registration.
    this.enforcer = deps.driver
      ? undefined
      : openEnforcer({ setting: config.resourceEnforcement, nodeId: config.nodeId, workDir: config.workDir, log: this.log.child({ c: 'limits' }) });
    // Resolved once: a bad worker user is a config error at start; the mode is logged and registered.
    this.identity = deps.driver ? undefined : openWorkerIdentity(config);
    const enforcer = {
      ...(this.enforcer ? { enforcer: this.enforcer } : {}),
      ...(this.identity ? this.spawnPolicy(this.identity) : {}),
    };
    if (!deps.driver && config.amHost) {
      const real = new RealProcessDriver({ workDir: config.workDir, stopGraceMs: config.stopGraceMs, log: this.log.child({ c: 'driver' }), ...enforcer });
      const host = new AmHostSupervisor({
        workDir: config.workDir,
        command: config.amHostCommand,
        threadInstances: config.amHostThreadInstances,
        logLevel: config.logLevel,
        log: this.log.child({ c: 'amhost' }),
      });
      this.hosted = new HostedAmDriver(real, host, { workDir: config.workDir, log: this.log.child({ c: 'driver' }) });
      this.driver = this.hosted;
      // The host's own base is held back; each hosted AM's slot is granted on top of it.
      this.capacity = sub(config.capacity, config.amHostReserve);
    } else {
      this.driver =
        deps.driver ?? new RealProcessDriver({ workDir: config.workDir, stopGraceMs: config.stopGraceMs, log: this.log.child({ c: 'driver' }), ...enforcer });
      this.capacity = config.capacity;
    }
    this.core = new AgentCore({ nodeId: config.nodeId, capacity: this.capacity, pendingTimeoutMs: config.pendingTimeoutMs }, this.log.child({ c: 'core' }));
    this.driver.onExit((e) => this.fire(this.core.workerExited(e.appId, e.workerId, e.exitCode, e.signal, this.now(), e.detail)));
    this.events = new EventSender({ nodeId: config.nodeId, log: this.log.child({ c: 'events' }), ...(deps.sendEvents ? { send: deps.sendEvents } : {}) });
    this.master = this.connectMaster(config.masters);
    const meter = new TransferMeter(config.nodeId);
    this.data = new DataService({ workDir: config.workDir, meter, workers: { byId: (a, w) => this.core.worker(a, w), list: (a) => this.core.listWorkers(a) } });
    this.progress = new ProgressWatcher({
      workDir: config.workDir,
      nodeId: config.nodeId,
      running: () => this.core.runningWorkers(),
      current: (a, w) => this.core.worker(a, w),
      amAddressOf: (a) => this.core.amAddressOf(a),
      events: this.events,
      meter,
      log: this.log.child({ c: 'progress' }),
    });
    this.tickMs = deps.tickMs ?? 1000;
    this.workDirSweepMs = deps.workDirSweepMs ?? 60_000;
    this.sweeper = new WorkDirSweeper({
      workDir: config.workDir,
      policy: { retentionMs: config.workerRetentionMs, maxDiskPercent: config.workDirMaxDiskPercent },
      table: () => this.workerTableView(),
      log: this.log.child({ c: 'workdir' }),
    });
    this.checkpoint = deps.checkpoint;
    this.ownsCheckpoint = deps.checkpoint === undefined;
    const hosted = this.hosted;
    this.metrics = config.metricsListen
      ? new AgentMetrics({ workerCounts: () => this.core.workerCounts(), amHostStats: async () => (hosted ? hosted.host.stats() : undefined) })
      : undefined;
  }

  /**
   * Who each process runs as: the built-in AM (this installation's `amCommand`, a system component)
   * as the agent with its environment; every job process as its quota group's worker user, with a
   * clean environment, its `cwd` confined to its directory and `allowedPaths`.
   */
  /** Says loudly when a worker user cannot reach the work directory: every job process would fail. */
  private warnIfWorkersLockedOut(): void {
    const id = this.identity;
    if (!id || id.mode !== 'switch') return;
    for (const user of [id.defaultUser, ...id.byQuotaGroup.values()]) {
      const closed = firstClosedParent(this.config.workDir, user);
      if (closed)
        this.log.error(
          { workDir: this.config.workDir, workerUser: user.name, closed: closed.dir, mode: closed.mode },
          `workers run as ${user.name}, who cannot pass through ${closed.dir} (mode ${closed.mode}) above the work directory: every job process will fail to start; give it o+x (chmod o+x ${closed.dir}) or move workDir`,
        );
    }
  }

  private spawnPolicy(identity: WorkerIdentity): Pick<RealProcessDriverOptions, 'runAs' | 'isSystem' | 'allowedPaths'> {
    return {
      isSystem: (spec) => this.isSystem(spec),
      runAs: (spec) => {
        if (identity.mode !== 'switch') return undefined;
        const grant = this.core.grantTable().find((g) => g.appId === spec.appId && g.quotaGroup);
        return userFor(identity, grant?.quotaGroup ?? '');
      },
      allowedPaths: this.config.allowedPaths,
    };
  }

  /** `http://host:port/metrics` when metrics are served, else ''. */
  get metricsUrl(): string {
    return this.metricsServer?.url ?? '';
  }

  /** host:port the AgentService is reachable at (after start). */
  get address(): string {
    if (!this.server) throw new Error('agent not started');
    return this.server.address;
  }

  /** True once the first registration with the master succeeded. */
  get registered(): boolean {
    return this.registeredOnce;
  }

  /** What start() restored from the local checkpoint (undefined: it was empty). */
  get restored(): RestoreReport | undefined {
    return this.restoreReport;
  }

  /** Milliseconds from start() to the first heartbeat the master answered (0: none yet). */
  get msToFirstHeartbeat(): number {
    return this.firstHeartbeatMs ? this.firstHeartbeatMs - this.startedAtMs : 0;
  }

  /**
   * Loads the local checkpoint (restoring and re-adopting workers when it holds state), starts
   * serving, logs "agent ready", then registers and heartbeats in the background.
   */
  async start(): Promise<void> {
    this.startedAtMs = Date.now();
    await fs.promises.mkdir(this.config.workDir, { recursive: true });
    if (!this.checkpoint) this.checkpoint = await JournalCheckpoint.open(this.config.workDir, { sync: this.config.checkpointSync });
    try {
      const t0 = Date.now();
      const saved = await this.checkpoint.load();
      await this.driver.attach?.(); // the AM host of an earlier run, before its AMs are probed
      if (isEmptyState(saved))
        await this.persist(); // names the node in a new checkpoint
      else await this.restore(saved, t0);
      this.hosted?.restored(this.config.stopGraceMs);
      // Groups of this agent's workers that are gone (re-adopted ones keep theirs).
      this.enforcer?.sweep(this.core.listWorkers().filter((w) => !isWorkerTerminal(w.state)));
    } catch (e) {
      if (this.ownsCheckpoint) await this.checkpoint.close().catch(() => {});
      this.checkpointClosed = true;
      throw e;
    }
    const proto = loadFuxiProto();
    this.server = await startServer({
      bind: this.config.listen,
      ...(this.config.advertise ? { advertise: this.config.advertise } : {}),
      services: [
        {
          name: 'fuxi.v1.AgentService',
          definition: proto.AgentService.service,
          handlers: implement(proto.AgentService.service, this.handlers(), this.log, this.metrics?.daemon.grpc),
        },
      ],
      log: this.log,
    });
    // A loopback address given to a master on another host: it would connect to itself.
    const problem = loopbackAdvertiseProblem(this.config.advertise ? 'advertise' : 'listen', this.server.address, this.config.masters);
    if (problem) {
      await this.server.shutdown(0);
      this.server = undefined;
      if (this.ownsCheckpoint) await this.checkpoint?.close().catch(() => {});
      this.checkpointClosed = true;
      throw new InvalidArgumentError(this.config.advertise ? 'advertise' : 'listen', problem.slice(problem.indexOf(': ') + 2));
    }
    if (this.config.probe.enabled) await this.startProber();
    if (this.metrics) this.metricsServer = await startMetricsServer({ bind: this.config.metricsListen, registry: this.metrics.daemon.registry, log: this.log });
    this.tickTimer = setInterval(() => this.fire(this.core.tick(this.now())), this.tickMs);
    this.progress.start();
    // Agents started together (a rack powered on, a fleet upgraded) would scan their disks in step
    // at every interval: each starts its cycle at a random point of the first interval.
    this.sweepTimer = setTimeout(
      () => {
        this.sweepTimer = setInterval(() => void this.sweepWorkDirs(), this.workDirSweepMs);
        void this.sweepWorkDirs();
      },
      Math.floor(Math.random() * this.workDirSweepMs),
    );
    if (this.core.startsHeld) {
      this.grantWaitTimer = setTimeout(() => {
        this.grantWaitTimer = undefined;
        if (!this.core.startsHeld || this.stopped) return;
        this.log.warn(
          { waitedMs: this.config.restoreGrantWaitMs, grants: this.core.grantTable().length },
          'the master did not confirm the grant table in time: running from the checkpoint grants',
        );
        this.fire(this.core.grantsConfirmed(this.now()));
      }, this.config.restoreGrantWaitMs);
    }
    this.warnIfWorkersLockedOut();
    this.log.info(
      {
        address: this.address,
        nodeId: this.config.nodeId,
        rack: this.config.rack,
        capacity: this.capacity,
        ...(this.hosted ? { amHost: { reserve: this.config.amHostReserve, threadInstances: this.config.amHostThreadInstances } } : {}),
        workDir: this.config.workDir,
        masters: this.config.masters,
        resourceEnforcement: this.enforcer ? { mode: this.enforcer.mode, why: this.enforcer.reason, groups: this.enforcer.agentDirs } : 'n/a (injected driver)',
        workerUser: this.identity ? describeIdentity(this.identity) : 'n/a (injected driver)',
        ...(this.restoreReport ? { restored: this.restoreReport } : {}),
        probe: this.prober ? this.prober.address : 'off',
        ...(this.metricsServer ? { metrics: this.metricsServer.url } : {}),
      },
      'agent ready',
    );
    this.loop = this.mainLoop();
  }

  /**
   * Binds the prober on the advertised host, UDP port `probe.port` or else the gRPC port (another
   * free one when that is taken). A configured port it cannot bind stops the start, naming
   * `probe.port`.
   */
  private async startProber(): Promise<void> {
    const p = this.config.probe;
    const prober = new Prober({
      nodeId: this.config.nodeId,
      host: hostOf(this.address),
      port: p.port || (portOf(this.address) ?? 0),
      fallbackToAnyPort: p.port === 0,
      periodMs: p.periodMs,
      misses: p.misses,
      log: this.log.child({ c: 'probe' }),
      now: this.now,
    });
    try {
      await prober.start();
    } catch (e) {
      await this.server?.shutdown(0);
      this.server = undefined;
      if (this.ownsCheckpoint) await this.checkpoint?.close().catch(() => {});
      this.checkpointClosed = true;
      throw e;
    }
    this.prober = prober;
  }

  /** Peer probing, when on (tests, benchmarks: its counters and state). */
  get probes(): Prober | undefined {
    return this.prober;
  }

  /** Restart: the checkpoint held state. Re-adopts live workers, finishes ended ones, tells their AMs. */
  private async restore(saved: AgentState, t0: number): Promise<void> {
    const driver = this.driver;
    const r = this.core.restore(
      saved,
      (w) => (driver.probe ? driver.probe({ appId: w.appId, workerId: w.workerId, pid: w.pid, startTime: w.startTime, bootId: w.bootId }) : { kind: 'gone' }),
      this.now(),
    );
    for (const w of r.adopted)
      driver.adopt?.({ appId: w.appId, workerId: w.workerId, pid: w.pid, startTime: w.startTime, bootId: w.bootId, resource: w.resource });
    this.metrics?.adopted(r.adopted.length);
    await this.run(r.effects); // checkpoint first, then the worker events to the AMs
    const s = this.core.summary();
    this.restoreReport = { adopted: r.adopted.length, ended: r.ended.length, pending: s.pending, grants: this.core.grantTable().length, ms: Date.now() - t0 };
    this.log.info(
      {
        ...this.restoreReport,
        epoch: this.core.epochSeen,
        grantEpoch: this.core.appliedGrantEpoch,
        grantSeq: this.core.appliedGrantSeq,
        // The first 50 of each (the rest at debug level from the core).
        adoptedWorkers: r.adopted.slice(0, 50).map((w) => `${w.appId}/${w.workerId}:${w.pid}`),
        endedWorkers: r.ended.slice(0, 50).map((w) => `${w.appId}/${w.workerId}:${w.state}:${w.exitCode ?? '-'}`),
      },
      'restarted from the local checkpoint',
    );
  }

  /** Stops heartbeats and the server. Workers are NOT killed: they outlive the agent. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.stopping.abort();
    if (this.tickTimer) clearInterval(this.tickTimer);
    this.progress.stop();
    if (this.sweepTimer) clearInterval(this.sweepTimer); // a timeout until the first sweep, then an interval
    if (this.grantWaitTimer) clearTimeout(this.grantWaitTimer);
    if (this.promptHeartbeat) clearTimeout(this.promptHeartbeat);
    this.prober?.stop();
    await this.metricsServer?.close();
    for (const wake of this.sleepers) wake();
    this.grantWatch?.cancel();
    this.grantWatch = undefined;
    await this.server?.shutdown(1000);
    // The register / heartbeat loop notices `stopped` after its current call; not awaited, so a
    // call in flight to an unreachable master does not delay the stop.
    void this.loop?.catch(() => {});
    this.events.close();
    this.master.close();
    this.driver.close();
    this.enforcer?.close(); // empty groups of the agent go; live workers keep theirs
    // Later changes (a worker exiting now) are not written: the next start finds them on disk.
    await this.persistChain.catch(() => {});
    this.checkpointClosed = true;
    if (this.ownsCheckpoint) await this.checkpoint?.close().catch((e: unknown) => this.log.warn({ err: errorMessage(e) }, 'closing the checkpoint failed'));
    this.log.info({ nodeId: this.config.nodeId }, 'agent stopped (workers left running)');
  }

  // ------------------------------------------------------------------ master

  private nodeInfo(): NodeInfo {
    return {
      nodeId: this.config.nodeId,
      address: this.address,
      rack: this.config.rack,
      capacity: toWireResource(this.capacity),
      labels: this.config.labels,
      bootId: readBootId(),
      probePort: this.prober?.port ?? 0,
      resourceEnforcement: this.enforcer?.mode ?? '',
      workerUser: this.identity ? describeIdentity(this.identity) : '',
    };
  }

  /**
   * Registration, state reports and heartbeats, one at a time (so never two calls in flight).
   * Never dies: an unexpected error is logged and the loop goes on after a heartbeat interval.
   */
  private async mainLoop(): Promise<void> {
    while (!this.stopped) {
      try {
        if (this.needRegister) {
          // Our state went with the registration and its answer brought the grant table: the
          // grant stream opens now and heartbeats keep their interval. Otherwise the first
          // heartbeat goes out at once to bring the table in line.
          if (await this.register()) this.watchGrants(this.core.epochSeen);
          else this.heartbeatNow = true;
          continue;
        }
        // A master rebuilding its soft state asked for ours: it goes out before the next heartbeat.
        if (this.reportEpoch) await this.reportState();
        // Right after a registration the first heartbeat goes out at once: it brings the grant table
        // back in line (the master answers with its full table when our seq is behind).
        if (!this.heartbeatNow) await this.sleep(this.nextHeartbeatInMs());
        this.heartbeatNow = false;
        if (this.stopped) return;
        await this.heartbeat();
      } catch (e) {
        this.log.error({ err: e instanceof Error ? (e.stack ?? e.message) : String(e) }, 'master loop error; going on');
        await this.sleep(this.heartbeatIntervalMs);
      }
    }
  }

  private connectMaster(addresses: readonly string[]): MasterConnection {
    return new MasterConnection(addresses, {
      retryForMs: 1000,
      onRedirect: (from, to) => this.log.info({ from, to }, 'following master redirect'),
      // A master process answers (a standby's redirect in a failover included): this agent is not
      // cut off from the masters, whatever the leader is doing (see noGrantNoMasterMs).
      onAnswer: () => this.core.masterHeard(this.now()),
      // The agent's own token (role agent, named as this node), read again at each call.
      ...(this.config.tokenFile ? { token: () => readTokenFile(this.config.tokenFile!) } : {}),
    });
  }

  /**
   * Moves the master connection off its current address, to the next configured one: for a
   * deposed master that still answers (with an older epoch) and so never fails over by itself.
   */
  private moveOn(): void {
    const list = this.config.masters;
    if (list.length < 2 || this.stopped) return;
    const from = (list.indexOf(this.master.address) + 1) % list.length;
    this.master.close();
    this.master = this.connectMaster([...list.slice(from), ...list.slice(0, from)]);
  }

  /**
   * Checks the epoch of a master's answer ('' / '0' = none given). A newer one raises the core's
   * bar (and drops a state report still owed to an older master); an older one comes from a
   * deposed master: logged, the connection moves on, and the answer must be ignored (false).
   */
  private acceptEpoch(epoch: string, method: string): boolean {
    if (!epoch || epoch === '0') return true;
    if (cmpInt64(epoch, this.core.epochSeen) < 0) {
      this.log.warn(
        { master: this.master.address, method, epoch, newest: this.core.epochSeen },
        'answer from a deposed master (older epoch) ignored; trying another master',
      );
      this.moveOn();
      return false;
    }
    const before = this.core.epochSeen;
    this.core.registered(epoch);
    if (this.core.epochSeen !== before) void this.persist().catch(() => {}); // the fencing bar survives a restart
    for (const wake of [...this.epochWaiters]) wake();
    if (this.reportEpoch && cmpInt64(this.reportEpoch, epoch) < 0) {
      this.log.info({ owedTo: this.reportEpoch, epoch }, 'state report owed to an older master dropped: a newer one took over');
      this.reportEpoch = '';
    }
    return true;
  }

  /** The master of `epoch` asked for ReportAgentState. */
  private askReport(epoch: string): void {
    if (this.reportEpoch !== epoch) this.log.info({ master: this.master.address, epoch }, 'master asked for our full state');
    this.reportEpoch = epoch;
  }

  /** Our registration; our grant table goes along: a master rebuilding its soft state takes it as our report. */
  private registration(): RegisterAgentRequest {
    return { node: this.nodeInfo(), epochSeen: this.core.epochSeen, withState: true, grants: this.core.grantTable().map(toWireGrant) };
  }

  /**
   * RegisterAgent until a master accepts it (any failure is retried, backing off to 5 s) or stop().
   * True when the master took our state with it and answered with its grant table.
   */
  private async register(): Promise<boolean> {
    let adopted = false;
    try {
      await retry(
        async () => {
          const r = await this.master.call('RegisterAgent', this.registration(), { retry: true, deadlineMs: 5000 });
          const epoch = r.epoch || '0';
          if (!this.acceptEpoch(epoch, 'RegisterAgent'))
            throw new Error(`registration answered by a deposed master (epoch ${epoch}, newest seen ${this.core.epochSeen})`);
          adopted = await this.onRegistered(r, 'registered with the master');
        },
        {
          initialMs: 200,
          maxMs: 5000,
          retryIf: () => true,
          signal: this.stopping.signal,
          onRetry: (f) =>
            this.log.warn({ masters: this.config.masters, attempts: f.attempt, err: errorMessage(f.error) }, 'waiting for the master to accept registration'),
        },
      );
    } catch (e) {
      if (this.stopped) return false;
      throw e;
    }
    return adopted;
  }

  /**
   * A master registered us (RegisterAgent, or a heartbeat's `rejoin`) and its epoch is accepted.
   * True when it took the state sent along and answered with its grant table (applied here).
   */
  private async onRegistered(r: RegisterAgentResponse__Output, what: string): Promise<boolean> {
    this.heartbeatIntervalMs = r.heartbeatIntervalMs > 0 ? r.heartbeatIntervalMs : 1000;
    this.core.masterHeard(this.now(), this.heartbeatIntervalMs);
    this.needRegister = false;
    this.registeredOnce = true;
    this.rejoin = false;
    // The master ended our old stream when we registered; the next heartbeat opens a new one.
    this.grantWatch?.cancel();
    this.grantWatch = undefined;
    this.log.info({ master: this.master.address, epoch: r.epoch, heartbeatIntervalMs: this.heartbeatIntervalMs, reportState: r.reportState }, what);
    if (r.reportState) this.askReport(this.core.epochSeen);
    // A new session: the master may hold none of our connectivity (a new leader) or an old
    // process's; the next heartbeat carries the whole set.
    this.prober?.core.resync();
    if (r.stateAdopted) await this.applyAdopted(r.epoch || '0', r.grantSeq, r.grants);
    return r.stateAdopted;
  }

  /**
   * The master took the grant table sent with our registration as our state report: its answer's
   * table is built from it, so it applies like a pushed one (and pending starts may go ahead).
   */
  private async applyAdopted(epoch: string, seq: string, grants: Grant__Output[]): Promise<void> {
    this.reportEpoch = '';
    this.hbFailures = 0;
    const held = this.core.startsHeld;
    const r = this.updateGrants({ epoch, seq: seq || '0', full: true, grants: grants.map(fromWireGrant) });
    this.log.info({ epoch, seq: r.appliedSeq, applied: r.applied, grants: grants.length }, 'state taken with the registration; full grant table applied');
    await this.run(r.effects);
    if (held) this.confirmGrants('the master took our grant table with the registration');
  }

  /**
   * `grantSeq` is the applied seq in the numbering of the newest master seen ('0' while the grant
   * table still comes from an older master), so the master compares like with like.
   */
  heartbeatRequest(): HeartbeatRequest {
    const probes = this.prober?.core;
    const ends = this.core.workerEnds();
    this.endsInFlight = ends.length;
    return {
      nodeId: this.config.nodeId,
      epoch: this.core.epochSeen,
      grantSeq: this.core.currentGrantSeq,
      used: toWireResource(this.core.used()),
      workers: this.core.summary(),
      amWorkers: this.core.amWorkersToReport().map(toWireStatus),
      workerEnds: ends.map(toWireStatus),
      runningWorkers: this.core.runningTaskWorkers().map((w) => ({ ...w, startedAtMs: String(w.startedAtMs) })),
      ...(this.rejoin ? { rejoin: this.registration() } : {}),
      // Reachability of our probe targets, as changes on top of what the master acknowledged.
      ...(probes ? { connectivity: probes.report(), probeTargetsVersion: probes.targetsVersion } : {}),
    };
  }

  /** The heartbeat answer's part for peer probing: the acknowledged connectivity, new targets. */
  private applyProbeAnswer(resp: HeartbeatResponse__Output): void {
    const probes = this.prober?.core;
    if (!probes) return;
    probes.acked(Number(resp.connectivitySeq || 0), resp.connectivityResync);
    if (resp.probeTargets) this.setProbeTargets(resp.probeTargets);
  }

  private setProbeTargets(t: ProbeTargets__Output): void {
    const probes = this.prober!.core;
    const before = new Set(probes.targets().map((p) => p.nodeId));
    const peers = t.peers.filter((p) => p.nodeId && p.nodeId !== this.config.nodeId && portOf(p.address) !== undefined);
    const dropped = probes.setTargets(Number(t.version), peers, this.now());
    const added = peers.filter((p) => !before.has(p.nodeId)).map((p) => p.nodeId);
    const removed = [...before].filter((id) => !peers.some((p) => p.nodeId === id));
    this.log.info(
      { version: t.version, targets: peers.length, added: added.slice(0, 20), removed: removed.slice(0, 20), unreachableDropped: dropped.map((c) => c.nodeId) },
      'probe targets from the master',
    );
  }

  /** The full soft state for a master rebuilding its own: every grant and every worker known. */
  reportRequest(epoch: string): ReportAgentStateRequest {
    return {
      nodeId: this.config.nodeId,
      epoch,
      grants: this.core.grantTable().map(toWireGrant),
      workers: this.core.listWorkers().map(toWireStatus),
      grantSeq: this.core.appliedGrantSeq,
    };
  }

  private async reportState(): Promise<void> {
    const epoch = this.reportEpoch;
    const req = this.reportRequest(epoch);
    try {
      await this.master.call('ReportAgentState', req, { retry: true, deadlineMs: 5000 });
    } catch (e) {
      this.reportFailures++;
      if (this.reportFailures === 1 || this.reportFailures % 10 === 0)
        this.log.warn(
          { master: this.master.address, epoch, failures: this.reportFailures, err: errorMessage(e) },
          'ReportAgentState failed; retrying after the next heartbeat',
        );
      return;
    }
    this.reportFailures = 0;
    if (this.reportEpoch === epoch) this.reportEpoch = '';
    this.log.info(
      { master: this.master.address, epoch, grants: req.grants?.length ?? 0, workers: req.workers?.length ?? 0, grantSeq: req.grantSeq },
      'full state reported to the master',
    );
  }

  private async heartbeat(): Promise<void> {
    let resp: HeartbeatResponse__Output;
    try {
      resp = await this.master.call('Heartbeat', this.heartbeatRequest(), { retry: true, deadlineMs: Math.max(2000, 2 * this.heartbeatIntervalMs) });
    } catch (e) {
      this.hbFailures++;
      if (this.hbFailures === 1 || this.hbFailures % 20 === 0)
        this.log.warn({ master: this.master.address, failures: this.hbFailures, err: errorMessage(e) }, 'heartbeat failed');
      return;
    }
    const epoch = resp.epoch && resp.epoch !== '0' ? resp.epoch : this.core.epochSeen;
    if (!this.acceptEpoch(epoch, 'Heartbeat')) return;
    if (this.hbFailures > 0) this.log.info({ master: this.master.address, failures: this.hbFailures }, 'heartbeats resumed');
    this.hbFailures = 0;
    this.core.masterHeard(this.now(), this.heartbeatIntervalMs);
    // A master has the worker ends this heartbeat carried (also when it asks us to register again:
    // it read them first). Ends lost with a failed heartbeat go with the next one.
    this.core.workerEndsReported(this.endsInFlight);
    this.endsInFlight = 0;
    // A master answered: it knows us, or has just registered us from the heartbeat's `rejoin`.
    this.rejoin = false;
    if (resp.registered) {
      // The grant stream opens with the next heartbeat, an interval from now, not at once: a new
      // leader that every agent and AM reports to takes their reports first, and pushes by call
      // meanwhile. Without our table adopted, that heartbeat goes out at once to bring it in line.
      if (!(await this.onRegistered(resp.registered, 'registered with the master by a heartbeat (rejoin)'))) this.heartbeatNow = true;
      return;
    }
    if (resp.reregister) {
      this.log.info({ master: this.master.address }, 'master asked to register again');
      this.needRegister = true;
      return;
    }
    this.applyProbeAnswer(resp);
    const held = this.core.startsHeld;
    if (!this.firstHeartbeatMs) {
      this.firstHeartbeatMs = Date.now();
      this.log.info(
        { master: this.master.address, epoch, msSinceStart: this.firstHeartbeatMs - this.startedAtMs, restored: this.restoreReport !== undefined },
        'first heartbeat answered',
      );
    }
    if (resp.reportState) this.askReport(epoch);
    if (resp.fullGrants && resp.reportState) {
      // Built before the master heard our state, so it could revoke live grants: not applied.
      // The master rebuilds its view of this node from the report; later tables apply.
      this.log.info({ epoch, seq: resp.grantSeq }, 'full grant table in an answer asking for our state not applied; waiting for the one after the report');
    } else if (resp.fullGrants) {
      const r = this.updateGrants({ epoch, seq: resp.grantSeq || '0', full: true, grants: resp.grants.map(fromWireGrant) });
      this.log.info({ epoch, seq: r.appliedSeq, applied: r.applied, grants: resp.grants.length }, 'full grant table from heartbeat');
      await this.run(r.effects);
    }
    if (held)
      this.confirmGrants(
        resp.fullGrants && !resp.reportState
          ? 'the master sent its full grant table'
          : resp.reportState
            ? 'the master takes our grant table (it asked for our state)'
            : 'the master accepted our grant seq',
      );
    this.watchGrants(epoch);
  }

  /**
   * Holds a WatchGrants stream open to the master that just answered a heartbeat (opened after a
   * heartbeat, so at most one attempt per interval while a master refuses it). Its messages are
   * UpdateGrants calls by another road: the same core entry, the same (epoch, seq) ordering; while
   * no stream is open the master makes the calls.
   */
  private watchGrants(epoch: string): void {
    const w = this.grantWatch;
    if (this.stopped || this.needRegister || (w && w.address === this.master.address && w.epoch === epoch)) return;
    w?.cancel();
    const address = this.master.address;
    const stream = this.master.client(address).stream.WatchGrants({ nodeId: this.config.nodeId, epoch });
    const handle = { address, epoch, cancel: () => stream.cancel() };
    this.grantWatch = handle;
    void (async () => {
      let messages = 0;
      try {
        for await (const msg of stream) {
          messages++;
          if (messages === 1) this.log.debug({ master: address, epoch }, 'grant stream open');
          await this.confirmPushEpoch(msg.epoch, 'WatchGrants');
          const r = this.updateGrants(fromWireUpdateGrants(msg));
          await this.run(r.effects);
        }
        if (this.grantWatch === handle) this.log.info({ master: address, epoch, messages }, 'grant stream ended by the master');
      } catch (e) {
        if (this.grantWatch === handle && !this.stopped)
          this.log.info({ master: address, epoch, messages, err: errorMessage(e) }, 'grant stream failed; grants come as calls until it is open again');
      }
      if (this.grantWatch === handle) {
        this.grantWatch = undefined;
        // The leader went away or stepped down: find the next one now, not a heartbeat later, so a
        // new leader's aggregation window closes early (jittered: every agent notices at once).
        // The heartbeat carries our registration, for a new leader that does not know us yet.
        this.rejoin = true;
        this.heartbeatSoon();
      }
    })();
  }

  /**
   * The wait before the next heartbeat: the interval, or after failures a short jittered backoff
   * (250 ms doubling up to the interval), so that an agent whose heartbeat found no leader (the old
   * one dead, the new one not elected yet) reaches the new one within its aggregation window.
   */
  private nextHeartbeatInMs(): number {
    if (this.hbFailures === 0) return this.heartbeatIntervalMs;
    return backoffMs(this.hbFailures, { initialMs: 250, maxMs: this.heartbeatIntervalMs }, Math.random);
  }

  /**
   * The next heartbeat goes out in PROMPT_HEARTBEAT_MS (what the master must hear: an AM failed),
   * so that news that came together goes in one heartbeat; and never sooner than
   * PROMPT_HEARTBEAT_GAP_MS after the last prompt one, so a stream of such news costs the master
   * a few heartbeats a second at most.
   */
  private heartbeatPromptly(): void {
    if (this.stopped || this.promptHeartbeat) return;
    const wait = Math.max(PROMPT_HEARTBEAT_MS, this.promptHeartbeatAtMs + PROMPT_HEARTBEAT_GAP_MS - Date.now());
    this.promptHeartbeat = setTimeout(() => {
      this.promptHeartbeat = undefined;
      this.promptHeartbeatAtMs = Date.now();
      this.heartbeatNow = true;
      for (const wake of [...this.sleepers]) wake();
    }, wait);
    this.promptHeartbeat.unref();
  }

  /** The next heartbeat goes out within STREAM_LOSS_HEARTBEAT_MS (at a random point of it). */
  private heartbeatSoon(): void {
    if (this.stopped) return;
    const t = setTimeout(
      () => {
        this.heartbeatNow = true;
        for (const wake of [...this.sleepers]) wake();
      },
      Math.floor(Math.random() * Math.min(STREAM_LOSS_HEARTBEAT_MS, this.heartbeatIntervalMs)),
    );
    t.unref();
  }

  /**
   * After a restore: the master answered a heartbeat, so the grant table is the master's (it sends
   * its full table when our (epoch, seq) is behind): pending plans may start.
   */
  private confirmGrants(why: string): void {
    if (this.grantWaitTimer) clearTimeout(this.grantWaitTimer);
    this.grantWaitTimer = undefined;
    this.log.info(
      { why, epoch: this.core.epochSeen, grantEpoch: this.core.appliedGrantEpoch, grantSeq: this.core.appliedGrantSeq },
      'grant table confirmed by the master',
    );
    this.fire(this.core.grantsConfirmed(this.now()));
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      if (this.stopped) return resolve();
      const wake = (): void => {
        clearTimeout(t);
        this.sleepers.delete(wake);
        resolve();
      };
      const t = setTimeout(wake, ms);
      this.sleepers.add(wake);
    });
  }

  // ------------------------------------------------------------------ effects

  /**
   * Writes what the core changed since the last write to the local checkpoint (one atomic batch,
   * in order after the writes before it). Rejects with UnavailableError when the write fails; the
   * delta is then written again with the next one (or on the next tick).
   *
   * Group commit: the changes are taken when the write starts, not when it is asked for, so every
   * change made while an earlier write was in flight goes out in one batch (each caller's changes
   * were made before its call, so they are in the batch its promise waits for).
   */
  private persist(): Promise<void> {
    const cp = this.checkpoint;
    if (!cp || this.checkpointClosed) return Promise.resolve();
    if (!this.core.hasDelta() && !this.unwritten) return this.persistChain.catch(() => {}); // wait for writes in flight
    const p = this.persistChain
      .catch(() => {})
      .then(async () => {
        const d = this.core.takeDelta();
        const delta = this.unwritten ? mergeDeltas(this.unwritten, d) : d;
        this.unwritten = undefined;
        if (!delta || this.checkpointClosed) return;
        const t0 = process.hrtime.bigint();
        const took = () => Number(process.hrtime.bigint() - t0) / 1e9;
        try {
          await cp.write(delta);
          this.metrics?.checkpointWritten(took(), true);
        } catch (e) {
          this.metrics?.checkpointWritten(took(), false);
          this.unwritten = delta;
          this.checkpointFailures++;
          if (this.checkpointFailures === 1 || this.checkpointFailures % 20 === 0)
            this.log.error({ failures: this.checkpointFailures, err: errorMessage(e) }, 'local checkpoint write failed; retrying with the next change');
          throw new UnavailableError(`the agent could not write its local checkpoint: ${errorMessage(e)}`);
        }
        if (this.checkpointFailures > 0) this.log.info({ failures: this.checkpointFailures }, 'local checkpoint writes work again');
        this.checkpointFailures = 0;
      });
    this.persistChain = p;
    return p;
  }

  /** run() for callers that answer nobody: failures are logged where they happen. */
  private fire(effects: Effect[]): void {
    this.run(effects).catch(() => {});
  }

  /**
   * Carries out core effects: first writes the core's changes to the checkpoint (so a worker is in
   * the registry before it is spawned, and a change is durable before it is acknowledged), then
   * spawns, kills, events and logs. When that write failed, no worker is spawned (the plans are
   * REJECTED: never a process the registry does not know). Resolves when every spawn has been
   * reported back to the core (and written); rejects with UnavailableError (after carrying out the
   * other effects) when a checkpoint write failed.
   */
  private async run(effects: Effect[]): Promise<void> {
    let failure: unknown;
    try {
      await this.persist();
    } catch (e) {
      failure = e;
    }
    const spawns: Array<Promise<void>> = [];
    for (const e of effects) {
      switch (e.kind) {
        case 'spawn':
          // Never a worker that is not in the registry: without the write, no spawn.
          spawns.push(failure === undefined ? this.spawn(e.worker) : this.refuseSpawn(e.worker));
          break;
        case 'kill':
          this.log.info({ appId: e.appId, workerId: e.workerId, pid: e.pid, reason: e.reason }, 'stopping worker');
          this.driver.kill(e.pid, this.config.stopGraceMs, { appId: e.appId, workerId: e.workerId });
          break;
        case 'event':
          this.events.push(e.appId, e.amAddress, toWireStatus(e.status));
          break;
        case 'log':
          this.log[e.level](e.fields, e.msg);
          break;
        case 'tellMaster':
          this.heartbeatPromptly();
          break;
      }
    }
    await Promise.all(spawns);
    if (failure) throw failure;
  }

  /**
   * What every worker learns of the host it runs on: the address peers reach it by
   * (`FUXI_NODE_HOST`), the address to bind its own servers to (`FUXI_BIND_HOST`: the agent's own
   * listen host, 0.0.0.0 included) and the agent (`FUXI_AGENT_ADDRESS`: its data service). An
   * application master binds and advertises from these, never loopback on a rack.
   */
  private hostEnv(spec: Parameters<ProcessDriver['spawn']>[0]): Record<string, string> {
    const listenHost = hostOf(this.config.listen);
    const tls = this.config.tls;
    // A job process presents the worker certificate when there is one (it may not read the
    // agent's key); a system component (the built-in AM) the agent's.
    const own = tls && this.config.workerTls && !this.isSystem(spec) ? { ...tls, ...this.config.workerTls } : tls;
    return {
      FUXI_NODE_HOST: hostOf(this.address),
      FUXI_BIND_HOST: listenHost,
      FUXI_AGENT_ADDRESS: this.address,
      // The TLS files (paths, never their contents) for its calls to the master, agents and AMs.
      ...transportEnv({ tls: own, insecure: this.config.insecure || !tls }),
    };
  }

  /** The built-in AM: this installation's `amCommand` (a system component, not a job process). */
  private isSystem(spec: { suId: string; argv: readonly string[] }): boolean {
    const builtin = this.config.amCommand;
    return spec.suId === AM_SU && spec.argv.length === builtin.length && spec.argv.every((a, i) => a === builtin[i]);
  }

  private async refuseSpawn(spec: Extract<Effect, { kind: 'spawn' }>['worker']): Promise<void> {
    this.log.warn({ workerId: spec.workerId, appId: spec.appId }, 'worker not started: its registry entry could not be written');
    await this.run(this.core.spawnFailed(spec.appId, spec.workerId, 'the local checkpoint could not be written', this.now()));
  }

  private async spawn(spec: Extract<Effect, { kind: 'spawn' }>['worker']): Promise<void> {
    let next: Effect[];
    this.sweeper.invalidate(spec.appId); // its app directory gains one: read again at the next sweep
    try {
      const r = await this.driver.spawn({ ...spec, env: { ...spec.env, ...this.hostEnv(spec) } });
      this.metrics?.launched(spec.suId === AM_SU ? 'am' : 'task', true);
      next = this.core.workerSpawned(spec.appId, spec.workerId, r.pid, r.startTime, this.now(), r.bootId);
    } catch (e) {
      this.metrics?.launched(spec.suId === AM_SU ? 'am' : 'task', false);
      this.log.warn({ workerId: spec.workerId, err: errorMessage(e) }, 'could not spawn worker');
      next = this.core.spawnFailed(spec.appId, spec.workerId, errorMessage(e), this.now());
    }
    await this.run(next);
  }

  /**
   * A master command or push may not raise the epoch this agent follows: only a registration or
   * heartbeat answer does (acceptEpoch), so one forged message (say epoch 2^63-1) cannot make the
   * agent refuse the real master from then on. A new leader may command the agent before the
   * agent has read that leader's answer to its registration, so a newer epoch is held for up to
   * PUSH_EPOCH_CONFIRM_MS while the agent heartbeats soon; an answer confirming it lets the command
   * through, otherwise it is refused (FAILED_PRECONDITION).
   */
  private async confirmPushEpoch(epoch: string, method: string): Promise<void> {
    const unconfirmed = () => !!epoch && cmpInt64(epoch, this.core.epochSeen) > 0;
    if (!unconfirmed()) return;
    this.heartbeatSoon();
    const until = Date.now() + PUSH_EPOCH_CONFIRM_MS;
    while (unconfirmed() && !this.stopped && Date.now() < until) await this.nextWake(this.epochWaiters, until);
    if (!unconfirmed()) return;
    this.log.warn({ method, epoch, confirmed: this.core.epochSeen }, 'command from a master epoch no registration confirmed; refused');
    throw new FailedPreconditionError(
      `epoch ${epoch} is newer than the master this agent registered with (${this.core.epochSeen}): not taken until a registration or heartbeat answer confirms it`,
      { field: 'epoch' },
    );
  }

  // ------------------------------------------------------------------ AgentService

  /**
   * Plans and stops only from the app's AM with its current attempt's token, or from the master
   * (plan-tokens.ts). The master is known by its certificate (role `master`); on an insecure cluster
   * (no TLS) a stop that presents no token is taken as the master's, a plan never is.
   */
  /** Resolves at the next wake of `waiters`, or at `until`. */
  private nextWake(waiters: Set<() => void>, until: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(t);
        waiters.delete(done);
        resolve();
      };
      const t = setTimeout(done, Math.max(0, until - Date.now()));
      waiters.add(done);
    });
  }

  /** Applies a grant update to the core and wakes the plans waiting for a grant. */
  private updateGrants(u: Parameters<AgentCore['updateGrants']>[0]): ReturnType<AgentCore['updateGrants']> {
    const r = this.core.updateGrants(u, this.now());
    for (const wake of [...this.grantWaiters]) wake();
    return r;
  }

  /**
   * checkPlanToken, but a plan or stop that came before the grant its token is checked against
   * (UNAVAILABLE) waits for it, up to PLAN_GRANT_WAIT_MS: the AM would otherwise retry after a
   * back-off. Still none then: UNAVAILABLE, and the AM retries.
   */
  private async checkPlanTokenSoon(
    call: Parameters<typeof callerOf>[0],
    method: 'StartWorkers' | 'StopWorkers',
    appId: string,
    amAttempt: number,
  ): Promise<void> {
    const input = this.planAuthInput(call, method, appId, amAttempt);
    const until = Date.now() + PLAN_GRANT_WAIT_MS;
    // The wait asks without making an error: every grant update wakes every waiting plan.
    while (this.core.planTokenWaits(input) && !this.stopped && Date.now() < until) await this.nextWake(this.grantWaiters, until);
    this.core.checkPlanToken(input);
  }

  private planAuthInput(call: Parameters<typeof callerOf>[0], method: 'StartWorkers' | 'StopWorkers', appId: string, amAttempt: number): PlanAuthInput {
    const token = bearerToken(call.metadata);
    const fromMaster = token === undefined && callerOf(call, { insecure: this.plaintext() }, method).role === 'master';
    return {
      method,
      appId,
      amAttempt,
      presentedHash: token === undefined ? undefined : tokenHash(token),
      trustedWithoutToken: fromMaster || (method === 'StopWorkers' && this.plaintext()),
    };
  }

  /** Plaintext (`insecure: true`, or no TLS set up in this process): callers cannot be told apart by certificate. */
  private plaintext(): boolean {
    return this.config.insecure === true || !defaultTransport().secure;
  }

  /** Master-only calls: the master's certificate, or (insecure cluster) any caller. */
  private checkFromMaster(call: Parameters<typeof callerOf>[0], method: string): void {
    if (this.plaintext()) return;
    const caller = callerOf(call, { insecure: false }, method);
    if (caller.role !== 'master') throw new PermissionDeniedError(method, `only the master may call it; ${caller.name} is ${caller.role}`);
  }

  private handlers(): ServiceImpl<AgentServiceDefinition> {
    const handlers: ServiceImpl<AgentServiceDefinition> = {
      // Each entry authorized and run by its handler below, with its own token (call-batch.ts).
      Calls: batchedCalls(loadFuxiProto().AgentService.service, () => handlers, AGENT_BATCHED, this.metrics?.daemon.grpc),
      UpdateGrants: async (req: UpdateGrantsRequest__Output, call): Promise<UpdateGrantsResponse> => {
        this.checkFromMaster(call, 'UpdateGrants');
        await this.confirmPushEpoch(req.epoch, 'UpdateGrants');
        const r = this.updateGrants(fromWireUpdateGrants(req));
        await this.run(r.effects);
        return { appliedSeq: r.appliedSeq };
      },
      StartWorkers: async (req: StartWorkersRequest__Output, call): Promise<StartWorkersResponse> => {
        await this.checkPlanTokenSoon(call, 'StartWorkers', req.appId, req.amAttempt);
        await this.confirmPushEpoch(req.epoch, 'StartWorkers');
        const input = this.resolveAmCommand(fromWireStartWorkers(req));
        const r = this.core.startWorkers(input, this.now());
        await this.run(r.effects);
        return { workers: this.core.workersById(input.appId, [...new Set(input.plans.map((p) => p.workerId))]).map(toWireStatus) };
      },
      StopWorkers: async (req: StopWorkersRequest__Output, call): Promise<StopWorkersResponse> => {
        await this.checkPlanTokenSoon(call, 'StopWorkers', req.appId, req.amAttempt);
        await this.confirmPushEpoch(req.epoch, 'StopWorkers');
        const r = this.core.stopWorkers(fromWireStopWorkers(req), this.now());
        await this.run(r.effects);
        return {
          workers: this.core
            .workersById(
              req.appId,
              r.workers.map((w) => w.workerId),
            )
            .map(toWireStatus),
        };
      },
      ListWorkers: (req: ListWorkersRequest__Output): ListWorkersResponse => ({ workers: this.core.listWorkers(req.appId).map(toWireStatus) }),
      GetAgentState: (): GetAgentStateResponse => {
        const s = this.core.snapshot();
        return {
          node: this.nodeInfo(),
          epoch: s.epoch,
          grantSeq: s.grantSeq,
          grants: s.grants.map(toWireGrant),
          workers: s.workers.map(toWireStatus),
          used: toWireResource(s.used),
        };
      },
      // Errors are sent as the stream's status here: @fuxi/rpc's implement() destroys the stream
      // on a thrown error, which (grpc-js 1.14) never sends a status and leaves the caller hanging.
      ReadLog: (req: ReadLogRequest__Output, call: grpc.ServerWritableStream<ReadLogRequest__Output, LogChunk>) =>
        this.readLog(req, call).catch((e: unknown) => {
          const ge = toGrpcError(e);
          call.emit('error', Object.assign(new Error(ge.details ?? errorMessage(e)), ge));
        }),
      FetchOutput: (req: FetchOutputRequest__Output, call: grpc.ServerWritableStream<FetchOutputRequest__Output, OutputChunk>) => this.data.fetch(req, call),
    };
    return handlers;
  }

  private async readLog(req: ReadLogRequest__Output, call: grpc.ServerWritableStream<ReadLogRequest__Output, LogChunk>): Promise<void> {
    const stream = req.stream || 'stdout';
    if (stream !== 'stdout' && stream !== 'stderr') throw new InvalidArgumentError('stream', `must be "stdout" or "stderr", got ${JSON.stringify(req.stream)}`);
    if (!req.appId) throw new InvalidArgumentError('appId', 'must not be empty');
    const w = this.core.findWorker(req.appId, req.task, req.instance, req.attempt);
    let file: string;
    let done: () => boolean;
    if (w) {
      file = this.driver.logPath(w.appId, w.workerId, stream);
      const id = w.workerId;
      done = () => {
        const cur = this.core.worker(w.appId, id);
        return !cur || isWorkerTerminal(cur.state);
      };
    } else {
      const dir = await this.findOnDisk(req.appId, req.task, req.instance, req.attempt);
      if (!dir) throw new NotFoundError('worker', `${req.appId}/${req.task}/${req.instance}${req.attempt > 0 ? ` attempt ${req.attempt}` : ''}`);
      file = path.join(dir, stream);
      done = () => true;
    }
    let cancelled = false;
    call.on('cancelled', () => (cancelled = true));
    let pos = 0;
    const buf = Buffer.alloc(LOG_CHUNK);
    for (;;) {
      const finished = !req.follow || done() || this.stopped;
      // Drain what is there now.
      let fh: fs.promises.FileHandle | undefined;
      try {
        fh = await openRegular(file);
      } catch {
        fh = undefined; // not written yet
      }
      if (fh) {
        try {
          for (;;) {
            if (cancelled) break;
            const { bytesRead } = await fh.read(buf, 0, LOG_CHUNK, pos);
            if (bytesRead === 0) break;
            pos += bytesRead;
            const chunk: LogChunk = { data: Buffer.from(buf.subarray(0, bytesRead)) };
            // A reader that takes nothing for a minute is ended (RESOURCE_EXHAUSTED): it calls again.
            await writeBounded(call, chunk, DEFAULT_STREAM_STALL_MS, 'ReadLog');
          }
        } finally {
          await fh.close();
        }
      }
      if (finished || cancelled) break;
      await this.sleep(FOLLOW_POLL_MS);
    }
    if (!cancelled) call.end();
  }

  /**
   * An application-master plan from the master with no command means "this node's built-in AM":
   * the command is resolved here, on the node that runs it (`amCommand`), not on the master's host.
   * When the node hosts AMs and the job did not ask for a dedicated one (`FUXI_AM_MODE`), the plan
   * is marked to run in the AM host (`FUXI_AM_HOSTED`); the command stays, for a host that cannot start.
   */
  private resolveAmCommand(input: ReturnType<typeof fromWireStartWorkers>): ReturnType<typeof fromWireStartWorkers> {
    if (cmpInt64(input.epoch, 0) <= 0) return input;
    const plans = input.plans.map((p) => {
      if (p.suId !== AM_SU || p.command.argv.length > 0) return p;
      const hosted = !!this.hosted && (p.command.env.FUXI_AM_MODE || DEFAULT_AM_MODE) !== 'dedicated';
      const env = hosted ? { ...p.command.env, [AM_HOSTED_ENV]: '1' } : p.command.env;
      return { ...p, command: { ...p.command, argv: [...this.config.amCommand], env } };
    });
    return { ...input, plans };
  }

  /** Apps still active here (a running worker or a grant on this node) keep their finished workers' directories. */
  private workerTableView(): WorkerTableView {
    const workers = this.core.listWorkers();
    const activeApps = new Set<string>(this.core.grantTable().map((g) => g.appId));
    for (const w of workers) if (!isWorkerTerminal(w.state)) activeApps.add(w.appId);
    return { workers, activeApps };
  }

  /** One sweep of finished worker directories (errors are logged; the next sweep tries again). */
  async sweepWorkDirs(): Promise<SweepResult | undefined> {
    if (this.stopped) return undefined;
    try {
      return await this.sweeper.sweep(this.now());
    } catch (e) {
      this.log.warn({ err: (e as Error).message }, 'work dir sweep failed');
      return undefined;
    }
  }

  /** Finds a worker dir on disk from an earlier agent run (its cmd.json names task/instance/attempt). */
  private async findOnDisk(appId: string, task: string, instance: number, attempt: number): Promise<string | undefined> {
    const appDir = path.dirname(workerDir(this.config.workDir, appId, 'x'));
    let names: string[];
    try {
      names = await fs.promises.readdir(appDir);
    } catch {
      return undefined;
    }
    let best: { dir: string; attempt: number; mtime: number } | undefined;
    for (const n of names) {
      const dir = path.join(appDir, n);
      try {
        const cmd = JSON.parse((await readRegularAsync(path.join(dir, 'cmd.json'))) ?? '') as Partial<WorkerInfo>;
        if (cmd.task !== task || cmd.instance !== instance) continue;
        if (attempt > 0 && cmd.attempt !== attempt) continue;
        const mtime = (await fs.promises.stat(path.join(dir, 'cmd.json'))).mtimeMs;
        const a = cmd.attempt ?? 0;
        if (!best || a > best.attempt || (a === best.attempt && mtime > best.mtime)) best = { dir, attempt: a, mtime };
      } catch {
        continue;
      }
    }
    return best?.dir;
  }
}
