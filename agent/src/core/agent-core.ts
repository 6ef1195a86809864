/**
 * The node agent's state machine (pure: no I/O, no timers, no clock; time comes in as `now`).
 *
 * The agent starts a worker only when it holds BOTH a grant with room (from the master) and a plan
 * (from the application master, or from the master itself for AM processes). Every input is a
 * method that updates the state and returns the effects the shell must carry out: spawn a process,
 * kill a worker (its whole process family), push a worker event to an AM, log.
 *
 * ```ts
 * const core = new AgentCore({ nodeId: 'n1', capacity: res(8000, 16384) });
 * core.updateGrants({ epoch: '1', seq: '1', full: true, grants: [{ appId: 'a', suId: 'map', slots: 1, resource: res(500, 256) }] }, now);
 * const { effects } = core.startWorkers({ appId: 'a', amAttempt: 1, amAddress: '127.0.0.1:7100', epoch: '0', plans }, now);
 * // effects: [{ kind: 'spawn', worker: {...} }] -> shell spawns, then core.workerSpawned(id, pid, startTime, now)
 * const delta = core.takeDelta(); // what changed since the last call: the shell writes it to the local checkpoint
 * ```
 *
 * Agent restart (docs/design.md, "Failover", agent crash): a fresh core is given the checkpointed state
 * with `restore(state, liveness, now)`, where `liveness` says for each worker that was active
 * whether its process is still the same one (pid + start time + boot id), or how it ended. Live
 * workers are re-adopted (they keep their slots), ended ones finish with their real exit code, and
 * pending plans stay pending, held until `grantsConfirmed()` (the master confirmed the grant table,
 * or the shell gave up waiting for it and runs from the checkpoint's grants).
 *
 * `AgentCore` is a facade over one state object (core-state.ts) and the modules that own each
 * concern: grants (master epoch, grant messages, enforcement, AM attempt fencing), plans (start and
 * stop requests), lifecycle (pending starts, spawn specs, process reports, finish and AM events),
 * retention (pending timeout, forgetting finished workers), persistence (checkpoint deltas and
 * state), restore (restart from the checkpoint) and queries. Its types are in types.ts.
 */
import { cmpInt64, nullLogger, type Int64, type Logger, type Resource } from '@fuxi/common';
import { CoreState } from './core-state.js';
import { checkEpoch, updateGrants } from './grants.js';
import { spawnFailed, workerExited, workerSpawned } from './lifecycle.js';
import { durableState, hasDelta, takeDelta } from './persistence.js';
import { startWorkers, stopWorkers } from './plans.js';
import {
  amAddressOf,
  amAttemptOf,
  amWorkers,
  amWorkersToReport,
  runningWorkers,
  findWorker,
  grantTable,
  listWorkers,
  runningTaskWorkers,
  snapshot,
  summary,
  used,
  worker,
  workerCounts,
  workersById,
} from './queries.js';
import { checkPlanToken, planTokenWaits, type PlanAuthInput } from './plan-tokens.js';
import { grantsConfirmed, restore } from './restore.js';
import { tick } from './retention.js';
import type {
  AgentCoreConfig,
  AgentSnapshot,
  AgentState,
  Effect,
  GrantEntry,
  Liveness,
  StartWorkersInput,
  StateDelta,
  StopWorkersInput,
  UpdateGrantsInput,
  WorkerInfo,
  WorkerSummary,
} from './types.js';

export * from './types.js';

export class AgentCore {
  readonly nodeId: string;
  readonly capacity: Resource;
  private readonly st: CoreState;

  constructor(cfg: AgentCoreConfig, log: Logger = nullLogger) {
    this.st = new CoreState(cfg, log);
    this.nodeId = this.st.nodeId;
    this.capacity = this.st.capacity;
  }

  // ------------------------------------------------------------------ master epoch

  /** Highest master epoch seen. */
  get epochSeen(): Int64 {
    return this.st.epoch;
  }

  /** Last grant sequence applied, in the numbering of the master that sent it (`appliedGrantEpoch`). */
  get appliedGrantSeq(): Int64 {
    return this.st.grantSeq;
  }

  /** Epoch of the master whose grant message was applied last ('0' = none yet). */
  get appliedGrantEpoch(): Int64 {
    return this.st.grantEpoch;
  }

  /**
   * The applied grant seq in the numbering of the newest master seen (`epochSeen`), as heartbeats
   * report it: '0' while the table still comes from an older master (a new leader numbers its own
   * grant messages from 1, so (epoch, seq) stays unambiguous).
   */
  get currentGrantSeq(): Int64 {
    return cmpInt64(this.st.grantEpoch, this.st.epoch) === 0 ? this.st.grantSeq : '0';
  }

  /**
   * The master answered RegisterAgent (or a heartbeat) with `epoch`. A newer epoch raises the bar;
   * an older one means a deposed master: StaleEpochError.
   */
  registered(epoch: Int64): Effect[] {
    checkEpoch(this.st, epoch);
    return [];
  }

  // ------------------------------------------------------------------ grants

  /**
   * Master -> agent grant changes, applied in (epoch, seq) order (a delta only when it is the next
   * seq, a full table unless older); others are ignored, a stale epoch throws StaleEpochError.
   * Returns the applied seq (in the message's epoch). Rules: grants.ts.
   */
  updateGrants(req: UpdateGrantsInput, now: number): { appliedSeq: Int64; applied: boolean; effects: Effect[] } {
    return updateGrants(this.st, req, now);
  }

  // ------------------------------------------------------------------ plans

  /**
   * Plans from an AM (epoch '0') or from the master (epoch > 0, AM processes only): each starts when
   * its grant has room, else waits as PENDING; duplicate worker ids return the current status.
   * Throws StaleEpochError for an old master epoch or AM attempt (plans.ts).
   */
  startWorkers(req: StartWorkersInput, now: number): { workers: WorkerInfo[]; effects: Effect[] } {
    return startWorkers(this.st, req, now);
  }

  /**
   * Stops workers of an app (all of them when `workerIds` is empty). From the master (epoch > 0) any
   * worker; from an AM, not AM processes. Unknown ids are skipped.
   */
  stopWorkers(req: StopWorkersInput, now: number): { workers: WorkerInfo[]; effects: Effect[] } {
    return stopWorkers(this.st, req, now);
  }

  // ------------------------------------------------------------------ process lifecycle

  /** The driver started the worker's process (`bootId`: the host's, identifies the process with pid + start time). */
  workerSpawned(appId: string, workerId: string, pid: number, startTime: string, now: number, bootId = ''): Effect[] {
    return workerSpawned(this.st, appId, workerId, pid, startTime, now, bootId);
  }

  /** The driver could not start the worker's process. */
  spawnFailed(appId: string, workerId: string, message: string, now: number): Effect[] {
    return spawnFailed(this.st, appId, workerId, message, now);
  }

  /**
   * The worker's process ended: `exitCode` when it exited, `signal` when a signal killed it (both
   * null: unknown, e.g. a re-adopted worker, not the agent's child, that left no exit code; `detail`
   * then says so).
   */
  workerExited(appId: string, workerId: string, exitCode: number | null, signal: string | null, now: number, detail = ''): Effect[] {
    return workerExited(this.st, appId, workerId, exitCode, signal, now, detail);
  }

  /** Periodic: pending plans past their timeout are rejected; old finished workers forgotten. */
  tick(now: number): Effect[] {
    return tick(this.st, now);
  }

  /**
   * A master process answered (registration, heartbeat, or a standby's redirect in a failover):
   * this agent is not cut off from the masters. With the heartbeat interval the master set, a plan
   * without a grant is rejected after three intervals (at least 1 s) of silence from every master
   * (`noGrantNoMasterMs`).
   */
  masterHeard(now: number, heartbeatIntervalMs?: number): void {
    this.st.masterHeardAtMs = now;
    if (heartbeatIntervalMs && heartbeatIntervalMs > 0) this.st.noGrantNoMasterMs = Math.max(1000, 3 * heartbeatIntervalMs);
  }

  // ------------------------------------------------------------------ queries

  /** Sum of the resources of spawning and running workers. */
  used(): Resource {
    return used(this.st);
  }

  summary(): WorkerSummary {
    return summary(this.st);
  }

  /** Workers in the registry by state, AM processes apart (the agent's metrics). */
  workerCounts(): ReturnType<typeof workerCounts> {
    return workerCounts(this.st);
  }

  /** Every application-master process (su `__am__`) known, finished ones included. */
  amWorkers(): WorkerInfo[] {
    return amWorkers(this.st);
  }

  /** The AM processes the next heartbeat reports (see queries.ts `amWorkersToReport`). */
  amWorkersToReport(): WorkerInfo[] {
    return amWorkersToReport(this.st);
  }

  /** The workers running now. */
  runningWorkers(): WorkerInfo[] {
    return runningWorkers(this.st);
  }

  /** Workers that ended since the masters last acknowledged (oldest first), for the next heartbeat. */
  workerEnds(): WorkerInfo[] {
    return [...this.st.endsToReport];
  }

  /** The task workers running now (at most 1,000), for the next heartbeat: failure prediction weighs them. */
  runningTaskWorkers(): ReturnType<typeof runningTaskWorkers> {
    return runningTaskWorkers(this.st);
  }

  /** A master answered a heartbeat that carried the first `count` of `workerEnds()`. */
  workerEndsReported(count: number): void {
    this.st.endsToReport.splice(0, count);
  }

  worker(appId: string, workerId: string): WorkerInfo | undefined {
    return worker(this.st, appId, workerId);
  }

  workersById(appId: string, ids: readonly string[]): WorkerInfo[] {
    return workersById(this.st, appId, ids);
  }

  /** Workers of an app (every worker when `appId` is empty), in acceptance order. */
  listWorkers(appId = ''): WorkerInfo[] {
    return listWorkers(this.st, appId);
  }

  /**
   * The worker of instance `instance` of `task` in `appId`: the given attempt, or the latest one
   * (highest attempt, then most recently accepted) when `attempt` is 0.
   */
  findWorker(appId: string, task: string, instance: number, attempt = 0): WorkerInfo | undefined {
    return findWorker(this.st, appId, task, instance, attempt);
  }

  grantTable(): GrantEntry[] {
    return grantTable(this.st);
  }

  /** Refuses a plan or stop without the app's current AM token (plan-tokens.ts); changes nothing. */
  checkPlanToken(input: PlanAuthInput): void {
    checkPlanToken(this.st, input);
  }

  /** True while a plan's token check can only wait for the app's grant (plan-tokens.ts; makes no error). */
  planTokenWaits(input: PlanAuthInput): boolean {
    return planTokenWaits(this.st, input);
  }

  /** Highest AM attempt seen for the app (0 when unknown). */
  amAttemptOf(appId: string): number {
    return amAttemptOf(this.st, appId);
  }

  /** Address of the app's newest AM attempt ('' when unknown): worker events go there. */
  amAddressOf(appId: string): string {
    return amAddressOf(this.st, appId);
  }

  // ------------------------------------------------------------------ checkpoint and restart

  /** True after a restore until the grant table is confirmed: pending plans wait. */
  get startsHeld(): boolean {
    return this.st.held;
  }

  /**
   * What changed since the previous call (undefined: nothing), as whole records to put and keys to
   * delete; the shell writes it to the local checkpoint as one atomic batch before it acknowledges
   * the input that caused it. Replaying every delta in order over an empty state gives `state()`.
   */
  takeDelta(): StateDelta | undefined {
    return takeDelta(this.st);
  }

  /** Whether anything changed since the last `takeDelta()`. */
  hasDelta(): boolean {
    return hasDelta(this.st);
  }

  /** The whole durable state (what the checkpoint holds once every delta is written). */
  state(): AgentState {
    return durableState(this.st);
  }

  /**
   * Agent restart: loads the checkpointed `saved` state into this fresh core; `liveness` decides for
   * each worker that was active whether it is re-adopted (`alive`) or finished (`exited`, `gone`).
   * Pending plans are held until `grantsConfirmed()`. Throws FailedPreconditionError when the core
   * is not fresh or the checkpoint is another node's (restore.ts).
   */
  restore(saved: AgentState, liveness: (w: WorkerInfo) => Liveness, now: number): { adopted: WorkerInfo[]; ended: WorkerInfo[]; effects: Effect[] } {
    return restore(this.st, saved, liveness, now);
  }

  /** The grant table is confirmed, or the shell runs from the checkpoint's grants: pending plans may start. */
  grantsConfirmed(now: number): Effect[] {
    return grantsConfirmed(this.st, now);
  }

  snapshot(): AgentSnapshot {
    return snapshot(this.st);
  }
}
