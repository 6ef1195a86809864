/**
 * Jobs: submission (validated, persisted, its first AM attempt requested; one or a batch), lookups, kills, and
 * the end of a job (every slot released, its workers stopped when it failed or was killed, its
 * app state deleted from the store).
 */
import { checkJobTestbed } from './testbeds.js';
import { AlreadyExistsError, AM_SU, firstDifference, FuxiError, InvalidArgumentError, NotFoundError, validateJobSpec, type JobSpec } from '@fuxi/common';
import { mintAttemptToken } from './am-tokens.js';
import { admit, checkIdClash, checkMember, heldMessage, indexMember, isActive, memberEnded, memberIds, type KnownIds } from './arrays.js';
import { markRequesting, setAsgn } from './ledger.js';
import { AM_PRIORITY, DEFAULT_CONFIG, endFailoverIfSettled, isRegistered, type AppState, type MasterState } from './master-state.js';
import { checkJobInputs, DEFAULT_JOB_INPUT_LIMITS } from './request-limits.js';
import { scheduleOrDefer } from './scheduling.js';
import { deleteAppState, putJob } from './store-ops.js';
import { pushGrants } from './sync.js';
import { TERMINAL_STATES, type JobRecord, type JobState } from './types.js';

export interface SubmitResult {
  jobId: string;
  created: boolean;
}

/**
 * The answer the job table already holds for a submission, changing nothing: a retry of the same
 * submission is answered as done (`created: false`), another spec under its id is refused
 * (ALREADY_EXISTS); undefined when taking it would create the job (no id yet, or an unknown one).
 * What a master that may not write (its store out of space) can still answer truthfully.
 */
export function existingSubmit(st: KnownIds, submitted: JobSpec): SubmitResult | undefined {
  const existing = submitted.jobId ? st.jobs.get(submitted.jobId) : undefined;
  if (!existing) return undefined;
  const diff = firstDifference(existing.spec, validateJobSpec(submitted));
  if (diff) throw new AlreadyExistsError('job', submitted.jobId, `with a different spec (${diff})`);
  return { jobId: submitted.jobId, created: false };
}

/**
 * Every admission check of a submission, in order, changing nothing: the answer the job table
 * already holds (`existingSubmit`), or the spec to create (validated, with defaults), or the
 * refusal thrown. `known`: the jobs and arrays to check against (the master's, or a dry run's).
 */
function admission(st: MasterState, known: KnownIds, submitted: JobSpec, owner: string): { existing: SubmitResult } | { spec: JobSpec } {
  const existing = existingSubmit(known, submitted);
  if (existing) return { existing };
  checkSpecSize(st, submitted);
  checkJobInputs(submitted, {
    maxEnvBytes: st.cfg.maxEnvBytes ?? DEFAULT_JOB_INPUT_LIMITS.maxEnvBytes,
    maxEnvVars: st.cfg.maxEnvVars ?? DEFAULT_JOB_INPUT_LIMITS.maxEnvVars,
    maxInstancesPerJob: st.cfg.maxInstancesPerJob ?? DEFAULT_JOB_INPUT_LIMITS.maxInstancesPerJob,
  });
  const capacities = [...st.nodes.values()].filter((n) => n.status !== 'lost' && isRegistered(n)).map((n) => n.info.capacity);
  // The validator's copy has proto3 zero values replaced by defaults (quota group, AM resource).
  const spec = validateJobSpec(submitted, capacities.length > 0 ? { nodeCapacities: capacities } : {});
  if (!st.groups.has(spec.quotaGroup)) {
    throw new InvalidArgumentError('quotaGroup', `unknown quota group "${spec.quotaGroup}" (known: ${[...st.groups.keys()].join(', ')})`);
  }
  checkJobTestbed(st.testbeds, spec, st.now);
  checkMember(known, spec, owner);
  checkIdClash(known, spec);
  return { spec };
}

/** `owner`: the submitting caller's name (authz.ts), kept with the job. */
export function submitJob(st: MasterState, submitted: JobSpec, owner = ''): SubmitResult {
  const checked = admission(st, st, submitted, owner);
  if ('existing' in checked) return checked.existing;
  const { spec } = checked;
  const job: JobRecord = {
    jobId: spec.jobId,
    spec,
    state: 'submitted',
    message: '',
    submittedAtMs: st.now,
    finishedAtMs: 0,
    submitSeq: ++st.submitSeq,
    amAttempt: 0,
    amNodeId: '',
    amAddress: '',
    progress: spec.tasks.map((t) => ({ name: t.name, total: t.instances, pending: t.instances, running: 0, succeeded: 0, failed: 0, retries: 0 })),
    ...(owner ? { owner } : {}),
  };
  st.jobs.set(job.jobId, job);
  // Decided before the record is written: a held member is written held.
  if (spec.array) job.held = true;
  indexMember(st, job);
  const others = spec.array ? admit(st, spec.array.id).filter((j) => j !== job) : [];
  if (job.held) job.message = heldMessage(st, job);
  st.out.push(putJob(job), { kind: 'jobChanged', jobId: job.jobId });
  if (!job.held) startAttempt(st, job);
  startAdmitted(st, others);
  st.log.info({ jobId: job.jobId, name: spec.name, tasks: spec.tasks.length }, 'job submitted');
  return { jobId: job.jobId, created: true };
}

/** One job of a batch submission: taken (created or already there) or refused with its own error. */
export interface BatchSubmitResult {
  jobId: string;
  /** Created now (with `dryRun`: would be created). */
  created: boolean;
  error?: FuxiError;
}

/**
 * Many submissions in one input (SubmitJobs): each is taken or refused on its own exactly as
 * `submitJob` would (a refused one changes nothing), in order, so an id twice in one batch is
 * created once and then found.
 *
 * With `dryRun` nothing changes and nothing is written: each job goes through every admission
 * check `submitJob` runs, against the master's jobs and arrays with the ones taken before it in the
 * batch laid over them (a later member of a new array is checked against its first, an id twice is
 * found the second time), so each verdict is the one a real submit of the batch would get now.
 */
export function submitJobs(st: MasterState, specs: readonly JobSpec[], owner = '', opts: { dryRun?: boolean } = {}): BatchSubmitResult[] {
  const dry = opts.dryRun ? dryRunIds(st) : undefined;
  return specs.map((spec) => {
    try {
      if (!dry) return submitJob(st, spec, owner);
      const checked = admission(st, dry, spec, owner);
      if ('existing' in checked) return checked.existing;
      dry.take(checked.spec, owner);
      return { jobId: checked.spec.jobId, created: true };
    } catch (e) {
      if (e instanceof FuxiError) return { jobId: spec.jobId, created: false, error: e };
      throw e;
    }
  });
}

/** The master's jobs and arrays with those a dry run took laid over them (its own maps: `st` is only read). */
function dryRunIds(st: MasterState): KnownIds & { take(spec: JobSpec, owner: string): void } {
  const jobs = new Map<string, { spec: JobSpec }>();
  const arrays = new Map<string, { owner: string; maxRunning: number }>();
  return {
    jobs: { get: (id) => jobs.get(id) ?? st.jobs.get(id) },
    arrays: { get: (id) => arrays.get(id) ?? st.arrays.get(id) },
    take(spec, owner) {
      jobs.set(spec.jobId, { spec });
      const a = spec.array;
      // As `indexMember`: an array is its first member's.
      if (a && !arrays.has(a.id) && !st.arrays.has(a.id)) arrays.set(a.id, { owner, maxRunning: a.maxRunning });
    },
  };
}

/**
 * A job's record must fit one store write: a spec over `maxJobSpecBytes` (kept below the store's
 * request limit, etcd's --max-request-bytes) is refused before anything changes.
 */
function checkSpecSize(st: MasterState, spec: JobSpec): void {
  const limit = st.cfg.maxJobSpecBytes ?? DEFAULT_CONFIG.maxJobSpecBytes ?? 0;
  if (limit <= 0) return;
  const bytes = new TextEncoder().encode(JSON.stringify(spec)).length;
  if (bytes > limit)
    throw new InvalidArgumentError('spec', `is ${bytes} bytes as stored; the limit is ${limit} (maxJobSpecBytes, below the store's request limit)`);
}

export function getJob(st: MasterState, jobId: string): JobRecord {
  const j = st.jobs.get(jobId);
  if (!j) throw new NotFoundError('job', jobId);
  return j;
}

export function listJobs(st: MasterState, states: readonly JobState[] = [], arrayId = ''): JobRecord[] {
  const from = arrayId ? [...memberIds(st, arrayId)].map((id) => st.jobs.get(id)!).filter(Boolean) : [...st.jobs.values()];
  const all = from.sort((a, b) => a.submitSeq - b.submitSeq);
  return states.length === 0 ? all : all.filter((j) => states.includes(j.state));
}

/**
 * One page of `listJobs`: at most `limit` jobs (0 = all) after job `after` in submission order;
 * `nextAfter` ('' on the last page) continues. An `after` no job has (deleted by retention, say) is
 * NOT_FOUND naming the field.
 */
export function listJobsPage(
  st: MasterState,
  q: { states?: readonly JobState[]; arrayId?: string; limit?: number; after?: string },
): { jobs: JobRecord[]; nextAfter: string } {
  let all = listJobs(st, q.states ?? [], q.arrayId ?? '');
  if (q.after) {
    const from = st.jobs.get(q.after);
    if (!from) throw new NotFoundError('after', q.after);
    all = all.filter((j) => j.submitSeq > from.submitSeq);
  }
  const limit = q.limit ?? 0;
  if (limit < 0) throw new InvalidArgumentError('limit', `must be >= 0 (0 = no limit), got ${limit}`);
  if (limit === 0 || all.length <= limit) return { jobs: all, nextAfter: '' };
  const jobs = all.slice(0, limit);
  return { jobs, nextAfter: jobs[jobs.length - 1]!.jobId };
}

/** Starts the held members of job arrays that have room (after a member ended, or a failover). */
export function admitArrayMembers(st: MasterState, arrayIds: Iterable<string> = st.arrays.keys()): void {
  for (const id of [...arrayIds]) startAdmitted(st, admit(st, id));
}

/** Writes and starts members just admitted (arrays.ts `admit`: no longer held). */
function startAdmitted(st: MasterState, jobs: readonly JobRecord[]): void {
  for (const job of jobs) {
    job.message = '';
    st.out.push(putJob(job), { kind: 'jobChanged', jobId: job.jobId });
    startAttempt(st, job);
  }
}

export function killJob(st: MasterState, jobId: string, reason: string): void {
  if (killChangesNothing(st, jobId)) return;
  endJob(st, getJob(st, jobId), 'killed', reason || 'killed by user');
}

/** A kill of this job would change nothing: it has ended (NOT_FOUND when there is no such job). */
export function killChangesNothing(st: MasterState, jobId: string): boolean {
  return TERMINAL_STATES.has(getJob(st, jobId).state);
}

/** A new app for the job's next AM attempt, asking for the AM's slot. */
function startAttempt(st: MasterState, job: JobRecord): void {
  job.amAttempt += 1;
  mintAttemptToken(st, job);
  const app: AppState = newApp(job, 'waiting', true, st.now);
  // Made here, so every write of its hard state is made by this master (until a failover).
  app.storedKeys = [];
  const amSu = { suId: AM_SU, resource: job.spec.amResource, priority: AM_PRIORITY, requests: new Map([['', 1]]), asgn: new Map(), granted: 0 };
  app.sus.set(AM_SU, amSu);
  st.apps.set(app.appId, app);
  markRequesting(st, app);
  st.grantWaits.noteRequests(amSu, st.now);
  // One pass for every job a SubmitJobs batch (or an array's admission) starts, not one each.
  scheduleOrDefer(st);
}

export function newApp(job: JobRecord, amState: AppState['amState'], reported: boolean, now: number): AppState {
  return {
    appId: job.jobId,
    job,
    sus: new Map(),
    asgnSeq: 0,
    lastRequestSeq: 0,
    lastReturnSeq: 0,
    amState,
    reported,
    lastContactMs: now,
    mockSinceMs: 0,
    pendingReturns: new Map(),
  };
}

/** Ends a job: its slots released (and its workers stopped unless it succeeded), its app state deleted. */
export function endJob(st: MasterState, job: JobRecord, state: JobState, message: string): void {
  st.faults.resolve('AM_CRASH', job.jobId, st.now, `job ${state}`);
  st.faults.resolve('AM_TIMING', job.jobId, st.now, `job ${state}`);
  const wasActive = isActive(job);
  job.state = state;
  job.message = message;
  job.finishedAtMs = st.now;
  if (job.spec.array) memberEnded(st, job, wasActive);
  const app = st.apps.get(job.jobId);
  if (app) {
    const nodesTouched = new Set<string>();
    for (const su of app.sus.values()) {
      for (const nodeId of [...su.asgn.keys()]) {
        nodesTouched.add(nodeId);
        setAsgn(st, app, su, nodeId, 0);
      }
      su.requests.clear();
    }
    if (app.job.amNodeId) nodesTouched.add(app.job.amNodeId);
    st.apps.delete(job.jobId);
    st.prediction.jobEnded(job.jobId, st.now);
    st.attempts.jobEnded(job.jobId);
    pushGrants(st, nodesTouched);
    if (state === 'killed' || state === 'failed') {
      for (const nodeId of nodesTouched) {
        const node = st.nodes.get(nodeId);
        if (node) st.out.push({ kind: 'stopWorkers', nodeId, address: node.info.address, appId: job.jobId, epoch: st.epoch, reason: message });
      }
    }
  }
  // A job that never had an app here (held, then killed) is listed too: nothing is known of it.
  st.out.push(putJob(job), ...deleteAppState(job.jobId, app?.storedKeys), { kind: 'jobChanged', jobId: job.jobId });
  if (job.spec.array) admitArrayMembers(st, [job.spec.array.id]);
  // The freed slots are placed by the next batched pass (with every other job's end in it).
  scheduleOrDefer(st);
  endFailoverIfSettled(st);
  st.log.info({ jobId: job.jobId, state, message }, 'job ended');
}
