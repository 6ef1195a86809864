/**
 * The master shell: owns the gRPC server, the store, timers and the clients to agents and AMs.
 * Every RPC becomes a call on MasterCore; the effects it returns are carried out here.
 */
import { randomUUID } from 'node:crypto';
import type { ServerWritableStream } from '@grpc/grpc-js';
import { connect as tcpConnect } from 'node:net';
import { errorMessage, FailedPreconditionError, InvalidArgumentError, NotFoundError, UnavailableError, type Logger } from '@fuxi/common';
import {
  loadFuxiProto,
  type AgentServiceDefinition,
  type AppMasterServiceDefinition,
  type ClusterStatus,
  type AssignmentUpdate,
  type GrantUpdate,
  type JobInfo,
  type JobState as WireJobState,
  type MasterServiceDefinition,
  type NodeStatus,
  type StartWorkersResponse__Output,
  type WorkerStatus__Output,
  type WatchAssignmentsRequest__Output,
  type WatchGrantsRequest__Output,
} from '@fuxi/proto';
import { connect, implement, jobSpecFromProto, jobSpecToProto, retry, startServer, type RunningServer, type ServiceImpl, type TypedClient } from '@fuxi/rpc';
import { EtcdStore, FencedError, LeaderElection, openStore, type Leadership, type ObservedLeader, type Store } from '@fuxi/store';
import { MasterCore } from '../core/master-core.js';
import { AM_SU } from '@fuxi/common';
import { KEYS } from '../core/store-ops.js';
import { TERMINAL_STATES, type AmWorkerReport, type Effect, type JobRecord, type JobState } from '../core/types.js';
import type { MasterConfig } from './config.js';

/** An AM attempt's open WatchAssignments stream (messages are ordered deltas: none is dropped). */
interface AssignmentWatch {
  call: ServerWritableStream<WatchAssignmentsRequest__Output, AssignmentUpdate>;
}

/**
 * Holds `watch` as the open push stream of `key` (ending the one it replaces) until its call ends
 * in any way; then forgets it, unless a newer one took its place.
 */
function holdStream<W extends { call: ServerWritableStream<object, object> }>(streams: Map<string, W>, key: string, watch: W): Promise<void> {
  endStream(streams, key);
  streams.set(key, watch);
  return new Promise<void>((resolve) => {
    const done = () => {
      if (streams.get(key) === watch) streams.delete(key);
      resolve();
    };
    for (const ev of ['cancelled', 'close', 'finish', 'error']) watch.call.on(ev, done);
  });
}

/** Ends and forgets the open push stream of `key`, if any. */
function endStream<W extends { call: ServerWritableStream<object, object> }>(streams: Map<string, W>, key: string): void {
  const w = streams.get(key);
  if (!w) return;
  streams.delete(key);
  w.call.end();
}
/** Messages queued on an assignment stream beyond which its AM is taken for not reading. */
const ASSIGNMENT_STREAM_MAX_QUEUED = 1000;
/** Grant tables written to one stream and not yet taken by the transport, at most. */
const GRANT_STREAM_IN_FLIGHT = 8;
/** An agent's open WatchGrants stream, with a few messages in flight and at most one waiting. */
interface GrantWatch {
  nodeId: string;
  call: ServerWritableStream<WatchGrantsRequest__Output, GrantUpdate>;
  /** Messages written and not yet taken by the transport. */
  inFlight: number;
  /** Since when the stream has had messages in flight (0 = none). */
  oldestSince: number;
  waiting: GrantUpdate | undefined;
}

const STATE_TO_WIRE: Record<JobState, WireJobState> = {
  submitted: 'JOB_STATE_SUBMITTED',
  running: 'JOB_STATE_RUNNING',
  succeeded: 'JOB_STATE_SUCCEEDED',
  failed: 'JOB_STATE_FAILED',
  killed: 'JOB_STATE_KILLED',
};
const WIRE_TO_STATE = new Map(Object.entries(STATE_TO_WIRE).map(([k, v]) => [v, k as JobState]));

function workerStateOf(s: WorkerStatus__Output['state']): AmWorkerReport['state'] {
  return (String(s).replace('WORKER_STATE_', '').toLowerCase() || 'pending') as AmWorkerReport['state'];
}

export function jobInfo(j: JobRecord, withSpec = false): JobInfo {
  return {
    jobId: j.jobId,
    name: j.spec.name,
    state: STATE_TO_WIRE[j.state],
    message: j.message,
    quotaGroup: j.spec.quotaGroup,
    priority: j.spec.priority,
    submittedAtMs: String(j.submittedAtMs),
    finishedAtMs: String(j.finishedAtMs),
    amAttempt: j.amAttempt,
    amNodeId: j.amNodeId,
    amAddress: j.amAddress,
    tasks: j.progress,
    ...(withSpec ? { spec: jobSpecToProto(j.spec) } : {}),
  };
}

type Watcher = (j: JobRecord) => void;

/**
 * One master process. With the embedded or memory store it leads at once (one master; failover is
 * a restart in place). With etcd it campaigns: a standby answers every RPC with UNAVAILABLE and the
 * leader's address; the leader's epoch is its election key's create revision, and every store
 * write it makes is fenced by that key.
 */
export class MasterServer {
  /** Present while this process leads. */
  private coreOrUndefined: MasterCore | undefined;
  private server!: RunningServer;
  /** The store as opened; writes go through `leaderStore` (fenced with etcd). */
  private store!: Store;
  private leaderStore: Store | undefined;
  private election: LeaderElection | undefined;
  private leaderAddress = '';
  private observedLeader: ObservedLeader | undefined;
  private probeTimer: NodeJS.Timeout | undefined;
  private statsTimer: NodeJS.Timeout | undefined;
  /** Hard-state writes since this process started leading (bytes of keys and values). */
  private readonly hardState = { bytes: 0, writes: 0, lastBytes: 0, lastAt: 0 };
  private becameLeaderAt = 0;
  private tickTimer: NodeJS.Timeout | undefined;
  private readonly agents = new Map<string, TypedClient<AgentServiceDefinition>>();
  private readonly ams = new Map<string, TypedClient<AppMasterServiceDefinition>>();
  private readonly watchers = new Map<string, Set<Watcher>>();
  private storeQueue: Promise<void> = Promise.resolve();
  /**
   * Grant and assignment pushes made during this event-loop turn; they go out at the end of the
   * turn (`flushPushes`), grants first. Grant tables are full (absolute) and only the newest per
   * node is sent: a slot returned and placed again on the same node in one turn (the common case
   * under load) costs one UpdateGrants, not two. Assignment messages all go, in order: an AM must
   * see a returned slot's drop before the same slot comes back, or it cannot tell the two apart.
   */
  private readonly pendingGrants = new Map<string, Extract<Effect, { kind: 'grants' }>>();
  private readonly pendingAssignments: Array<Extract<Effect, { kind: 'assignments' }>> = [];
  private flushQueued = false;
  /** Batch scheduling: the pending pass's timer, and when the last pass ran. */
  private scheduleTimer: NodeJS.Timeout | undefined;
  private lastScheduleAt = 0;
  /**
   * Open WatchGrants streams by node id: a grant push is one message on the node's stream (a unary
   * UpdateGrants costs several times the CPU on both ends); nodes without one get the call.
   */
  private readonly grantStreams = new Map<string, GrantWatch>();
  private readonly grantStreamStats = { written: 0, superseded: 0 };
  /** Open WatchAssignments streams by app id (the current attempt's only). */
  private readonly assignmentStreams = new Map<string, AssignmentWatch>();
  private readonly proto = loadFuxiProto();
  private stopping = false;
  /** Aborted by stop(): retries end at once. */
  private readonly stopSignal = new AbortController();

  constructor(
    private readonly cfg: MasterConfig,
    private readonly log: Logger,
  ) {}

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
    this.server = await startServer({
      bind: this.cfg.listen,
      ...(this.cfg.advertise ? { advertise: this.cfg.advertise } : {}),
      log: this.log,
      services: [{ name: 'fuxi.v1.MasterService', definition: def, handlers: implement(def, this.handlers(), this.log) }],
    });
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
        },
        onCampaignError: (f) => this.log.warn({ attempt: f.attempt, retryInMs: f.retryInMs, err: f.error.message }, 'cannot reach etcd to campaign; retrying'),
      });
      this.election.campaign(this.server.address);
      this.startLeaderProbe(etcd);
      return;
    }
    this.store = await openStore(this.cfg.store === 'embedded' ? { kind: 'embedded', dir: this.cfg.dataDir } : { kind: 'memory' });
    const epoch = String(BigInt((await this.store.get(KEYS.epoch)) ?? '0') + 1n);
    await this.store.put(KEYS.epoch, epoch);
    this.log.info({ address: this.server.address, role: 'leader', store: this.store.kind }, 'master ready');
    await this.becomeLeader(epoch, this.store);
  }

  /** Loads hard state and starts leading: aggregation, recovery, then scheduling. */
  private async becomeLeader(epoch: string, store: Store, leadership?: Leadership): Promise<void> {
    this.becameLeaderAt = Date.now();
    this.leaderStore = store;
    this.leaderAddress = this.server.address;
    const core = new MasterCore(
      epoch,
      {
        heartbeatIntervalMs: this.cfg.heartbeatIntervalMs,
        agentTimeoutMs: this.cfg.agentTimeoutMs,
        amHeartbeatIntervalMs: this.cfg.amHeartbeatIntervalMs,
        quotaGroups: this.cfg.quotaGroups,
        recoveryDeadlineMs: this.cfg.recoveryDeadlineMs,
        amTimeoutMs: this.cfg.amTimeoutMs,
        agentTimingOutMs: this.cfg.agentTimingOutMs,
        amStallTimeoutMs: this.cfg.amStallTimeoutMs,
        schedulingIntervalMs: this.cfg.schedulingIntervalMs,
        maxAmAttempts: this.cfg.maxAmAttempts,
        masterFailover: this.cfg.masterFailover,
      },
      this.log.child({ component: 'core', epoch }),
    );
    let jobs: JobRecord[];
    let roster: Array<{ nodeId: string; address: string }>;
    try {
      jobs = (await store.list(KEYS.jobsPrefix)).map((kv) => JSON.parse(kv.value) as JobRecord);
      roster = (await store.list(KEYS.agentsPrefix)).map((kv) => JSON.parse(kv.value) as { nodeId: string; address: string });
    } catch (e) {
      this.log.error({ err: errorMessage(e) }, 'cannot load hard state; giving up leadership');
      if (leadership) await this.election?.resign().then(() => this.election?.campaign(this.server.address));
      return;
    }
    if (this.election && !this.election.isLeader()) return;
    this.coreOrUndefined = core;
    this.log.info({ epoch, jobs: jobs.length, agents: roster.length, loadMs: Date.now() - this.becameLeaderAt }, 'became leader');
    await this.run(core.loadHardState(jobs, roster, Date.now()));
    clearInterval(this.statsTimer);
    this.hardState.lastAt = Date.now();
    this.hardState.lastBytes = this.hardState.bytes;
    this.statsTimer = setInterval(() => {
      const now = Date.now();
      let busy = 0;
      let oldest = 0;
      for (const w of this.grantStreams.values()) {
        if (w.inFlight === 0) continue;
        busy++;
        oldest = Math.max(oldest, now - w.oldestSince);
      }
      const gs = this.grantStreamStats;
      if (gs.written > 0 || busy > 0) {
        this.log.info({ open: this.grantStreams.size, written: gs.written, superseded: gs.superseded, waitingOnAgent: busy, oldestWaitMs: oldest }, 'grant stream stats');
        gs.written = 0;
        gs.superseded = 0;
      }
      const h = this.hardState;
      if (h.bytes !== h.lastBytes) {
        this.log.info({ bytesTotal: h.bytes, writesTotal: h.writes, bytesPerSec: Math.round(((h.bytes - h.lastBytes) * 1000) / (now - h.lastAt)) }, 'hard state stats');
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
   * Standbys probe the leader's port. A refused connection means its process is gone (a paused or
   * partitioned leader still accepts or times out), so instead of waiting for its lease to expire
   * they revoke it: the election moves on at once. Safety does not depend on this: a wrongly
   * deposed leader is fenced at the store and by epochs, and its watchdog steps it down.
   */
  private startLeaderProbe(etcd: EtcdStore): void {
    let refused = 0;
    let revokedKey = '';
    let busy = false;
    this.probeTimer = setInterval(() => {
      const leader = this.observedLeader;
      if (busy || this.coreOrUndefined || !leader || leader.value === this.server.address || leader.key === revokedKey) {
        refused = 0;
        return;
      }
      busy = true;
      void probePort(leader.value, 500)
        .then(async (result) => {
          refused = result === 'refused' ? refused + 1 : 0;
          if (refused < 2 || this.observedLeader?.key !== leader.key) return;
          revokedKey = leader.key;
          const leaseHex = leader.key.slice(leader.key.lastIndexOf('/') + 1);
          this.log.warn({ leader: leader.value, epoch: leader.epoch }, 'leader refuses connections: revoking its lease');
          await etcd.revokeLease(BigInt(`0x${leaseHex}`).toString()).catch((e: unknown) => this.log.warn({ err: errorMessage(e) }, 'could not revoke the leader lease'));
        })
        .finally(() => {
          busy = false;
        });
    }, 200);
    this.probeTimer.unref();
  }

  /**
   * Work started from a timer or an event (no caller to answer) failed. Losing leadership midway is
   * normal (the lease lapsed while this process was paused or etcd was unreachable): the election
   * steps this master down and it campaigns again as a standby; it never takes the process down.
   */
  private backgroundFailed(what: string, e: unknown): void {
    if (e instanceof UnavailableError) {
      this.log.warn({ what, err: errorMessage(e) }, 'background work stopped: not the leader any more');
      return;
    }
    this.log.error({ what, err: e instanceof Error ? (e.stack ?? e.message) : String(e) }, 'background work failed');
  }

  /** Stops acting at once: no command, push or write leaves this process after this. */
  private stepDown(reason: string): void {
    if (!this.coreOrUndefined) return;
    this.coreOrUndefined = undefined;
    this.leaderStore = undefined;
    this.pendingGrants.clear();
    this.pendingAssignments.length = 0;
    clearInterval(this.tickTimer);
    this.tickTimer = undefined;
    clearTimeout(this.scheduleTimer);
    this.scheduleTimer = undefined;
    clearInterval(this.statsTimer);
    for (const set of this.watchers.values()) set.clear();
    this.watchers.clear();
    this.endPushStreams();
    this.log.warn({ reason }, 'stepped down');
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.stopSignal.abort();
    if (this.tickTimer) clearInterval(this.tickTimer);
    if (this.scheduleTimer) clearTimeout(this.scheduleTimer);
    if (this.probeTimer) clearInterval(this.probeTimer);
    if (this.statsTimer) clearInterval(this.statsTimer);
    for (const set of this.watchers.values()) set.clear();
    this.endPushStreams();
    await this.election?.close().catch(() => undefined);
    this.coreOrUndefined = undefined;
    await this.server?.shutdown(1000);
    await this.storeQueue.catch(() => undefined);
    for (const c of [...this.agents.values(), ...this.ams.values()]) c.close();
    await this.store?.close();
  }

  // ---------------------------------------------------------------- effects

  /** Carries out effects. Resolves once every store write among them is durable. */
  private run(effects: Effect[]): Promise<void> {
    let writes: Promise<void> = Promise.resolve();
    // A deposed leader (its lease lapsed while it was paused, say) issues nothing.
    if (!this.coreOrUndefined || (this.election && !this.election.isLeader())) {
      if (effects.length > 0) this.log.warn({ effects: effects.length }, 'not the leader any more: effects dropped');
      return Promise.reject(new UnavailableError('not the leader', this.leaderAddress));
    }
    for (const e of effects) {
      switch (e.kind) {
        case 'store': {
          const ops = e.ops;
          const store = this.leaderStore!;
          this.storeQueue = this.storeQueue.then(
            () => store.batch(ops),
            () => store.batch(ops),
          );
          for (const op of ops) {
            const bytes = op.type === 'put' ? Buffer.byteLength(op.key) + Buffer.byteLength(op.value) : Buffer.byteLength(op.key);
            this.hardState.bytes += bytes;
            this.hardState.writes += 1;
            this.log.debug({ key: op.key, bytes }, 'hard state written');
          }
          writes = this.storeQueue.catch((err: unknown) => {
            if (err instanceof FencedError) this.stepDown('fenced: a newer leader owns the store');
            throw err;
          });
          break;
        }
        case 'grants':
          if (e.full) {
            this.pendingGrants.set(e.nodeId, e);
            this.queueFlush();
          } else {
            this.flushPushes();
            this.sendGrants(e);
          }
          break;
        case 'assignments':
          if (!e.address) break;
          this.pendingAssignments.push(e);
          this.queueFlush();
          break;
        case 'launchAm':
          // The agent gets the AM's grant before its plan.
          this.flushPushes();
          void this.launchAm(e).catch((err: unknown) => this.backgroundFailed('launching an application master', err));
          break;
        case 'stopWorkers':
          this.flushPushes();
          this.agent(e.address)
            .StopWorkers({ appId: e.appId, workerIds: e.workerIds ?? [], amAttempt: 0, epoch: e.epoch, reason: e.reason }, { deadlineMs: 10_000 })
            .catch((err: unknown) => this.log.warn({ nodeId: e.nodeId, appId: e.appId, err: errorMessage(err) }, 'stop workers failed; revoked grants stop them'));
          break;
        case 'jobChanged':
          this.notify(e.jobId);
          break;
        case 'agentsTimedOut':
          this.flushPushes();
          this.am(e.address)
            .AgentsTimedOut({ epoch: e.epoch, nodeIds: e.nodeIds, recoveredNodeIds: e.recoveredNodeIds ?? [] }, { deadlineMs: 5000 })
            .catch((err: unknown) => this.log.warn({ appId: e.appId, err: errorMessage(err) }, 'could not tell the AM about timing-out agents'));
          break;
        case 'deletePrefix': {
          const store = this.leaderStore!;
          const prefix = e.prefix;
          // Chunked: one etcd transaction holds at most 128 operations.
          this.storeQueue = this.storeQueue.then(async () => {
            const keys = (await store.list(prefix)).map((kv) => kv.key);
            for (let i = 0; i < keys.length; i += 100) await store.batch(keys.slice(i, i + 100).map((key) => ({ type: 'del' as const, key })));
          }).catch((err: unknown) => this.log.warn({ prefix, err: errorMessage(err) }, 'could not delete finished app state'));
          break;
        }
        case 'recovered':
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
    return writes;
  }

  /** Batch scheduling: runs the owed pass schedulingIntervalMs after the last one (or now). */
  private armSchedule(): void {
    const core = this.coreOrUndefined;
    if (this.scheduleTimer || !core?.scheduleDue) return;
    const wait = Math.max(0, this.lastScheduleAt + this.cfg.schedulingIntervalMs - Date.now());
    this.scheduleTimer = setTimeout(() => {
      this.scheduleTimer = undefined;
      const c = this.coreOrUndefined;
      if (!c || (this.election && !this.election.isLeader())) return;
      this.lastScheduleAt = Date.now();
      void this.run(c.runDueSchedule(this.lastScheduleAt)).catch((err: unknown) => this.log.error({ err: errorMessage(err) }, 'scheduling pass failed'));
    }, wait);
  }

  private queueFlush(): void {
    if (this.flushQueued) return;
    this.flushQueued = true;
    setImmediate(() => {
      this.flushQueued = false;
      this.flushPushes();
    });
  }

  /** Sends the pushes held for the end of this turn: grants first, then assignments. */
  private flushPushes(): void {
    if (this.pendingGrants.size === 0 && this.pendingAssignments.length === 0) return;
    const grants = [...this.pendingGrants.values()];
    const assignments = this.pendingAssignments.splice(0);
    this.pendingGrants.clear();
    // A deposed leader issues nothing (run() checked when they were made; this is a turn later).
    if (!this.coreOrUndefined || (this.election && !this.election.isLeader())) return;
    for (const e of grants) this.sendGrants(e);
    for (const e of assignments) this.sendAssignments(e);
  }

  private sendGrants(e: Extract<Effect, { kind: 'grants' }>): void {
    const watch = this.grantStreams.get(e.nodeId);
    if (watch) {
      this.writeGrants(watch, { epoch: e.epoch, seq: String(e.seq), full: e.full, grants: e.grants });
      return;
    }
    this.agent(e.address)
      .UpdateGrants({ epoch: e.epoch, seq: String(e.seq), full: e.full, grants: e.grants }, { deadlineMs: 5000 })
      .catch((err: unknown) => this.log.warn({ nodeId: e.nodeId, err: errorMessage(err) }, 'grant push failed; the next heartbeat heals it'));
  }

  private sendAssignments(e: Extract<Effect, { kind: 'assignments' }>): void {
    const watch = this.assignmentStreams.get(e.appId);
    if (watch) {
      if (watch.call.writableLength < ASSIGNMENT_STREAM_MAX_QUEUED) {
        watch.call.write({ epoch: e.epoch, seq: String(e.seq), full: e.full, assignments: e.assignments });
        return;
      }
      // Its next UpdateRequests answer brings the full table; calls until it watches again.
      this.log.warn({ appId: e.appId, queued: watch.call.writableLength }, 'assignment stream not read; ended');
      endStream(this.assignmentStreams, e.appId);
    }
    this.am(e.address)
      .UpdateAssignments({ epoch: e.epoch, seq: String(e.seq), full: e.full, assignments: e.assignments }, { deadlineMs: 5000 })
      .catch((err: unknown) => this.log.warn({ appId: e.appId, err: errorMessage(err) }, 'assignment push failed; the next AM heartbeat heals it'));
  }


  /**
   * At most GRANT_STREAM_IN_FLIGHT messages in flight per stream: beyond that a newer table
   * replaces the one waiting (tables are full, so the newest says everything), so an agent that
   * reads slowly or not at all (paused) costs the master a few tables, not a backlog.
   */
  private writeGrants(watch: GrantWatch, msg: GrantUpdate): void {
    if (watch.inFlight >= GRANT_STREAM_IN_FLIGHT) {
      if (watch.waiting) this.grantStreamStats.superseded++;
      watch.waiting = msg;
      return;
    }
    if (watch.inFlight === 0) watch.oldestSince = Date.now();
    watch.inFlight++;
    this.grantStreamStats.written++;
    watch.call.write(msg, () => {
      watch.inFlight--;
      watch.oldestSince = watch.inFlight > 0 ? Date.now() : 0;
      const next = watch.waiting;
      watch.waiting = undefined;
      if (next && this.grantStreams.get(watch.nodeId) === watch) this.writeGrants(watch, next);
    });
  }

  /** Ends every push stream (agents and AMs open new ones to the next leader). */
  private endPushStreams(): void {
    for (const key of [...this.grantStreams.keys()]) endStream(this.grantStreams, key);
    for (const key of [...this.assignmentStreams.keys()]) endStream(this.assignmentStreams, key);
  }

  private async launchAm(e: Extract<Effect, { kind: 'launchAm' }>): Promise<void> {
    const env: Record<string, string> = {
      FUXI_MASTER: this.cfg.masters.length > 0 ? this.cfg.masters.join(',') : this.server.address,
      FUXI_APP_ID: e.appId,
      FUXI_AM_ATTEMPT: String(e.attempt),
      FUXI_NODE_ID: e.nodeId,
      FUXI_LOG_LEVEL: this.cfg.logLevel,
    };
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
          return this.agent(e.address).StartWorkers({ appId: e.appId, amAttempt: e.attempt, amAddress: '', epoch: e.epoch, plans: [plan] }, { deadlineMs: 10_000 });
        },
        { maxAttempts: 6, signal: this.stopSignal.signal },
      );
    } catch (err) {
      if (this.stopping) return;
      await this.run(this.core.amLaunchFailed(e.appId, e.attempt, errorMessage(err), Date.now()));
      return;
    }
    const st = res?.workers[0];
    if (st && (st.state === 'WORKER_STATE_REJECTED' || st.state === 'WORKER_STATE_FAILED')) {
      await this.run(this.core.amLaunchFailed(e.appId, e.attempt, st.message || st.state, Date.now()));
    }
  }

  private agent(address: string): TypedClient<AgentServiceDefinition> {
    let c = this.agents.get(address);
    if (!c) {
      c = connect(this.proto.AgentService, address);
      this.agents.set(address, c);
    }
    return c;
  }

  private am(address: string): TypedClient<AppMasterServiceDefinition> {
    let c = this.ams.get(address);
    if (!c) {
      c = connect(this.proto.AppMasterService, address);
      this.ams.set(address, c);
    }
    return c;
  }

  private notify(jobId: string): void {
    const set = this.watchers.get(jobId);
    if (!set || set.size === 0) return;
    const job = this.core.getJob(jobId);
    for (const w of [...set]) w(job);
  }

  private clusterStatus(): ClusterStatus {
    const st = this.core.clusterStatus(Date.now());
    return {
      leader: this.server.address,
      epoch: this.core.epoch,
      fsmState: st.fsmState,
      openEvents: st.openEvents.map((e) => ({ ...e, sinceMs: String(e.sinceMs) })),
      recovery: { ...st.recovery, startedAtMs: String(st.recovery.startedAtMs), finishedAtMs: String(st.recovery.finishedAtMs) },
      nodesHealthy: st.nodesHealthy,
      nodesTimingOut: st.nodesTimingOut,
      nodesLost: st.nodesLost,
      appsRunning: st.appsRunning,
    };
  }

  // ---------------------------------------------------------------- RPC handlers

  private handlers(): ServiceImpl<MasterServiceDefinition> {
    const now = () => Date.now();
    return {
      RegisterAgent: async (req) => {
        const n = req.node;
        const info = {
          nodeId: n?.nodeId ?? '',
          address: n?.address ?? '',
          rack: n?.rack || 'default',
          capacity: { cpuMilli: n?.capacity?.cpuMilli ?? 0, memoryMb: n?.capacity?.memoryMb ?? 0 },
          labels: n?.labels ?? {},
          bootId: n?.bootId ?? '',
        };
        if (!info.nodeId) throw new InvalidArgumentError('node.nodeId', 'is required');
        if (!info.address) throw new InvalidArgumentError('node.address', 'is required');
        const { effects, heartbeatIntervalMs, reportState } = this.core.registerAgent(info, req.epochSeen, now());
        // A registration starts a new session: the agent watches again (a restarted one from its
        // new process), and pushes go by call until it does.
        endStream(this.grantStreams, info.nodeId);
        await this.run(effects);
        return { epoch: this.core.epoch, heartbeatIntervalMs, reportState };
      },
      Heartbeat: async (req) => {
        const amWorkers: AmWorkerReport[] = req.amWorkers.map((w) => ({
          appId: w.appId,
          amAttempt: w.amAttempt,
          state: workerStateOf(w.state),
          exitCode: w.exitCode,
          signal: w.signal,
          message: w.message,
        }));
        const r = this.core.heartbeat(
          {
            nodeId: req.nodeId,
            epoch: req.epoch,
            grantSeq: Number(req.grantSeq),
            used: { cpuMilli: req.used?.cpuMilli ?? 0, memoryMb: req.used?.memoryMb ?? 0 },
            running: req.workers?.running ?? 0,
            pending: req.workers?.pending ?? 0,
            amWorkers,
          },
          now(),
        );
        await this.run(r.effects);
        return {
          epoch: this.core.epoch,
          reregister: r.reregister,
          fullGrants: r.full !== undefined,
          grantSeq: String(r.full?.seq ?? 0),
          grants: r.full?.grants ?? [],
          reportState: r.reportState ?? false,
        };
      },
      ReportAgentState: async (req) => {
        const grants = req.grants.map((g) => ({ appId: g.appId, suId: g.suId, slots: g.slots, resource: { cpuMilli: g.resource?.cpuMilli ?? 0, memoryMb: g.resource?.memoryMb ?? 0 } }));
        await this.run(this.core.reportAgentState({ nodeId: req.nodeId, epoch: req.epoch, grants }, now()));
        return {};
      },
      RegisterApp: async (req) => {
        const r = this.core.registerApp(req.appId, req.amAttempt, req.address, now());
        // A (re)registration starts a new session: an older stream of the app is ended.
        endStream(this.assignmentStreams, req.appId);
        await this.run(r.effects);
        return { epoch: this.core.epoch, spec: jobSpecToProto(r.spec), heartbeatIntervalMs: r.heartbeatIntervalMs, assignments: r.assignments, assignmentSeq: String(r.seq) };
      },
      UpdateRequests: async (req) => {
        const r = this.core.updateRequests(
          {
            appId: req.appId,
            attempt: req.amAttempt,
            seq: Number(req.seq),
            units: req.units.map((u) => ({ suId: u.suId, resource: { cpuMilli: u.resource?.cpuMilli ?? 0, memoryMb: u.resource?.memoryMb ?? 0 }, priority: u.priority })),
            deltas: req.deltas.map((d) => ({ suId: d.suId, location: d.location, delta: d.delta })),
            assignmentSeq: Number(req.assignmentSeq),
            progress: req.progress,
          },
          now(),
        );
        await this.run(r.effects);
        return {
          epoch: this.core.epoch,
          fullAssignments: r.full !== undefined,
          assignmentSeq: String(r.full?.seq ?? 0),
          assignments: r.full?.assignments ?? [],
          reportState: r.reportState ?? false,
        };
      },
      ReturnSlots: async (req) => {
        await this.run(this.core.returnSlots({ appId: req.appId, attempt: req.amAttempt, seq: Number(req.seq), returns: req.returns }, now()));
        return {};
      },
      ReportAppState: async (req) => {
        await this.run(
          this.core.reportAppState(
            {
              appId: req.appId,
              attempt: req.amAttempt,
              address: req.address,
              units: req.units.map((u) => ({ suId: u.suId, resource: { cpuMilli: u.resource?.cpuMilli ?? 0, memoryMb: u.resource?.memoryMb ?? 0 }, priority: u.priority })),
              requests: req.requests.map((r) => ({ suId: r.suId, location: r.location, count: r.count })),
              assignments: req.assignments.map((a) => ({ suId: a.suId, nodeId: a.nodeId, slots: a.slots })),
            },
            now(),
          ),
        );
        return { epoch: this.core.epoch };
      },
      FinishApp: async (req) => {
        await this.run(this.core.finishApp({ appId: req.appId, attempt: req.amAttempt, succeeded: req.succeeded, message: req.message, progress: req.progress }, now()));
        return {};
      },
      SubmitJob: async (req) => {
        if (!req.spec) throw new InvalidArgumentError('spec', 'is required');
        const spec = jobSpecFromProto(req.spec);
        // Clients should choose the id (that is what makes retries idempotent); one that did not gets one here.
        if (!spec.jobId) spec.jobId = `${(spec.name || 'job').toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 40) || 'job'}-${randomUUID().slice(0, 8)}`;
        const { result, effects } = this.core.submitJob(spec, now());
        // Acknowledge only once the job is durable in the store.
        await this.run(effects);
        return result;
      },
      GetJob: async (req) => ({ job: jobInfo(this.core.getJob(req.jobId), true) }),
      ListJobs: async (req) => {
        const states = req.states.map((s) => WIRE_TO_STATE.get(s as WireJobState)).filter((s): s is JobState => s !== undefined);
        return { jobs: this.core.listJobs(states).map((j) => jobInfo(j)) };
      },
      KillJob: async (req) => {
        await this.run(this.core.killJob(req.jobId, req.reason, now()));
        return { job: jobInfo(this.core.getJob(req.jobId)) };
      },
      ListNodes: async () => ({
        nodes: this.core.listNodes().map(
          (n): NodeStatus => ({
            node: n.info,
            healthy: n.healthy,
            allocated: n.allocated,
            free: n.free,
            runningWorkers: n.runningWorkers,
            lastHeartbeatMs: String(n.lastHeartbeatMs),
          }),
        ),
      }),
      SaveAppSnapshot: async (req) => {
        await this.run(this.core.saveAppSnapshot({ appId: req.appId, attempt: req.amAttempt, topology: req.topology, seq: Number(req.seq), entries: req.entries }, now()));
        return {};
      },
      GetAppSnapshot: async (req) => {
        this.core.getJob(req.appId);
        const store = this.leaderStore!;
        const topology = (await store.get(KEYS.appTopology(req.appId))) ?? '';
        const entries = (await store.list(KEYS.appLogPrefix(req.appId))).map((kv) => kv.value);
        return { topology, entries };
      },
      GetClusterStatus: async () => this.clusterStatus(),
      WatchGrants: async (req, call) => {
        const core = this.core;
        if (!req.nodeId) throw new InvalidArgumentError('nodeId', 'is required');
        if (req.epoch !== core.epoch) throw new FailedPreconditionError(`epoch ${req.epoch} is not this master's (${core.epoch}): register again`, { field: 'epoch' });
        if (!core.knowsNode(req.nodeId)) throw new NotFoundError('node', req.nodeId);
        await holdStream(this.grantStreams, req.nodeId, { nodeId: req.nodeId, call, inFlight: 0, oldestSince: 0, waiting: undefined });
      },
      WatchAssignments: async (req, call) => {
        const core = this.core;
        if (!req.appId) throw new InvalidArgumentError('appId', 'is required');
        if (req.epoch !== core.epoch) throw new FailedPreconditionError(`epoch ${req.epoch} is not this master's (${core.epoch}): register again`, { field: 'epoch' });
        const job = core.getJob(req.appId);
        if (job.amAttempt !== req.amAttempt) throw new FailedPreconditionError(`am attempt ${req.amAttempt} is not the current one (${job.amAttempt})`, { field: 'amAttempt' });
        await holdStream(this.assignmentStreams, req.appId, { call });
      },
      WatchJob: async (req, call) => {
        const first = this.core.getJob(req.jobId);
        await new Promise<void>((resolve) => {
          let last = '';
          const send = (j: JobRecord) => {
            const info = jobInfo(j);
            const text = JSON.stringify(info);
            if (text !== last) {
              last = text;
              call.write(info);
            }
            if (TERMINAL_STATES.has(j.state)) done();
          };
          const set = this.watchers.get(req.jobId) ?? new Set<Watcher>();
          this.watchers.set(req.jobId, set);
          const done = () => {
            set.delete(send);
            if (set.size === 0) this.watchers.delete(req.jobId);
            call.end();
            resolve();
          };
          call.on('cancelled', done);
          set.add(send);
          send(first);
        });
      },
    };
  }
}

/** Connects to host:port: 'open', 'refused' (nothing listens: the process is gone) or 'timeout'. */
function probePort(address: string, timeoutMs: number): Promise<'open' | 'refused' | 'timeout'> {
  const i = address.lastIndexOf(':');
  return new Promise((resolve) => {
    const sock = tcpConnect({ host: address.slice(0, i), port: Number(address.slice(i + 1)) });
    const done = (r: 'open' | 'refused' | 'timeout') => {
      sock.destroy();
      resolve(r);
    };
    sock.setTimeout(timeoutMs, () => done('timeout'));
    sock.once('connect', () => done('open'));
    sock.once('error', (e: NodeJS.ErrnoException) => done(e.code === 'ECONNREFUSED' ? 'refused' : 'timeout'));
  });
}
