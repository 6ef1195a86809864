/**
 * The master process: the gRPC server, the store and the election, timers, and the effects the
 * core returns, carried out in order. What it does per concern lives beside it: the RPC handlers
 * (handlers.ts), wire mapping (wire.ts), grant and assignment pushes (push-streams.ts), clients to
 * agents and AMs (peers.ts), WatchJob streams (job-watchers.ts), and the standbys' probe of the
 * leader (leader-probe.ts).
 */
import { errorMessage, isTransientError, ResourceExhaustedError, UnavailableError, type Logger } from '@fuxi/common';
import { loadFuxiProto, type Condition, type StartWorkersResponse__Output } from '@fuxi/proto';
import { callerOf, connect, defaultTransport, implement, retry, startServer, tokenHash, TokenFile, type RunningServer } from '@fuxi/rpc';
import { randomBytes } from 'node:crypto';
import { startMetricsServer, type MetricsServer } from '@fuxi/rpc/metrics';
import { EtcdStore, FencedError, LeaderElection, openStore, StoreOutOfSpaceError, type Leadership, type ObservedLeader, type Store } from '@fuxi/store';
import { SubmitRate } from '../core/submit-rate.js';
import { MasterCore } from '../core/master-core.js';
import { AM_SU, AM_TOKEN_ENV, DEFAULT_AM_MODE } from '@fuxi/common';
import { KEYS, opBytes, type StoreOp } from '../core/store-ops.js';
import type { Effect, JobRecord, NodeAdmin } from '../core/types.js';
import { parseTestbed, type Testbed } from '../core/testbeds.js';
import { parsePredictionConfig } from '../core/prediction-config.js';
import { resolvedDetector, type MasterConfig } from './config.js';
import { HeartbeatRecorder } from './heartbeat-recorder.js';
import { GroupCommit } from './group-commit.js';
import { coalesceStoreWrites } from './store-batches.js';
import { masterHandlers, type HandlerContext } from './handlers.js';
import { MasterMetrics } from './master-metrics.js';
import { Dashboard } from './dashboard.js';
import { JobWatchers, jobNews } from './job-watchers.js';
import { startLeaderProbe } from './leader-probe.js';
import { Peers } from './peers.js';
import { PushStreams } from './push-streams.js';
import { SchedulerStreams } from './scheduler-streams.js';

/**
 * One master process. With the embedded or memory store it leads at once (one master; failover is
 * a restart in place). With etcd it campaigns: a standby answers every RPC with UNAVAILABLE and the
 * leader's address; the leader's epoch is its election key's create revision, and every store
 * write it makes is fenced by that key.
 */
/** How long a standby holds a call while no live leader is known. */
const LEADERLESS_HOLD_MS = 1500;
/** While etcd is out of space, how often the leader asks whether its NOSPACE alarm is gone. */
const SPACE_CHECK_MS = 1000;

/**
 * The calls of one term still waiting for their writes. When the term ends (a step-down, a failed
 * write, a hold for space) they are answered at once instead of when the write settles.
 */
class TermWaiters {
  private readonly waiting = new Set<(err: Error) => void>();

  /** `durable`, or the term's end, whichever comes first. */
  wait(durable: Promise<void>): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.waiting.add(reject);
      durable.then(resolve, reject).finally(() => this.waiting.delete(reject));
    });
  }

  end(answer: Error): void {
    for (const cut of this.waiting) cut(answer);
    this.waiting.clear();
  }
}

/**
 * The answer to a call whose write met etcd out of space: UNAVAILABLE, not RESOURCE_EXHAUSTED. etcd
 * applies the write that crosses its quota and then answers NOSPACE (StoreOutOfSpaceError), so the
 * outcome is unknown; the retry is answered from a fresh load of the store, which says.
 */
function outOfSpaceAnswer(err: StoreOutOfSpaceError): UnavailableError {
  return new UnavailableError(`${err.message}; this change may or may not have been written: retry, and the answer will say`, '');
}

interface HardState {
  jobs: JobRecord[];
  roster: Array<{ nodeId: string; address: string }>;
  /** Operators' cordons and drains (node-admin.ts). */
  admin: NodeAdmin[];
  /** Operators' testbeds (testbed-admin.ts). */
  testbeds: Testbed[];
}

async function loadHardState(store: Store): Promise<HardState> {
  const jobs = (await store.list(KEYS.jobsPrefix)).map((kv) => JSON.parse(kv.value) as JobRecord);
  const roster = (await store.list(KEYS.agentsPrefix)).map((kv) => JSON.parse(kv.value) as { nodeId: string; address: string });
  const admin = (await store.list(KEYS.nodeAdminPrefix)).map((kv) => JSON.parse(kv.value) as NodeAdmin);
  const testbeds = (await store.list(KEYS.testbedsPrefix)).map((kv) => parseTestbed(kv.value)).filter((t): t is Testbed => t !== undefined);
  return { jobs, roster, admin, testbeds };
}

/** How often the health status is brought up to date. */
const HEALTH_CHECK_MS = 200;

/** An AM attempt's token (am-tokens.ts): 32 random bytes, base64url, and its sha-256 for agents. */
function mintAmToken(): { token: string; hash: string } {
  const token = randomBytes(32).toString('base64url');
  return { token, hash: tokenHash(token) };
}

/** Writes of one term to one store: they may share a batch (group-commit.ts). */
interface WriteGroup {
  term: number;
  store: Store;
}

export class MasterServer {
  /** Present while this process leads. */
  private coreOrUndefined: MasterCore | undefined;
  private server!: RunningServer;
  /** The store as opened; writes go through `leaderStore` (fenced with etcd). */
  private store!: Store;
  private leaderStore: Store | undefined;
  private election: LeaderElection | undefined;
  private leaderAddress = '';
  /** Counts terms of leadership in this process; a write queued in an ended term is not made. */
  private term = 0;
  /** Calls still waiting for the writes of the current term. */
  private termWaiters = new TermWaiters();
  /**
   * Set while etcd is out of space (its NOSPACE alarm): the leader serves reads from a fresh load
   * of the store and refuses every change before it is made, until the alarm is gone (holdForSpace).
   */
  private storeFull: { sinceMs: number; message: string } | undefined;
  private spaceTimer: NodeJS.Timeout | undefined;
  /** The observed leader refused a connection (its process is likely gone); cleared on a change. */
  private leaderSuspect = false;
  /** Calls held by a standby until a leader is known (see leaderWait). */
  private readonly leaderWaiters = new Set<() => void>();
  private observedLeader: ObservedLeader | undefined;
  private probeTimer: NodeJS.Timeout | undefined;
  private statsTimer: NodeJS.Timeout | undefined;
  /** Keeps grpc.health.v1 truthful (`updateHealth`). */
  private healthTimer: NodeJS.Timeout | undefined;
  private serving: 'SERVING' | 'NOT_SERVING' | undefined;
  /** Hard-state writes since this process started leading (bytes of keys and values). */
  private readonly hardState = { bytes: 0, writes: 0, lastBytes: 0, lastAt: 0 };
  private becameLeaderAt = 0;
  private tickTimer: NodeJS.Timeout | undefined;
  private readonly peers = new Peers();
  private readonly jobWatchers = new JobWatchers();
  private readonly pushes: PushStreams;
  /** External schedulers' Watch streams and Place calls (SchedulerService). */
  private readonly schedulers: SchedulerStreams;
  /** Heartbeat arrivals to a file (`recordHeartbeats`). */
  private readonly recorder: HeartbeatRecorder | undefined;
  /** Hard-state writes, in order, grouped into few store batches (group-commit.ts). */
  private readonly writes = new GroupCommit<WriteGroup>(
    {
      write: (g, ops) => (g.term === this.term ? this.timedBatch(g.store, ops) : Promise.reject(new UnavailableError('not made: the term ended', ''))),
      list: async (g, prefix) => (await g.store.list(prefix)).map((kv) => kv.key),
    },
    undefined,
    (prefix, err) => this.log.warn({ prefix, err: errorMessage(err) }, 'could not list finished app state to delete it'),
  );
  /** The write group of the current term: writes of one term and store merge into one batch. */
  private group: WriteGroup | undefined;
  /** Batch scheduling: the pending pass's timer, and when the last pass ran. */
  private scheduleTimer: NodeJS.Timeout | undefined;
  private lastScheduleAt = 0;
  private readonly proto = loadFuxiProto();
  private stopping = false;
  /** Aborted by stop(): retries end at once. */
  private readonly stopSignal = new AbortController();
  /** Prometheus metrics, when `metricsListen` is set. */
  private readonly metrics: MasterMetrics | undefined;
  private metricsServer: MetricsServer | undefined;
  /** The web dashboard, on the metrics server (dashboard.ts). */
  private readonly dashboard: Dashboard | undefined;
  /** The leader's dashboard URL as the leader last named it (a standby's redirect). */
  private leaderDashboardCache: { leader: string; url: string; atMs: number } | undefined;
  /** The static tokens (`tokensFile`), kept current. */
  private readonly tokenFile: TokenFile | undefined;

  constructor(
    private readonly cfg: MasterConfig,
    private readonly log: Logger,
    /**
     * `store`: used instead of opening the configured embedded or memory store (tests inject faults
     * with it). `mintAmToken`: makes AM attempt tokens instead of 32 random bytes (tests that act as an AM).
     */
    private readonly deps: { store?: Store; mintAmToken?: () => { token: string; hash: string } } = {},
  ) {
    this.pushes = new PushStreams(
      this.peers,
      () => this.isLeading(),
      log,
      () => this.writes.barrier(),
      (appId, address) => {
        const job = this.coreOrUndefined?.jobRecord(appId);
        return job !== undefined && job.finishedAtMs === 0 && job.amAddress === address;
      },
    );
    this.tokenFile = cfg.tokensFile ? new TokenFile(cfg.tokensFile, log.child({ component: 'tokens' })) : undefined;
    // eslint-disable-next-line @typescript-eslint/no-this-alias
    const self = this;
    this.schedulers = new SchedulerStreams(
      {
        get core() {
          // Holding still while etcd is out of space: no placement is taken (nothing could be pushed).
          if (self.storeFull) throw new UnavailableError(`the master holds still while the store is full (${self.storeFull.message})`, '');
          return self.core;
        },
        run: (effects) => this.run(effects),
        stallMs: cfg.externalSchedulerStallMs,
        callerOf: (call, method) => {
          const insecure = this.insecure();
          return { caller: callerOf(call as Parameters<typeof callerOf>[0], { insecure, tokens: () => this.tokenFile?.table }, method), insecure };
        },
      },
      log.child({ component: 'external-schedulers' }),
    );
    this.recorder = cfg.recordHeartbeats ? HeartbeatRecorder.open(cfg.recordHeartbeats) : undefined;
    this.metrics = cfg.metricsListen
      ? new MasterMetrics({
          core: () => (this.coreOrUndefined && (!this.election || this.election.isLeader()) ? this.coreOrUndefined : undefined),
          epoch: () => this.epoch,
        })
      : undefined;
    this.dashboard = cfg.metricsListen
      ? new Dashboard({
          core: () => (this.coreOrUndefined && (!this.election || this.election.isLeader()) ? this.coreOrUndefined : undefined),
          leaderStore: () => this.leaderStore,
          address: () => this.server.address,
          leaderAddress: () => this.leaderAddress,
          leaderDashboard: () => this.leaderDashboard(),
          peers: this.peers,
          log: log.child({ component: 'dashboard' }),
        })
      : undefined;
  }

  /** `http://host:port/metrics` when metrics are served, else ''. */
  get metricsUrl(): string {
    return this.metricsServer?.url ?? '';
  }

  /**
   * `http://host:port/` when the dashboard is served (beside the metrics), else ''. Bound to every
   * address (0.0.0.0 or ::), the host is the one of this master's gRPC address.
   */
  get dashboardUrl(): string {
    if (!this.metricsServer) return '';
    const url = new URL('/', this.metricsServer.url);
    if (url.hostname === '0.0.0.0' || url.hostname === '[::]') url.hostname = this.server.address.slice(0, this.server.address.lastIndexOf(':'));
    return url.toString();
  }

  /** The leader's dashboard URL, asked of the leader (GetClusterStatus) and kept for 5 s; undefined when it serves none. */
  private async leaderDashboard(): Promise<string | undefined> {
    const leader = this.leaderAddress;
    if (!leader) return undefined;
    const cached = this.leaderDashboardCache;
    if (cached?.leader === leader && Date.now() - cached.atMs < 5000) return cached.url || undefined;
    const client = connect(this.proto.MasterService, leader);
    try {
      const st = await client.GetClusterStatus({}, { deadlineMs: 1000 });
      this.leaderDashboardCache = { leader, url: st.dashboardUrl, atMs: Date.now() };
      return st.dashboardUrl || undefined;
    } finally {
      client.close();
    }
  }

  /**
   * A standby that knows no live leader (none elected yet, the one it knows refuses connections,
   * or this process won and is still loading the hard state) holds a call until a leader is known,
   * for at most LEADERLESS_HOLD_MS, instead of answering at once: the caller is then redirected to
   * the new leader on the first try, where retrying blind would back off past its election.
   * Undefined when there is nothing to wait for.
   */
  private leaderWait(): Promise<void> | undefined {
    if (this.coreOrUndefined || !this.election || this.stopping) return undefined;
    if (this.leaderAddress && !this.leaderSuspect && this.leaderAddress !== this.server.address) return undefined;
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.leaderWaiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, LEADERLESS_HOLD_MS);
      this.leaderWaiters.add(done);
    });
  }

  private wakeLeaderWaiters(): void {
    for (const wake of [...this.leaderWaiters]) wake();
  }

  /** Whether this process leads, still holds its term and may act (not holding still for space). */
  /**
   * grpc.health.v1 tells the truth: SERVING only on the leader once its recovery (the aggregation
   * window) is over and the store takes writes; NOT_SERVING on a standby, during aggregation, while
   * it holds still for etcd space, and once it stops. Load balancers and probes can use it.
   */
  private updateHealth(): void {
    const ok = !this.stopping && this.isLeading() && !this.core.isRecovering && !this.storeFull;
    const status = ok ? 'SERVING' : 'NOT_SERVING';
    if (status === this.serving) return;
    this.serving = status;
    this.server.setServing(status);
    this.log.info({ status }, 'health');
  }

  private isLeading(): boolean {
    return this.coreOrUndefined !== undefined && !this.storeFull && (!this.election || this.election.isLeader());
  }

  get address(): string {
    return this.server.address;
  }

  get epoch(): string {
    return this.coreOrUndefined?.epoch ?? '';
  }

  get role(): 'leader' | 'standby' {
    return this.coreOrUndefined ? 'leader' : 'standby';
  }

  /** The core, when this process leads and still holds its term; otherwise a redirect. */
  private get core(): MasterCore {
    const core = this.coreOrUndefined;
    if (core && (!this.election || this.election.isLeader())) return core;
    throw new UnavailableError(this.leaderAddress ? `not the leader; the leader is ${this.leaderAddress}` : 'no leader elected yet', this.leaderAddress);
  }

  async start(): Promise<void> {
    const def = this.proto.MasterService.service;
    const schedDef = this.proto.SchedulerService.service;
    this.server = await startServer({
      bind: this.cfg.listen,
      ...(this.cfg.advertise ? { advertise: this.cfg.advertise } : {}),
      log: this.log,
      services: [
        {
          name: 'fuxi.v1.MasterService',
          definition: def,
          handlers: implement(def, masterHandlers(this.handlerContext()), this.log, this.metrics?.daemon.grpc),
        },
        {
          name: 'fuxi.v1.SchedulerService',
          definition: schedDef,
          handlers: implement(schedDef, this.schedulers.handlers(), this.log, this.metrics?.daemon.grpc),
        },
      ],
    });
    if (this.metrics) {
      const dashboard = this.dashboard;
      this.metricsServer = await startMetricsServer({
        bind: this.cfg.metricsListen,
        registry: this.metrics.daemon.registry,
        log: this.log,
        ...(dashboard ? { routes: (req, res) => dashboard.handle(req, res) } : {}),
      });
      this.log.info({ metrics: this.metricsServer.url, dashboard: this.dashboardUrl }, 'metrics served');
    }
    this.updateHealth();
    this.healthTimer = setInterval(() => this.updateHealth(), HEALTH_CHECK_MS);
    this.healthTimer.unref();
    if (this.cfg.store === 'etcd') {
      const etcd = await EtcdStore.open({ endpoints: this.cfg.etcdEndpoints, prefix: this.cfg.etcdPrefix, log: this.log.child({ component: 'etcd' }) });
      this.store = etcd;
      this.log.info({ address: this.server.address, role: 'standby', store: 'etcd', endpoints: this.cfg.etcdEndpoints }, 'master ready');
      this.election = new LeaderElection(etcd.coordination(), {
        ttlSec: this.cfg.leaseTtlSec,
        log: this.log.child({ component: 'election' }),
        onLeader: (l) => void this.becomeLeader(l.epoch, etcd.withGuard(l.guard), l).catch((e: unknown) => this.backgroundFailed('taking over', e)),
        onStepDown: (d) => this.stepDown(`${d.reason}${d.detail ? `: ${d.detail}` : ''}`),
        onLeaderChange: (o) => {
          this.observedLeader = o;
          this.leaderAddress = o?.value ?? '';
          this.leaderSuspect = false;
          if (this.leaderAddress && this.leaderAddress !== this.server.address) this.wakeLeaderWaiters();
        },
        onCampaignError: (f) => this.log.warn({ attempt: f.attempt, retryInMs: f.retryInMs, err: f.error.message }, 'cannot reach etcd to campaign; retrying'),
      });
      this.election.campaign(this.server.address);
      this.probeTimer = startLeaderProbe({
        etcd,
        self: this.server.address,
        observed: () => this.observedLeader,
        leading: () => this.coreOrUndefined !== undefined,
        onRefused: (key) => {
          if (this.observedLeader?.key === key) this.leaderSuspect = true;
        },
        log: this.log,
      });
      return;
    }
    this.store = this.deps.store ?? (await openStore(this.cfg.store === 'embedded' ? { kind: 'embedded', dir: this.cfg.dataDir } : { kind: 'memory' }));
    const epoch = String(BigInt((await this.store.get(KEYS.epoch)) ?? '0') + 1n);
    await this.store.put(KEYS.epoch, epoch);
    this.log.info({ address: this.server.address, role: 'leader', store: this.store.kind }, 'master ready');
    await this.becomeLeader(epoch, this.store);
  }

  /** Reads the tokens file again (SIGHUP). */
  reloadTokens(): void {
    this.tokenFile?.reload();
  }

  private newCore(epoch: string): MasterCore {
    return new MasterCore(
      epoch,
      {
        mintAmToken: this.deps.mintAmToken ?? mintAmToken,
        heartbeatIntervalMs: this.cfg.heartbeatIntervalMs,
        agentTimeoutMs: this.cfg.agentTimeoutMs,
        amHeartbeatIntervalMs: this.cfg.amHeartbeatIntervalMs,
        quotaGroups: this.cfg.quotaGroups,
        recoveryDeadlineMs: this.cfg.recoveryDeadlineMs,
        amTimeoutMs: this.cfg.amTimeoutMs,
        agentTimingOutMs: this.cfg.agentTimingOutMs,
        jobRetentionMs: this.cfg.jobRetentionMs,
        jobRetentionCount: this.cfg.jobRetentionCount,
        failureDetector: resolvedDetector(this.cfg),
        failurePrediction: parsePredictionConfig(this.cfg.failurePrediction),
        amStallTimeoutMs: this.cfg.amStallTimeoutMs,
        schedulingIntervalMs: this.cfg.schedulingIntervalMs,
        maxAmAttempts: this.cfg.maxAmAttempts,
        maxJobSpecBytes: this.cfg.maxJobSpecBytes,
        maxEnvBytes: this.cfg.maxEnvBytes,
        maxEnvVars: this.cfg.maxEnvVars,
        maxInstancesPerJob: this.cfg.maxInstancesPerJob,
        speculationAllowance: this.cfg.speculationAllowance,
        maxAmShare: this.cfg.maxAmShare,
        masterFailover: this.cfg.masterFailover,
        probeAllUpTo: this.cfg.probeAllUpTo,
        probeSample: this.cfg.probeSample,
        probeMaxTargets: this.cfg.probeMaxTargets,
        connectivityAware: this.cfg.connectivityAware,
        externalSchedulerStallMs: this.cfg.externalSchedulerStallMs,
        ...(this.cfg.externalSchedulerFallbackMs !== undefined ? { externalSchedulerFallbackMs: this.cfg.externalSchedulerFallbackMs } : {}),
      },
      this.log.child({ component: 'core', epoch }),
    );
  }

  /** Loads hard state and starts leading: aggregation, recovery, then scheduling. */
  private async becomeLeader(epoch: string, store: Store, leadership?: Leadership): Promise<void> {
    this.becameLeaderAt = Date.now();
    this.leaderStore = store;
    this.leaderAddress = this.server.address;
    const core = this.newCore(epoch);
    let hard: HardState;
    let full = false;
    try {
      hard = await loadHardState(store);
      // A leader elected while etcd is out of space makes no change at all until it has room.
      if (this.store instanceof EtcdStore) full = await this.store.outOfSpace();
    } catch (e) {
      this.log.error({ err: errorMessage(e) }, 'cannot load hard state; giving up leadership');
      if (leadership) await this.election?.resign().then(() => this.election?.campaign(this.server.address));
      return;
    }
    if (this.election && !this.election.isLeader()) return;
    const loadMs = Date.now() - this.becameLeaderAt;
    this.metrics?.failoverPhaseSeconds('load', loadMs / 1000);
    this.log.info({ epoch, jobs: hard.jobs.length, agents: hard.roster.length, loadMs }, 'became leader');
    if (full) {
      this.holdForSpace(new StoreOutOfSpaceError('alarm list', 'its NOSPACE alarm is raised'), core, hard);
      return;
    }
    this.coreOrUndefined = core;
    this.wakeLeaderWaiters();
    await this.run(core.loadHardState(hard.jobs, hard.roster, Date.now(), hard.admin, hard.testbeds));
    clearInterval(this.statsTimer);
    this.hardState.lastAt = Date.now();
    this.hardState.lastBytes = this.hardState.bytes;
    this.statsTimer = setInterval(() => {
      const now = Date.now();
      const streams = this.pushes.takeStats(now);
      if (streams) this.log.info(streams, 'grant stream stats');
      const h = this.hardState;
      if (h.bytes !== h.lastBytes) {
        this.log.info(
          {
            bytesTotal: h.bytes,
            writesTotal: h.writes,
            // Store batches made of the queued writes (group commit): fewer than writes under load.
            batchesTotal: this.writes.stats.batches,
            bytesPerSec: Math.round(((h.bytes - h.lastBytes) * 1000) / (now - h.lastAt)),
          },
          'hard state stats',
        );
      }
      h.lastBytes = h.bytes;
      h.lastAt = now;
    }, 5000);
    this.statsTimer.unref();
    const tickMs = Math.max(50, Math.min(500, Math.floor(this.cfg.heartbeatIntervalMs / 2)));
    clearInterval(this.tickTimer);
    this.tickTimer = setInterval(() => {
      const c = this.coreOrUndefined;
      if (c) void this.run(c.tick(Date.now())).catch((e: unknown) => this.backgroundFailed('tick', e));
    }, tickMs);
  }

  /**
   * Work started from a timer or an event (no caller to answer) failed. Losing leadership midway is
   * normal (the lease lapsed while this process was paused or etcd was unreachable): the election
   * steps this master down and it campaigns again as a standby; it never takes the process down.
   */
  private backgroundFailed(what: string, e: unknown): void {
    if (e instanceof UnavailableError || e instanceof ResourceExhaustedError) {
      this.log.warn({ what, err: errorMessage(e) }, 'background work stopped: not the leader any more');
      return;
    }
    this.log.error({ what, err: e instanceof Error ? (e.stack ?? e.message) : String(e) }, 'background work failed');
  }

  /**
   * A hard-state write failed, so this term's memory may hold what the store lacks. The leader
   * steps down at once and leadership is rebuilt from the store like any new leader's: with etcd it
   * resigns and campaigns again (another master, or this one, takes over and loads the hard state);
   * with the embedded store it reloads in place under a new epoch, retrying while the store fails.
   */
  private abdicate(err: unknown, answer: Error): void {
    this.log.error({ err: errorMessage(err) }, 'a hard-state write failed: giving up this term to rebuild from the store');
    this.stepDown('a hard-state write failed', answer);
    this.rebuild();
  }

  /** After a step-down: leadership is rebuilt from the store (etcd: resign and campaign; embedded: reload in place). */
  private rebuild(): void {
    if (this.election) {
      const election = this.election;
      void election
        .resign()
        .catch(() => undefined)
        .then(() => {
          if (!this.stopping) election.campaign(this.server.address);
        });
      return;
    }
    void retry(
      async () => {
        if (this.stopping) return;
        const epoch = String(BigInt((await this.store.get(KEYS.epoch)) ?? '0') + 1n);
        await this.store.put(KEYS.epoch, epoch);
        await this.becomeLeader(epoch, this.store);
        if (!this.coreOrUndefined) throw new UnavailableError('could not load the hard state');
      },
      { initialMs: 200, maxMs: 5000, retryIf: () => !this.stopping, signal: this.stopSignal.signal },
    ).catch((e: unknown) => this.backgroundFailed('rebuilding from the store', e));
  }

  /**
   * Ends the term: writes still queued in it are not made, calls waiting for them get `answer` at
   * once (a write in flight may still land: UNAVAILABLE says the outcome is unknown), and nothing
   * more is pushed or ticked.
   */
  private endTerm(answer: Error): void {
    this.metrics?.flush();
    this.term++;
    this.termWaiters.end(answer);
    this.termWaiters = new TermWaiters();
    clearInterval(this.tickTimer);
    this.tickTimer = undefined;
    clearTimeout(this.scheduleTimer);
    this.scheduleTimer = undefined;
    clearInterval(this.statsTimer);
    this.jobWatchers.clear(new UnavailableError(`the leader's term ended (${answer.message}): watch again`, ''));
    this.pushes.reset();
    this.schedulers.reset();
  }

  /** Stops acting at once: no command, push or write leaves this process after this. */
  private stepDown(reason: string, answer?: Error): void {
    if (!this.coreOrUndefined && !this.storeFull) return;
    this.endTerm(answer ?? new UnavailableError(`the leader stepped down (${reason}): retry`, ''));
    this.coreOrUndefined = undefined;
    this.leaderStore = undefined;
    this.storeFull = undefined;
    clearInterval(this.spaceTimer);
    this.spaceTimer = undefined;
    this.log.warn({ reason }, 'stepped down');
  }

  /**
   * etcd is out of space (a write was refused for it, or a new leader found the NOSPACE alarm
   * raised). A rebuild cannot help (a new term needs a write: a new election key), and a standby
   * taking over would meet the same refusal, so the leader keeps its term and holds still: the
   * writes still queued are dropped, its memory (ahead of the store by the refused write) is
   * replaced by a fresh load of the store (`loaded`, when the caller has just read it), and until
   * the alarm is gone it serves reads from that and refuses every change before it is made
   * (handlers.ts `refuseChangesWhileStoreFull`); nothing is pushed, commanded or ticked. Once an
   * operator has freed space and disarmed the alarm, it gives up the term and leadership is rebuilt
   * as after any failover (a new epoch; soft state from agents and AMs).
   */
  private holdForSpace(err: StoreOutOfSpaceError, loaded?: MasterCore, hard?: HardState): void {
    if (this.storeFull) return;
    const sinceMs = Date.now();
    this.storeFull = { sinceMs, message: err.message };
    this.log.error(
      { err: err.message, since: new Date(sinceMs).toISOString() },
      'ETCD IS OUT OF SPACE: every hard-state write is refused. The leader serves reads only and refuses changes with RESOURCE_EXHAUSTED ' +
        'until space is freed: etcdctl compact <current revision>, etcdctl defrag, etcdctl alarm disarm (raise --quota-backend-bytes if it is too small)',
    );
    // Calls waiting on writes of the term: theirs may have landed (the write that crossed the
    // quota was applied) or not; a retry is answered from the fresh load (handlers.ts).
    this.endTerm(outOfSpaceAnswer(err));
    const store = this.leaderStore;
    const epoch = this.epoch || (loaded?.epoch ?? '');
    const term = this.term;
    this.coreOrUndefined = undefined;
    void (async () => {
      let core = loaded;
      if (!core || !hard) {
        core = this.newCore(epoch);
        hard = await loadHardState(store!);
      }
      if (this.term !== term || !this.storeFull) return;
      // The core is only read from while the store is full: what loading it would do (pushes,
      // writes, the aggregation window) is not done; the next term starts afresh.
      core.loadHardState(hard.jobs, hard.roster, Date.now(), hard.admin, hard.testbeds);
      this.coreOrUndefined = core;
      this.wakeLeaderWaiters();
    })().catch((e: unknown) => {
      if (this.term !== term || !this.storeFull) return;
      this.abdicate(e, new UnavailableError(`reading the store failed (${errorMessage(e)}): retry`, ''));
    });
    clearInterval(this.spaceTimer);
    let checking = false;
    this.spaceTimer = setInterval(() => {
      if (checking || !(this.store instanceof EtcdStore) || this.term !== term) return;
      checking = true;
      this.store
        .outOfSpace()
        .then((full) => {
          if (full || this.term !== term || !this.storeFull) return;
          this.log.warn(
            { outOfSpaceMs: Date.now() - sinceMs },
            'etcd has space again (its NOSPACE alarm is gone): giving up this term so that leadership is rebuilt from the store',
          );
          this.stepDown('etcd has space again');
          this.rebuild();
        })
        .catch((e: unknown) => this.log.warn({ err: errorMessage(e) }, 'cannot ask etcd whether it has space again; asking again'))
        .finally(() => (checking = false));
    }, SPACE_CHECK_MS);
    this.spaceTimer.unref();
  }

  /** What `fuxi cluster status` lists under conditions: the store out of space, if it is. */
  private async conditions(): Promise<Condition[]> {
    const full = this.storeFull;
    if (full) return [{ type: 'StoreOutOfSpace', sinceMs: String(full.sinceMs), message: full.message }];
    // Raised since the last write (by another writer, or etcd's own checks): the next write will be refused.
    const raised = this.store instanceof EtcdStore ? await this.store.outOfSpace(1000).catch(() => false) : false;
    return raised ? [{ type: 'StoreOutOfSpace', sinceMs: '0', message: new StoreOutOfSpaceError('alarm list', 'its NOSPACE alarm is raised').message }] : [];
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.stopSignal.abort();
    if (this.healthTimer) clearInterval(this.healthTimer);
    this.updateHealth();
    this.wakeLeaderWaiters();
    if (this.tickTimer) clearInterval(this.tickTimer);
    if (this.scheduleTimer) clearTimeout(this.scheduleTimer);
    if (this.probeTimer) clearInterval(this.probeTimer);
    if (this.statsTimer) clearInterval(this.statsTimer);
    if (this.spaceTimer) clearInterval(this.spaceTimer);
    this.dashboard?.close();
    this.tokenFile?.close();
    await this.metricsServer?.close();
    this.jobWatchers.clear(new UnavailableError('the master is stopping: watch again', ''));
    this.pushes.reset();
    this.schedulers.reset();
    await this.recorder?.close();
    await this.election?.close().catch(() => undefined);
    this.coreOrUndefined = undefined;
    await this.server?.shutdown(1000);
    await this.writes.settled().catch(() => undefined);
    this.peers.close();
    await this.store?.close();
  }

  // ---------------------------------------------------------------- effects

  /** Carries out effects. Resolves once every store write among them is durable. */
  private run(effects: Effect[]): Promise<void> {
    let durable: Promise<void> | undefined;
    // A deposed leader (its lease lapsed while it was paused, say) issues nothing.
    if (!this.isLeading()) {
      if (effects.length > 0) this.log.warn({ effects: effects.length }, 'not the leader any more: effects dropped');
      if (this.storeFull) return Promise.reject(new ResourceExhaustedError('store space', this.storeFull.message));
      return Promise.reject(new UnavailableError('not the leader', this.leaderAddress));
    }
    const waiters = this.termWaiters;
    // A batch of submissions is a few store batches, not a write per job.
    for (const e of coalesceStoreWrites(effects)) {
      switch (e.kind) {
        case 'store': {
          const ops = e.ops;
          const term = this.term;
          // Writes of a term that ended (a failed write, a step-down, a hold for space) are not made.
          const written = this.writes.write(this.writeGroup(), ops);
          for (const op of ops) {
            const bytes = opBytes(op);
            this.hardState.bytes += bytes;
            this.hardState.writes += 1;
            this.log.debug({ key: op.key, bytes }, 'hard state written');
          }
          durable = written.catch((err: unknown) => {
            // A write of an ended term (not made, or failed after the term ended): its waiting calls
            // already have the term's answer.
            if (term !== this.term) {
              throw err instanceof UnavailableError || err instanceof ResourceExhaustedError || err instanceof FencedError
                ? err
                : new UnavailableError(`a hard-state write failed (${errorMessage(err)}) after the term ended: retry`, '');
            }
            if (err instanceof FencedError) {
              // Nothing was written; the newer leader has the state: the caller retries there.
              const answer = new UnavailableError(`not the leader any more (${err.message}): retry`, '');
              this.stepDown('fenced: a newer leader owns the store', answer);
              throw answer;
            }
            // Memory is now ahead of the store (the write failed, or its outcome is unknown after a
            // timeout): nothing the store lacks may be shown or acknowledged. Out of space, the
            // leader holds still on a fresh load of the store; otherwise it gives up this term and
            // leadership is rebuilt from the store.
            if (err instanceof StoreOutOfSpaceError && this.store instanceof EtcdStore) {
              this.holdForSpace(err);
              throw outOfSpaceAnswer(err);
            }
            const answer = new UnavailableError(
              `a hard-state write failed (${errorMessage(err)}); the master is rebuilding its state from the store: retry`,
              '',
            );
            this.abdicate(err, answer);
            throw answer;
          });
          // Each write's failure is handled here, before the next write of the queue starts; the
          // call waits for the last one (below).
          durable.catch(() => undefined);
          break;
        }
        case 'grants':
        case 'assignments':
          this.pushes.push(e);
          break;
        case 'launchAm': {
          // The agent gets the AM's grant before its plan. The AM starts only once the writes
          // before it (its job's record) are durable and the term still holds: an AM of a job the
          // store lacks would run against a leader that does not know it, and collide with the
          // job's AM when the client submits it again.
          // (Every command waits so: see PushStreams `whenDurable`.)
          const term = this.term;
          this.pushes.whenDurable(() => {
            if (term !== this.term) return;
            this.launchAm(e).catch((err: unknown) => this.backgroundFailed('launching an application master', err));
          });
          break;
        }
        case 'stopWorkers':
          // After the write that ended the job or revoked the slots is durable, as the grants are.
          this.pushes.whenDurable(() => {
            this.peers
              .agentCall(
                e.address,
                'StopWorkers',
                { appId: e.appId, workerIds: e.workerIds ?? [], amAttempt: 0, epoch: e.epoch, reason: e.reason },
                { deadlineMs: 10_000 },
              )
              .catch((err: unknown) =>
                this.log.warn({ nodeId: e.nodeId, appId: e.appId, err: errorMessage(err) }, 'stop workers failed; revoked grants stop them'),
              );
          });
          break;
        case 'jobChanged':
          // Watchers see the job as this change left it (the writes just queued hold it), once the
          // store has it: not as it is by then, which may hold changes still being written.
          if (this.jobWatchers.has(e.jobId)) {
            const news = this.coreOrUndefined?.jobRecord(e.jobId) && jobNews(this.coreOrUndefined.getJob(e.jobId));
            if (news) this.pushes.whenDurable(() => this.jobWatchers.notify(news));
          }
          break;
        case 'agentsTimedOut':
          this.pushes.whenDurable(() => {
            this.peers
              .am(e.address)
              .AgentsTimedOut({ epoch: e.epoch, nodeIds: e.nodeIds, recoveredNodeIds: e.recoveredNodeIds ?? [] }, { deadlineMs: 5000 })
              .catch((err: unknown) => this.log.warn({ appId: e.appId, err: errorMessage(err) }, 'could not tell the AM about timing-out agents'));
          });
          break;
        case 'deletePrefix': {
          const prefix = e.prefix;
          // In the batch of the writes around it; chunked (one etcd transaction holds at most 128 operations).
          this.writes
            .deletePrefix(this.writeGroup(), prefix)
            .catch((err: unknown) => this.log.warn({ prefix, err: errorMessage(err) }, 'could not delete finished app state'));
          break;
        }
        case 'recovered':
          this.metrics?.failoverPhaseSeconds('aggregation', e.aggregationMs / 1000);
          this.metrics?.failoverPhaseSeconds('total', (Date.now() - this.becameLeaderAt) / 1000);
          this.log.info(
            {
              epoch: this.epoch,
              aggregationMs: e.aggregationMs,
              recoveredMs: Date.now() - this.becameLeaderAt,
              agentsReported: e.agentsReported,
              agentsMissing: e.agentsMissing,
              appsReported: e.appsReported,
              appsMissing: e.appsMissing,
            },
            'recovery complete',
          );
          break;
      }
    }
    this.armSchedule();
    // External schedulers see what changed (not after every heartbeat: only inputs that changed
    // requests, slots or nodes; and at least once a second, see SchedulerStreams).
    if (effects.length > 0 || this.coreOrUndefined?.takeSchedulerViewsChanged()) this.schedulers.poke();
    // A call waits for its writes, or for the end of the term (a step-down answers at once).
    return durable ? waiters.wait(durable) : Promise.resolve();
  }

  /** The current term's write group (a new one when the term or the leader's store changed). */
  private writeGroup(): WriteGroup {
    const store = this.leaderStore!;
    if (this.group?.term !== this.term || this.group.store !== store) this.group = { term: this.term, store };
    return this.group;
  }

  /** One store batch, timed for `fuxi_master_store_write_seconds`. */
  private timedBatch(store: Store, ops: Parameters<Store['batch']>[0]): Promise<void> {
    if (!this.metrics) return store.batch(ops);
    const metrics = this.metrics;
    const t0 = process.hrtime.bigint();
    const took = () => Number(process.hrtime.bigint() - t0) / 1e9;
    return store.batch(ops).then(
      () => metrics.storeWriteSeconds(took(), true),
      (e: unknown) => {
        metrics.storeWriteSeconds(took(), false);
        throw e;
      },
    );
  }

  /** Batch scheduling: runs the owed pass schedulingIntervalMs after the last one (or now). */
  private armSchedule(): void {
    const core = this.coreOrUndefined;
    if (this.scheduleTimer || !core?.scheduleDue) return;
    const wait = Math.max(0, this.lastScheduleAt + this.cfg.schedulingIntervalMs - Date.now());
    this.scheduleTimer = setTimeout(() => {
      this.scheduleTimer = undefined;
      const c = this.coreOrUndefined;
      if (!c || !this.isLeading()) return;
      this.lastScheduleAt = Date.now();
      const t0 = process.hrtime.bigint();
      const effects = c.runDueSchedule(this.lastScheduleAt);
      this.metrics?.schedulingPassSeconds(Number(process.hrtime.bigint() - t0) / 1e9);
      void this.run(effects).catch((err: unknown) => this.log.error({ err: errorMessage(err) }, 'scheduling pass failed'));
    }, wait);
  }

  private async launchAm(e: Extract<Effect, { kind: 'launchAm' }>): Promise<void> {
    const env: Record<string, string> = {
      FUXI_MASTER: this.cfg.masters.length > 0 ? this.cfg.masters.join(',') : this.server.address,
      FUXI_APP_ID: e.appId,
      FUXI_AM_ATTEMPT: String(e.attempt),
      FUXI_NODE_ID: e.nodeId,
      FUXI_LOG_LEVEL: this.cfg.logLevel,
      ...this.amPlacementEnv(e.appId),
    };
    // The attempt's token goes in the AM's environment, and with this plan as its bearer token: the
    // agent starts the AM only for the app's current token (the hash it holds with the grant).
    const job = this.core.getJob(e.appId);
    const token = job.amAttempt === e.attempt ? job.amToken : undefined;
    if (token) env[AM_TOKEN_ENV] = token;
    const plan = {
      workerId: `am.${e.attempt}`,
      suId: AM_SU,
      task: AM_SU,
      instance: 0,
      attempt: e.attempt,
      command: { argv: this.cfg.amCommand, env, cwd: '' },
      resource: e.resource,
    };
    // Up to 6 attempts while the agent is unreachable (waits of 100 ms doubling, jittered: 3 s at most),
    // and none once this master stops or steps down.
    let res: StartWorkersResponse__Output | undefined;
    try {
      res = await retry(
        async () => {
          if (this.stopping || !this.coreOrUndefined) return undefined;
          // In one batch with the other AM launches and stops for that agent made meanwhile.
          return this.peers.agentCall(
            e.address,
            'StartWorkers',
            { appId: e.appId, amAttempt: e.attempt, amAddress: '', epoch: e.epoch, plans: [plan] },
            { deadlineMs: 10_000, ...(token ? { token } : {}) },
          );
        },
        { maxAttempts: 6, signal: this.stopSignal.signal },
      );
    } catch (err) {
      if (this.stopping) return;
      // Not reached at all (its link from the master may be cut): the core replaces the attempt
      // elsewhere rather than failing the job.
      await this.run(this.core.amLaunchFailed(e.appId, e.attempt, errorMessage(err), Date.now(), isTransientError(err)));
      return;
    }
    const st = res?.workers[0];
    if (st && (st.state === 'WORKER_STATE_REJECTED' || st.state === 'WORKER_STATE_FAILED')) {
      await this.run(this.core.amLaunchFailed(e.appId, e.attempt, st.message || st.state, Date.now()));
    }
  }

  /**
   * What the agent needs to decide where the AM runs: its mode (`FUXI_AM_MODE`: shared, in the
   * node's AM host, or dedicated) and the job's size (`FUXI_AM_INSTANCES`, every task's instances
   * together: the host gives a large job's AM a thread of its own).
   */
  private amPlacementEnv(appId: string): Record<string, string> {
    let spec;
    try {
      spec = this.core.getJob(appId).spec;
    } catch {
      return {};
    }
    return { FUXI_AM_MODE: spec.amMode || DEFAULT_AM_MODE, FUXI_AM_INSTANCES: String(spec.tasks.reduce((n, t) => n + t.instances, 0)) };
  }

  /** What the RPC handlers see of this process. */
  private handlerContext(): HandlerContext {
    // eslint-disable-next-line @typescript-eslint/no-this-alias
    const self = this;
    return {
      get core() {
        return self.core;
      },
      get leaderStore() {
        return self.leaderStore!;
      },
      get address() {
        return self.server.address;
      },
      leaderWait: () => this.leaderWait(),
      heartbeatArrived: this.recorder ? (nodeId: string) => this.recorder!.arrival(nodeId, Date.now()) : undefined,
      storeFull: () => this.storeFull,
      dashboardUrl: () => this.dashboardUrl,
      conditions: () => this.conditions(),
      pushes: this.pushes,
      jobWatchers: this.jobWatchers,
      run: (effects) => this.run(effects),
      writeFirst: (ops) => this.writeFirst(ops),
      durable: () => this.durable(),
      insecure: this.insecure(),
      tokens: () => this.tokenFile?.table,
      submitRate: new SubmitRate({ ratePerSec: this.cfg.submitRatePerSec, burst: this.cfg.submitBurst }),
      ...(this.metrics ? { observe: this.metrics.daemon.grpc } : {}),
    };
  }

  /**
   * Whether callers count as on an insecure cluster (authz.ts): `insecure` as configured; unset,
   * whether this process runs plaintext (no certificate tells callers apart).
   */
  private insecure(): boolean {
    return this.cfg.insecure ?? !defaultTransport().secure;
  }

  /** See HandlerContext.writeFirst: queued behind this term's writes; a failure changes nothing. */
  private writeFirst(ops: StoreOp[]): Promise<void> {
    if (!this.isLeading()) {
      if (this.storeFull) return Promise.reject(new ResourceExhaustedError('store space', this.storeFull.message));
      return Promise.reject(new UnavailableError('not the leader', this.leaderAddress));
    }
    // A group of its own: its failure must fail no other write.
    const done = this.writes.write({ term: this.term, store: this.leaderStore! }, ops);
    return this.termWaiters.wait(
      done.catch((err: unknown) => {
        if (err instanceof UnavailableError) throw err;
        if (err instanceof FencedError) {
          const answer = new UnavailableError(`not the leader any more (${err.message}): retry`, '');
          this.stepDown('fenced: a newer leader owns the store', answer);
          throw answer;
        }
        if (err instanceof StoreOutOfSpaceError && this.store instanceof EtcdStore) {
          this.holdForSpace(err);
          throw outOfSpaceAnswer(err);
        }
        // Memory is as it was: nothing to rebuild. Only the caller hears of it.
        this.log.warn({ keys: ops.map((o) => o.key), err: errorMessage(err) }, 'hard-state write failed; nothing changed');
        throw new UnavailableError(`the store refused the write (${errorMessage(err)}); nothing changed: retry`, '');
      }),
    );
  }

  /** See HandlerContext.durable: the store queue drained within this term. */
  private async durable(): Promise<void> {
    const term = this.term;
    await this.writes.settled().catch(() => undefined);
    // Holding still while etcd is out of space, the core is a fresh load of the store: durable.
    if (term !== this.term || (!this.isLeading() && !this.storeFull)) {
      throw new UnavailableError('the leader gave up its term before this answer was durable: retry', '');
    }
  }
}
