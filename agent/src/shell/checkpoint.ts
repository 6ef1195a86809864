/**
 * The agent's local checkpoint (docs/design.md, "Hard state and soft state": the agent's hard state): its grant table with
 * the master epoch and the (epoch, seq) it follows, the AM attempt bar and address of every app, and
 * the worker registry (app, worker id, SU, task, instance, attempt, AM attempt and address, command,
 * resource, pid, process start time, boot id, state, exit code). It is written incrementally: every
 * change is one `StateDelta` (whole records to put, keys to delete) written as ONE atomic batch (the
 * paper's delta checkpoint), before the change is acknowledged.
 *
 * Three backends, one contract (`__tests__/checkpoint.test.ts` runs against each):
 * - `JournalCheckpoint` (checkpoint-journal.ts): an append-only journal in the work dir
 *   (production).
 * - `LevelCheckpoint`: LevelDB in `<workDir>/checkpoint`, the production backend of earlier
 *   versions: the journal takes its content over at its first open. One agent per work dir:
 *   LevelDB's lock makes a second one fail to open it.
 * - `MemoryCheckpoint`: a plain object (tests; simulated agents). `failWrites` injects faults.
 *
 * ```ts
 * const cp = await LevelCheckpoint.open(path.join(workDir, 'checkpoint'));
 * const saved = await cp.load();               // emptyState() for a new work dir
 * await cp.write(core.takeDelta()!);            // one atomic batch
 * await cp.close();
 * ```
 *
 * Durability: with `sync: false` (the default) a write has reached the operating system when it
 * resolves: it survives the agent's own crash (kill -9), which is the failure this protects against
 * (a host crash takes the workers with it). `sync: true` fsyncs every batch.
 */
import { Level } from 'level';
import { FailedPreconditionError, errorMessage } from '@fuxi/common';
import type { AgentState, AppEntry, CheckpointMeta, GrantEntry, StateDelta, WorkerEntry } from '../core/agent-core.js';
import { applyDelta, applyDeltaSharing, copyDelta, emptyDelta, emptyState } from '../core/state-delta.js';

export interface AgentCheckpoint {
  readonly kind: 'leveldb' | 'memory' | 'journal';
  /** Everything stored: `emptyState()` when nothing was ever written. Workers in acceptance order. */
  load(): Promise<AgentState>;
  /** Applies one delta as one atomic batch: all of it or none of it is stored when this settles. */
  write(delta: StateDelta): Promise<void>;
  close(): Promise<void>;
}

/** Key layout format; a checkpoint written by a newer layout is refused rather than misread. */
export const CHECKPOINT_FORMAT = '1';

const KEY_FORMAT = 'format';
const KEY_META = 'meta';
const P_GRANT = 'g:';
const P_APP = 'a:';
const P_WORKER = 'w:';

const grantKey = (appId: string, suId: string): string => P_GRANT + JSON.stringify([appId, suId]);
const appKey = (appId: string): string => P_APP + JSON.stringify(appId);
const workerKey = (appId: string, workerId: string): string => P_WORKER + JSON.stringify([appId, workerId]);

/** The checkpoint in a LevelDB directory. */
export class LevelCheckpoint implements AgentCheckpoint {
  readonly kind = 'leveldb';
  private closed = false;

  private constructor(
    private readonly db: Level<string, string>,
    readonly dir: string,
    private readonly sync: boolean,
  ) {}

  /** Opens (creating when missing) the checkpoint in `dir`. Fails when another agent holds it. */
  static async open(dir: string, opts: { sync?: boolean } = {}): Promise<LevelCheckpoint> {
    const db = new Level<string, string>(dir, { keyEncoding: 'utf8', valueEncoding: 'utf8' });
    try {
      await db.open();
    } catch (e) {
      const cause = (e as { cause?: { code?: string; message?: string } }).cause;
      if (cause?.code === 'LEVEL_LOCKED') {
        throw new FailedPreconditionError(`the checkpoint ${dir} is in use by another agent process (one agent per --work-dir)`);
      }
      throw new FailedPreconditionError(`cannot open the checkpoint ${dir}: ${cause?.message ?? errorMessage(e)}`);
    }
    let format: string | undefined;
    try {
      format = await db.get(KEY_FORMAT);
    } catch {
      format = undefined;
    }
    if (format === undefined) {
      await db.put(KEY_FORMAT, CHECKPOINT_FORMAT);
    } else if (format !== CHECKPOINT_FORMAT) {
      await db.close();
      throw new FailedPreconditionError(`the checkpoint ${dir} has format ${format}; this agent reads format ${CHECKPOINT_FORMAT}`);
    }
    return new LevelCheckpoint(db, dir, opts.sync ?? false);
  }

  async load(): Promise<AgentState> {
    this.checkOpen();
    const state = emptyState();
    for await (const [key, value] of this.db.iterator()) {
      if (key === KEY_META) state.meta = JSON.parse(value) as CheckpointMeta;
      else if (key.startsWith(P_GRANT)) state.grants.push(JSON.parse(value) as GrantEntry);
      else if (key.startsWith(P_APP)) state.apps.push(JSON.parse(value) as AppEntry);
      else if (key.startsWith(P_WORKER)) state.workers.push(JSON.parse(value) as WorkerEntry);
    }
    state.workers.sort((a, b) => a.order - b.order);
    return state;
  }

  async write(delta: StateDelta): Promise<void> {
    this.checkOpen();
    const ops: Array<{ type: 'put'; key: string; value: string } | { type: 'del'; key: string }> = [];
    if (delta.meta) ops.push({ type: 'put', key: KEY_META, value: JSON.stringify(delta.meta) });
    for (const r of delta.delGrants) ops.push({ type: 'del', key: grantKey(r.appId, r.suId) });
    for (const g of delta.putGrants) ops.push({ type: 'put', key: grantKey(g.appId, g.suId), value: JSON.stringify(g) });
    for (const id of delta.delApps) ops.push({ type: 'del', key: appKey(id) });
    for (const a of delta.putApps) ops.push({ type: 'put', key: appKey(a.appId), value: JSON.stringify(a) });
    for (const r of delta.delWorkers) ops.push({ type: 'del', key: workerKey(r.appId, r.workerId) });
    for (const w of delta.putWorkers) ops.push({ type: 'put', key: workerKey(w.appId, w.workerId), value: JSON.stringify(w) });
    if (ops.length === 0) return;
    await this.db.batch(ops, { sync: this.sync } as never);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.db.close();
  }

  private checkOpen(): void {
    if (this.closed) throw new FailedPreconditionError(`the checkpoint ${this.dir} is closed`);
  }
}

/**
 * The checkpoint as a plain object. `reopen()` gives a new handle on the same data (an agent
 * restart in a test). `failWrites = n` makes the next n writes fail without storing anything.
 */
export class MemoryCheckpoint implements AgentCheckpoint {
  readonly kind = 'memory';
  failWrites = 0;
  /** Deltas written (tests). */
  writes = 0;
  private closed = false;

  constructor(private readonly box: { state: AgentState } = { state: emptyState() }) {}

  reopen(): MemoryCheckpoint {
    return new MemoryCheckpoint(this.box);
  }

  load(): Promise<AgentState> {
    if (this.closed) return Promise.reject(new FailedPreconditionError('the checkpoint is closed'));
    return Promise.resolve(applyDelta(this.box.state, emptyDelta()));
  }

  write(delta: StateDelta): Promise<void> {
    if (this.closed) return Promise.reject(new FailedPreconditionError('the checkpoint is closed'));
    if (this.failWrites > 0) {
      this.failWrites--;
      return Promise.reject(new Error('injected checkpoint write failure'));
    }
    // The delta is copied (the caller may change its records later); the state shares the rest.
    this.box.state = applyDeltaSharing(this.box.state, copyDelta(delta));
    this.writes++;
    return Promise.resolve();
  }

  close(): Promise<void> {
    this.closed = true;
    return Promise.resolve();
  }
}
