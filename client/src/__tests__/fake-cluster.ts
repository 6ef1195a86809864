/**
 * A tiny fake MasterService (jobs in a map, scripted state changes) and fake agents (ReadLog only)
 * on port 0, for SDK and CLI tests.
 */
import type * as grpc from '@grpc/grpc-js';
import { nullLogger, NotFoundError, ResourceExhaustedError, UnavailableError, validateJobSpec } from '@fuxi/common';
import {
  loadFuxiProto,
  type ClusterStatus,
  type CreateTestbedRequest__Output,
  type JobInfo__Output,
  type NodeStatus__Output,
  type Testbed__Output,
  type WorkerStatus__Output,
} from '@fuxi/proto';
import { batchedCalls, implement, jobSpecFromProto, startServer, toGrpcError, type RunningServer } from '@fuxi/rpc';

const TERMINAL = new Set(['JOB_STATE_SUCCEEDED', 'JOB_STATE_FAILED', 'JOB_STATE_KILLED']);

function fillMissing(definition: object, impl: Record<string, unknown>): never {
  // A batch method (call-batch.ts) runs each entry by the handlers given.
  if ('Calls' in definition && !impl.Calls) impl.Calls = batchedCalls(definition, () => impl, new Set(Object.keys(impl)));
  for (const name of Object.keys(definition)) {
    impl[name] ??= () => {
      throw new UnavailableError(`${name} not implemented by the fake`);
    };
  }
  return impl as never;
}

/**
 * Ends a server stream with the handler's error as a gRPC status. (`implement()` in @fuxi/rpc
 * currently ends failed streams with `call.destroy(err)`, which never sends the status, so the
 * client waits forever; `emit('error')` is what grpc-js expects. Doing it here keeps these tests
 * independent of that.)
 */
function streaming<Req>(fn: (req: Req, call: grpc.ServerWritableStream<unknown, unknown>) => Promise<void>) {
  return async (req: Req, call: grpc.ServerWritableStream<unknown, unknown>): Promise<void> => {
    try {
      await fn(req, call);
    } catch (e) {
      call.emit('error', Object.assign(new Error(String(e)), toGrpcError(e)));
    }
  };
}

export class FakeMaster {
  jobs = new Map<string, JobInfo__Output>();
  nodes: NodeStatus__Output[] = [];
  /** What GetClusterStatus answers (the wire's input shape: int64 may be numbers). */
  clusterStatus: ClusterStatus = { leader: '', epoch: '1', fsmState: 'S0' };
  calls: string[] = [];
  /** The spec of each SubmitJob call, by job id (the last one). */
  specs = new Map<string, ReturnType<typeof validateJobSpec>>();
  /** Make the next N WatchJob streams fail with UNAVAILABLE after sending the current state. */
  failWatches = 0;
  /** Make the next N SubmitJob calls fail with UNAVAILABLE after storing the job (a lost reply). */
  loseSubmitReplies = 0;
  private watchers = new Map<string, Set<(j: JobInfo__Output) => void>>();
  private server?: RunningServer;

  get address(): string {
    if (!this.server) throw new Error('not started');
    return this.server.address;
  }

  /** Batch sizes of the SubmitJobs calls received (dry runs apart). */
  batches: number[] = [];
  /** Batch sizes of the dry-run SubmitJobs calls received. */
  dryRunBatches: number[] = [];
  /** False: answers SubmitJobs as a master older than dry_run would (ignores it, submits). */
  knowsDryRun = true;
  /** Quota groups a job may name (another is refused, INVALID_ARGUMENT, as the master does). */
  quotaGroups = new Set(['default']);
  /** The next this many SubmitJobs calls are refused for the submit rate (retry after 80 ms). */
  rateRefusals = 0;
  /** The ids KillJob was called with, in order. */
  killed: string[] = [];
  /** SubmitJobs calls of more jobs than this are refused as larger than the submit burst (retry after 0). */
  submitBurst = Infinity;
  /** Job id -> its job array's id. */
  arrayOf = new Map<string, string>();
  /** Job id -> its AM's snapshot log entries (GetAppSnapshot). */
  snapshots = new Map<string, string[]>();

  /** Testbeds by name (CreateTestbed, ListTestbeds, DeleteTestbed) and the create requests received. */
  testbeds = new Map<string, Testbed__Output>();
  testbedRequests: CreateTestbedRequest__Output[] = [];

  /** The requests of CordonNode / UncordonNode / DrainNode, in order. */
  adminRequests: Array<{ method: string; nodeId: string; reason: string; requestedBy: string; deadlineMs?: string }> = [];

  private admin(
    method: string,
    req: { nodeId: string; reason: string; requestedBy: string; deadlineMs?: string },
    state: string,
  ): { node: NodeStatus__Output } {
    this.calls.push(method);
    this.adminRequests.push({ method, ...req });
    const node = this.nodes.find((n) => n.node?.nodeId === req.nodeId);
    if (!node) throw new NotFoundError('node', req.nodeId);
    node.state = state || 'ready';
    node.admin = state
      ? {
          state,
          reason: req.reason,
          by: req.requestedBy,
          sinceMs: '1000',
          deadlineMs: state === 'draining' ? String(1000 + Number(req.deadlineMs)) : '0',
          drained: false,
        }
      : null;
    return { node };
  }

  async start(): Promise<this> {
    const def = loadFuxiProto().MasterService.service;
    const impl: Record<string, unknown> = {
      SubmitJobs: async (req: { specs: Array<Parameters<typeof jobSpecFromProto>[0]>; dryRun: boolean }) => {
        this.calls.push('SubmitJobs');
        const dryRun = req.dryRun && this.knowsDryRun;
        if (this.rateRefusals > 0 && !dryRun) {
          this.rateRefusals--;
          throw new ResourceExhaustedError('submit rate', 'submit rate limit of this caller', 80);
        }
        if (req.specs.length > this.submitBurst && !dryRun)
          throw new ResourceExhaustedError('submit rate', `${req.specs.length} jobs in one call is more than the submit burst`, 0);
        (dryRun ? this.dryRunBatches : this.batches).push(req.specs.length);
        return {
          dryRun,
          results: req.specs.map((p) => {
            const spec = jobSpecFromProto(p);
            const refusal =
              spec.name === 'refuse-me'
                ? 'quotaGroup: unknown'
                : !this.quotaGroups.has(spec.quotaGroup || 'default')
                  ? `quotaGroup: unknown quota group "${spec.quotaGroup}" (known: ${[...this.quotaGroups].join(', ')})`
                  : '';
            if (refusal) return { jobId: spec.jobId, created: false, errorCode: 'INVALID_ARGUMENT', errorMessage: refusal };
            const created = !this.jobs.has(spec.jobId);
            if (dryRun) return { jobId: spec.jobId, created, errorCode: '', errorMessage: '' };
            if (spec.array) this.arrayOf.set(spec.jobId, spec.array.id);
            if (created) this.jobs.set(spec.jobId, { jobId: spec.jobId, name: spec.name, state: 'JOB_STATE_SUBMITTED' } as JobInfo__Output);
            return { jobId: spec.jobId, created, errorCode: '', errorMessage: '' };
          }),
        };
      },
      SubmitJob: async (req: { spec: Parameters<typeof jobSpecFromProto>[0] | null }) => {
        this.calls.push('SubmitJob');
        const spec = validateJobSpec(jobSpecFromProto(req.spec ?? {}));
        const jobId = spec.jobId || 'generated-by-master';
        this.specs.set(jobId, spec);
        let created = false;
        if (!this.jobs.has(jobId)) {
          created = true;
          this.jobs.set(jobId, {
            jobId,
            name: spec.name,
            state: 'JOB_STATE_SUBMITTED',
            message: '',
            quotaGroup: spec.quotaGroup,
            priority: spec.priority,
            submittedAtMs: '1767225600000',
            finishedAtMs: '0',
            amAttempt: 0,
            amNodeId: '',
            amAddress: '',
            tasks: spec.tasks.map((t) => ({
              name: t.name,
              total: t.instances,
              pending: t.instances,
              running: 0,
              succeeded: 0,
              failed: 0,
              retries: 0,
              reexecutions: 0,
              progress: 0,
              backups: 0,
            })),
            owner: '',
            spec: null,
          });
        }
        if (this.loseSubmitReplies > 0) {
          this.loseSubmitReplies--;
          throw new UnavailableError('reply lost');
        }
        return { jobId, created };
      },
      GetAppSnapshot: async (req: { appId: string }) => {
        this.calls.push('GetAppSnapshot');
        this.job(req.appId);
        return { topology: '', entries: this.snapshots.get(req.appId) ?? [] };
      },
      GetJob: async (req: { jobId: string }) => {
        this.calls.push('GetJob');
        return { job: this.job(req.jobId) };
      },
      ListJobs: async (req: { states: string[]; arrayId: string }) => {
        this.calls.push('ListJobs');
        return {
          jobs: [...this.jobs.values()].filter(
            (j) => (req.states.length === 0 || req.states.includes(j.state)) && (!req.arrayId || this.arrayOf.get(j.jobId) === req.arrayId),
          ),
        };
      },
      KillJob: async (req: { jobId: string; reason: string }) => {
        this.calls.push('KillJob');
        this.killed.push(req.jobId);
        const j = this.job(req.jobId);
        if (!TERMINAL.has(j.state)) this.update(req.jobId, { state: 'JOB_STATE_KILLED', message: `killed: ${req.reason}` });
        return { job: this.job(req.jobId) };
      },
      ListNodes: async () => {
        this.calls.push('ListNodes');
        return { nodes: this.nodes };
      },
      CordonNode: async (req: { nodeId: string; reason: string; requestedBy: string }) => this.admin('CordonNode', req, 'cordoned'),
      UncordonNode: async (req: { nodeId: string; requestedBy: string }) => this.admin('UncordonNode', { ...req, reason: '' }, ''),
      DrainNode: async (req: { nodeId: string; reason: string; requestedBy: string; deadlineMs: string }) => this.admin('DrainNode', req, 'draining'),
      CreateTestbed: async (req: CreateTestbedRequest__Output) => {
        this.calls.push('CreateTestbed');
        this.testbedRequests.push(req);
        const hosts = req.hosts.length > 0 ? req.hosts : this.nodes.slice(0, req.count || this.nodes.length).map((n) => n.node?.nodeId ?? '');
        const t: Testbed__Output = {
          name: req.name,
          quotaGroup: req.quotaGroup,
          selectorHosts: req.hosts,
          selectorLabel: req.label,
          selectorCount: req.count,
          hosts,
          startMs: req.startMs,
          endMs: req.endMs,
          createdMs: '1',
          active: true,
        };
        this.testbeds.set(req.name, t);
        for (const n of this.nodes) if (hosts.includes(n.node?.nodeId ?? '')) n.testbed = req.name;
        return { testbed: t, othersRunning: hosts.slice(0, 1).map((nodeId) => ({ nodeId, workers: 2 })) };
      },
      ListTestbeds: async () => ({ testbeds: [...this.testbeds.values()] }),
      DeleteTestbed: async (req: { name: string }) => {
        this.calls.push('DeleteTestbed');
        if (!this.testbeds.delete(req.name)) throw new NotFoundError('testbed', req.name);
        return {};
      },
      GetClusterStatus: async () => {
        this.calls.push('GetClusterStatus');
        return { ...this.clusterStatus, leader: this.clusterStatus.leader || this.address };
      },
      WatchJobs: streaming(async (req: { jobIds: string[]; arrayId: string; endsOnly: boolean }, call) => {
        this.calls.push('WatchJobs');
        const ids = new Set(req.jobIds);
        for (const [id, a] of this.arrayOf) if (req.arrayId && a === req.arrayId) ids.add(id);
        const open = new Set([...ids].filter((id) => !TERMINAL.has(this.job(id).state)));
        await new Promise<void>((resolve) => {
          const sends: Array<[string, (j: JobInfo__Output) => void]> = [];
          const done = () => {
            for (const [id, f] of sends) this.watchers.get(id)?.delete(f);
            call.end();
            resolve();
          };
          const send = (j: JobInfo__Output) => {
            if (!req.endsOnly || TERMINAL.has(j.state)) call.write(j);
            if (TERMINAL.has(j.state)) open.delete(j.jobId);
            if (open.size === 0) done();
          };
          for (const id of open) {
            const set = this.watchers.get(id) ?? new Set();
            this.watchers.set(id, set);
            set.add(send);
            sends.push([id, send]);
          }
          call.on('cancelled', done);
          for (const id of ids) send(this.job(id));
          if (ids.size === 0) done();
        });
      }),
      WatchJob: streaming(async (req: { jobId: string }, call) => {
        this.calls.push('WatchJob');
        const first = this.job(req.jobId);
        if (this.failWatches > 0) {
          this.failWatches--;
          call.write(first);
          await new Promise((r) => setTimeout(r, 20));
          throw new UnavailableError('master going away');
        }
        await new Promise<void>((resolve) => {
          const set = this.watchers.get(req.jobId) ?? new Set();
          this.watchers.set(req.jobId, set);
          const send = (j: JobInfo__Output) => {
            call.write(j);
            if (TERMINAL.has(j.state)) done();
          };
          const done = () => {
            set.delete(send);
            call.end();
            resolve();
          };
          call.on('cancelled', done);
          set.add(send);
          send(first);
        });
      }),
    };
    this.server = await startServer({
      bind: '127.0.0.1:0',
      log: nullLogger,
      services: [{ name: 'fuxi.v1.MasterService', definition: def, handlers: implement(def, fillMissing(def, impl), nullLogger) }],
    });
    return this;
  }

  job(jobId: string): JobInfo__Output {
    const j = this.jobs.get(jobId);
    if (!j) throw new NotFoundError('job', jobId);
    return j;
  }

  /** Changes a job and pushes it to watchers. */
  update(jobId: string, patch: Partial<JobInfo__Output>): void {
    const j = { ...this.job(jobId), ...patch };
    this.jobs.set(jobId, j);
    for (const w of [...(this.watchers.get(jobId) ?? [])]) w(j);
  }

  async stop(): Promise<void> {
    await this.server?.shutdown(100);
  }
}

/** An agent that serves ReadLog for the logs it holds and NOT_FOUND for the rest. */
export class FakeAgent {
  /** key `${app}/${task}/${instance}/${stream}/${attempt}` -> chunks */
  logs = new Map<string, string[]>();
  reads = 0;
  /** Wait this long before the first chunk (a quiet, followed log). */
  quietMs = 0;
  private server?: RunningServer;

  get address(): string {
    if (!this.server) throw new Error('not started');
    return this.server.address;
  }

  async start(): Promise<this> {
    const def = loadFuxiProto().AgentService.service;
    const impl: Record<string, unknown> = {
      ReadLog: streaming(async (req: { appId: string; task: string; instance: number; stream: string; attempt: number }, call) => {
        this.reads++;
        const chunks = this.logs.get(`${req.appId}/${req.task}/${req.instance}/${req.stream || 'stdout'}/${req.attempt}`);
        if (!chunks) throw new NotFoundError('log', `${req.appId}/${req.task}/${req.instance}`);
        if (this.quietMs) await new Promise((r) => setTimeout(r, this.quietMs));
        for (const c of chunks) call.write({ data: Buffer.from(c) });
        call.end();
      }),
    };
    this.server = await startServer({
      bind: '127.0.0.1:0',
      log: nullLogger,
      services: [{ name: 'fuxi.v1.AgentService', definition: def, handlers: implement(def, fillMissing(def, impl), nullLogger) }],
    });
    return this;
  }

  async stop(): Promise<void> {
    await this.server?.shutdown(100);
  }
}

/** An application master that answers GetAppState with the workers it is given. */
export class FakeAm {
  workers: WorkerStatus__Output[] = [];
  asked = 0;
  private server?: RunningServer;

  get address(): string {
    if (!this.server) throw new Error('not started');
    return this.server.address;
  }

  async start(): Promise<this> {
    const def = loadFuxiProto().AppMasterService.service;
    const impl: Record<string, unknown> = {
      GetAppState: async () => {
        this.asked++;
        return { appId: '', amAttempt: 1, assignments: [], progress: [], workers: this.workers };
      },
    };
    this.server = await startServer({
      bind: '127.0.0.1:0',
      log: nullLogger,
      services: [{ name: 'fuxi.v1.AppMasterService', definition: def, handlers: implement(def, fillMissing(def, impl), nullLogger) }],
    });
    return this;
  }

  async stop(): Promise<void> {
    await this.server?.shutdown(100);
  }
}
