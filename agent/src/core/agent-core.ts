/**
 * The node agent's state machine (pure: no I/O, no timers, no clock; time comes in as `now`).
 *
 * The agent starts a worker only when it holds BOTH a grant with room (from the master) and a plan
 * (from the application master, or from the master itself for AM processes). Every input is a
 * method that updates the state and returns the effects the shell must carry out: spawn a process,
 * kill a process group, push a worker event to an AM, log.
 *
 * ```ts
 * const core = new AgentCore({ nodeId: 'n1', capacity: res(8000, 16384) });
 * core.updateGrants({ epoch: '1', seq: '1', full: true, grants: [{ appId: 'a', suId: 'map', slots: 1, resource: res(500, 256) }] }, now);
 * const { effects } = core.startWorkers({ appId: 'a', amAttempt: 1, amAddress: '127.0.0.1:7100', epoch: '0', plans }, now);
 * // effects: [{ kind: 'spawn', worker: {...} }] -> shell spawns, then core.workerSpawned(id, pid, startTime, now)
 * const delta = core.takeDelta(); // what changed since the last call: the shell writes it to the local checkpoint
 * ```
 *
 * Agent restart (DESIGN.md section 5, "Agent crash"): a fresh core is given the checkpointed state
 * with `restore(state, liveness, now)`, where `liveness` says for each worker that was active
 * whether its process is still the same one (pid + start time + boot id), or how it ended. Live
 * workers are re-adopted (they keep their slots), ended ones finish with their real exit code, and
 * pending plans stay pending, held until `grantsConfirmed()` (the master confirmed the grant table,
 * or the shell gave up waiting for it and runs from the checkpoint's grants).
 */
import {
  cmpInt64,
  isWorkerActive,
  isWorkerTerminal,
  FailedPreconditionError,
  nullLogger,
  type Int64,
  type Logger,
  type Resource,
  type WorkerState,
} from '@fuxi/common';
import { CoreState, copyGrant, copyWorker, grantKey, touch, wkey, type WorkerRecord } from './core-state.js';
import { checkEpoch, updateGrants } from './grants.js';
import { event, finish, spawnFailed, startPending, workerExited, workerSpawned } from './lifecycle.js';
import { durableState, takeDelta } from './persistence.js';
import { startWorkers, stopWorkers } from './plans.js';
import { tick } from './retention.js';
import { amAttemptOf, amWorkers, findWorker, grantTable, listWorkers, snapshot, summary, used, worker, workersById } from './queries.js';
import {
  ENDED_WHILE_DOWN,
  type AgentCoreConfig,
  type AgentSnapshot,
  type AgentState,
  type Effect,
  type GrantEntry,
  type Liveness,
  type StartWorkersInput,
  type StateDelta,
  type StopWorkersInput,
  type UpdateGrantsInput,
  type WorkerInfo,
  type WorkerSummary,
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
   * Master -> agent grant changes, ordered by (epoch, seq) lexicographically. Every master numbers
   * its own messages: from a master newer than the one whose table is applied, the applied seq
   * counts as 0. A delta applies only when `seq` is exactly one past the applied seq; `full`
   * replaces the table unless it is older than the applied one from the same master (seq below);
   * a full table from a newer master always applies, whatever its seq. Otherwise the message is
   * ignored (the master heals it with the full table on the next heartbeat). A stale epoch throws
   * StaleEpochError. Returns the applied seq (in the message's epoch).
   */
  updateGrants(req: UpdateGrantsInput, now: number): { appliedSeq: Int64; applied: boolean; effects: Effect[] } {
    return updateGrants(this.st, req, now);
  }

  // ------------------------------------------------------------------ plans

  /**
   * Plans from an AM (epoch '0') or from the master (epoch > 0, AM processes only). Each plan starts
   * at once when its grant has room, else waits as PENDING. Duplicate worker ids return the current
   * status. Throws StaleEpochError for an old master epoch or AM attempt.
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

  // ------------------------------------------------------------------ queries

  /** Sum of the resources of spawning and running workers. */
  used(): Resource {
    return used(this.st);
  }

  summary(): WorkerSummary {
    return summary(this.st);
  }

  /** Every application-master process (su `__am__`) known, finished ones included. */
  amWorkers(): WorkerInfo[] {
    return amWorkers(this.st);
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

  /** Highest AM attempt seen for the app (0 when unknown). */
  amAttemptOf(appId: string): number {
    return amAttemptOf(this.st, appId);
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

  /** The whole durable state (what the checkpoint holds once every delta is written). */
  state(): AgentState {
    return durableState(this.st);
  }

  /**
   * Agent restart: loads the checkpointed `saved` state into this fresh core. For every worker that
   * was STARTING or RUNNING, `liveness` (the shell's look at /proc and the worker's exit file)
   * decides: `alive` -> re-adopted as RUNNING, keeping its slot (and killed again if a stop had been
   * requested); `exited` -> SUCCEEDED / FAILED with that exit code (KILLED when it was being
   * stopped); `gone` -> FAILED (KILLED when being stopped) "ended while the agent was down". Every
   * re-adopted or ended worker's status goes to its AM; so does that of workers that finished within
   * `resendFinishedWithinMs` (the crash may have lost its delivery). Pending plans stay pending, and
   * none starts until `grantsConfirmed()` or an applied grant message. The master epoch, the grant
   * table with its (epoch, seq) and the AM attempt bars are those of the checkpoint.
   *
   * Throws FailedPreconditionError when the core is not fresh, or the checkpoint is another node's.
   */
  restore(saved: AgentState, liveness: (w: WorkerInfo) => Liveness, now: number): { adopted: WorkerInfo[]; ended: WorkerInfo[]; effects: Effect[] } {
    if (this.st.workers.size > 0 || this.st.grants.size > 0 || this.st.apps.size > 0 || this.st.epoch !== '0') {
      throw new FailedPreconditionError('restore needs a fresh agent core');
    }
    if (saved.meta.nodeId && saved.meta.nodeId !== this.st.nodeId) {
      throw new FailedPreconditionError(
        `the checkpoint belongs to node "${saved.meta.nodeId}", not "${this.st.nodeId}": start with --node-id ${saved.meta.nodeId}, or with another --work-dir`,
        { checkpointNodeId: saved.meta.nodeId, nodeId: this.st.nodeId },
      );
    }
    this.st.epoch = String(BigInt(saved.meta.epoch || '0'));
    this.st.grantEpoch = String(BigInt(saved.meta.grantEpoch || '0'));
    this.st.grantSeq = String(BigInt(saved.meta.grantSeq || '0'));
    this.st.dirtyMeta = true;
    for (const g of saved.grants) {
      if (g.slots <= 0) continue;
      this.st.grants.set(grantKey(g.appId, g.suId), copyGrant(g));
    }
    for (const a of saved.apps) this.st.apps.set(a.appId, { amAttempt: a.amAttempt, amAddress: a.amAddress });
    const sorted = [...saved.workers].sort((a, b) => a.order - b.order);
    for (const s of sorted) {
      const w: WorkerRecord = { ...copyWorker(s), order: s.order, startOrder: s.startOrder };
      this.st.workers.set(wkey(w.appId, w.workerId), w);
      this.st.nextOrder = Math.max(this.st.nextOrder, w.order + 1, w.startOrder + 1);
      if (!this.st.apps.has(w.appId)) {
        this.st.apps.set(w.appId, { amAttempt: w.amAttempt, amAddress: w.amAddress });
        this.st.dirtyApps.add(w.appId);
      }
    }

    const adopted: WorkerInfo[] = [];
    const ended: WorkerInfo[] = [];
    const effects: Effect[] = [];
    for (const w of this.st.workers.values()) {
      if (isWorkerActive(w.state)) {
        const l = liveness(copyWorker(w));
        if (l.kind === 'alive') {
          w.state = 'RUNNING';
          w.pid = l.pid;
          w.startTime = l.startTime;
          w.bootId = l.bootId;
          if (!w.startedAtMs) w.startedAtMs = now;
          touch(this.st, w);
          adopted.push(copyWorker(w));
          effects.push({ kind: 'log', level: 'debug', msg: 'worker re-adopted', fields: { workerId: w.workerId, appId: w.appId, task: w.task, instance: w.instance, attempt: w.attempt, pid: w.pid } });
          effects.push(...event(this.st, w));
          if (w.stopReason) effects.push({ kind: 'kill', workerId: w.workerId, pid: w.pid, reason: w.stopReason });
          continue;
        }
        w.exitCode = l.kind === 'exited' ? l.exitCode : null;
        w.signal = null;
        let state: WorkerState;
        let message: string;
        if (w.stopReason) {
          state = 'KILLED';
          message = w.stopReason;
        } else if (l.kind === 'exited' && l.exitCode === 0) {
          state = 'SUCCEEDED';
          message = '';
        } else if (l.kind === 'exited') {
          state = 'FAILED';
          message = `exit code ${l.exitCode} (${ENDED_WHILE_DOWN})`;
        } else {
          state = 'FAILED';
          message = `${ENDED_WHILE_DOWN} (no exit code recorded)`;
        }
        effects.push(...finish(this.st, w, state, now, message));
        if (l.kind === 'exited' && l.atMs !== undefined && l.atMs > 0 && l.atMs <= now) w.finishedAtMs = l.atMs;
        ended.push(copyWorker(w));
      } else if (isWorkerTerminal(w.state) && now - w.finishedAtMs <= this.st.resendWithinMs) {
        effects.push(...event(this.st, w));
      }
    }
    this.st.held = true;
    effects.push({
      kind: 'log',
      level: 'info',
      msg: 'state restored from the local checkpoint',
      fields: { epoch: this.st.epoch, grantEpoch: this.st.grantEpoch, grantSeq: this.st.grantSeq, grants: this.st.grants.size, adopted: adopted.length, ended: ended.length, pending: summary(this.st).pending },
    });
    return { adopted, ended, effects };
  }

  /**
   * The grant table is confirmed (the master answered and either accepted our (epoch, seq) or sent
   * its table), or the shell runs from the checkpoint's grants because the master cannot be reached:
   * pending plans may start.
   */
  grantsConfirmed(now: number): Effect[] {
    if (!this.st.held) return [];
    this.st.held = false;
    return startPending(this.st, now);
  }

  snapshot(): AgentSnapshot {
    return snapshot(this.st);
  }
}
