/**
 * `FuxiClient`: the typed client for the Fuxi master (submit, inspect, watch and kill jobs, list
 * nodes, cluster status) and for reading worker logs from node agents.
 */
import { randomUUID } from 'node:crypto';
import * as grpc from '@grpc/grpc-js';
import {
  AM_SU,
  decodeEntry,
  FailedPreconditionError,
  FuxiError,
  isTransientError,
  NotFoundError,
  UnavailableError,
  validateJobSpec,
  type JobSpec,
  type SnapshotEntry,
} from '@fuxi/common';
import {
  loadFuxiProto,
  type ClusterStatus__Output,
  type CreateTestbedResponse__Output,
  type JobInfo__Output,
  type NodeStatus__Output,
  type SubmitJobsResponse__Output,
  type Testbed__Output,
} from '@fuxi/proto';
import {
  connect,
  defaultTransport,
  hasDefaultTransport,
  jobSpecToProto,
  MasterConnection,
  readTokenFile,
  Retrier,
  RpcError,
  Transport,
  transportFromEnv,
  type MasterConnectionOptions,
  type TlsFiles,
} from '@fuxi/rpc';
import { makeJobId } from './job-id.js';
import { checkArray } from './job-array.js';
import { defaultMasters } from './masters.js';
import { isTerminal, type JobStateName } from './job-state.js';
import { readOutput, type FetchOptions } from './outputs.js';

export { DEFAULT_MASTER, defaultMasters, splitAddresses } from './masters.js';

/** How long `logs` waits for a node's first answer before judging it by its connection. */
const LOG_PROBE_MS = 5_000;
/** How long `logs` waits for a running job's AM to say where a worker runs. */
const AM_ASK_MS = 3_000;

export interface FuxiClientOptions extends MasterConnectionOptions {
  /** Master addresses (host:port); default `defaultMasters()`. */
  masters?: readonly string[];
  /** Deadline of each unary call (default 10 s). */
  deadlineMs?: number;
  /** `logs`: how long to wait for a node's first answer before judging it by its connection (default 5 s). */
  logProbeMs?: number;
  /**
   * A file holding the bearer token (its first line), read at each call so a replaced token is
   * used at once; `token` gives it directly instead. Neither: no token (an insecure cluster, or a
   * client certificate).
   */
  tokenFile?: string;
  /**
   * Mutual TLS: CA, client certificate and key (PEM paths). Default: `FUXI_TLS_CA`,
   * `FUXI_TLS_CERT`, `FUXI_TLS_KEY`; inside a daemon, the daemon's own.
   */
  tls?: TlsFiles;
  /** Plaintext, for a cluster started with `insecure: true` (or `FUXI_INSECURE=1`). */
  insecure?: boolean;
  /** The field named when neither is given (`tls`; the CLI says `--tls-ca`). */
  tlsField?: string;
  /**
   * Re-read the TLS files when they change (default true, for a client that lives as long as its
   * certificates). A process that makes a few calls and exits (the `fuxi` CLI) says false: its
   * first call does not wait for a file watcher's first read (rpc `TransportOptions`).
   */
  watchCertificates?: boolean;
}

/**
 * The client's transport: `transport`, else `tls` / `insecure`, else the environment, else the
 * process's when a daemon set one. TLS is on by default: with none of them this throws an
 * InvalidArgumentError naming `tls` (or `field`).
 */
export function clientTransport(
  opts: Pick<FuxiClientOptions, 'transport' | 'tls' | 'insecure' | 'tlsField' | 'watchCertificates'>,
  env: NodeJS.ProcessEnv = process.env,
): Transport {
  if (opts.transport) return opts.transport;
  const field = opts.tlsField ?? 'tls';
  const how = { watch: opts.watchCertificates !== false };
  if (opts.tls || opts.insecure) return Transport.from({ tls: opts.tls, insecure: opts.insecure }, field, how);
  const fromEnv = transportFromEnv(env);
  if (fromEnv.tls || fromEnv.insecure) return Transport.from(fromEnv, field, how);
  if (hasDefaultTransport()) return defaultTransport();
  return Transport.from({}, field);
}

export interface SubmitResult {
  jobId: string;
  /** False when a job with this id already existed (the submit was a retry). */
  created: boolean;
}

/** One job of `submitMany`: taken (created, or already there) or refused with its own error. */
export interface BatchSubmitResult extends SubmitResult {
  error?: FuxiError;
}

export interface SubmitManyOptions {
  /**
   * Check, do not submit (Kubernetes' dryRun): the master runs every admission check a real submit
   * would (its quota groups, testbeds, job arrays, existing ids...) on each job, in the same calls a
   * real `submitMany` of these specs makes, and writes nothing. Each result is the verdict the
   * real submit would get now: `created` means the job would be created. A master too old to know
   * dry runs (it would have submitted the jobs) is an error (FAILED_PRECONDITION). Give specs ids
   * to submit them under the ids checked: one made here differs from the real submit's.
   */
  dryRun?: boolean;
}

/** `submitMany` splits its jobs into SubmitJobs calls of at most this many specs and bytes. */
export const SUBMIT_BATCH = { maxJobs: 1000, maxBytes: 2 * 1024 * 1024 };
/** The longest submitMany waits at once on a rate-limit refusal's retry-after. */
export const SUBMIT_RATE_WAIT_MAX_MS = 60_000;

export interface LogOptions {
  stream?: 'stdout' | 'stderr';
  /** Attempt number; 0 or absent = the latest attempt. */
  attempt?: number;
  /** Keep reading as the worker writes (like `tail -f`) until it finishes. */
  follow?: boolean;
}

export class FuxiClient {
  readonly connection: MasterConnection;
  /** Mutual TLS (or plaintext) of every channel this client opens. */
  readonly transport: Transport;
  private readonly deadlineMs: number | undefined;
  private readonly retryForMs: number;
  private readonly logProbeMs: number;

  constructor(opts: FuxiClientOptions = {}) {
    const { masters, deadlineMs, logProbeMs, tokenFile, tls, insecure, tlsField, watchCertificates, ...connOpts } = opts;
    this.logProbeMs = logProbeMs ?? LOG_PROBE_MS;
    if (tokenFile) {
      readTokenFile(tokenFile); // a missing or empty file is an error now, naming it
      connOpts.token = () => readTokenFile(tokenFile);
    }
    this.transport = clientTransport({ transport: opts.transport, tls, insecure, tlsField, ...(watchCertificates === undefined ? {} : { watchCertificates }) });
    this.connection = new MasterConnection(masters && masters.length ? masters : defaultMasters(), { ...connOpts, transport: this.transport });
    this.deadlineMs = deadlineMs;
    this.retryForMs = opts.retryForMs ?? 30_000;
  }

  /**
   * Validates `spec` locally (the same checks the master runs) and submits it. When `spec.jobId`
   * is empty a job id is made here (`<name>-<random>`) so that retries after a lost reply are
   * idempotent: the master answers a repeated id with `created: false`.
   */
  async submit(spec: JobSpec): Promise<SubmitResult> {
    const checked = validateJobSpec(spec);
    if (!checked.jobId) checked.jobId = makeJobId(checked.name, randomUUID());
    const res = await this.connection.call('SubmitJob', { spec: jobSpecToProto(checked) }, this.callOpts(true));
    return { jobId: res.jobId || checked.jobId, created: res.created };
  }

  /**
   * Submits many jobs with few calls (SubmitJobs, split below the call and store limits): each is
   * validated here, given an id when it has none, and taken or refused on its own; results come in
   * the order of `specs`. Idempotent by id like `submit`: a retried batch finds its jobs
   * (`created: false`). A spec that fails validation here is not sent.
   *
   * A batch refused by the master's submit rate limit (RESOURCE_EXHAUSTED with a retry-after, as
   * HTTP 429 with Retry-After) is sent again once that time has passed, as Kubernetes clients do:
   * 10,000 jobs go in at the cluster's rate instead of failing after the caller's burst. Each wait
   * is at most `SUBMIT_RATE_WAIT_MAX_MS`; a refusal without a retry-after is thrown.
   *
   * With `opts.dryRun` every job is only checked (`SubmitManyOptions`); a caller that wants all or
   * nothing checks first and submits only when no job was refused (as `fuxi submit -f` does).
   */
  async submitMany(specs: readonly JobSpec[], opts: SubmitManyOptions = {}): Promise<BatchSubmitResult[]> {
    const dryRun = opts.dryRun === true;
    const results: BatchSubmitResult[] = new Array(specs.length);
    let batch: Array<{ at: number; proto: ReturnType<typeof jobSpecToProto> }> = [];
    let bytes = 0;
    const send = async () => {
      if (batch.length === 0) return;
      const sent = batch;
      batch = [];
      bytes = 0;
      const res = await this.submitJobsPaced(
        sent.map((b) => b.proto),
        dryRun,
      );
      res.results.forEach((r, i) => {
        const at = sent[i]!.at;
        results[at] = r.errorCode
          ? { jobId: r.jobId, created: false, error: new FuxiError(r.errorCode as FuxiError['code'], r.errorMessage) }
          : { jobId: r.jobId, created: r.created };
      });
    };
    for (let i = 0; i < specs.length; i++) {
      let checked: JobSpec;
      try {
        checked = validateJobSpec(specs[i]!);
      } catch (e) {
        if (!(e instanceof FuxiError)) throw e;
        results[i] = { jobId: specs[i]!.jobId, created: false, error: e };
        continue;
      }
      if (!checked.jobId) checked.jobId = makeJobId(checked.name, randomUUID());
      const proto = jobSpecToProto(checked);
      const size = Buffer.byteLength(JSON.stringify(proto));
      if (batch.length >= SUBMIT_BATCH.maxJobs || (batch.length > 0 && bytes + size > SUBMIT_BATCH.maxBytes)) await send();
      batch.push({ at: i, proto });
      bytes += size;
    }
    await send();
    return results;
  }

  /**
   * One SubmitJobs call, sent again after the wait a rate-limit refusal names. A refusal with no
   * wait (0: the batch is larger than the master's whole submit burst, so waiting never helps) is
   * answered by sending the batch in two halves, down to single jobs.
   */
  private async submitJobsPaced(specs: Array<ReturnType<typeof jobSpecToProto>>, dryRun = false): Promise<{ results: SubmitJobsResponse__Output['results'] }> {
    for (;;) {
      try {
        const res = await this.connection.call('SubmitJobs', { specs, dryRun }, this.callOpts(true));
        // A master older than dry_run ignores it: it has just submitted the jobs.
        if (dryRun && !res.dryRun)
          throw new FailedPreconditionError(
            `the master does not know dry runs (it is older than this client): the ${specs.length} jobs sent to be checked were submitted (${specs
              .slice(0, 5)
              .map((p) => p.jobId)
              .join(', ')}${specs.length > 5 ? ', ...' : ''})`,
          );
        return res;
      } catch (e) {
        const wait = e instanceof RpcError && e.code === 'RESOURCE_EXHAUSTED' ? Number(e.details['retry-after-ms']) : NaN;
        if (!Number.isFinite(wait) || wait < 0) throw e;
        if (wait === 0) {
          if (specs.length <= 1) throw e;
          const half = Math.ceil(specs.length / 2);
          const first = await this.submitJobsPaced(specs.slice(0, half), dryRun);
          const rest = await this.submitJobsPaced(specs.slice(half), dryRun);
          return { results: [...first.results, ...rest.results] };
        }
        await new Promise((r) => setTimeout(r, Math.min(wait, SUBMIT_RATE_WAIT_MAX_MS)));
      }
    }
  }

  /**
   * A job array (Slurm's `--array`): one job per index in `indices`, each with its own id
   * `<arrayId>_<index>`, state and workers, and `FUXI_ARRAY_ID` / `FUXI_ARRAY_INDEX` in its workers'
   * environment; at most `maxRunning` members run at once (0 = no limit: the master holds the rest
   * and starts them in index order as members end). `arrayId` defaults to the spec's id, or one
   * made from its name. Submitted with `submitMany`, so idempotent like it; `dryRun` only checks
   * every member (pass the same `arrayId` to the submit that follows when the id is made here).
   */
  async submitArray(
    spec: JobSpec,
    opts: { indices: readonly number[]; maxRunning?: number; arrayId?: string; dryRun?: boolean },
  ): Promise<{ arrayId: string; results: BatchSubmitResult[] }> {
    const arrayId = opts.arrayId || spec.jobId || makeJobId(spec.name, randomUUID());
    const maxRunning = opts.maxRunning ?? 0;
    checkArray(arrayId, opts.indices, maxRunning);
    const specs = opts.indices.map((index) => ({
      ...spec,
      jobId: `${arrayId}_${index}`,
      env: { ...spec.env, FUXI_ARRAY_ID: arrayId, FUXI_ARRAY_INDEX: String(index) },
      array: { id: arrayId, index, maxRunning },
    }));
    return { arrayId, results: await this.submitMany(specs, { dryRun: opts.dryRun === true }) };
  }

  /** A page of jobs in submission order: at most `limit` after job `after`; `nextAfter` ('' at the end) continues. */
  async listPage(opts: {
    states?: readonly JobStateName[];
    arrayId?: string;
    limit: number;
    after?: string;
  }): Promise<{ jobs: JobInfo__Output[]; nextAfter: string }> {
    const res = await this.connection.call(
      'ListJobs',
      { states: [...(opts.states ?? [])], arrayId: opts.arrayId ?? '', limit: opts.limit, after: opts.after ?? '' },
      this.callOpts(true),
    );
    return { jobs: res.jobs, nextAfter: res.nextAfter };
  }

  async get(jobId: string): Promise<JobInfo__Output> {
    const res = await this.connection.call('GetJob', { jobId }, this.callOpts(true));
    if (!res.job) throw new NotFoundError('job', jobId);
    return res.job;
  }

  /** Jobs, optionally only those in `states` (e.g. `['JOB_STATE_RUNNING']`) or of job array `arrayId`. */
  async list(opts: { states?: readonly JobStateName[]; arrayId?: string } = {}): Promise<JobInfo__Output[]> {
    const res = await this.connection.call('ListJobs', { states: [...(opts.states ?? [])], arrayId: opts.arrayId ?? '' }, this.callOpts(true));
    return res.jobs;
  }

  /** Kills a job (idempotent); returns its state after the kill. */
  async kill(jobId: string, reason = ''): Promise<JobInfo__Output> {
    const res = await this.connection.call('KillJob', { jobId, reason }, this.callOpts(true));
    if (!res.job) return this.get(jobId);
    return res.job;
  }

  async nodes(): Promise<NodeStatus__Output[]> {
    const res = await this.connection.call('ListNodes', {}, this.callOpts(true));
    return res.nodes;
  }

  /**
   * Cordons a node: the master places nothing new on it; what runs there stays. `by` names who
   * asks (recorded with the reason, shown by `nodes()`). Answered once the master's record is
   * durable (it survives a master failover). NOT_FOUND for a node the master does not know.
   */
  async cordon(nodeId: string, opts: { reason?: string; by?: string } = {}): Promise<NodeStatus__Output | null> {
    const res = await this.connection.call('CordonNode', { nodeId, reason: opts.reason ?? '', requestedBy: opts.by ?? '' }, this.callOpts(true));
    return res.node;
  }

  /** Makes a node schedulable again and ends a drain under way. */
  async uncordon(nodeId: string, opts: { by?: string } = {}): Promise<NodeStatus__Output | null> {
    const res = await this.connection.call('UncordonNode', { nodeId, requestedBy: opts.by ?? '' }, this.callOpts(true));
    return res.node;
  }

  /**
   * Drains a node: nothing new goes there; its batch work finishes or, `deadlineMs` from now
   * (default: 1 hour), has its slots revoked and runs again elsewhere; its AMs move last; then it
   * is cordoned (drained).
   */
  async drain(nodeId: string, opts: { reason?: string; by?: string; deadlineMs?: number } = {}): Promise<NodeStatus__Output | null> {
    const req = { nodeId, reason: opts.reason ?? '', requestedBy: opts.by ?? '', deadlineMs: String(opts.deadlineMs ?? 0) };
    const res = await this.connection.call('DrainNode', req, this.callOpts(true));
    return res.node;
  }

  /**
   * Reserves hosts for quota group `group` (a testbed): by name (`hosts`), by label (`label`,
   * key=value) or a `count` of hosts the master picks (healthy, uncordoned, least loaded); give
   * exactly one. With `startMs`/`endMs` (ms since the epoch) only inside that window. While it is
   * active only the group's jobs get new slots on its hosts, and a job whose spec names it
   * (`testbed: NAME`) goes only there; `othersRunning` in the answer counts the work of other
   * groups already on its hosts (it runs on to its end). Answered once the testbed is durable (it
   * survives a master failover); INVALID_ARGUMENT names the field at fault. Sending the same
   * request again returns the same testbed.
   */
  async createTestbed(req: {
    name: string;
    group: string;
    hosts?: readonly string[];
    label?: string;
    count?: number;
    startMs?: number;
    endMs?: number;
    by?: string;
  }): Promise<CreateTestbedResponse__Output> {
    const wire = {
      name: req.name,
      quotaGroup: req.group,
      hosts: [...(req.hosts ?? [])],
      label: req.label ?? '',
      count: req.count ?? 0,
      startMs: String(req.startMs ?? 0),
      endMs: String(req.endMs ?? 0),
      requestedBy: req.by ?? '',
    };
    return this.connection.call('CreateTestbed', wire, this.callOpts(true));
  }

  /** Every testbed, by name (int64 fields are decimal strings; `active`: holding its hosts now). */
  async testbeds(): Promise<Testbed__Output[]> {
    const res = await this.connection.call('ListTestbeds', {}, this.callOpts(true));
    return res.testbeds;
  }

  /** Deletes a testbed: its hosts are ordinary again. NOT_FOUND for an unknown one. */
  async deleteTestbed(name: string, opts: { by?: string } = {}): Promise<void> {
    await this.connection.call('DeleteTestbed', { name, requestedBy: opts.by ?? '' }, this.callOpts(true));
  }

  /**
   * The master's view of failures (`GetClusterStatus`): the leader's address and epoch, the fault
   * FSM state (`S0`..`S6`, `S2S3`), the open fault events, the progress of the last failover
   * recovery, and node and app counts. int64 fields (`epoch`, `sinceMs`, `startedAtMs`,
   * `finishedAtMs`) are decimal strings.
   */
  async clusterStatus(): Promise<ClusterStatus__Output> {
    return this.connection.call('GetClusterStatus', {}, this.callOpts(true));
  }

  /**
   * The job's state, every time it changes, until it is terminal (the last value yielded is the
   * terminal one). Survives master failover: on UNAVAILABLE (or the stream ending early) it asks
   * `GetJob` (which follows redirects to the new leader) and opens the stream again.
   */
  async *watch(jobId: string): AsyncGenerator<JobInfo__Output, void, undefined> {
    let last = '';
    const fresh = (j: JobInfo__Output): boolean => {
      const text = JSON.stringify(j);
      if (text === last) return false;
      last = text;
      return true;
    };
    // Reconnects back off from 100 ms to 2 s; every message starts over (and restarts `retryForMs`).
    // A stream the master ended for falling behind (RESOURCE_EXHAUSTED) is watched again too.
    const retrier = new Retrier({
      retryForMs: this.retryForMs,
      retryIf: (e) => isTransientError(e) || (e instanceof RpcError && (e.leader !== '' || e.code === 'RESOURCE_EXHAUSTED')),
    });
    for (;;) {
      // A unary call first: it finds the leader, retries while no master answers, and throws
      // NOT_FOUND for an unknown job.
      const snapshot = await this.get(jobId);
      if (fresh(snapshot)) yield snapshot;
      if (isTerminal(snapshot.state)) return;
      const stream = this.connection.client().stream.WatchJob({ jobId });
      let failure: unknown;
      try {
        for await (const info of stream) {
          retrier.reset();
          if (fresh(info)) yield info;
          if (isTerminal(info.state)) return;
        }
      } catch (e) {
        failure = e;
      } finally {
        stream.cancel();
      }
      // Ended without a terminal state, or the master went away: back off and reconnect.
      await retrier.failed(failure ?? new UnavailableError(`the watch of job ${jobId} ended before the job did`));
    }
  }

  /** Waits until the job is terminal; `onProgress` sees every change. Returns the final state. */
  async waitFor(jobId: string, onProgress?: (job: JobInfo__Output) => void): Promise<JobInfo__Output> {
    let final: JobInfo__Output | undefined;
    for await (const job of this.watch(jobId)) {
      onProgress?.(job);
      final = job;
    }
    if (!final) throw new NotFoundError('job', jobId);
    return final;
  }

  /**
   * Waits until every job in `jobIds` (and every member of job array `arrayId`) is terminal, on one
   * WatchJobs stream however many there are (the master's cost is per change, not per job), and
   * returns their final states by id. `onChange` sees every change (only ends with `endsOnly`).
   * Survives master failover: the stream is opened again (after a backoff) for the jobs not yet
   * ended. Throws NOT_FOUND for an unknown job or array.
   */
  async waitAll(
    target: { jobIds?: readonly string[]; arrayId?: string },
    opts: { onChange?: (job: JobInfo__Output) => void; endsOnly?: boolean } = {},
  ): Promise<Map<string, JobInfo__Output>> {
    const final = new Map<string, JobInfo__Output>();
    let pending = [...new Set(target.jobIds ?? [])];
    const arrayId = target.arrayId ?? '';
    // A stream the master ended for falling behind (RESOURCE_EXHAUSTED) is watched again too.
    const retrier = new Retrier({
      retryForMs: this.retryForMs,
      retryIf: (e) => isTransientError(e) || (e instanceof RpcError && (e.leader !== '' || e.code === 'RESOURCE_EXHAUSTED')),
    });
    for (;;) {
      // A unary call first finds the leader (and retries while none answers).
      await this.connection.call('GetClusterStatus', {}, this.callOpts(true));
      const stream = this.connection.client().stream.WatchJobs({ jobIds: pending, arrayId, endsOnly: opts.endsOnly ?? false });
      let failure: unknown;
      try {
        for await (const info of stream) {
          retrier.reset();
          opts.onChange?.(info);
          if (isTerminal(info.state)) final.set(info.jobId, info);
        }
      } catch (e) {
        failure = e;
      } finally {
        stream.cancel();
      }
      if (failure === undefined) {
        // The stream ended: every job it watched is terminal.
        return final;
      }
      if (failure instanceof RpcError && (failure.code === 'NOT_FOUND' || failure.code === 'INVALID_ARGUMENT')) throw failure;
      // Watch again what has not ended: the listed jobs, and the array whole (a stream cut before
      // every member's first record came has not shown them all; the ended ones come again, once).
      pending = pending.filter((id) => !final.has(id));
      if (pending.length === 0 && !arrayId) return final;
      await retrier.failed(failure);
    }
  }

  /**
   * A worker's stdout or stderr, as raw chunks, read from the agent of the node that ran it:
   * `locateWorker` asks the job's AM (running workers) and the master (the job's AM node, and the
   * instances that finished, from the job's snapshot log). That node answering NOT_FOUND or not
   * at all is the answer (the error names the node). Only when nothing knows the node (the master
   * forgot the job, the AM does not answer, an earlier attempt that was retried) does it ask every
   * node's agent in turn, healthy ones first. Throws NOT_FOUND when no node has it.
   */
  async *logs(jobId: string, task: string, instance: number, opts: LogOptions = {}): AsyncGenerator<Buffer, void, undefined> {
    const req = { appId: jobId, task, instance, stream: opts.stream ?? 'stdout', attempt: opts.attempt ?? 0, follow: opts.follow ?? false };
    const what = `log of ${jobId}/${task}/${instance} (${req.stream}${req.attempt ? `, attempt ${req.attempt}` : ''})`;
    const loc = await this.locateWorker(jobId, task, instance, req.attempt);
    const nodes = await this.nodes();
    if (loc) {
      const address = nodes.find((n) => n.node?.nodeId === loc.nodeId)?.node?.address || loc.address;
      const ran = `node ${loc.nodeId}${loc.attempt ? ` (attempt ${loc.attempt})` : ''}`;
      if (!address) throw new FuxiError('NOT_FOUND', `${what}: it ran on ${ran}, which is no longer in the cluster`);
      let log: OpenLog;
      try {
        log = await this.openLog(address, req);
      } catch (e) {
        if (e instanceof RpcError && e.code === 'NOT_FOUND') {
          throw new FuxiError(
            'NOT_FOUND',
            `${what}: it ran on ${ran}, whose agent at ${address} no longer has it (deleted after workerRetention, or the host lost it)`,
          );
        }
        if (e instanceof RpcError && (e.code === 'UNAVAILABLE' || e.code === 'DEADLINE_EXCEEDED')) {
          throw new FuxiError('UNAVAILABLE', `${what}: it ran on ${ran}, whose agent at ${address} does not answer`);
        }
        throw e;
      }
      yield* readOpenLog(log);
      return;
    }
    const ordered = [...nodes.filter((n) => n.healthy), ...nodes.filter((n) => !n.healthy)];
    const unreachable: string[] = [];
    for (const n of ordered) {
      const address = n.node?.address;
      if (!address) continue;
      let log: OpenLog;
      try {
        log = await this.openLog(address, req);
      } catch (e) {
        if (e instanceof RpcError && e.code === 'NOT_FOUND') continue;
        if (e instanceof RpcError && (e.code === 'UNAVAILABLE' || e.code === 'DEADLINE_EXCEEDED')) {
          unreachable.push(n.node?.nodeId || address);
          continue;
        }
        throw e;
      }
      yield* readOpenLog(log);
      return;
    }
    const where = unreachable.length ? `; unreachable nodes: ${unreachable.join(', ')}` : '';
    throw new FuxiError('NOT_FOUND', `${what} not found on any node${where}`);
  }

  /**
   * The node that ran instance `instance` of `task` (attempt `attempt`; 0: the latest), as far as
   * the cluster knows: the job's AM node for the AM (`task` `__am__`), the running worker's node
   * from the job's AM (GetAppState), else the node the job's snapshot log names for the finished
   * instance (GetAppSnapshot). Undefined when none of them knows.
   */
  async locateWorker(jobId: string, task: string, instance: number, attempt = 0): Promise<WorkerLocation | undefined> {
    let job: JobInfo__Output;
    try {
      job = await this.get(jobId);
    } catch (e) {
      if (e instanceof FuxiError && e.code === 'NOT_FOUND') return undefined; // forgotten (job retention)
      throw e;
    }
    if (task === AM_SU) {
      if (job.amNodeId && instance === 0 && (attempt === 0 || attempt === job.amAttempt)) return { nodeId: job.amNodeId, address: '', attempt: job.amAttempt };
      return undefined;
    }
    if (!isTerminal(job.state) && job.amAddress) {
      const am = connect(loadFuxiProto().AppMasterService, job.amAddress, this.transport);
      try {
        const state = await am.GetAppState({}, { deadlineMs: Math.min(this.deadlineMs ?? AM_ASK_MS, AM_ASK_MS) });
        const mine = state.workers.filter((w) => w.task === task && w.instance === instance && w.nodeId && (attempt === 0 || w.attempt === attempt));
        const w = mine.sort((a, b) => b.attempt - a.attempt)[0];
        if (w) return { nodeId: w.nodeId, address: '', attempt: w.attempt };
      } catch (e) {
        if (!(e instanceof RpcError)) throw e; // an AM that does not answer: the snapshot log may know
      } finally {
        am.close();
      }
    }
    let entries: string[];
    try {
      entries = (await this.connection.call('GetAppSnapshot', { appId: jobId }, this.callOpts(true))).entries;
    } catch (e) {
      if (e instanceof FuxiError && e.code === 'NOT_FOUND') return undefined;
      throw e;
    }
    let found: SnapshotEntry | undefined;
    for (const text of entries) {
      const e = decodeEntry(text);
      if (!e || e.task !== task || e.instance !== instance || !e.nodeId || (attempt !== 0 && e.attempt !== attempt)) continue;
      if (!found || e.attempt >= found.attempt) found = e;
    }
    return found ? { nodeId: found.nodeId, address: found.nodeAddress ?? '', attempt: found.attempt } : undefined;
  }

  /**
   * Opens a ReadLog stream at one agent and waits for its first answer. An agent that answers
   * nothing within the probe time has the log if its channel is connected (a followed log may
   * simply be quiet); otherwise it is UNAVAILABLE. Throws the agent's error (NOT_FOUND: not there).
   */
  private async openLog(address: string, req: ReadLogArgs): Promise<OpenLog> {
    const client = connect(loadFuxiProto().AgentService, address, this.transport);
    const stream = client.stream.ReadLog(req);
    const it = stream[Symbol.asyncIterator]();
    try {
      const pending = it.next();
      pending.catch(() => undefined); // if we give up on it below, its rejection is not unhandled
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<undefined>((r) => (timer = setTimeout(r, this.logProbeMs, undefined)));
      const probe = await Promise.race([pending, timeout]).finally(() => clearTimeout(timer));
      if (probe === undefined && client.raw.getChannel().getConnectivityState(false) !== grpc.connectivityState.READY) {
        throw new RpcError('UNAVAILABLE', `agent ${address} did not answer`, grpc.status.UNAVAILABLE, {}, 'ReadLog');
      }
      const first = probe ?? (await pending);
      return { first, it, close: () => (stream.cancel(), client.close()) };
    } catch (e) {
      stream.cancel();
      client.close();
      throw e;
    }
  }

  /**
   * File `path` from the output directory of instance `instance` of `task` (its succeeded attempt),
   * read from the agent that holds it (the agent data service). Asks every node in turn, healthy
   * ones first. NOT_FOUND when no node has it; FAILED_PRECONDITION when the instance has not
   * succeeded yet (its output is incomplete).
   */
  async fetchOutput(jobId: string, task: string, instance: number, path: string, opts: FetchOptions = {}): Promise<Buffer> {
    const nodes = await this.nodes();
    const ordered = [...nodes.filter((n) => n.healthy), ...nodes.filter((n) => !n.healthy)];
    const unreachable: string[] = [];
    let notYet: RpcError | undefined;
    for (const n of ordered) {
      const address = n.node?.address;
      if (!address) continue;
      try {
        return await readOutput(address, { appId: jobId, task, instance, path }, { retryForMs: 0, transport: this.transport, ...opts });
      } catch (e) {
        if (!(e instanceof RpcError)) throw e;
        if (e.code === 'NOT_FOUND') continue;
        if (e.code === 'FAILED_PRECONDITION') {
          notYet ??= e;
          continue;
        }
        if (e.code === 'UNAVAILABLE' || e.code === 'DEADLINE_EXCEEDED') {
          unreachable.push(n.node?.nodeId || address);
          continue;
        }
        throw e;
      }
    }
    if (notYet) throw notYet;
    const where = unreachable.length ? `; unreachable nodes: ${unreachable.join(', ')}` : '';
    throw new FuxiError('NOT_FOUND', `output ${jobId}/${task}/${instance}/${path} not found on any node${where}`);
  }

  close(): void {
    this.connection.close();
  }

  private callOpts(retry: boolean): { retry: boolean; deadlineMs?: number } {
    return this.deadlineMs ? { retry, deadlineMs: this.deadlineMs } : { retry };
  }
}

/** Where a worker ran (`FuxiClient.locateWorker`); `address` is '' when only the node id is known. */
export interface WorkerLocation {
  nodeId: string;
  address: string;
  /** The attempt found there (0 when unknown). */
  attempt: number;
}

interface ReadLogArgs {
  appId: string;
  task: string;
  instance: number;
  stream: string;
  attempt: number;
  follow: boolean;
}

interface OpenLog {
  first: IteratorResult<{ data: Buffer }>;
  it: AsyncIterator<{ data: Buffer }>;
  close: () => void;
}

async function* readOpenLog(log: OpenLog): AsyncGenerator<Buffer, void, undefined> {
  try {
    let r = log.first;
    while (!r.done) {
      yield r.value.data;
      r = await log.it.next();
    }
  } finally {
    log.close();
  }
}
