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
 * Network partitions (`connectivityChanged`, partitions.ts): when a broken link joins two of the
 * job's hosts (the AM's host, hosts of running workers, hosts of outputs a task not yet finished
 * needs), the fewest hosts that leave the rest all reaching one another are given up (never the
 * AM's own, nor a node cut from the master only): their instances run again elsewhere, once per
 * instance per partition, as re-executions rather than failed attempts; their slots go back; the
 * hosts are avoided until no broken link touches them. `placementConstraints` tells the master
 * which hosts new grants must reach and which to avoid.
 *
 * Stragglers (`tick`, speculation.ts and paths.ts, spec `speculation`): a running attempt far
 * slower than its peers gets a backup on another node (first to succeed wins); a host found to be
 * the slow end of the job's data paths gets nothing more, and the outputs it serves and the data
 * work it runs move elsewhere.
 *
 * `DagAppMaster` is a facade over one state object (am-state.ts) and modules of free functions,
 * each owning one concern: dag (instance outcomes, retries, task activation, the job's finish),
 * requests (outstanding counts and deltas), holds (slot counts and returns), workers (live attempts,
 * shadows, stops), assignments (the master's table, lost slots), placement (binding free slots,
 * worker plans), worker-events, timing-out, partitions and restore (AM failover). Each input ends
 * with the partition check, placement and one flush of the outbox, in the order written on
 * `AmEffect`.
 *
 * ```ts
 * const am = new DagAppMaster({ log });
 * run(am.start(spec, { seq: 0, full: true, assignments: [] }, now));
 * run(am.assignments({ seq: 1, full: false, assignments: [{ suId: 'map', nodeId: 'n1', nodeAddress, slots: 2 }] }, now));
 * run(am.workerEvents('n1', [{ workerId: 'map.0.1', task: 'map', instance: 0, attempt: 1, state: 'succeeded', ... }], now));
 * ```
 */
import { cmpInt64, FailedPreconditionError, validateJobSpec } from '@fuxi/common';
import { AmState, flush, type DagAmOptions } from './am-state.js';
import { acceptAssignments, applyTable, assignmentTable, settleReturns } from './assignments.js';
import { activateReady, beginJob, progress } from './dag.js';
import { reconcile } from './placement.js';
import { declaredUnits, outstandingRequests, takeBack } from './requests.js';
import { restore, workersListed } from './restore.js';
import { placementConstraints, resolvePartitions, setConnectivity, type Constraints, type LinkInput } from './partitions.js';
import { encodeTopology } from './snapshot.js';
import { agentsTimedOut, checkReruns, timingOutNodes } from './timing-out.js';
import { applyVerdicts, type AttemptVerdict, type VerdictOutcome } from './verdicts.js';
import type {
  AmEffect,
  Assignment,
  AssignmentUpdate,
  JobSpec,
  ListedWorker,
  OutstandingRequest,
  PathRecord,
  Recovery,
  RequestDelta,
  RunningWorker,
  ScheduleUnitConfig,
  TaskProgress,
  WorkerEvent,
} from './types.js';
import { checkSpeculation, observeEvents, observePaths } from './speculation.js';
import { onWorkerEvents } from './worker-events.js';
import { isCurrentWorker, liveWorkers, nodesToPoll } from './workers.js';

export { LOST_SLOTS_FREE } from './assignments.js';
export { localitiesOf, spread } from './requests.js';
export { failureReason } from './worker-events.js';
export type { Constraints, LinkInput } from './partitions.js';
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

  /**
   * What new grants of this job must reach (`reach`: hosts of needed outputs and running workers)
   * and must not use (`avoid`: hosts given up in a partition), sorted; the shell sends them to the
   * master when they change (UpdateRequests) and in every ReportAppState.
   */
  placementConstraints(): Constraints {
    return placementConstraints(this.st);
  }

  /**
   * Hosts failure prediction moved or killed attempts of unfinished tasks off (verdicts.ts), sorted:
   * sent in every ReportAppState, so a new leader keeps the job's new grants off them again.
   */
  predictedBadHosts(): string[] {
    const hosts = new Set<string>();
    for (const t of this.st.tasks.values()) {
      if (t.state === 'succeeded' || t.state === 'failed') continue;
      for (const inst of t.instances) for (const n of inst.predictedBad) hosts.add(n);
    }
    return [...hosts].sort();
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
    beginJob(this.st, spec, recovery !== undefined);
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
    return this.step(now, () => {
      agentsTimedOut(this.st, nodeIds, recoveredNodeIds, now);
      checkReruns(this.st, now);
    });
  }

  /**
   * ATLAS+'s verdicts on running attempts (verdicts.ts), from the master's UpdateRequests answer:
   * a `reschedule` re-runs the instance elsewhere uncounted, a `kill` fails the attempt early.
   */
  attemptVerdicts(verdicts: readonly AttemptVerdict[], now: number): { effects: AmEffect[]; outcomes: VerdictOutcome[] } {
    let outcomes: VerdictOutcome[] = [];
    const effects = this.step(now, () => {
      outcomes = applyVerdicts(this.st, verdicts);
      return outcomes.some((o) => o === 'rescheduled' || o === 'killed');
    });
    return { effects, outcomes };
  }

  /**
   * What the agent of `nodeId` lists for this app (`ListWorkers`, any AM attempt's workers). For a
   * node that had not answered since the restart, its workers are adopted (or, if their instance
   * already runs elsewhere, kept as a shadow; if it is done, stopped) and successes counted. For
   * other nodes the statuses are worker events; an adopted worker missing from the list is lost.
   */
  workersListed(nodeId: string, workers: readonly ListedWorker[], now: number): AmEffect[] {
    return this.step(now, () => {
      workersListed(this.st, nodeId, workers);
      activateReady(this.st);
    });
  }

  /**
   * An assignment message (pushed, or the full table from an UpdateRequests response), ordered by
   * (epoch, seq) lexicographically (see `AssignmentUpdate`). Throws StaleEpochError for a message
   * from an older master than the applied table's.
   */
  assignments(update: AssignmentUpdate, now: number): AmEffect[] {
    return this.step(now, () => acceptAssignments(this.st, update));
  }

  /** Status changes of workers on `nodeId`. Repeated and stale events are ignored. */
  workerEvents(nodeId: string, events: readonly WorkerEvent[], now: number): AmEffect[] {
    return this.step(now, () => {
      observeEvents(this.st, events, now);
      onWorkerEvents(this.st, nodeId, events);
    });
  }

  /** Transfers a serving agent's data service measured for this job's readers (speculation.ts). */
  pathsReported(records: readonly PathRecord[], now: number): AmEffect[] {
    if (records.length === 0) return [];
    return this.step(now, () => {
      observePaths(this.st, records, now);
      return false;
    });
  }

  /** Hosts found to be the slow end of the job's data paths (placement avoids them), sorted. */
  slowHosts(): string[] {
    return [...this.st.speculation.slowHosts.keys()].sort();
  }

  /**
   * The master refused the UpdateRequests of a `request` effect on the count of slots (field
   * `deltas.delta`: it holds slots for us we have not heard of yet) and applied none of it. Its
   * deltas are taken back and its units count as not sent; the next input asks again from what is
   * known then. No effects.
   */
  requestRefused(units: readonly ScheduleUnitConfig[], deltas: readonly RequestDelta[]): void {
    if (!this.st.spec || this.st.done) return;
    takeBack(this.st, units, deltas);
  }

  /**
   * The master's connectivity graph (the answer to an UpdateRequests whose connectivity_version
   * was stale): `links` broken between hosts, `partitioned` nodes the master cannot hear while
   * their peers still reach them. Replaces the graph held; broken links between job hosts give
   * hosts up (see partitions.ts), healed ones make given-up hosts usable again.
   */
  connectivityChanged(links: readonly LinkInput[], partitioned: readonly string[], now: number): AmEffect[] {
    return this.step(now, () => setConnectivity(this.st, links, partitioned));
  }

  /**
   * The nodes an operator is draining (the master's graph, whatever the job's network setting):
   * nothing new is planned there and free slots there go back, so the work there finishes and
   * the drain ends; running workers are left alone (at the drain's deadline the master revokes their
   * slots, and they run again elsewhere as lost slots). Kept before `start` too.
   */
  drainingChanged(nodes: readonly string[], now: number): AmEffect[] {
    const d = this.st.draining;
    if (nodes.length === d.size && nodes.every((n) => d.has(n))) return [];
    d.clear();
    for (const n of nodes) d.add(n);
    this.st.log.info({ draining: [...d] }, 'nodes being drained');
    return this.step(now, () => true);
  }

  /** Time passes: returned slots whose drop never showed are settled; timing-out nodes may be given up. */
  tick(now: number): AmEffect[] {
    return this.step(now, () => {
      checkReruns(this.st, now);
      settleReturns(this.st, now);
      checkSpeculation(this.st, now);
    });
  }

  /**
   * One input after `start`: ignored before it and after the finish, and when `input` returns false
   * (an assignment message not applied); otherwise broken links between job hosts are mended
   * (partitions.ts), free slots bound, surplus returned and requests sized (placement.ts), and the
   * step's effects flushed.
   */
  private step(now: number, input: () => boolean | void): AmEffect[] {
    if (!this.st.spec || this.st.done) return [];
    if (input() === false) return [];
    resolvePartitions(this.st, now);
    reconcile(this.st, now);
    return flush(this.st);
  }
}
