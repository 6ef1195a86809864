/**
 * In-process fakes of the master and of agents, on real gRPC servers on loopback, for the AM shell
 * tests. The fake master places every requested slot at once (round robin over its agents, none
 * on a host the AM avoids) and pushes absolute assignments with a seq, like the real one, and
 * answers a stale connectivity version with its `connectivity`; a fake agent "runs" each plan for
 * a few milliseconds (`runMs`) and reports the outcome its `behaviour` picks.
 */
import { FailedPreconditionError, InvalidArgumentError, nullLogger, StaleEpochError, UnavailableError } from '@fuxi/common';
import {
  loadFuxiProto,
  type Assignment,
  type Connectivity,
  type FinishAppRequest__Output,
  type PlacementConstraints__Output,
  type JobSpec,
  type ReportAppStateRequest__Output,
  type ReturnSlotsRequest__Output,
  type SaveAppSnapshotRequest__Output,
  type StartWorkersRequest__Output,
  type UpdateRequestsRequest__Output,
  type WorkerPlan__Output,
  type WorkerStatus,
} from '@fuxi/proto';
import { AGENT_BATCHED, AM_BATCHED, batchedCalls, connect, implement, startServer, type RunningServer } from '@fuxi/rpc';

const proto = loadFuxiProto();

function notImplemented(names: string[]): Record<string, () => never> {
  return Object.fromEntries(
    names.map((n) => [
      n,
      () => {
        throw new FailedPreconditionError(`${n} is not implemented by the fake`);
      },
    ]),
  );
}

export class FakeMaster {
  server!: RunningServer;
  amAddress = '';
  /** This master's epoch: in every answer and push. */
  epoch = '1';
  seq = 0;
  /** Answers ask for ReportAppState (`reportState`) until one arrives. */
  reportPending = false;
  readonly reports: ReportAppStateRequest__Output[] = [];
  /** 'RegisterApp' / 'UpdateRequests' / 'ReturnSlots' / 'ReportAppState' / 'FinishApp', in arrival order. */
  readonly calls: string[] = [];
  /** When each of `calls` arrived (Date.now()). */
  readonly callTimes: number[] = [];
  /** Slots placed so far per SU (over the whole run). */
  readonly placed = new Map<string, number>();
  /** Delays the answer to the next UpdateRequests (a slow master). */
  delayNextAnswerMs = 0;
  /** Delays the answer to every ReportAppState. */
  delayReportMs = 0;
  /**
   * UpdateRequests that ask for more slots are refused on the count (INVALID_ARGUMENT on
   * `deltas.delta`, nothing applied), as the real master refuses more than a job's spec allows:
   * this many (counted down), or every one while `Infinity`.
   */
  refuseRaises = 0;
  /** UpdateRequests refused so far. */
  refused = 0;
  /** Every call fails UNAVAILABLE (no leader known) while set. */
  down = false;
  /** WatchAssignments streams are held open (until `cutStreams`); refused as not implemented otherwise. */
  streams = false;
  /** Ends every open WatchAssignments stream with UNAVAILABLE (the connection to a dying master). */
  private readonly cuts: Array<() => void> = [];
  /** `${su}|${node}` -> absolute slot count. */
  readonly asgn = new Map<string, number>();
  readonly outstanding = new Map<string, number>();
  readonly requests: UpdateRequestsRequest__Output[] = [];
  readonly returns: ReturnSlotsRequest__Output[] = [];
  finished: FinishAppRequest__Output | undefined;
  readonly whenFinished: Promise<FinishAppRequest__Output>;
  /** The app's snapshot as the master stores it: the first topology wins, entries appended once per (attempt, seq). */
  readonly snapshot = { topology: '', entries: [] as string[] };
  readonly snapshotCalls: SaveAppSnapshotRequest__Output[] = [];
  private readonly snapshotSeqs = new Map<number, number>();
  /** AM attempts that registered, in order. */
  readonly registered: number[] = [];
  /** Pushes to drop (lost messages), counted down. */
  dropPushes = 0;
  /** UpdateRequests answers that carried the full table. */
  fullTablesSent = 0;
  /** The connectivity graph, sent to an AM whose connectivity_version differs from its version. */
  connectivity: Connectivity | undefined;
  /** The app's placement constraints (replaced by UpdateRequests field 9 and ReportAppState). */
  constraints: PlacementConstraints__Output = { reach: [], avoid: [] };
  private inflight = 0;
  private rr = 0;
  private lastRequestSeq = 0;
  private onFinish!: (r: FinishAppRequest__Output) => void;

  constructor(
    readonly spec: JobSpec,
    readonly agents: FakeAgent[],
  ) {
    this.whenFinished = new Promise((r) => (this.onFinish = r));
  }

  get address(): string {
    return this.server.address;
  }

  slots(su: string, node: string): number {
    return this.asgn.get(`${su}|${node}`) ?? 0;
  }

  async start(): Promise<this> {
    const def = proto.MasterService.service;
    const impl: Record<string, unknown> = {
      ...notImplemented(Object.keys(def)),
      RegisterApp: (req: { address: string; amAttempt: number }) => {
        this.gate();
        this.note('RegisterApp');
        this.registered.push(req.amAttempt);
        this.amAddress = req.address;
        // The slots the app already holds (after an AM restart; none for a new app).
        return { epoch: this.epoch, spec: this.spec, heartbeatIntervalMs: 50, assignments: this.table(), assignmentSeq: String(this.seq) };
      },
      SaveAppSnapshot: (req: SaveAppSnapshotRequest__Output) => {
        this.gate();
        this.note('SaveAppSnapshot');
        this.snapshotCalls.push(req);
        if (req.topology && !this.snapshot.topology) this.snapshot.topology = req.topology;
        if (Number(req.seq) > (this.snapshotSeqs.get(req.amAttempt) ?? 0)) {
          this.snapshotSeqs.set(req.amAttempt, Number(req.seq));
          this.snapshot.entries.push(...req.entries);
        }
        return {};
      },
      GetAppSnapshot: () => {
        this.gate();
        this.note('GetAppSnapshot');
        return { topology: this.snapshot.topology, entries: [...this.snapshot.entries] };
      },
      UpdateRequests: async (req: UpdateRequestsRequest__Output) => {
        this.gate();
        this.note('UpdateRequests');
        this.requests.push(req);
        if (this.delayNextAnswerMs > 0) {
          const ms = this.delayNextAnswerMs;
          this.delayNextAnswerMs = 0;
          await new Promise((r) => setTimeout(r, ms));
        }
        if (Number(req.seq) > this.lastRequestSeq && this.refuseRaises > 0 && req.deltas.some((d) => d.delta > 0)) {
          this.refuseRaises--;
          this.refused++;
          throw new InvalidArgumentError('deltas.delta', 'schedule unit would have more slots than its task allows (fake)');
        }
        if (Number(req.seq) > this.lastRequestSeq) {
          this.lastRequestSeq = Number(req.seq);
          if (req.constraints) this.constraints = req.constraints;
          for (const d of req.deltas) this.outstanding.set(d.suId, Math.max(0, (this.outstanding.get(d.suId) ?? 0) + d.delta));
          this.place();
        }
        const behind = this.inflight === 0 && Number(req.assignmentSeq) !== this.seq;
        if (behind) this.fullTablesSent++;
        const c = this.connectivity;
        const stale = c !== undefined && String(c.version) !== req.connectivityVersion;
        const base = { epoch: this.epoch, assignmentSeq: String(this.seq), reportState: this.reportPending, ...(stale ? { connectivity: c } : {}) };
        return behind ? { ...base, fullAssignments: true, assignments: this.table() } : base;
      },
      WatchAssignments: (_req: unknown, call: { on(ev: string, f: () => void): void }) => {
        this.gate();
        if (!this.streams) throw new FailedPreconditionError('WatchAssignments is not implemented by the fake');
        this.note('WatchAssignments');
        return new Promise<void>((resolve, reject) => {
          this.cuts.push(() => reject(new UnavailableError('stream cut (fake)')));
          call.on('cancelled', () => resolve());
        });
      },
      ReportAppState: async (req: ReportAppStateRequest__Output) => {
        this.gate();
        this.note('ReportAppState');
        if (this.delayReportMs > 0) await new Promise((r) => setTimeout(r, this.delayReportMs));
        this.reports.push(req);
        this.reportPending = false;
        if (req.address) this.amAddress = req.address;
        if (req.constraints) this.constraints = req.constraints;
        // The report replaces this master's view of the app's outstanding requests.
        this.outstanding.clear();
        for (const r of req.requests) this.outstanding.set(r.suId, (this.outstanding.get(r.suId) ?? 0) + r.count);
        this.place();
        return { epoch: this.epoch };
      },
      ReturnSlots: (req: ReturnSlotsRequest__Output) => {
        this.gate();
        this.note('ReturnSlots');
        this.returns.push(req);
        const changed: Assignment[] = [];
        for (const r of req.returns) {
          const k = `${r.suId}|${r.nodeId}`;
          this.asgn.set(k, Math.max(0, (this.asgn.get(k) ?? 0) - r.slots));
          changed.push(this.entry(r.suId, r.nodeId));
        }
        this.push(changed);
        return {};
      },
      FinishApp: (req: FinishAppRequest__Output) => {
        this.gate();
        this.note('FinishApp');
        this.finished = req;
        // As the real master's end of a job: every slot of the app released (its snapshot is
        // deleted there too; kept here for the tests to read what was logged).
        for (const k of this.asgn.keys()) this.asgn.set(k, 0);
        this.onFinish(req);
        return {};
      },
    };
    // A hosted AM's calls come in batches (AmCalls): each goes to the handler above, as alone.
    impl.AmCalls = batchedCalls(def, () => impl, AM_BATCHED);
    const handlers = implement(def, impl as never, nullLogger);
    this.server = await startServer({ bind: '127.0.0.1:0', log: nullLogger, services: [{ name: 'fuxi.v1.MasterService', definition: def, handlers }] });
    return this;
  }

  /** Cuts every open WatchAssignments stream (UNAVAILABLE): as the death of the master does. */
  cutStreams(): void {
    for (const cut of this.cuts.splice(0)) cut();
  }

  private note(call: string): void {
    this.calls.push(call);
    this.callTimes.push(Date.now());
  }

  private gate(): void {
    if (this.down) throw new UnavailableError('no leader known');
  }

  private entry(su: string, node: string): Assignment {
    const agent = this.agents.find((a) => a.nodeId === node);
    return { suId: su, nodeId: node, nodeAddress: agent?.address ?? '', slots: this.slots(su, node) };
  }

  private table(): Assignment[] {
    return [...this.asgn.entries()].filter(([, n]) => n > 0).map(([k]) => this.entry(...(k.split('|') as [string, string])));
  }

  /**
   * This master now leads as a new one would after a failover (epoch `epoch`): it numbers its own
   * assignment messages from 1, accepts any request seq, keeps the assignment table (rebuilt from
   * the agents' grants), knows no outstanding requests and asks the AM for its state.
   */
  becomeNewLeader(epoch: string, asgn: ReadonlyMap<string, number> = this.asgn): void {
    this.epoch = epoch;
    this.seq = 0;
    this.lastRequestSeq = 0;
    if (asgn !== this.asgn) for (const [k, n] of asgn) this.asgn.set(k, n);
    this.outstanding.clear();
    this.reportPending = true;
  }

  private place(): void {
    const changed: Assignment[] = [];
    for (const [su, n] of this.outstanding) {
      this.placed.set(su, (this.placed.get(su) ?? 0) + n);
      const usable = this.agents.filter((a) => !this.constraints.avoid.includes(a.nodeId));
      for (let i = 0; i < n && usable.length > 0; i++) {
        const agent = usable[this.rr++ % usable.length]!;
        const k = `${su}|${agent.nodeId}`;
        this.asgn.set(k, (this.asgn.get(k) ?? 0) + 1);
        changed.push(this.entry(su, agent.nodeId));
      }
      this.outstanding.set(su, 0);
    }
    if (changed.length > 0) this.push(changed);
  }

  private push(changed: Assignment[]): void {
    const seq = ++this.seq;
    // Absolute counts: the last entry per (su, node) wins.
    const last = new Map(changed.map((a) => [`${a.suId}|${a.nodeId}`, a]));
    const assignments = [...last.values()].map((a) => this.entry(a.suId ?? '', a.nodeId ?? ''));
    if (this.dropPushes > 0) {
      this.dropPushes--;
      return;
    }
    if (!this.amAddress) return; // no AM known here (e.g. a deposed master it never registered with)
    this.inflight++;
    const epoch = this.epoch;
    setImmediate(() => {
      const am = connect(proto.AppMasterService, this.amAddress);
      am.UpdateAssignments({ epoch, seq: String(seq), full: false, assignments }, { deadlineMs: 5000 })
        .catch(() => undefined)
        .finally(() => {
          this.inflight--;
          am.close();
        });
    });
  }

  async stop(): Promise<void> {
    await this.server?.shutdown(500);
  }
}

export type Outcome = { state: 'succeeded' } | { state: 'failed'; exitCode: number; message?: string } | { state: 'rejected'; message: string };

export class FakeAgent {
  server!: RunningServer;
  readonly started: StartWorkersRequest__Output[] = [];
  readonly stopped: string[] = [];
  /** StopWorkers answers wait this long (a slow agent); when each was answered (Date.now()). */
  stopDelayMs = 0;
  readonly stopsAnsweredAt: number[] = [];
  /** Workers planned and not finished: (su) -> count, to check the AM never exceeds its slots. */
  readonly running = new Map<string, number>();
  readonly violations: string[] = [];
  master: FakeMaster | undefined;
  /** How long a worker "runs". */
  runMs = 5;
  /** Workers of earlier AM attempts this agent still knows (what ListWorkers returns); see `finishListed`. */
  readonly listed: WorkerStatus[] = [];
  /** ListWorkers calls received. */
  listCalls = 0;
  /** Address of the newest AM whose plans reached this agent (where it would send events). */
  amAddress = '';
  /** Plans and stops from AM attempts below this are refused (fencing), as a real agent does. */
  minAmAttempt = 0;

  constructor(
    readonly nodeId: string,
    public behaviour: (plan: WorkerPlan__Output) => Outcome = () => ({ state: 'succeeded' }),
  ) {}

  get address(): string {
    return this.server.address;
  }

  get plans(): WorkerPlan__Output[] {
    return this.started.flatMap((r) => r.plans);
  }

  async start(): Promise<this> {
    const def = proto.AgentService.service;
    const impl: Record<string, unknown> = {
      ...notImplemented(Object.keys(def)),
      ListWorkers: () => {
        this.listCalls++;
        return { workers: this.listed.map((w) => ({ ...w })) };
      },
      StartWorkers: (req: StartWorkersRequest__Output) => {
        if (req.amAttempt < this.minAmAttempt) throw new StaleEpochError('am attempt', req.amAttempt, this.minAmAttempt);
        this.started.push(req);
        this.amAddress = req.amAddress;
        const workers: WorkerStatus[] = [];
        for (const plan of req.plans) {
          const outcome = this.behaviour(plan);
          const base = {
            workerId: plan.workerId,
            appId: req.appId,
            suId: plan.suId,
            task: plan.task,
            instance: plan.instance,
            attempt: plan.attempt,
            amAttempt: req.amAttempt,
            nodeId: this.nodeId,
          };
          if (outcome.state === 'rejected') {
            workers.push({ ...base, state: 'WORKER_STATE_REJECTED', message: outcome.message });
            continue;
          }
          const n = (this.running.get(plan.suId) ?? 0) + 1;
          this.running.set(plan.suId, n);
          const held = this.master?.slots(plan.suId, this.nodeId) ?? Infinity;
          if (n > held) this.violations.push(`${plan.workerId}: ${n} workers of ${plan.suId} on ${this.nodeId} with ${held} slots`);
          workers.push({ ...base, state: 'WORKER_STATE_PENDING' });
          setTimeout(() => {
            this.running.set(plan.suId, (this.running.get(plan.suId) ?? 1) - 1);
            const final: WorkerStatus =
              outcome.state === 'succeeded'
                ? { ...base, state: 'WORKER_STATE_SUCCEEDED' }
                : { ...base, state: 'WORKER_STATE_FAILED', exitCode: outcome.exitCode, message: outcome.message ?? '' };
            // Every event twice: the AM must be idempotent.
            const events = [{ ...base, state: 'WORKER_STATE_RUNNING' as const }, final, final];
            const am = connect(proto.AppMasterService, req.amAddress);
            am.WorkerEvents({ nodeId: this.nodeId, events }, { deadlineMs: 5000 })
              .catch(() => undefined)
              .finally(() => am.close());
          }, this.runMs);
        }
        return { workers };
      },
      StopWorkers: async (req: { workerIds: string[] }) => {
        this.stopped.push(...req.workerIds);
        if (this.stopDelayMs > 0) await new Promise((r) => setTimeout(r, this.stopDelayMs));
        this.stopsAnsweredAt.push(Date.now());
        return { workers: [] };
      },
    };
    // The AMs' StartWorkers / StopWorkers to one agent may come in batches (Calls): each to its handler above.
    impl.Calls = batchedCalls(def, () => impl, AGENT_BATCHED);
    const handlers = implement(def, impl as never, nullLogger);
    this.server = await startServer({ bind: '127.0.0.1:0', log: nullLogger, services: [{ name: 'fuxi.v1.AgentService', definition: def, handlers }] });
    return this;
  }

  /**
   * A listed worker (of an earlier AM attempt) ends. Its event goes to the newest AM only when
   * `push` is set (the agent learned the new address); else the AM must find out by polling.
   */
  finishListed(workerId: string, state: 'WORKER_STATE_SUCCEEDED' | 'WORKER_STATE_FAILED', push = false): void {
    const w = this.listed.find((x) => x.workerId === workerId);
    if (!w) throw new Error(`${workerId} is not listed on ${this.nodeId}`);
    w.state = state;
    if (state === 'WORKER_STATE_FAILED') w.exitCode = 1;
    if (!push || !this.amAddress) return;
    const am = connect(proto.AppMasterService, this.amAddress);
    am.WorkerEvents({ nodeId: this.nodeId, events: [{ ...w }] }, { deadlineMs: 5000 })
      .catch(() => undefined)
      .finally(() => am.close());
  }

  async stop(): Promise<void> {
    await this.server?.shutdown(500);
  }
}

/** A 2-stage job (map x4 -> reduce x2) in wire form. */
export function wireJob(over: Partial<JobSpec> = {}, maxAttempts = 3): JobSpec {
  const task = (name: string, instances: number, dependsOn: string[]) => ({
    name,
    instances,
    resource: { cpuMilli: 100, memoryMb: 64 },
    command: { argv: ['true', '${task}', '${instance}'], env: {}, cwd: '' },
    maxAttempts,
    dependsOn,
    locality: { nodes: [], racks: [] },
    priority: 0,
  });
  return {
    jobId: 'job-1',
    name: 'wordcount',
    quotaGroup: 'default',
    priority: 1,
    env: {},
    amResource: { cpuMilli: 100, memoryMb: 256 },
    tasks: [task('map', 4, []), task('reduce', 2, ['map'])],
    ...over,
  };
}
