/**
 * The DAG application master's core: a deterministic state machine over a job's task graph.
 *
 * Inputs: the job spec and the assignments the app already holds (`start`), assignment messages
 * from the master (`assignments`), worker status changes from agents (`workerEvents`) and clock
 * ticks (`tick`). Outputs: effects (see `AmEffect`) the shell executes. No I/O, no clock, no
 * randomness: the same inputs always give the same effects.
 *
 * Model, in one paragraph: every task is one schedule unit (SU, id = task name). A task becomes
 * active when every task it depends on has succeeded; its instances then need slots, which the core
 * asks for with one request delta per location (spread over the task's locality hints the first
 * time, anywhere afterwards). Slots come as absolute counts per (SU, node) from the master; every
 * free slot is bound to a pending instance (an instance that failed on a node prefers another node)
 * and turned into a plan for that node's agent. A finished instance frees its slot, which goes to
 * the next pending instance of the task or back to the master. A failed attempt is retried until
 * `maxAttempts`; then the job fails. An attempt whose slot the master took away (its node lost, the
 * slot revoked) is not the instance's failure and is not counted, like YARN's attempts killed by
 * node loss, up to LOST_SLOTS_FREE times per instance (an instance that takes its node down with it
 * must not loop forever). Slots the core returned stay counted as "returning" until the
 * master's count drops, a full table known to include the return arrives (`returnsReflected`), or
 * `returnSettleMs` passes, so a late assignment message never resurrects them.
 *
 * Hard state: the topology and every instance that finished go out as `snapshot` effects (the
 * master stores them). A restarted AM (attempt > 1) passes that snapshot and the workers the agents
 * list to `start` (`Recovery`): logged or listed successes count as done, running workers of any
 * earlier attempt are adopted (they keep their slots, nothing is started again), failures that
 * happened meanwhile are retried as usual, and slots nobody needs go back. New attempts always get
 * a number above every attempt seen.
 *
 * Agent timing failures (`agentsTimedOut`): nothing is planned on a timing-out node and its slots
 * stay put (the master keeps them reserved). With the job's `onAgentTimeout: rerun`, once a node has
 * been timing out for `rerunAfterMs`, its running instances are re-run elsewhere: the old attempt is
 * stopped (best effort; again when the node is back) but keeps its slot as a *shadow* until it ends,
 * and whichever attempt succeeds first wins (the other is stopped). With `wait` nothing happens. A
 * node that recovers before the threshold loses nothing.
 *
 * ```ts
 * const am = new DagAppMaster({ log });
 * run(am.start(spec, { seq: 0, full: true, assignments: [] }, now));
 * run(am.assignments({ seq: 1, full: false, assignments: [{ suId: 'map', nodeId: 'n1', nodeAddress, slots: 2 }] }, now));
 * run(am.workerEvents('n1', [{ workerId: 'map.0.1', task: 'map', instance: 0, attempt: 1, state: 'succeeded', ... }], now));
 * ```
 */
import { cmpInt64, DEFAULT_RERUN_AFTER_MS, FailedPreconditionError, validateJobSpec } from '@fuxi/common';
import { AmState, flush, idOf, locate, logEntry, lookup, workerIdOf, type DagAmOptions, type Instance, type InstanceState, type Task } from './am-state.js';
import { declaredUnits, outstandingRequests } from './requests.js';
import { addShadow, adopt, dropShadow, isCurrentWorker, liveWorkers, nodesToPoll, releaseSlot, resendStops, stopWorker } from './workers.js';
import { activateReady, failAttempt, finishJob, progress, succeed } from './dag.js';
import { failureReason, onWorkerEvent } from './worker-events.js';
import { acceptAssignments, applyTable, assignmentTable, settleReturns } from './assignments.js';
import { reconcile } from './placement.js';
import { agentsTimedOut, checkReruns, timingOutNodes } from './timing-out.js';
import { decodeEntry, encodeTopology, sameTopology, type SnapshotEntry } from './snapshot.js';
import type {
  AmEffect,
  Assignment,
  AssignmentUpdate,
  JobSpec,
  ListedWorker,
  OutstandingRequest,
  Recovery,
  RunningWorker,
  ScheduleUnitConfig,
  TaskProgress,
  WorkerEvent,
} from './types.js';

export { LOST_SLOTS_FREE } from './assignments.js';
export { localitiesOf, spread } from './requests.js';
export { failureReason } from './worker-events.js';
export { DEFAULT_RETURN_SETTLE_MS, parseWorkerId, workerIdOf, type DagAmOptions } from './am-state.js';

/**
 * @deprecated The core takes a spec that passed `validateJobSpec` (@fuxi/common), the one validator
 * of a job's task graph (names, counts, known dependencies, no cycles) that the client, the master
 * and the AM shell run; this only calls it.
 */
export function validateDag(spec: JobSpec): void {
  validateJobSpec(spec);
}

export class DagAppMaster {
  private readonly st: AmState;

  constructor(opts: DagAmOptions = {}) {
    this.st = new AmState(opts);
  }

  // ---------------------------------------------------------------- queries

  get started(): boolean {
    return this.st.spec !== undefined;
  }

  /** The last assignment seq applied, in the numbering of the master of `assignmentEpoch`. */
  get assignmentSeq(): number {
    return this.st.appliedSeq;
  }

  /** Master epoch of the assignment table applied last ('0' before any). */
  get assignmentEpoch(): string {
    return this.st.appliedEpoch;
  }

  /**
   * The applied assignment seq as the master of `epoch` numbers it (reported in `UpdateRequests`
   * and `UpdateAssignments` answers): 0 when that master is newer than the one whose table is
   * applied (it has not told us anything yet).
   */
  assignmentSeqFor(epoch: string): number {
    return cmpInt64(epoch || '0', this.st.appliedEpoch) > 0 ? 0 : this.st.appliedSeq;
  }

  /**
   * How many `return` effects the core has emitted. A shell that executes returns and UpdateRequests
   * in one FIFO queue passes the value read when it queues an UpdateRequests as `returnsReflected`
   * with a full table from its answer: those returns were applied by the master before it answered.
   */
  get returnsIssued(): number {
    return this.st.returnEffects;
  }

  /** Set once the job is over (the `finish` effect was emitted). */
  get result(): { succeeded: boolean; message: string } | undefined {
    return this.st.done;
  }

  progress(): TaskProgress[] {
    return progress(this.st);
  }

  /** The assignment table as the core holds it (absolute counts from the master). */
  assignmentTable(): Assignment[] {
    return assignmentTable(this.st);
  }

  outstandingRequests(): OutstandingRequest[] {
    return outstandingRequests(this.st);
  }

  /** Configs of the SUs already declared to the master (by this AM attempt, or holding slots from an earlier one). */
  units(): ScheduleUnitConfig[] {
    return declaredUnits(this.st);
  }

  /** Every live attempt: each instance's running one, then older ones still alive (shadows). */
  workers(): RunningWorker[] {
    return liveWorkers(this.st);
  }

  /**
   * Nodes whose agents the shell should ask for our workers (`ListWorkers`, then `workersListed`)
   * every few seconds: those running workers adopted from an earlier AM attempt (their agent may
   * still send events to the old AM address) and those that have not answered yet.
   */
  nodesToPoll(): string[] {
    return nodesToPoll(this.st);
  }

  /** Nodes reported timing out and not back yet, with when the core heard it. */
  timingOutNodes(): Array<{ nodeId: string; since: number }> {
    return timingOutNodes(this.st);
  }

  /** The node id -> address the core knows (from assignments). */
  addressOf(nodeId: string): string {
    return this.st.nodeAddresses.get(nodeId) ?? '';
  }

  /** True while `workerId` is the running attempt of its instance (the shell stops retrying plans that are not). */
  isCurrentWorker(workerId: string): boolean {
    return isCurrentWorker(this.st, workerId);
  }

  // ---------------------------------------------------------------- inputs

  /**
   * The job starts: `spec` from RegisterApp, `held` the assignments the app already holds (with
   * the master's assignment seq), and for a restarted AM (attempt > 1) what it recovered: its
   * snapshot and the workers the agents list (see `Recovery`). Without `recovery` the topology is
   * written to the snapshot. `spec` has passed `validateJobSpec` (@fuxi/common): task names are
   * unique, dependencies known and acyclic; the core does not check them again.
   */
  start(spec: JobSpec, held: { epoch?: string; seq: number; assignments: readonly Assignment[] }, now: number, recovery?: Recovery): AmEffect[] {
    if (this.st.spec) throw new FailedPreconditionError('the application master core was already started');
    this.st.spec = spec;
    this.st.policy = spec.onAgentTimeout === 'wait' ? 'wait' : 'rerun';
    this.st.rerunAfterMs = Number.isFinite(spec.rerunAfterMs) && spec.rerunAfterMs >= 0 ? spec.rerunAfterMs : DEFAULT_RERUN_AFTER_MS;
    spec.tasks.forEach((ts, index) => {
      this.st.tasks.set(ts.name, {
        spec: ts,
        index,
        suId: ts.name,
        priority: ts.priority !== 0 ? ts.priority : spec.priority,
        maxAttempts: Math.max(1, Math.floor(ts.maxAttempts)),
        state: 'waiting',
        instances: Array.from({ length: ts.instances }, (_, i) => ({
          index: i,
          state: 'waiting' as InstanceState,
          attempt: 0,
          highest: 0,
          reruns: 0,
          lostSlots: 0,
          nodeId: '',
          started: false,
          adopted: false,
          shadows: [],
          failedNodes: new Set<string>(),
          declined: false,
          lostAttempt: 0,
          lastError: '',
          output: undefined,
        })),
        retries: 0,
        unitSent: false,
        requested: false,
        outstanding: new Map(),
        holds: new Map(),
      });
    });
    this.st.log.info({ job: spec.jobId, name: spec.name, tasks: spec.tasks.length, onAgentTimeout: this.st.policy, rerunAfterMs: this.st.rerunAfterMs, restart: recovery !== undefined }, 'job started');
    applyTable(this.st, { ...(held.epoch ? { epoch: held.epoch } : {}), seq: held.seq, full: true, assignments: held.assignments });
    if (recovery) restore(this.st, recovery);
    else this.st.out.topology = encodeTopology(spec);
    activateReady(this.st);
    reconcile(this.st, now);
    return flush(this.st);
  }

  /**
   * The master's Algorithm 1 notice: `nodeIds` are timing out (their slots stay reserved), and
   * `recoveredNodeIds` are back (nothing of theirs was lost). Nothing is planned on a timing-out
   * node; with the `rerun` policy its running instances are re-run elsewhere once it has been timing
   * out for `rerunAfterMs` (here or in a later `tick`).
   */
  agentsTimedOut(nodeIds: readonly string[], recoveredNodeIds: readonly string[], now: number): AmEffect[] {
    if (!this.st.spec || this.st.done) return [];
    agentsTimedOut(this.st, nodeIds, recoveredNodeIds, now);
    checkReruns(this.st, now);
    reconcile(this.st, now);
    return flush(this.st);
  }

  /**
   * What the agent of `nodeId` lists for this app (`ListWorkers`, any AM attempt's workers). For a
   * node that had not answered since the restart, its workers are adopted (or, if their instance
   * already runs elsewhere, kept as a shadow; if it is done, stopped) and successes counted. For
   * other nodes the statuses are worker events; an adopted worker missing from the list is lost.
   */
  workersListed(nodeId: string, workers: readonly ListedWorker[], now: number): AmEffect[] {
    if (!this.st.spec || this.st.done) return [];
    if (this.st.unlisted.delete(nodeId)) {
      this.st.log.info({ node: nodeId, workers: workers.length }, 'agent listed its workers; adopting');
      for (const w of workers) {
        if (this.st.done) break;
        learnLate(this.st, nodeId, w);
      }
      resendStops(this.st, nodeId);
    } else {
      const listed = new Set<string>();
      for (const w of workers) {
        if (this.st.done) break;
        const id = idOf(w);
        if (id) listed.add(workerIdOf(id.task, id.instance, id.attempt));
        onWorkerEvent(this.st, nodeId, w);
      }
      dropVanished(this.st, nodeId, listed);
    }
    activateReady(this.st);
    reconcile(this.st, now);
    return flush(this.st);
  }

  /**
   * An assignment message (pushed, or the full table from an UpdateRequests response), ordered by
   * (epoch, seq) lexicographically (see `AssignmentUpdate`). Throws StaleEpochError for a message
   * from an older master than the applied table's.
   */
  assignments(update: AssignmentUpdate, now: number): AmEffect[] {
    if (!this.st.spec || this.st.done) return [];
    if (!acceptAssignments(this.st, update)) return [];
    reconcile(this.st, now);
    return flush(this.st);
  }

  /** Status changes of workers on `nodeId`. Repeated and stale events are ignored. */
  workerEvents(nodeId: string, events: readonly WorkerEvent[], now: number): AmEffect[] {
    if (!this.st.spec || this.st.done) return [];
    for (const ev of events) {
      if (this.st.done) break;
      onWorkerEvent(this.st, nodeId, ev);
    }
    reconcile(this.st, now);
    return flush(this.st);
  }

  /** Time passes: returned slots whose drop never showed are settled; timing-out nodes may be given up. */
  tick(now: number): AmEffect[] {
    if (!this.st.spec || this.st.done) return [];
    checkReruns(this.st, now);
    settleReturns(this.st, now);
    reconcile(this.st, now);
    return flush(this.st);
  }
}

// ---------------------------------------------------------------- assignments

// ---------------------------------------------------------------- worker events

// ---------------------------------------------------------------- task graph

// ---------------------------------------------------------------- slots

// ---------------------------------------------------------------- agent timing failures

// ---------------------------------------------------------------- restart (AM failover)

/**
 * A restarted AM rebuilds its instance table: hard state (the snapshot log) first, then the
 * workers the agents list (soft state), then what follows from them. Runs before task activation.
 */
function restore(st: AmState, r: Recovery): void {
  const spec = st.spec!;
  // 1. The snapshot: successes are done; a failure for good decided the job.
  let entries: SnapshotEntry[] = [];
  if (r.snapshot.topology !== '' && !sameTopology(r.snapshot.topology, spec)) {
    st.log.error({ entries: r.snapshot.entries.length }, 'the snapshot describes another task graph; its log is ignored');
  } else {
    if (r.snapshot.topology === '') st.out.topology = encodeTopology(spec);
    entries = r.snapshot.entries.map(decodeEntry).filter((e): e is SnapshotEntry => e !== undefined);
  }
  let failedForGood: SnapshotEntry | undefined;
  let logged = 0;
  for (const e of entries) {
    const x = lookup(st, e.task, e.instance);
    if (!x) continue;
    x.inst.highest = Math.max(x.inst.highest, e.attempt);
    if (e.state === 'failed') {
      failedForGood ??= e;
    } else if (x.inst.state !== 'succeeded') {
      x.inst.state = 'succeeded';
      x.inst.attempt = e.attempt;
      if (e.nodeAddress && e.nodeId && !st.nodeAddresses.has(e.nodeId)) st.nodeAddresses.set(e.nodeId, e.nodeAddress);
      if (e.workerId) x.inst.output = { workerId: e.workerId, nodeId: e.nodeId, nodeAddress: e.nodeAddress ?? st.nodeAddresses.get(e.nodeId) ?? '' };
      logged++;
    }
  }

  // 2. The workers the agents list, by instance.
  const byInstance = new Map<Instance, { task: Task; list: ListedWorker[] }>();
  for (const w of r.workers) {
    const id = idOf(w);
    const x = id && lookup(st, id.task, id.instance);
    if (!id || !x) continue;
    const ws = { ...w, task: id.task, instance: id.instance, attempt: id.attempt };
    x.inst.highest = Math.max(x.inst.highest, ws.attempt);
    const g = byInstance.get(x.inst) ?? { task: x.task, list: [] };
    g.list.push(ws);
    byInstance.set(x.inst, g);
  }
  const failures: Array<{ task: Task; inst: Instance; w: ListedWorker }> = [];
  let adopted = 0;
  let doneMeanwhile = 0;
  const desc = (a: ListedWorker, b: ListedWorker) => b.attempt - a.attempt || (a.nodeId < b.nodeId ? -1 : a.nodeId > b.nodeId ? 1 : 0);
  for (const [inst, { task, list }] of byInstance) {
    const live = list.filter((w) => w.state === 'running' || w.state === 'pending').sort(desc);
    const stopLive = () => live.forEach((w) => stopWorker(st, w.nodeId, workerIdOf(task.spec.name, inst.index, w.attempt)));
    if (inst.state === 'succeeded') {
      stopLive(); // duplicates of a finished instance
      continue;
    }
    const ok = list.filter((w) => w.state === 'succeeded').sort(desc)[0];
    if (ok) {
      // Finished while the AM was down: done, logged now; its slot is free for others or goes back.
      inst.state = 'succeeded';
      inst.attempt = ok.attempt;
      inst.output = locate(st, ok.nodeId, workerIdOf(task.spec.name, inst.index, ok.attempt));
      logEntry(st, { task: task.spec.name, instance: inst.index, attempt: ok.attempt, nodeId: ok.nodeId, workerId: inst.output.workerId, nodeAddress: inst.output.nodeAddress, state: 'succeeded' });
      doneMeanwhile++;
      stopLive();
      continue;
    }
    const [current, ...older] = live;
    if (current) {
      adopt(st, task, inst, current);
      for (const w of older) addShadow(st, task, inst, w);
      adopted++;
      continue;
    }
    const bad = list.filter((w) => w.state === 'failed' || w.state === 'killed' || w.state === 'rejected').sort(desc);
    for (const w of bad) if (w.nodeId) inst.failedNodes.add(w.nodeId);
    // Neither done nor running: it failed while the AM was down (or its retry was never planned).
    const last = bad[0];
    if (last) failures.push({ task, inst, w: last });
  }
  for (const n of r.unlistedNodes) st.unlisted.add(n);

  // 3. A task's workers exist only once every task it depends on succeeded: infer what the log lacks.
  const evidence = [...st.tasks.values()].filter((t) => t.instances.some((i) => i.state !== 'waiting') || failures.some((f) => f.task === t));
  const inferred = new Set<Task>();
  const visit = (t: Task): void => {
    for (const d of t.spec.dependsOn) {
      const dt = st.tasks.get(d);
      if (!dt || inferred.has(dt)) continue;
      inferred.add(dt);
      visit(dt);
    }
  };
  evidence.forEach(visit);
  for (const t of inferred) {
    const missing = t.instances.filter((i) => i.state === 'waiting');
    if (missing.length === 0) continue;
    st.log.warn({ task: t.spec.name, instances: missing.length }, 'instances missing from the snapshot inferred done (a later task has workers)');
    for (const i of missing) {
      i.state = 'succeeded';
      logEntry(st, { task: t.spec.name, instance: i.index, attempt: i.highest, nodeId: '', workerId: '', state: 'succeeded' });
    }
  }
  st.log.info(
    { logged, adopted, doneMeanwhile, failedMeanwhile: failures.length, unlistedNodes: [...st.unlisted], workers: r.workers.length },
    'state recovered from the snapshot and the agents',
  );

  // 4. The job's fate, if the log already decided it.
  if (failedForGood) {
    finishJob(st, false, failedForGood.message ?? `task "${failedForGood.task}" instance ${failedForGood.instance} failed`);
    return;
  }
  // 5. Tasks whose dependencies are done become active; failures seen meanwhile are retried as usual.
  activateReady(st);
  for (const f of failures) {
    if (st.done) return;
    if (f.task.state !== 'active' || f.inst.state !== 'pending') continue;
    f.inst.attempt = f.w.attempt;
    failAttempt(st, f.task, f.inst, f.w.nodeId, `${failureReason(f.w)} while the application master was down`);
  }
}

/** A worker listed by a node that had not answered at the restart (see `workersListed`). */
function learnLate(st: AmState, nodeId: string, raw: ListedWorker): void {
  const id = idOf(raw);
  const x = id && lookup(st, id.task, id.instance);
  if (!id || !x) return;
  const { task, inst } = x;
  const w: ListedWorker = { ...raw, task: id.task, instance: id.instance, attempt: id.attempt, nodeId };
  inst.highest = Math.max(inst.highest, w.attempt);
  const known = (inst.state === 'running' && inst.attempt === w.attempt && inst.nodeId === nodeId) || inst.shadows.some((sh) => sh.attempt === w.attempt && sh.nodeId === nodeId);
  if (known) {
    onWorkerEvent(st, nodeId, w);
    return;
  }
  const workerId = workerIdOf(task.spec.name, inst.index, w.attempt);
  switch (w.state) {
    case 'succeeded':
      if (inst.state === 'succeeded' || inst.state === 'failed') return;
      st.log.info({ task: task.spec.name, instance: inst.index, attempt: w.attempt, node: nodeId }, 'instance found done on an agent that answered late');
      if (inst.state === 'running') {
        stopWorker(st, inst.nodeId, workerIdOf(task.spec.name, inst.index, inst.attempt));
        releaseSlot(task, inst);
      }
      succeed(st, task, inst, w.attempt, nodeId);
      return;
    case 'running':
    case 'pending':
      if (inst.state === 'succeeded' || inst.state === 'failed') stopWorker(st, nodeId, workerId);
      else if (inst.state === 'running') addShadow(st, task, inst, w);
      else adopt(st, task, inst, w);
      return;
    default:
      inst.failedNodes.add(nodeId);
  }
}

/** Adopted attempts on `nodeId` that its agent no longer lists: lost (their events went elsewhere). */
function dropVanished(st: AmState, nodeId: string, listed: ReadonlySet<string>): void {
  for (const t of st.tasks.values()) {
    for (const inst of t.instances) {
      if (st.done) return;
      for (const sh of [...inst.shadows]) {
        if (sh.adopted && sh.nodeId === nodeId && !listed.has(workerIdOf(t.spec.name, inst.index, sh.attempt))) dropShadow(t, inst, sh);
      }
      if (inst.state !== 'running' || !inst.adopted || inst.nodeId !== nodeId) continue;
      if (listed.has(workerIdOf(t.spec.name, inst.index, inst.attempt))) continue;
      st.log.warn({ task: t.spec.name, instance: inst.index, attempt: inst.attempt, node: nodeId }, 'adopted worker no longer listed by its agent; counted as failed');
      releaseSlot(t, inst);
      failAttempt(st, t, inst, nodeId, `worker vanished from the agent of ${nodeId}`);
    }
  }
}

// ---------------------------------------------------------------- requests

// ---------------------------------------------------------------- output
