/**
 * The DAG application master's shell: the `AppMasterService` gRPC server, the connection to the
 * master, clients to the agents and the heartbeat timer around the pure `DagAppMaster` core. Every
 * RPC and tick becomes a core input; every effect the core returns is executed here.
 *
 * Master calls (UpdateRequests, ReturnSlots, ReportAppState, FinishApp) go through one queue, so
 * their sequence numbers reach the master in order; calls to agents run concurrently.
 *
 * Master failover: every master address (FUXI_MASTER, comma-separated) is used; idempotent calls
 * are retried across them and follow a standby's redirect. The master epoch is tracked from every
 * answer and push: an answer from an older epoch (a deposed master) is ignored and the call goes
 * to another master; a push from one is refused (FAILED_PRECONDITION). When the epoch goes up after
 * registration, or `UpdateRequests` answers `reportState`, the next master call is preceded by
 * `ReportAppState` (units, every outstanding request, the assignment table), and request deltas
 * already counted in that report are not sent again.
 *
 * Hard state: `snapshot` effects become `SaveAppSnapshot` calls in the same master queue (batched:
 * everything pending goes in one call; idempotent through a per-attempt `seq`; retried). Entries
 * wait up to `snapshotDelayMs` for others, and go right before any other master call.
 *
 * AM failover: attempt > 1 (FUXI_AM_ATTEMPT, set by the master when it restarts the AM) loads the
 * snapshot (`GetAppSnapshot`), registers (getting the assignments the app holds), asks every agent
 * in them for the app's workers (`ListWorkers`, retried for `adoptWaitMs`) and hands all of it to
 * the core, which adopts the running workers. Adopted workers (and agents that did not answer) are
 * polled with `ListWorkers` every `pollMs` until they finish: their agents may still send events
 * to the old AM's address. Plans and stops always carry this AM's attempt.
 *
 * Agent timing failures: `AgentsTimedOut` goes to the core (policy `onAgentTimeout` of the job).
 *
 * Network partitions: every UpdateRequests carries the connectivity version the AM holds; the
 * master answers a stale one with its graph (broken links, nodes partitioned from the master),
 * which goes to the core (`connectivityChanged`; a graph of version 0, from a master that knows
 * nothing yet, is not). The core's placement constraints (reach, avoid) go with the next
 * UpdateRequests when they changed and with every ReportAppState. A job with `network:
 * independent` opts out: its core never sees the graph and no constraints are sent.
 *
 * ```ts
 * const am = new AppMaster({ masters: ['127.0.0.1:7070'], appId, amAttempt: 1, log });
 * const { succeeded, message } = await am.run(); // resolves after FinishApp
 * ```
 */
import {
  AM_TOKEN_ENV,
  backoffMs,
  cmpInt64,
  errorMessage,
  FailedPreconditionError,
  InvalidArgumentError,
  StaleEpochError,
  UnavailableError,
  validateJobSpec,
  type JobSpec,
  type Logger,
} from '@fuxi/common';
import {
  loadFuxiProto,
  type AgentServiceDefinition,
  type AgentsTimedOutRequest__Output,
  type AppMasterServiceDefinition,
  type Connectivity__Output,
  type UpdateAssignmentsRequest__Output,
  type WorkerEventsRequest__Output,
  type WorkerStatus__Output,
} from '@fuxi/proto';
import type * as grpc from '@grpc/grpc-js';
import {
  AGENT_BATCHED,
  batchedCalls,
  callBatched,
  connect,
  implement,
  jobSpecFromProto,
  MasterConnection,
  retry,
  RpcError,
  sharedTransport,
  startServer,
  transportFromEnv,
  type ServiceImpl,
  type Transport,
  type TypedClient,
  AM_SERVER_BATCHED,
} from '@fuxi/rpc';
import { DagAppMaster } from '../core/dag-am.js';
import type { AmEffect, Assignment, ListedWorker, Recovery, RequestDelta, ScheduleUnitConfig, TaskProgress, WorkerEvent } from '../core/types.js';
import { assignmentFromProto, int64ToNumber, listedWorkerFromProto, pathFromProto, runningWorkerToProto, workerEventFromProto } from './mapping.js';

export interface AppMasterConfig {
  /** Master addresses (host:port); standbys redirect to the leader. */
  masters: string[];
  appId: string;
  amAttempt: number;
  /** The node this AM runs on (for logs). */
  nodeId?: string;
  /**
   * This attempt's token (FUXI_AM_TOKEN, from the master at launch): the bearer token of every
   * master and agent call. Never logged, never passed to workers.
   */
  token?: string;
  /** Address the AppMasterService binds (default `127.0.0.1:0`). */
  bind?: string;
  /** Address agents and the master should use, when it differs from the bound one. */
  advertise?: string;
  /**
   * How the AppMasterService is served (default: a server of its own at `bind`). An AM host serves
   * its AMs on one server, each at a route of its own (am-host.ts): their callers need no new
   * connection per job.
   */
  serve?: (handlers: grpc.UntypedServiceImplementation) => Promise<AmServing>;
  log: Logger;
  /**
   * Mutual TLS (or plaintext) of its server and every call; default the process's. From the
   * agent: `FUXI_TLS_CA`, `FUXI_TLS_CERT`, `FUXI_TLS_KEY` (or `FUXI_INSECURE=1`).
   */
  transport?: Transport;
  /** How long master calls are retried while the master is unreachable (default 5 min). */
  masterRetryForMs?: number;
  /**
   * Master calls go in batches shared with the process's other AMs (`MasterService.AmCalls`,
   * @fuxi/rpc call-batch.ts): set by the AM host for the AMs it runs inline.
   */
  batchMasterCalls?: boolean;
  /**
   * Whether the AM holds a WatchAssignments stream open to the master (default true). False (an AM
   * host's inline AMs): the master pushes its assignments as UpdateAssignments calls, batched per
   * server with the other AMs' pushes (`AppMasterService.Calls`), so a job costs the master and the
   * host no stream of its own; a lost master is then noticed at the next heartbeat, not at once.
   */
  assignmentStream?: boolean;
  /** How long one master call cycles through the masters before `masterRetryForMs` takes over (default 2 min). */
  masterCallRetryForMs?: number;
  /** How long a StartWorkers is retried on UNAVAILABLE before the plans count as rejected (default 60 s). */
  agentRetryForMs?: number;
  /** Per-call deadline (default 10 s). */
  deadlineMs?: number;
  /** Heartbeat interval when RegisterApp does not say (default 1 s). */
  defaultHeartbeatMs?: number;
  /** See `DagAmOptions.returnSettleMs`; default max(15 s, 5 heartbeats). */
  returnSettleMs?: number;
  /** After a restart: how long ListWorkers is retried per agent before its slots count as unknown (default 15 s). */
  adoptWaitMs?: number;
  /** How often adopted workers (and agents that did not answer) are polled with ListWorkers (default 3 s). */
  pollMs?: number;
  /**
   * The master refusing our requests on the count of slots (it holds slots for us we have not heard
   * of yet) is waited out; refusals in a row for longer than this mean our view and the master's
   * disagree for good, and the AM exits: a new attempt starts from the master's view (default 60 s).
   */
  refusalGiveUpMs?: number;
  /**
   * Snapshot entries wait up to this long for others before a SaveAppSnapshot takes them, unless
   * another call to the master goes first (they go right before it, so the master still has them
   * before anything that follows from them). Default SNAPSHOT_DELAY_MS; 0: each batch at once.
   */
  snapshotDelayMs?: number;
}

/**
 * How long snapshot entries wait for others (`AppMasterConfig.snapshotDelayMs`). A job of many
 * short instances logs an entry for each one that ends: with each SaveAppSnapshot sent as soon as
 * the one before it was answered, `make bench-throughput`'s oneJob (1,000 instances) made 297-335
 * calls; a restarted AM learns what ended since the last one from the agents anyway.
 */
export const SNAPSHOT_DELAY_MS = 100;

/** Where an AM's AppMasterService is served, and how it stops. */
export interface AmServing {
  /** What agents and the master call (host:port, or host:port#route on a shared server). */
  readonly address: string;
  /** Stops serving this AM (calls under way may finish within `graceMs`). */
  shutdown(graceMs?: number): Promise<void>;
}

export interface AppResult {
  succeeded: boolean;
  message: string;
}

type AgentClient = TypedClient<AgentServiceDefinition>;

/** An answer from a deposed master (older epoch than the newest seen): retried at another master. */
export class DeposedMasterError extends UnavailableError {
  constructor(method: string, epoch: string, newest: string) {
    super(`${method} answered by a deposed master (epoch ${epoch}, newest seen ${newest})`);
  }
}

function isTransient(e: unknown): boolean {
  return (e instanceof RpcError && (e.code === 'UNAVAILABLE' || e.code === 'DEADLINE_EXCEEDED')) || e instanceof DeposedMasterError;
}

/**
 * A newer AM attempt of this app exists (an agent or the master fenced us: `StaleEpochError('am
 * attempt')`). This AM must stop: its plans would be refused and, counted as failures, could fail
 * the job in its snapshot.
 */
/**
 * The master refused an UpdateRequests on the count of slots (outstanding plus granted above what the
 * job's spec allows; master request-limits.ts), applying none of it.
 */
function isCountRefusal(e: unknown): e is RpcError {
  return e instanceof RpcError && e.code === 'INVALID_ARGUMENT' && e.details.field === 'deltas.delta';
}

export function isSuperseded(e: unknown): boolean {
  return e instanceof RpcError && e.code === 'FAILED_PRECONDITION' && (e.details.stale === 'am attempt' || /stale am attempt/.test(e.message));
}

/** How long the end of a job waits for the stops still going out to agents (see `finish`). */
const FINISH_STOPS_WAIT_MS = 2000;
/** How long a return of slots waits for the stops to their nodes issued before it. */
const STOPS_BEFORE_RETURN_WAIT_MS = 2000;

/** Waits until every one of `ops` has settled, or `ms` have passed. */
async function settledWithin(ops: ReadonlyArray<Promise<unknown>>, ms: number): Promise<void> {
  if (ops.length === 0) return;
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    Promise.allSettled(ops),
    new Promise<void>((resolve) => {
      timer = setTimeout(resolve, ms);
    }),
  ]);
  clearTimeout(timer);
}

/** After losing the assignment stream, the next heartbeat goes out within this (jittered). */
const STREAM_LOSS_HEARTBEAT_MS = 1000;

/** An IPv6 literal in brackets, for host:port. */
function hostPort(host: string): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}

/** Reads the AM's configuration from the environment the agent gives it. */
export function configFromEnv(env: NodeJS.ProcessEnv, log: Logger): AppMasterConfig {
  const masters = (env.FUXI_MASTER ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (masters.length === 0) throw new InvalidArgumentError('FUXI_MASTER', 'must list at least one master address (host:port, comma-separated)');
  const appId = env.FUXI_APP_ID ?? '';
  if (!appId) throw new InvalidArgumentError('FUXI_APP_ID', 'must be set');
  const amAttempt = Number(env.FUXI_AM_ATTEMPT ?? '1');
  if (!Number.isInteger(amAttempt) || amAttempt < 1)
    throw new InvalidArgumentError('FUXI_AM_ATTEMPT', `must be a positive integer, got "${env.FUXI_AM_ATTEMPT}"`);
  const tls = transportFromEnv(env);
  return {
    ...(tls.tls || tls.insecure ? { transport: sharedTransport(tls, 'FUXI_TLS_CA') } : {}),
    masters,
    appId,
    amAttempt,
    nodeId: env.FUXI_NODE_ID ?? '',
    ...(env[AM_TOKEN_ENV] ? { token: env[AM_TOKEN_ENV] } : {}),
    // The agent tells us where we run: bind where it listens, advertise the host as peers reach it.
    bind: env.FUXI_AM_BIND || `${hostPort(env.FUXI_BIND_HOST || '127.0.0.1')}:0`,
    ...(env.FUXI_AM_ADVERTISE ? { advertise: env.FUXI_AM_ADVERTISE } : env.FUXI_NODE_HOST ? { advertise: `${hostPort(env.FUXI_NODE_HOST)}:0` } : {}),
    log,
  };
}

export class AppMaster {
  private readonly log: Logger;
  private readonly proto = loadFuxiProto();
  private conn: MasterConnection;
  private readonly agents = new Map<string, AgentClient>();
  private core: DagAppMaster;
  private server: AmServing | undefined;
  private serverClosed: Promise<void> | undefined;
  private epoch = '0';
  private requestSeq = 0;
  private returnSeq = 0;
  /** A ReportAppState must precede the next master call. */
  private reportWanted = false;
  /** `request` effects queued so far (ids from 1), and the last one a state report already carried. */
  private requestIds = 0;
  private reportedUpTo = 0;
  private masterQueue: Promise<void> = Promise.resolve();
  private heartbeatQueued = false;
  /** A heartbeat tick came while held (pause()): it runs at the release, as a stopped process's overdue timer does at SIGCONT. */
  private tickHeld = false;
  /** An UpdateRequests carrying a request was answered since the last heartbeat tick, and when the last one was. */
  private requestAnsweredSinceTick = false;
  private requestAnsweredAtMs = 0;
  private heartbeatFailures = 0;
  /** Count refusals of our requests in a row, and since when (0: the last request was taken). */
  private refusals = 0;
  private refusedSince = 0;
  /** The master's AM heartbeat interval (from RegisterApp). */
  private heartbeatMs = 1000;
  /** The job cares about connectivity (JobSpec.network is not "independent"). */
  private connected = true;
  /** Version of the master's connectivity graph the core holds ('0': none). */
  private connectivityVersion = '0';
  /** The placement constraints the master has (JSON), as last sent and acknowledged ('': not sent yet). */
  private constraintsSent = '';
  private timer: NodeJS.Timeout | undefined;
  /** When a master last answered our ReportAppState (0: never). */
  private reportedAtMs = 0;
  private pollTimer: NodeJS.Timeout | undefined;
  private polling = false;
  /**
   * Snapshot data not sent yet, and whether a SaveAppSnapshot is queued to take it. The topology
   * waits for the first entries and goes in the same call: a snapshot without entries tells a
   * restarted AM nothing, and a one-instance job then writes none at all.
   */
  private snapshotSeq = 0;
  private pendingTopology = '';
  private pendingEntries: string[] = [];
  private snapshotQueued = false;
  /** Set while entries wait for others (`snapshotDelayMs`). */
  private snapshotTimer: NodeJS.Timeout | undefined;
  /**
   * The result a queued FinishApp carries. Once it is queued, the returns and snapshot entries
   * queued before it are not sent: the master's end of the job releases every slot of the app and
   * deletes its snapshot (master jobs.ts `endJob`); if FinishApp never lands, the next attempt
   * learns those instances from the agents, as it does for anything not in the snapshot.
   */
  private finishingWith: AppResult | undefined;
  /** Worker events and timing-out notices that arrived before the core started (replayed after). */
  private early: Array<{ nodeId: string; statuses: readonly WorkerStatus__Output[] }> = [];
  private earlyTimedOut: { nodeIds: Set<string>; recovered: Set<string> } = { nodeIds: new Set(), recovered: new Set() };
  /** Calls to agents in flight, each with the node it goes to ('' when none in particular). */
  private readonly agentOps = new Map<Promise<void>, string>();
  /** The StopWorkers calls among them, each with its node (a return of slots there waits for them). */
  private readonly stopOps = new Map<Promise<void>, string>();
  /** Nodes the master's connectivity graph says this AM's host cannot reach. */
  private cutFromHere = new Set<string>();
  private stopped = false;
  /** Aborted by shutdown(): retries of master and agent calls end at once. */
  private readonly stopping = new AbortController();
  /** The open WatchAssignments stream: to which master, in which epoch. */
  private assignmentWatch: { address: string; epoch: string; cancel(): void } | undefined;
  private settle!: { resolve: (r: AppResult) => void; reject: (e: unknown) => void };
  /** While set (pause()), inputs and timers wait for it. */
  private held: { promise: Promise<void>; release: () => void } | undefined;
  private shuttingDown: Promise<void> | undefined;
  private readonly done: Promise<AppResult>;

  constructor(private readonly cfg: AppMasterConfig) {
    this.log = cfg.log.child({ appId: cfg.appId, amAttempt: cfg.amAttempt });
    this.conn = this.connectMaster(cfg.masters);
    this.core = new DagAppMaster({ log: this.log });
    this.done = new Promise<AppResult>((resolve, reject) => (this.settle = { resolve, reject }));
    this.done.catch(() => undefined);
  }

  private get masterRetryForMs(): number {
    return this.cfg.masterRetryForMs ?? 300_000;
  }

  private connectMaster(addresses: readonly string[]): MasterConnection {
    return new MasterConnection(addresses, {
      retryForMs: Math.min(this.cfg.masterCallRetryForMs ?? 120_000, this.masterRetryForMs),
      onRedirect: (from, to) => this.log.info({ from, to }, 'following the master leader'),
      ...(this.cfg.token ? { token: this.cfg.token } : {}),
      ...(this.cfg.transport ? { transport: this.cfg.transport } : {}),
      ...(this.cfg.batchMasterCalls ? { batch: true } : {}),
    });
  }

  /**
   * Moves the master connection off its current address to the next configured one: for a
   * deposed master that still answers (with an older epoch) and so never fails over by itself.
   * Master calls run one at a time (the queue), so none is in flight on the old connection.
   */
  private moveOn(): void {
    const list = this.cfg.masters;
    if (list.length < 2 || this.stopped) return;
    const from = (list.indexOf(this.conn.address) + 1) % list.length;
    this.conn.close();
    this.conn = this.connectMaster([...list.slice(from), ...list.slice(0, from)]);
  }

  /** Current master epoch as this AM knows it (decimal int64; '0' before registration). */
  get masterEpoch(): string {
    return this.epoch;
  }

  private get deadlineMs(): number {
    return this.cfg.deadlineMs ?? 10_000;
  }

  /**
   * Options of master calls that are safe to retry (every AM call carries a seq or is idempotent).
   * The deadline is short: a frozen master must not hold the AM past a failover's aggregation
   * window; the call is simply retried at the next master.
   */
  private get retrying(): { retry: true; deadlineMs: number } {
    return { retry: true, deadlineMs: Math.min(this.deadlineMs, 2000) };
  }

  /** host:port of the AppMasterService (after `run` started it). */
  get address(): string {
    return this.server?.address ?? '';
  }

  /**
   * Serves, registers, runs the job to its end and calls FinishApp; resolves with the job's result
   * after shutting the server down. Rejects on a fatal error (the caller exits non-zero).
   */
  async run(): Promise<AppResult> {
    try {
      await this.startServing();
      await this.register();
      return await this.done;
    } finally {
      await this.shutdown();
    }
  }

  // ---------------------------------------------------------------- server

  private async startServing(): Promise<void> {
    const def = this.proto.AppMasterService.service;
    const impl: ServiceImpl<AppMasterServiceDefinition> = {
      // Agents' WorkerEvents and the master's UpdateAssignments for this AM, several in one
      // (call-batch.ts; at an AM host the host's router takes these, each entry to its AM).
      Calls: batchedCalls(def, () => impl, AM_SERVER_BATCHED),
      UpdateAssignments: async (req: UpdateAssignmentsRequest__Output) => {
        await this.held?.promise;
        this.checkEpoch(req.epoch, 'UpdateAssignments');
        const epoch = req.epoch && req.epoch !== '0' ? req.epoch : this.epoch;
        if (this.core.started) {
          this.execute(
            this.core.assignments({ epoch, seq: int64ToNumber(req.seq), full: req.full, assignments: req.assignments.map(assignmentFromProto) }, Date.now()),
          );
        }
        return { appliedSeq: String(this.core.assignmentSeqFor(epoch)) };
      },
      WorkerEvents: async (req: WorkerEventsRequest__Output) => {
        await this.held?.promise;
        this.onWorkerStatuses(req.nodeId, req.events);
        if (req.paths.length > 0 && this.core.started) this.execute(this.core.pathsReported(req.paths.map(pathFromProto), Date.now()));
        return {};
      },
      AgentsTimedOut: async (req: AgentsTimedOutRequest__Output) => {
        await this.held?.promise;
        this.checkEpoch(req.epoch, 'AgentsTimedOut');
        this.log.warn({ nodes: req.nodeIds, recovered: req.recoveredNodeIds }, 'master reports agents timing out');
        if (this.core.started) {
          this.execute(this.core.agentsTimedOut(req.nodeIds, req.recoveredNodeIds, Date.now()));
        } else {
          const t = this.earlyTimedOut;
          for (const n of req.nodeIds) {
            t.nodeIds.add(n);
            t.recovered.delete(n);
          }
          for (const n of req.recoveredNodeIds) {
            t.recovered.add(n);
            t.nodeIds.delete(n);
          }
        }
        return {};
      },
      GetAppState: () => ({
        appId: this.cfg.appId,
        amAttempt: this.cfg.amAttempt,
        assignments: this.core.assignmentTable(),
        progress: this.core.progress(),
        workers: this.core.workers().map((w) => runningWorkerToProto(w, this.cfg.appId, this.cfg.amAttempt)),
      }),
    };
    const handlers = implement(def, impl, this.log);
    const server = this.cfg.serve
      ? await this.cfg.serve(handlers)
      : await startServer({
          bind: this.cfg.bind ?? '127.0.0.1:0',
          ...(this.cfg.advertise ? { advertise: this.cfg.advertise } : {}),
          log: this.log,
          ...(this.cfg.transport ? { transport: this.cfg.transport } : {}),
          services: [{ name: 'fuxi.v1.AppMasterService', definition: def, handlers }],
        });
    this.server = server;
    // Stopped while the server was being set up: the shutdown found none to close.
    if (this.stopped) await this.closeServer();
    else this.log.info({ address: server.address, node: this.cfg.nodeId }, 'application master serving');
  }

  /** Closes the server (or leaves the shared server's route), once, whoever asks first. */
  private closeServer(): Promise<void> {
    if (!this.server) return Promise.resolve();
    this.serverClosed ??= this.server.shutdown(1000);
    return this.serverClosed;
  }

  /** Fencing: commands from a deposed master (older epoch) are refused with FAILED_PRECONDITION. */
  private checkEpoch(epoch: string, source: string): void {
    if (this.noteEpoch(epoch, source)) return;
    this.log.warn({ source, epoch, newest: this.epoch }, 'command from a deposed master refused');
    throw new StaleEpochError('epoch', epoch, this.epoch);
  }

  /**
   * Takes note of a master epoch seen in an answer or a push ('' / '0': none given). False for an
   * older one (a deposed master). A newer one after registration means a new leader that rebuilds
   * its soft state: our ReportAppState goes out before any further master call.
   */
  private noteEpoch(epoch: string, source: string): boolean {
    if (!epoch || epoch === '0') return true;
    const c = cmpInt64(epoch, this.epoch);
    if (c < 0) return false;
    if (c > 0) {
      const from = this.epoch;
      this.epoch = String(BigInt(epoch));
      // A report that this master answered needs no other.
      if (this.core.started && source !== 'ReportAppState') {
        this.log.info({ from, to: this.epoch, source }, 'new master epoch; reporting our state');
        this.wantReport();
      }
    }
    return true;
  }

  /** An answer's epoch: from a deposed master, the connection moves on and the call is retried. */
  private checkAnswer(epoch: string, method: string): void {
    if (this.noteEpoch(epoch, method)) return;
    this.log.warn({ method, master: this.conn.address, epoch, newest: this.epoch }, 'answer from a deposed master ignored; trying another master');
    this.moveOn();
    throw new DeposedMasterError(method, epoch, this.epoch);
  }

  /** Queues a ReportAppState ahead of whatever master call comes next. */
  private wantReport(): void {
    if (this.reportWanted) return;
    this.reportWanted = true;
    this.enqueueMaster(async () => {});
  }

  /**
   * Sends ReportAppState while one is wanted (again if another is asked for meanwhile), retried
   * like every master call. The new master replaces its view of our outstanding requests with it,
   * so request deltas queued before it was taken are not sent afterwards.
   */
  private async reportIfWanted(): Promise<void> {
    while (this.reportWanted && !this.stopped) {
      this.reportWanted = false;
      const upTo = this.requestIds;
      const constraints = this.connected ? this.core.placementConstraints() : undefined;
      const req = {
        appId: this.cfg.appId,
        amAttempt: this.cfg.amAttempt,
        address: this.address,
        units: this.core.units(),
        requests: this.core.outstandingRequests(),
        assignments: this.core.assignmentTable(),
        ...(constraints ? { constraints } : {}),
        predictedBadHosts: this.core.predictedBadHosts(),
      };
      let res;
      try {
        res = await this.persist('ReportAppState', async () => {
          const r = await this.conn.call('ReportAppState', req, this.retrying);
          this.checkAnswer(r.epoch, 'ReportAppState');
          return r;
        });
      } catch (e) {
        this.reportWanted = true;
        throw e;
      }
      this.reportedUpTo = upTo;
      this.reportedAtMs = Date.now();
      // The report told the master we are alive and brought our assignments: the next heartbeat is
      // an interval from now (in a failover, a heartbeat right behind the report only adds load
      // on a new leader that every AM and agent is reporting to).
      if (this.timer) this.startHeartbeats();
      if (constraints) this.constraintsSent = JSON.stringify(constraints);
      // The assignment stream opens after the next answered call (the heartbeat, an interval from
      // now, at the latest), not now: a new leader that every AM and agent reports to takes their
      // reports first, and pushes by call meanwhile.
      if (res.fullAssignments && !this.reportWanted) {
        // Built from this report: applies like a pushed full table.
        const epoch = res.epoch && res.epoch !== '0' ? res.epoch : this.epoch;
        this.execute(
          this.core.assignments(
            { epoch, seq: int64ToNumber(res.assignmentSeq), full: true, assignments: res.assignments.map(assignmentFromProto) },
            Date.now(),
          ),
        );
      }
      this.log.info(
        { epoch: this.epoch, master: this.conn.address, units: req.units.length, requests: req.requests.length, assignments: req.assignments.length },
        'state reported to the master',
      );
    }
  }

  private onWorkerStatuses(nodeId: string, statuses: readonly WorkerStatus__Output[]): void {
    if (!this.core.started) {
      // Before the core starts (a restart collecting its state): kept, replayed once it has.
      if (this.early.length < 10_000) this.early.push({ nodeId, statuses });
      return;
    }
    const events: WorkerEvent[] = [];
    for (const s of statuses) {
      if (s.appId && s.appId !== this.cfg.appId) continue;
      // Workers planned by earlier AM attempts are ours too (adopted); a newer attempt's are not.
      if (s.amAttempt && s.amAttempt > this.cfg.amAttempt) continue;
      const ev = workerEventFromProto(s);
      if (ev) events.push(ev);
    }
    if (events.length > 0) this.execute(this.core.workerEvents(nodeId, events, Date.now()));
  }

  // ---------------------------------------------------------------- registration and heartbeat

  private async register(): Promise<void> {
    const restart = this.cfg.amAttempt > 1;
    const snapshot = restart ? await this.loadSnapshot() : undefined;
    const req = { appId: this.cfg.appId, amAttempt: this.cfg.amAttempt, address: this.address };
    const res = await this.persist('RegisterApp', async () => {
      const r = await this.conn.call('RegisterApp', req, this.retrying);
      this.checkAnswer(r.epoch, 'RegisterApp');
      return r;
    });
    if (!res.spec) throw new FailedPreconditionError(`RegisterApp returned no job spec for app ${this.cfg.appId}`);
    const raw = jobSpecFromProto(res.spec);
    const heartbeatMs = res.heartbeatIntervalMs > 0 ? res.heartbeatIntervalMs : (this.cfg.defaultHeartbeatMs ?? 1000);
    this.core = new DagAppMaster({
      log: this.log,
      returnSettleMs: this.cfg.returnSettleMs ?? Math.max(15_000, 5 * heartbeatMs),
      ...(this.cfg.nodeId ? { nodeId: this.cfg.nodeId } : {}),
    });
    this.connected = res.spec.network !== 'independent';
    this.log.info({ job: raw.jobId, name: raw.name, tasks: raw.tasks.map((t) => t.name), heartbeatMs }, 'registered with the master');
    const held = res.assignments.map(assignmentFromProto);
    let effects: AmEffect[];
    try {
      // The master stored a validated spec; validating again fills proto3 zero values with defaults.
      const spec: JobSpec = validateJobSpec(raw);
      let recovery: Recovery | undefined;
      if (restart) {
        const listed = await this.listAtRestart(held);
        recovery = { snapshot: snapshot ?? { topology: '', entries: [] }, workers: listed.workers, unlistedNodes: listed.unlisted };
      }
      effects = this.core.start(spec, { epoch: this.epoch, seq: int64ToNumber(res.assignmentSeq), assignments: held }, Date.now(), recovery);
    } catch (e) {
      if (!(e instanceof InvalidArgumentError)) throw e;
      // A spec this AM cannot run fails the job instead of crash-looping the AM.
      effects = [{ kind: 'finish', succeeded: false, message: `invalid job spec: ${e.message}` }];
    }
    this.execute(effects);
    if (this.core.started) {
      const t = this.earlyTimedOut;
      if (t.nodeIds.size > 0 || t.recovered.size > 0) this.execute(this.core.agentsTimedOut([...t.nodeIds], [...t.recovered], Date.now()));
      for (const e of this.early.splice(0)) this.onWorkerStatuses(e.nodeId, e.statuses);
    }
    this.early = [];
    this.heartbeatMs = heartbeatMs;
    this.startHeartbeats();
    this.pollTimer = setInterval(() => this.poll(), this.cfg.pollMs ?? 3000);
  }

  /** The snapshot of earlier AM attempts; empty when the master has none (or cannot serve one). */
  private async loadSnapshot(): Promise<{ topology: string; entries: string[] }> {
    try {
      const res = await this.persist('GetAppSnapshot', () => this.conn.call('GetAppSnapshot', { appId: this.cfg.appId }, this.retrying));
      this.log.info({ topology: res.topology !== '', entries: res.entries.length }, 'snapshot loaded');
      return { topology: res.topology, entries: res.entries };
    } catch (e) {
      if (isTransient(e)) throw e;
      this.log.warn({ err: errorMessage(e) }, 'no snapshot from the master; recovering from the agents only');
      return { topology: '', entries: [] };
    }
  }

  /**
   * Every agent holding our slots lists the app's workers (retried for `adoptWaitMs`). Agents that
   * do not answer are returned as `unlisted`: the core keeps their slots reserved and polls them.
   */
  private async listAtRestart(held: readonly Assignment[]): Promise<{ workers: ListedWorker[]; unlisted: string[] }> {
    const nodes = new Map<string, string>();
    for (const a of held) if (a.nodeId && !nodes.has(a.nodeId)) nodes.set(a.nodeId, a.nodeAddress);
    const until = Date.now() + (this.cfg.adoptWaitMs ?? 15_000);
    const workers: ListedWorker[] = [];
    const unlisted: string[] = [];
    await Promise.all(
      [...nodes].map(async ([nodeId, address]) => {
        const listed = address ? await this.listWorkers(nodeId, address, until) : undefined;
        if (listed) workers.push(...listed);
        else unlisted.push(nodeId);
      }),
    );
    this.log.info({ nodes: nodes.size, workers: workers.length, unlisted }, 'agents listed the workers of earlier attempts');
    return { workers, unlisted: unlisted.sort() };
  }

  /** `ListWorkers` for this app on one agent, retried on UNAVAILABLE until `until`; undefined when it did not answer. */
  private async listWorkers(nodeId: string, address: string, until: number): Promise<ListedWorker[] | undefined> {
    try {
      const res = await retry(
        () => this.agent(address).ListWorkers({ appId: this.cfg.appId }, { deadlineMs: Math.max(100, Math.min(this.deadlineMs, until - Date.now())) }),
        {
          deadline: until,
          signal: this.stopping.signal,
        },
      );
      return this.listedOf(nodeId, res.workers);
    } catch (e) {
      if (!this.stopped) this.log.warn({ node: nodeId, err: errorMessage(e) }, 'agent did not list its workers');
      return undefined;
    }
  }

  private listedOf(nodeId: string, statuses: readonly WorkerStatus__Output[]): ListedWorker[] {
    const out: ListedWorker[] = [];
    for (const s of statuses) {
      if (s.appId && s.appId !== this.cfg.appId) continue;
      if (s.amAttempt && s.amAttempt > this.cfg.amAttempt) continue;
      const w = listedWorkerFromProto(s, nodeId);
      if (w) out.push(w);
    }
    return out;
  }

  /** Polls the agents of adopted workers (and of agents that did not answer yet): one ListWorkers each. */
  private poll(): void {
    if (this.stopped || this.held || this.polling || !this.core.started || this.core.result) return;
    const nodes = this.core.nodesToPoll();
    if (nodes.length === 0) return;
    this.polling = true;
    const deadlineMs = Math.min(this.deadlineMs, Math.max(500, this.cfg.pollMs ?? 3000));
    const op = Promise.all(
      nodes.map(async (nodeId) => {
        const address = this.core.addressOf(nodeId);
        if (!address) return;
        try {
          const res = await this.agent(address).ListWorkers({ appId: this.cfg.appId }, { deadlineMs });
          if (!this.stopped) this.execute(this.core.workersListed(nodeId, this.listedOf(nodeId, res.workers), Date.now()));
        } catch (e) {
          this.log.debug({ node: nodeId, err: errorMessage(e) }, 'polling an agent for adopted workers failed');
        }
      }),
    ).then(() => {
      this.polling = false;
    });
    this.track(op);
  }

  /** (Re)starts the heartbeat timer: the next one an interval from now. */
  private startHeartbeats(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = setInterval(() => this.onTimer(), this.heartbeatMs);
  }

  private onTimer(): void {
    if (this.stopped) return;
    if (this.held) {
      this.tickHeld = true;
      return;
    }
    this.execute(this.core.tick(Date.now()));
    if (this.heartbeatQueued || this.core.result) return;
    // A request answered since the last tick told the master all a heartbeat would (that we live,
    // our progress, the assignment seq we hold): this tick sends nothing, the next one does.
    if (this.requestAnsweredSinceTick) {
      this.requestAnsweredSinceTick = false;
      return;
    }
    this.heartbeatQueued = true;
    const reflected = this.core.returnsIssued;
    const queuedAt = Date.now();
    this.enqueueMaster(async () => {
      this.heartbeatQueued = false;
      // A state report went out ahead of it (reportIfWanted), or a request queued ahead of it, and
      // was answered: that was the heartbeat.
      if (this.reportedAtMs >= queuedAt || this.requestAnsweredAtMs >= queuedAt) return;
      try {
        await this.updateRequests([], [], false, reflected);
        this.heartbeatFailures = 0;
      } catch (e) {
        this.heartbeatFailures++;
        if (this.heartbeatFailures === 1 || this.heartbeatFailures % 20 === 0)
          this.log.warn({ failures: this.heartbeatFailures, err: errorMessage(e) }, 'heartbeat to the master failed');
        // No leader right now (the old one died, the next one is being elected): try again soon,
        // jittered and backing off up to the interval, so the new leader hears from us within its
        // aggregation window instead of an interval later.
        const retryInMs = backoffMs(this.heartbeatFailures, { initialMs: 250, maxMs: this.heartbeatMs }, Math.random);
        if (!this.stopped) setTimeout(() => this.onTimer(), retryInMs).unref();
      }
    });
  }

  // ---------------------------------------------------------------- effects

  private execute(effects: readonly AmEffect[]): void {
    for (const e of effects) {
      if (this.stopped) return;
      switch (e.kind) {
        case 'snapshot':
          if (e.topology) this.pendingTopology = e.topology;
          this.pendingEntries.push(...e.entries);
          if (this.pendingEntries.length > 0 && !this.snapshotQueued && !this.snapshotTimer) {
            const waitMs = this.cfg.snapshotDelayMs ?? SNAPSHOT_DELAY_MS;
            if (waitMs <= 0) this.queueSnapshot();
            else {
              this.snapshotTimer = setTimeout(() => this.queueSnapshot(), waitMs);
              this.snapshotTimer.unref();
            }
          }
          break;
        case 'request':
          this.log.debug({ units: e.units.map((u) => u.suId), deltas: e.deltas }, 'requesting slots');
          {
            const reflected = this.core.returnsIssued;
            const id = ++this.requestIds;
            this.enqueueMaster(() => this.updateRequests(e.units, e.deltas, true, reflected, id));
          }
          break;
        case 'return': {
          this.log.debug({ returns: e.returns }, 'returning slots');
          // The agent must hear of a stop before its grant shrinks: it enforces a shrunk grant on
          // the newest workers over it, which need not be the one being stopped (a healthy one
          // would be killed, then the stopped one too). So a return waits for the stops issued
          // before it to its nodes (bounded; not across a link known broken: those the
          // revocation stops).
          const nodes = new Set(e.returns.map((r) => r.nodeId));
          const stops = [...this.stopOps].filter(([, n]) => nodes.has(n) && !this.cutFromHere.has(n)).map(([p]) => p);
          this.enqueueMaster(async () => {
            if (this.finishingWith) return;
            await settledWithin(stops, STOPS_BEFORE_RETURN_WAIT_MS);
            if (this.finishingWith) return;
            const req = { appId: this.cfg.appId, amAttempt: this.cfg.amAttempt, seq: String(++this.returnSeq), returns: e.returns };
            await this.persist('ReturnSlots', () => this.conn.call('ReturnSlots', req, this.retrying));
          });
          break;
        }
        case 'plan':
          this.track(this.startWorkers(e), e.nodeId);
          break;
        case 'stop': {
          const op = this.stopWorkers(e);
          this.stopOps.set(op, e.nodeId);
          op.finally(() => this.stopOps.delete(op)).catch(() => undefined);
          this.track(op, e.nodeId);
          break;
        }
        case 'finish':
          this.finishingWith = { succeeded: e.succeeded, message: e.message };
          this.enqueueMaster(() => this.finish(e.succeeded, e.message));
          break;
      }
    }
  }

  /**
   * Queues `fn` on the one FIFO queue of master calls. Snapshot entries waiting for others go
   * first: what the master learns after them may follow from them (the next stage's request).
   */
  private enqueueMaster(fn: () => Promise<void>): void {
    this.queueSnapshot();
    this.enqueueRaw(fn);
  }

  /** A SaveAppSnapshot for the entries waiting, unless one is queued already (it takes them). */
  private queueSnapshot(): void {
    if (this.snapshotTimer) clearTimeout(this.snapshotTimer);
    this.snapshotTimer = undefined;
    if (this.pendingEntries.length === 0 || this.snapshotQueued || this.stopped) return;
    this.snapshotQueued = true;
    this.enqueueRaw(() => this.saveSnapshot());
  }

  private enqueueRaw(fn: () => Promise<void>): void {
    this.masterQueue = this.masterQueue.then(async () => {
      await this.held?.promise;
      if (this.stopped) return;
      try {
        await this.reportIfWanted();
        await fn();
      } catch (e) {
        this.fatal(e);
      }
    });
  }

  private track(op: Promise<void>, nodeId = ''): void {
    const p = op.catch((e) => this.fatal(e)).finally(() => this.agentOps.delete(p));
    this.agentOps.set(p, nodeId);
  }

  /**
   * UpdateRequests with the next seq (monotonic for the AM attempt, across master failovers; a
   * retry repeats its seq). Every call is retried across the masters; `persistent` calls (carrying
   * deltas) also across longer outages (`persist`), heartbeats are not. A full assignment table in
   * the answer goes to the core, with `reflected` = the returns queued (and so acknowledged) before
   * this call. `requestId` (of a `request` effect): skipped when a state report already carried it.
   */
  private async updateRequests(units: ScheduleUnitConfig[], deltas: RequestDelta[], persistent: boolean, reflected: number, requestId?: number): Promise<void> {
    if (requestId !== undefined && requestId <= this.reportedUpTo) {
      this.log.debug({ units: units.map((u) => u.suId), deltas }, 'request already counted in the state report; not sent');
      return;
    }
    // Constraints go when they changed (the master replaces its copy with them).
    const constraints = this.connected && this.core.started ? this.core.placementConstraints() : undefined;
    const constraintsKey = constraints && JSON.stringify(constraints);
    const req = {
      appId: this.cfg.appId,
      amAttempt: this.cfg.amAttempt,
      seq: String(++this.requestSeq),
      units,
      deltas,
      assignmentSeq: String(this.core.assignmentSeqFor(this.epoch)),
      progress: this.core.progress(),
      connectivityVersion: this.connectivityVersion,
      ...(constraints && constraintsKey !== this.constraintsSent ? { constraints } : {}),
    };
    // Counted as sent from now: a call made while this one is in flight does not carry them again
    // (two overlapping calls under load both did); a failed call takes that back below.
    const carried = req.constraints && constraintsKey ? constraintsKey : undefined;
    if (carried) this.constraintsSent = carried;
    const call = async () => {
      const r = await this.conn.call('UpdateRequests', req, this.retrying);
      this.checkAnswer(r.epoch, 'UpdateRequests');
      this.watchAssignments();
      return r;
    };
    let res: Awaited<ReturnType<typeof call>>;
    try {
      res = persistent ? await this.persist('UpdateRequests', call) : await call();
    } catch (e) {
      if (carried && this.constraintsSent === carried) this.constraintsSent = '';
      if (deltas.length > 0 && isCountRefusal(e)) return this.requestRefused(units, deltas, e);
      throw e;
    }
    if (deltas.length > 0) this.refusals = this.refusedSince = 0;
    if (persistent) {
      this.requestAnsweredSinceTick = true;
      this.requestAnsweredAtMs = Date.now();
    }
    if (res.connectivity) this.onConnectivity(res.connectivity);
    if (res.attemptVerdicts && res.attemptVerdicts.length > 0) {
      const r = this.core.attemptVerdicts(res.attemptVerdicts, Date.now());
      this.log.info(
        { verdicts: res.attemptVerdicts.map((v, i) => `${v.workerId}@${v.nodeId}: ${v.action} -> ${r.outcomes[i]}`) },
        'failure prediction verdicts from the master',
      );
      this.execute(r.effects);
    }
    if (res.reportState) {
      this.log.info({ epoch: this.epoch, master: this.conn.address }, 'master asked for our state');
      this.wantReport();
    }
    if (res.fullAssignments) {
      if (res.reportState) {
        // Built before the master heard our state, so it could take live slots away: not applied.
        // The master's view after the report includes it; its later tables apply.
        this.log.info({ seq: res.assignmentSeq }, 'full assignment table in an answer asking for our state not applied');
        return;
      }
      const epoch = res.epoch && res.epoch !== '0' ? res.epoch : this.epoch;
      this.log.debug(
        { epoch, seq: res.assignmentSeq, appliedEpoch: this.core.assignmentEpoch, applied: this.core.assignmentSeq },
        'full assignment table from the master',
      );
      const update = {
        epoch,
        seq: int64ToNumber(res.assignmentSeq),
        full: true,
        assignments: res.assignments.map(assignmentFromProto),
        returnsReflected: reflected,
      };
      this.execute(this.core.assignments(update, Date.now()));
    }
  }

  /**
   * The master's connectivity graph (our version was stale): to the core, unless the job opted out
   * or the master knows nothing yet (version 0: an empty graph would look like every link healed).
   */
  private onConnectivity(c: Connectivity__Output): void {
    const version = c.version || '0';
    if (version === this.connectivityVersion) return;
    this.connectivityVersion = version;
    if (version === '0') return;
    // Drains count for every job, connected or not.
    this.execute(this.core.drainingChanged(c.draining, Date.now()));
    const links = c.brokenLinks.map((l) => ({ a: l.a, b: l.b }));
    const here = this.cfg.nodeId;
    this.cutFromHere = new Set(links.flatMap((l) => (l.a === here ? [l.b] : l.b === here ? [l.a] : [])));
    if (!this.connected || !this.core.started) return;
    this.log.info({ version, brokenLinks: links.map((l) => `${l.a}-${l.b}`), partitioned: c.partitionedFromMaster }, 'connectivity graph from the master');
    this.execute(this.core.connectivityChanged(links, c.partitionedFromMaster, Date.now()));
  }

  /**
   * The master refused a request on the count of slots: it holds slots for us we have not heard of
   * yet (a placement crossed one of our cancellations). The core takes the request back and asks
   * again from what it knows at its next input. Refusals that go on past `refusalGiveUpMs` are a
   * lasting disagreement: the AM gives up, and the master starts a new attempt.
   */
  private requestRefused(units: ScheduleUnitConfig[], deltas: RequestDelta[], e: RpcError): void {
    const now = Date.now();
    if (this.refusedSince === 0) this.refusedSince = now;
    this.refusals++;
    if (this.refusals === 1 || this.refusals % 20 === 0)
      this.log.warn(
        { refusals: this.refusals, err: e.message },
        'the master refused our requests on the count of slots; asking again once we know the slots it holds for us',
      );
    const giveUpMs = this.cfg.refusalGiveUpMs ?? 60_000;
    if (now - this.refusedSince > giveUpMs)
      throw new FailedPreconditionError(`the master has refused our requests for ${now - this.refusedSince} ms (${this.refusals} times): ${e.message}`);
    this.core.requestRefused(units, deltas);
  }

  /**
   * One SaveAppSnapshot with everything pending (the topology once, entries in order), under the
   * next seq of this AM attempt; a retry repeats the seq, so the master appends it once. A refusal
   * (not an outage) is logged and the batch dropped: the agents still know what ran.
   */
  private async saveSnapshot(): Promise<void> {
    this.snapshotQueued = false;
    if (this.finishingWith) {
      this.pendingTopology = '';
      this.pendingEntries = [];
      return;
    }
    if (this.pendingEntries.length === 0) return;
    const req = {
      appId: this.cfg.appId,
      amAttempt: this.cfg.amAttempt,
      topology: this.pendingTopology,
      seq: String(++this.snapshotSeq),
      entries: this.pendingEntries,
    };
    this.pendingTopology = '';
    this.pendingEntries = [];
    try {
      await this.persist('SaveAppSnapshot', () => this.conn.call('SaveAppSnapshot', req, this.retrying));
      this.log.debug({ seq: req.seq, topology: req.topology !== '', entries: req.entries.length }, 'snapshot saved');
    } catch (e) {
      if (isTransient(e) || isSuperseded(e)) throw e;
      this.log.error({ seq: req.seq, entries: req.entries.length, err: errorMessage(e) }, 'snapshot not saved; a restarted AM relies on the agents for these');
    }
  }

  private async finish(succeeded: boolean, message: string): Promise<void> {
    // Stops go out before the master hears the job is over (best effort, bounded). A call to an
    // agent across a link the master knows is broken is not waited for, nor any call for longer
    // than FINISH_STOPS_WAIT_MS: the master's revocation of the app's grants stops those workers.
    await settledWithin(
      [...this.agentOps].filter(([, node]) => !this.cutFromHere.has(node)).map(([p]) => p),
      FINISH_STOPS_WAIT_MS,
    );
    const req = { appId: this.cfg.appId, amAttempt: this.cfg.amAttempt, succeeded, message, progress: this.core.progress() };
    try {
      await this.persist('FinishApp', () => this.conn.call('FinishApp', req, this.retrying));
    } catch (e) {
      if (!(e instanceof RpcError) || (e.code !== 'FAILED_PRECONDITION' && e.code !== 'NOT_FOUND')) throw e;
      // The master already considers the app over (a retried FinishApp, or the job was killed).
      this.log.warn({ err: e.message }, 'FinishApp refused; the app is already over');
    }
    this.log.info({ succeeded, message }, 'application finished');
    this.settle.resolve({ succeeded, message });
  }

  /** StartWorkers, retried while the agent is unreachable (for `agentRetryForMs`); a refusal rejects the plans. */
  private async startWorkers(e: Extract<AmEffect, { kind: 'plan' }>): Promise<void> {
    let plans = e.plans;
    try {
      await retry(
        async () => {
          plans = e.plans.filter((p) => this.core.isCurrentWorker(p.workerId));
          if (plans.length === 0) return;
          if (!e.nodeAddress) throw new FailedPreconditionError(`no address known for node ${e.nodeId}`);
          const res = await this.agentCall(
            e.nodeAddress,
            'StartWorkers',
            { appId: this.cfg.appId, amAttempt: this.cfg.amAttempt, amAddress: this.address, epoch: '0', plans },
            { deadlineMs: this.deadlineMs },
          );
          this.log.debug({ node: e.nodeId, workers: plans.map((p) => p.workerId) }, 'plans sent');
          this.onWorkerStatuses(e.nodeId, res.workers);
        },
        {
          deadline: Date.now() + (this.cfg.agentRetryForMs ?? 60_000),
          signal: this.stopping.signal,
          onRetry: (f) => this.log.debug({ node: e.nodeId, attempt: f.attempt, err: errorMessage(f.error) }, 'agent unavailable; retrying plans'),
        },
      );
    } catch (err) {
      if (this.stopped) return;
      if (isSuperseded(err)) throw new FailedPreconditionError(`superseded by a newer application master attempt (${errorMessage(err)})`);
      // The agent refused (or stayed unreachable): each plan counts as a rejected attempt.
      this.log.warn({ node: e.nodeId, workers: plans.map((p) => p.workerId), err: errorMessage(err) }, 'StartWorkers failed');
      const events: WorkerEvent[] = plans.map((p) => ({
        workerId: p.workerId,
        task: p.task,
        instance: p.instance,
        attempt: p.attempt,
        state: 'rejected',
        exitCode: 0,
        signal: '',
        message: `StartWorkers on ${e.nodeId} failed: ${errorMessage(err)}`,
      }));
      this.execute(this.core.workerEvents(e.nodeId, events, Date.now()));
    }
  }

  /** StopWorkers, retried for 10 s while the agent is unreachable; after that the master revokes the slots. */
  private async stopWorkers(e: Extract<AmEffect, { kind: 'stop' }>): Promise<void> {
    if (!e.nodeAddress) return;
    const address = e.nodeAddress;
    const req = { appId: this.cfg.appId, workerIds: e.workerIds, amAttempt: this.cfg.amAttempt, epoch: '0', reason: 'stopped by the application master' };
    try {
      await retry(() => this.agentCall(address, 'StopWorkers', req, { deadlineMs: this.deadlineMs }), {
        deadline: Date.now() + 10_000,
        signal: this.stopping.signal,
      });
      this.log.debug({ node: e.nodeId, workers: e.workerIds }, 'workers stopped');
    } catch (err) {
      this.log.warn({ node: e.nodeId, workers: e.workerIds, err: errorMessage(err) }, 'StopWorkers failed; the master revokes the slots');
    }
  }

  /**
   * StartWorkers / StopWorkers to the agent at `address`, in one `Calls` batch with the other calls
   * of this process's AMs to that agent made meanwhile (call-batch.ts; an AM host's AMs share it).
   */
  private agentCall<M extends 'StartWorkers' | 'StopWorkers'>(
    address: string,
    method: M,
    req: Parameters<AgentClient[M]>[0],
    opts: { deadlineMs: number },
  ): ReturnType<AgentClient[M]> {
    return callBatched(this.agent(address), this.proto.AgentService.service, AGENT_BATCHED, method, req, {
      ...opts,
      ...(this.cfg.token ? { token: this.cfg.token } : {}),
    }) as ReturnType<AgentClient[M]>;
  }

  private agent(address: string): AgentClient {
    let c = this.agents.get(address);
    if (!c) {
      c = connect(this.proto.AgentService, address, {
        ...(this.cfg.token ? { token: this.cfg.token } : {}),
        ...(this.cfg.transport ? { transport: this.cfg.transport } : {}),
      });
      this.agents.set(address, c);
    }
    return c;
  }

  /**
   * Runs a master call (itself retried by MasterConnection), again across outages, for
   * `masterRetryForMs`: about a second between tries (jittered), none after shutdown.
   */
  private persist<T>(method: string, call: () => Promise<T>): Promise<T> {
    return retry(call, {
      initialMs: 1000,
      maxMs: 1000,
      deadline: Date.now() + this.masterRetryForMs,
      signal: this.stopping.signal,
      onRetry: (f) => this.log.warn({ method, attempt: f.attempt, err: errorMessage(f.error) }, 'master unreachable; retrying'),
    });
  }

  // ---------------------------------------------------------------- the end

  private fatal(e: unknown): void {
    if (this.stopped) return;
    this.log.error({ err: e instanceof Error ? (e.stack ?? e.message) : String(e) }, 'fatal error');
    this.settle.reject(e);
  }

  /**
   * Holds a WatchAssignments stream open to the master that just answered (at most one attempt per
   * master call while a master refuses it). Its messages are UpdateAssignments calls by another
   * road: the same core entry and (epoch, seq) ordering; while none is open the master calls.
   * None with `assignmentStream: false`.
   */
  private watchAssignments(): void {
    if (this.cfg.assignmentStream === false) return;
    const w = this.assignmentWatch;
    const address = this.conn.address;
    const epoch = this.epoch;
    if (this.stopped || !this.core.started || (w && w.address === address && w.epoch === epoch)) return;
    w?.cancel();
    const stream = this.conn.client(address).stream.WatchAssignments({ appId: this.cfg.appId, amAttempt: this.cfg.amAttempt, epoch });
    const handle = { address, epoch, cancel: () => stream.cancel() };
    this.assignmentWatch = handle;
    void (async () => {
      let messages = 0;
      let failure: unknown;
      try {
        for await (const msg of stream) {
          messages++;
          await this.held?.promise;
          if (this.stopped) break;
          const e = msg.epoch && msg.epoch !== '0' ? msg.epoch : this.epoch;
          if (!this.noteEpoch(e, 'WatchAssignments')) break;
          this.execute(
            this.core.assignments({ epoch: e, seq: int64ToNumber(msg.seq), full: msg.full, assignments: msg.assignments.map(assignmentFromProto) }, Date.now()),
          );
        }
        if (this.assignmentWatch === handle && !this.stopped) this.log.info({ master: address, epoch, messages }, 'assignment stream ended by the master');
      } catch (err) {
        failure = err;
        if (this.assignmentWatch === handle && !this.stopped)
          this.log.info(
            { master: address, epoch, messages, err: errorMessage(err) },
            'assignment stream failed; assignments come as calls until it is open again',
          );
      }
      if (this.assignmentWatch === handle) {
        this.assignmentWatch = undefined;
        if (this.stopped) return;
        const jitter = Math.floor(Math.random() * STREAM_LOSS_HEARTBEAT_MS);
        // The leader went away (the stream was cut) or stepped down (it ended the stream): report
        // our state soon (jittered), so that a new leader rebuilding its soft state has it at once
        // (its answer brings our assignment table); a leader that stayed takes it as a full
        // resync. The report is wanted from now on: any master call made before the jittered
        // moment (a heartbeat falling due) goes as the report instead of as one more call. A stream
        // refused for another reason: heartbeat soon instead.
        const leaderGone = failure === undefined || isTransient(failure);
        if (leaderGone) {
          this.reportWanted = true;
          setTimeout(() => {
            if (this.reportWanted && !this.stopped) this.enqueueMaster(async () => {});
          }, jitter).unref();
        } else setTimeout(() => this.onTimer(), jitter).unref();
      }
    })();
  }

  /**
   * Ends this AM from outside (its worker is being stopped, or its host gave up on it): run()
   * rejects with `reason` and everything shuts down (server, streams, timers, connections, the
   * retries of calls in flight). No FinishApp: what happens to the app is the master's decision.
   */
  stop(reason = 'stopped'): Promise<void> {
    if (this.finishingWith && !this.stopped) {
      // FinishApp is out: the usual reason for a stop now is that the master ended the job and
      // released this AM's slot, its answer still on the way. The job's outcome is the master's
      // (from FinishApp, or whatever ended it first), not this process's exit.
      this.log.info({ reason }, 'stopped with FinishApp sent');
      this.settle.resolve(this.finishingWith);
    } else this.fatal(new Error(reason));
    this.held?.release();
    return this.shutdown();
  }

  /** Each task's instance counts and retries (the core's view; read by the AM host's stats). */
  progress(): TaskProgress[] {
    return this.core.progress();
  }

  /**
   * Fault injection: a timing failure of this AM alone, as the master and the agents see it. Until
   * the returned function is called, its heartbeat timer and polls do nothing, master calls wait in
   * their queue, and calls and stream messages to it wait before they are looked at (callers see
   * their deadlines pass); a heartbeat tick that came meanwhile runs at the release, as a stopped
   * process's overdue timer does when it is continued. Used by the AM host's fault commands (tests
   * of a hosted AM that stalls).
   */
  pause(): () => void {
    if (!this.held) {
      let release!: () => void;
      const promise = new Promise<void>((r) => (release = r));
      this.held = { promise, release };
      this.log.warn({}, 'paused (fault injection)');
    }
    const held = this.held;
    return () => {
      if (this.held !== held) return;
      this.held = undefined;
      held.release();
      if (this.tickHeld) {
        this.tickHeld = false;
        setImmediate(() => this.onTimer());
      }
      this.log.warn({}, 'resumed (fault injection)');
    };
  }

  private shutdown(): Promise<void> {
    this.shuttingDown ??= this.shutdownOnce();
    return this.shuttingDown;
  }

  private async shutdownOnce(): Promise<void> {
    this.stopped = true;
    this.stopping.abort();
    this.assignmentWatch?.cancel();
    this.assignmentWatch = undefined;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    if (this.pollTimer) clearInterval(this.pollTimer);
    this.pollTimer = undefined;
    if (this.snapshotTimer) clearTimeout(this.snapshotTimer);
    this.snapshotTimer = undefined;
    await Promise.allSettled([...this.agentOps.keys()]);
    await this.closeServer();
    this.conn.close();
    for (const c of this.agents.values()) c.close();
    this.agents.clear();
  }
}
