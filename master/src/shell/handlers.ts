/**
 * The MasterService RPC handlers: each maps its request (wire.ts), calls the core, carries out the
 * effects (answering only once the store writes among them are durable) and maps the answer back.
 * A standby's `core` throws UNAVAILABLE with the leader's address (the redirect).
 */
import { randomUUID } from 'node:crypto';
import { FailedPreconditionError, FuxiError, InvalidArgumentError, NotFoundError, ResourceExhaustedError, UnavailableError } from '@fuxi/common';
import { loadFuxiProto, type Condition, type MasterServiceDefinition, type RegisterAgentRequest__Output } from '@fuxi/proto';
import { AM_BATCHED, batchedCalls, jobSpecFromProto, jobSpecToProto, type HandlerObserver, type ServiceImpl } from '@fuxi/rpc';
import type { Store } from '@fuxi/store';
import type { TokenTable } from '@fuxi/rpc';
import { canSeeJob } from '../core/authz.js';
import type { BatchSubmitResult, MasterCore } from '../core/master-core.js';
import { authorizeCalls, callerOfCall } from './authorization.js';
import { KEYS } from '../core/store-ops.js';
import type { StoreOp } from '../core/store-ops.js';
import type { Effect } from '../core/types.js';
import type { SubmitRate } from '../core/submit-rate.js';
import type { JobWatchers } from './job-watchers.js';
import type { PushStreams } from './push-streams.js';
import {
  appReportFromWire,
  clusterStatusToWire,
  grantFromWire,
  heartbeatFromWire,
  probeAnswerToWire,
  jobInfo,
  jobStatesFromWire,
  nodeInfoFromWire,
  nodeStatusToWire,
  updateRequestsFromWire,
  connectivityToWire,
  createTestbedFromWire,
  testbedToWire,
} from './wire.js';

/** What the handlers need of the master process. */
export interface HandlerContext {
  /** The core while this process leads; otherwise throws the redirect. */
  readonly core: MasterCore;
  /** The fenced store of the current term (GetAppSnapshot reads it). */
  readonly leaderStore: Store;
  /** This master's address (the leader's, in GetClusterStatus). */
  readonly address: string;
  readonly pushes: PushStreams;
  readonly jobWatchers: JobWatchers;
  /** While no live leader is known: resolves once one is (or after a bounded wait). */
  leaderWait(): Promise<void> | undefined;
  /** Set while etcd is out of space: the leader serves reads only. */
  storeFull(): { sinceMs: number; message: string } | undefined;
  /** Conditions for `GetClusterStatus` (the store out of space). */
  conditions(): Promise<Condition[]>;
  /** Carries out effects; resolves once every store write among them is durable. */
  run(effects: Effect[]): Promise<void>;
  /**
   * Writes `ops` in this term's order, before memory changes (the caller applies the change once
   * this resolves). A failed write changes nothing and is answered UNAVAILABLE; the term goes on.
   */
  writeFirst(ops: StoreOp[]): Promise<void>;
  /**
   * Resolves once every store write queued so far is durable; UNAVAILABLE if the term ended first
   * (a write failed, or the leader stepped down). A client's answer taken from memory waits for it,
   * so nothing the store may lack is shown or acknowledged (a retried submit answered
   * `created: false`, a read of a job whose creation or end is still being written).
   */
  durable(): Promise<void>;
  /** This master's dashboard URL (`http://host:port/`), '' when it serves none. */
  dashboardUrl(): string;
  /** A Heartbeat call arrived from `nodeId` (recorded when `recordHeartbeats` is set). */
  heartbeatArrived?(nodeId: string): void;
  /** No TLS: callers without credentials count as admins (authz.ts). */
  readonly insecure: boolean;
  /** The static tokens (the tokens file), if any. */
  tokens(): TokenTable | undefined;
  /** Per-caller submit buckets (config `submitRatePerSec`, `submitBurst`); absent: no limit. */
  submitRate?: SubmitRate;
  /** Told of each call of an `AmCalls` batch as of a call alone (the daemon's gRPC metrics). */
  observe?: HandlerObserver;
}

/**
 * Who is calling, for per-caller limits: the authenticated caller (its token's or certificate's
 * name, authorization.ts), else the peer's host (its port changes with every connection).
 */
export function callerKey(call: { getPeer(): string } | undefined): string {
  const caller = call ? callerOfCall(call) : undefined;
  if (caller && caller.role !== 'anonymous') return `${caller.role}:${caller.name}`;
  const peer = call?.getPeer?.() ?? '';
  const bare = peer.replace(/^(ipv4|ipv6|unix):/, '');
  const m = /^\[(.*)\]:\d+$/.exec(bare) ?? /^([^:]+):\d+$/.exec(bare);
  return m?.[1] ?? bare;
}

/** Refuses a submit over its caller's rate with RESOURCE_EXHAUSTED and a retry hint (`fuxi-retry-after-ms`). */
function checkSubmitRate(m: HandlerContext, call: unknown, jobs: number): void {
  const rate = m.submitRate;
  if (!rate) return;
  const now = Date.now();
  if (rate.size > 10_000) rate.sweep(now);
  const v = rate.take(callerKey(call as { getPeer(): string } | undefined), jobs, now);
  if (!v.ok) throw new ResourceExhaustedError('submit rate', v.reason, v.retryAfterMs);
}

/** A job id from the name, for clients that did not choose one (choosing it makes retries idempotent). */
function generatedJobId(name: string): string {
  const base =
    (name || 'job')
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-+|-+$/g, '')
      .slice(0, 40) || 'job';
  return `${base}-${randomUUID().slice(0, 8)}`;
}

export function masterHandlers(m: HandlerContext): ServiceImpl<MasterServiceDefinition> {
  // The calls of an AmCalls batch each go through the whole chain, as they would alone.
  // Authorized before anything is answered: a call the caller may not make learns nothing of the
  // store's space or of the jobs it holds.
  const all: ServiceImpl<MasterServiceDefinition> = holdWhileLeaderless(
    authorizeCalls(
      refuseChangesWhileStoreFull(
        handlers(m, () => all),
        m,
      ),
      m,
    ),
    m,
  );
  return all;
}

type Method = keyof ServiceImpl<MasterServiceDefinition>;

/** Job specs per SubmitJobs call (a larger batch is split by the client SDK, `submitMany`). */
export const MAX_BATCH_JOBS = 1000;

/** Calls that change nothing: served from memory (a fresh load of the store) while the store is full. */
const READS = new Set<Method>(['GetJob', 'ListJobs', 'ListNodes', 'GetAppSnapshot', 'GetClusterStatus', 'WatchJob', 'WatchJobs', 'ListTestbeds']);
/** Changes that clients ask for: refused with RESOURCE_EXHAUSTED while the store is full. */
const CLIENT_CHANGES = new Set<Method>(['SubmitJob', 'SubmitJobs', 'KillJob', 'CordonNode', 'UncordonNode', 'DrainNode', 'CreateTestbed', 'DeleteTestbed']);

/**
 * While etcd is out of space every call that could change state is refused before the core sees it,
 * so nothing the store lacks is ever in memory: clients get RESOURCE_EXHAUSTED (what to do is in
 * the message); agents and AMs get UNAVAILABLE, which they retry (they keep their workers), until
 * the leader has room again and leadership is rebuilt.
 *
 * A client's change the store already holds is answered instead (`answerWithoutWrite`): a definite
 * refusal must mean that nothing was done, and a retried submit may find its job made by its first
 * attempt (whose write landed just before a later write was refused for space).
 */
function refuseChangesWhileStoreFull(h: ServiceImpl<MasterServiceDefinition>, m: HandlerContext): ServiceImpl<MasterServiceDefinition> {
  type Fn = (...args: unknown[]) => Promise<unknown>;
  const out: Record<string, Fn> = {};
  for (const [name, fn] of Object.entries(h as unknown as Record<string, Fn>)) {
    out[name] = READS.has(name as Method)
      ? fn
      : (...args) => {
          const full = m.storeFull();
          if (!full) return fn(...args);
          if (CLIENT_CHANGES.has(name as Method)) {
            const answer = answerWithoutWrite(name as Method, args[0] as Record<string, unknown>, m, full.message);
            return answer ?? Promise.reject(new ResourceExhaustedError('store space', full.message));
          }
          return Promise.reject(new UnavailableError(`the store is out of space; the master makes no changes until it has room: retry later`, ''));
        };
  }
  return out as unknown as ServiceImpl<MasterServiceDefinition>;
}

/**
 * The answer to a client's change that would write nothing, from the core (while the store is
 * full, a fresh load of the store: what it holds is durable), or undefined when the change needs a
 * write. A submit of a job that exists is answered as always (`created: false`, or ALREADY_EXISTS
 * for another spec); a batch answers those of its jobs and refuses each of the others with
 * RESOURCE_EXHAUSTED (the whole call when it holds none); a kill of an ended job is answered with
 * the job.
 */
function answerWithoutWrite(method: Method, req: Record<string, unknown>, m: HandlerContext, full: string): Promise<unknown> | undefined {
  type SpecProto = Parameters<typeof jobSpecFromProto>[0];
  const answered = async (answer: unknown) => {
    await m.durable();
    return answer;
  };
  try {
    switch (method) {
      case 'SubmitJob': {
        const spec = req.spec as SpecProto | null;
        const known = spec ? m.core.existingSubmit(jobSpecFromProto(spec)) : undefined;
        return known && answered(known);
      }
      case 'SubmitJobs': {
        const specs = (req.specs as SpecProto[] | undefined) ?? [];
        if (specs.length > MAX_BATCH_JOBS) return undefined;
        const results = specs.map((p): BatchSubmitResult => {
          const spec = jobSpecFromProto(p);
          try {
            return m.core.existingSubmit(spec) ?? { jobId: spec.jobId, created: false, error: new ResourceExhaustedError('store space', full) };
          } catch (e) {
            if (!(e instanceof FuxiError)) throw e;
            return { jobId: spec.jobId, created: false, error: e };
          }
        });
        // A dry run gets the verdicts a real submit would get now.
        return results.some((r) => !(r.error instanceof ResourceExhaustedError))
          ? answered({ results: results.map(batchResultToWire), dryRun: req.dryRun === true })
          : undefined;
      }
      case 'KillJob': {
        const jobId = String(req.jobId ?? '');
        return m.core.killChangesNothing(jobId) ? answered({ job: jobInfo(m.core.getJob(jobId)) }) : undefined;
      }
      default:
        return undefined;
    }
  } catch (e) {
    // NOT_FOUND, ALREADY_EXISTS, a bad spec: the answer the call would get with room.
    return Promise.reject(e);
  }
}

/** One job's result of a SubmitJobs call, as the wire has it. */
function batchResultToWire(r: BatchSubmitResult): { jobId: string; created: boolean; errorCode: string; errorMessage: string } {
  return { jobId: r.jobId, created: r.created, errorCode: r.error?.code ?? '', errorMessage: r.error?.message ?? '' };
}

/** Each handler first waits while this process knows no live leader (see MasterServer.leaderWait). */
function holdWhileLeaderless(h: ServiceImpl<MasterServiceDefinition>, m: HandlerContext): ServiceImpl<MasterServiceDefinition> {
  type Fn = (...args: unknown[]) => Promise<unknown>;
  const out: Record<string, Fn> = {};
  for (const [name, fn] of Object.entries(h as unknown as Record<string, Fn>)) {
    out[name] = (...args) => {
      const wait = m.leaderWait();
      return wait ? wait.then(() => fn(...args)) : fn(...args);
    };
  }
  return out as unknown as ServiceImpl<MasterServiceDefinition>;
}

/**
 * A client's call whose refusal the core takes from memory: ALREADY_EXISTS for another spec under
 * the id of a job, NOT_FOUND, an array's owner or limit. A refusal shows what memory holds as
 * surely as an answer does, so it waits like one until every write queued before it is durable,
 * and is UNAVAILABLE if the term ends first. Without this, a submit of another spec under the id of
 * a job whose first submit was still being written was refused ALREADY_EXISTS at once; that write
 * then failed, the master rebuilt from the store, and the job it had shown was gone (the history
 * test's `vanished`).
 */
async function refusedOnceDurable<T>(m: HandlerContext, answer: () => Promise<T>): Promise<T> {
  try {
    return await answer();
  } catch (e) {
    if (e instanceof FuxiError && !(e instanceof UnavailableError)) await m.durable();
    throw e;
  }
}

/** The node as `ListNodes` shows it, once every write queued so far (the call's included) is durable. */
async function nodeAdminAnswer(m: HandlerContext, nodeId: string): Promise<{ node: ReturnType<typeof nodeStatusToWire> | null }> {
  const view = m.core.nodeView(nodeId);
  await m.durable();
  return { node: view ? nodeStatusToWire(view) : null };
}

function handlers(m: HandlerContext, all: () => ServiceImpl<MasterServiceDefinition>): ServiceImpl<MasterServiceDefinition> {
  const now = () => Date.now();
  // Testbed changes one at a time: each is planned against the testbeds the ones before it made.
  let testbedQueue: Promise<unknown> = Promise.resolve();
  const oneAtATime = <T>(f: () => Promise<T>): Promise<T> => {
    const p = testbedQueue.then(f, f);
    testbedQueue = p.catch(() => undefined);
    return p;
  };
  /** The core that planned a change must still lead when it is applied. */
  const stillLeading = (core: MasterCore): void => {
    if (m.core !== core) throw new UnavailableError('the leader changed while the testbed was being saved: retry', '');
  };
  /** RegisterAgent, or a heartbeat's `rejoin` (its fields named under `field`). */
  const registerAgent = async (req: RegisterAgentRequest__Output, field: string) => {
    const info = nodeInfoFromWire(req.node);
    if (!info.nodeId) throw new InvalidArgumentError(`${field}.nodeId`, 'is required');
    if (!info.address) throw new InvalidArgumentError(`${field}.address`, 'is required');
    const r = m.core.registerAgent(info, req.epochSeen, now(), req.withState ? req.grants.map(grantFromWire) : undefined);
    // A registration starts a new session: the agent watches again (a restarted one from its
    // new process), and pushes go by call until it does.
    m.pushes.endGrants(info.nodeId);
    await m.run(r.effects);
    // A table from memory goes out once the store has what it reflects (push-streams.ts).
    if (r.adopted) await m.durable();
    return {
      epoch: m.core.epoch,
      heartbeatIntervalMs: r.heartbeatIntervalMs,
      reportState: r.reportState,
      stateAdopted: r.adopted !== undefined,
      grantSeq: String(r.adopted?.seq ?? 0),
      grants: r.adopted?.grants ?? [],
    };
  };
  return {
    RegisterAgent: (req) => registerAgent(req, 'node'),
    Heartbeat: async (req) => {
      m.heartbeatArrived?.(req.nodeId);
      const r = m.core.heartbeat(heartbeatFromWire(req), now());
      await m.run(r.effects);
      // An agent that lost its master sends its registration along: a master that does not know
      // it registers it now instead of asking for it (the heartbeat's own content is then moot:
      // the registration carries the agent's state).
      if (r.reregister && req.rejoin) {
        if (req.rejoin.node?.nodeId !== req.nodeId) throw new InvalidArgumentError('rejoin.node.nodeId', `must be the heartbeat's node id ${req.nodeId}`);
        return { epoch: m.core.epoch, registered: await registerAgent(req.rejoin, 'rejoin.node') };
      }
      // An agent behind only by the tables in flight on its stream gets them there, in order.
      const full = r.full && !m.pushes.onChain(req.nodeId, Number(req.grantSeq)) ? r.full : undefined;
      if (full) {
        await m.durable();
        m.pushes.tableAnswered(req.nodeId);
      }
      return {
        epoch: m.core.epoch,
        reregister: r.reregister,
        fullGrants: full !== undefined,
        grantSeq: String(full?.seq ?? 0),
        grants: full?.grants ?? [],
        reportState: r.reportState ?? false,
        ...probeAnswerToWire(r),
      };
    },
    ReportAgentState: async (req) => {
      await m.run(m.core.reportAgentState({ nodeId: req.nodeId, epoch: req.epoch, grants: req.grants.map(grantFromWire) }, now()));
      return {};
    },
    RegisterApp: async (req) => {
      const r = m.core.registerApp(req.appId, req.amAttempt, req.address, now());
      // A (re)registration starts a new session: an older stream of the app is ended.
      m.pushes.endAssignments(req.appId);
      await m.run(r.effects);
      await m.durable();
      return {
        epoch: m.core.epoch,
        spec: jobSpecToProto(r.spec),
        heartbeatIntervalMs: r.heartbeatIntervalMs,
        assignments: r.assignments,
        assignmentSeq: String(r.seq),
      };
    },
    UpdateRequests: async (req) => {
      const r = m.core.updateRequests(updateRequestsFromWire(req), now());
      await m.run(r.effects);
      if (r.full) await m.durable();
      return {
        epoch: m.core.epoch,
        fullAssignments: r.full !== undefined,
        assignmentSeq: String(r.full?.seq ?? 0),
        assignments: r.full?.assignments ?? [],
        reportState: r.reportState ?? false,
        connectivity: connectivityToWire(r.connectivity),
        attemptVerdicts: (r.verdicts ?? []).map((v) => ({
          workerId: v.workerId,
          nodeId: v.nodeId,
          action: v.action,
          pHere: v.pHere,
          pElsewhere: v.pElsewhere,
        })),
      };
    },
    ReturnSlots: async (req) => {
      await m.run(m.core.returnSlots({ appId: req.appId, attempt: req.amAttempt, seq: Number(req.seq), returns: req.returns }, now()));
      return {};
    },
    ReportAppState: async (req) => {
      const effects = m.core.reportAppState(appReportFromWire(req), now());
      // The app's full table, built from the report, goes back in the answer instead of a push
      // (when it is the app's last table of this step: nothing newer may overtake it).
      const i = effects.findLastIndex((e) => e.kind === 'assignments' && e.appId === req.appId);
      const last = effects[i];
      const table = last?.kind === 'assignments' && last.full ? (effects.splice(i, 1), last) : undefined;
      await m.run(effects);
      if (table) await m.durable();
      return { epoch: m.core.epoch, fullAssignments: table !== undefined, assignmentSeq: String(table?.seq ?? 0), assignments: table?.assignments ?? [] };
    },
    FinishApp: async (req) => {
      await m.run(
        m.core.finishApp({ appId: req.appId, attempt: req.amAttempt, succeeded: req.succeeded, message: req.message, progress: req.progress }, now()),
      );
      return {};
    },
    SubmitJob: (req, call) =>
      refusedOnceDurable(m, async () => {
        if (!req.spec) throw new InvalidArgumentError('spec', 'is required');
        checkSubmitRate(m, call, 1);
        const spec = jobSpecFromProto(req.spec);
        if (!spec.jobId) spec.jobId = generatedJobId(spec.name);
        const { result, effects } = m.core.submitJob(spec, now(), callerOfCall(call).name);
        // Acknowledge only once the job is durable in the store (also when it existed: a retry
        // may arrive while the first call's write is still under way).
        await m.run(effects);
        await m.durable();
        return result;
      }),
    SubmitJobs: async (req, call) => {
      if (req.specs.length === 0) throw new InvalidArgumentError('specs', 'must hold at least one job spec');
      if (req.specs.length > MAX_BATCH_JOBS) throw new InvalidArgumentError('specs', `holds ${req.specs.length} job specs; at most ${MAX_BATCH_JOBS} per call`);
      // A dry run takes nothing from the caller's submit rate: `submit -f` checks a file, then
      // submits it, and the check would otherwise halve its rate.
      if (!req.dryRun) checkSubmitRate(m, call, req.specs.length);
      const specs = req.specs.map((p) => {
        const spec = jobSpecFromProto(p);
        if (!spec.jobId) spec.jobId = generatedJobId(spec.name);
        return spec;
      });
      const { results, effects } = m.core.submitJobs(specs, now(), callerOfCall(call).name, { dryRun: req.dryRun });
      // Acknowledged only once every taken job is durable (their writes go out in store batches
      // below the store's request limit: master-server.ts `run`), those that existed too. A dry
      // run's verdicts wait the same way: a job it finds is one the store holds.
      await m.run(effects);
      await m.durable();
      // An id made here for a dry run is not the one the real submit will make.
      const wire = results.map((r, i) => batchResultToWire(req.dryRun && !req.specs[i]!.jobId ? { ...r, jobId: '' } : r));
      return { results: wire, dryRun: req.dryRun };
    },
    GetJob: (req) =>
      refusedOnceDurable(m, async () => {
        const job = jobInfo(m.core.getJob(req.jobId), true);
        await m.durable();
        return { job };
      }),
    ListJobs: async (req, call) => {
      const page = m.core.listJobsPage({ states: jobStatesFromWire(req.states), arrayId: req.arrayId, limit: req.limit, after: req.after });
      // A user sees its own jobs and its groups' (authz.ts); a page may hold fewer than `limit` then.
      const caller = callerOfCall(call);
      const visible = page.jobs.filter((j) => canSeeJob(caller, m.insecure, { owner: j.owner ?? '', group: j.spec.quotaGroup || 'default' }));
      const jobs = visible.map((j) => jobInfo(j));
      await m.durable();
      return { jobs, nextAfter: page.nextAfter };
    },
    KillJob: (req) =>
      refusedOnceDurable(m, async () => {
        await m.run(m.core.killJob(req.jobId, req.reason, now()));
        const job = jobInfo(m.core.getJob(req.jobId));
        await m.durable();
        return { job };
      }),
    // Reads of what the store holds (a node's cordon or drain, the jobs counted by state) wait like
    // `ListJobs` until the writes queued before them are durable.
    ListNodes: async () => {
      const nodes = m.core.listNodes().map(nodeStatusToWire);
      await m.durable();
      return { nodes };
    },
    // Operators' cordons and drains (node-admin.ts): answered once the record is durable.
    CordonNode: async (req) => {
      await m.run(m.core.cordonNode({ nodeId: req.nodeId, reason: req.reason, by: req.requestedBy }, now()));
      return nodeAdminAnswer(m, req.nodeId);
    },
    UncordonNode: async (req) => {
      await m.run(m.core.uncordonNode({ nodeId: req.nodeId, by: req.requestedBy }, now()));
      return nodeAdminAnswer(m, req.nodeId);
    },
    DrainNode: async (req) => {
      const deadlineMs = Number(req.deadlineMs);
      await m.run(m.core.drainNode({ nodeId: req.nodeId, reason: req.reason, by: req.requestedBy, deadlineMs }, now()));
      return nodeAdminAnswer(m, req.nodeId);
    },
    // Operators' testbeds (testbed-admin.ts): written first, applied once durable, so a failed
    // write leaves the master as it was.
    CreateTestbed: (req) =>
      oneAtATime(async () => {
        const core = m.core;
        const plan = core.planTestbed(createTestbedFromWire(req), now());
        if (plan.ops.length > 0) {
          await m.writeFirst(plan.ops);
          stillLeading(core);
          await m.run(core.addTestbed(plan.testbed, now()));
        }
        const view = core.listTestbeds(now()).find((t) => t.name === plan.testbed.name);
        await m.durable();
        return { testbed: view ? testbedToWire(view) : null, othersRunning: plan.othersRunning };
      }),
    ListTestbeds: async () => ({ testbeds: m.core.listTestbeds(now()).map(testbedToWire) }),
    DeleteTestbed: (req) =>
      oneAtATime(async () => {
        const core = m.core;
        const ops = core.planDeleteTestbed(req.name);
        await m.writeFirst(ops);
        stillLeading(core);
        await m.run(core.removeTestbed(req.name, now()));
        return {};
      }),
    SaveAppSnapshot: async (req) => {
      await m.run(
        m.core.saveAppSnapshot({ appId: req.appId, attempt: req.amAttempt, topology: req.topology, seq: Number(req.seq), entries: req.entries }, now()),
      );
      return {};
    },
    AmCalls: batchedCalls(loadFuxiProto().MasterService.service, all, AM_BATCHED, m.observe),
    GetAppSnapshot: async (req) => {
      m.core.getJob(req.appId);
      // One read of the app's keys (its topology and its log entries, in key order): an AM host's
      // crash has every AM it held ask at once, and each read is a store round trip.
      const topologyKey = KEYS.appTopology(req.appId);
      const logPrefix = KEYS.appLogPrefix(req.appId);
      let topology = '';
      const entries: string[] = [];
      for (const kv of await m.leaderStore.list(KEYS.appPrefix(req.appId))) {
        if (kv.key === topologyKey) topology = kv.value;
        else if (kv.key.startsWith(logPrefix)) entries.push(kv.value);
      }
      return { topology, entries };
    },
    GetClusterStatus: async () => {
      const core = m.core;
      const conditions = await m.conditions();
      const status = clusterStatusToWire(core.clusterStatus(now()), m.address, core.epoch, conditions, m.dashboardUrl());
      await m.durable();
      return status;
    },
    WatchGrants: async (req, call) => {
      const core = m.core;
      if (!req.nodeId) throw new InvalidArgumentError('nodeId', 'is required');
      if (req.epoch !== core.epoch)
        throw new FailedPreconditionError(`epoch ${req.epoch} is not this master's (${core.epoch}): register again`, { field: 'epoch' });
      if (!core.knowsNode(req.nodeId)) throw new NotFoundError('node', req.nodeId);
      await m.pushes.holdGrants(req.nodeId, call);
    },
    WatchAssignments: async (req, call) => {
      const core = m.core;
      if (!req.appId) throw new InvalidArgumentError('appId', 'is required');
      if (req.epoch !== core.epoch)
        throw new FailedPreconditionError(`epoch ${req.epoch} is not this master's (${core.epoch}): register again`, { field: 'epoch' });
      const job = core.getJob(req.appId);
      if (job.amAttempt !== req.amAttempt)
        throw new FailedPreconditionError(`am attempt ${req.amAttempt} is not the current one (${job.amAttempt})`, { field: 'amAttempt' });
      await m.pushes.holdAssignments(req.appId, call);
    },
    // The first records are taken now and sent once the writes queued before them are durable
    // (job-watchers.ts); a refusal (NOT_FOUND) waits the same way.
    WatchJob: (req, call) =>
      refusedOnceDurable(m, async () => {
        const job = m.core.getJob(req.jobId);
        await m.jobWatchers.serve(job, call, m.durable());
      }),
    WatchJobs: (req, call) =>
      refusedOnceDurable(m, async () => {
        if (req.jobIds.length === 0 && !req.arrayId) throw new InvalidArgumentError('jobIds', 'name at least one job, or give arrayId');
        const jobs = new Map(req.jobIds.map((id) => [id, m.core.getJob(id)] as const));
        if (req.arrayId) {
          const members = m.core.listJobs([], req.arrayId);
          if (members.length === 0) throw new NotFoundError('job array', req.arrayId);
          for (const j of members) jobs.set(j.jobId, j);
        }
        await m.jobWatchers.serveMany([...jobs.values()], call, req.endsOnly, m.durable());
      }),
  };
}
