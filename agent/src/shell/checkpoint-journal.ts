/**
 * The agent's local checkpoint as an append-only journal (the production backend; the contract is
 * `AgentCheckpoint` in checkpoint.ts, and `__tests__/checkpoint.test.ts` runs it against every
 * backend). Each write is one `StateDelta` as one line of JSON, appended with one `write(2)`; a
 * line is the unit of atomicity (a whole delta or none of it), as a LevelDB batch was.
 *
 * Why not LevelDB: a batch there cost the agent far more than the state it stores. Measured with
 * `make bench-throughput`'s `sdkMany` (1,000 one-task jobs; two runs each, alternating), skipping
 * only the LevelDB batch took the agents' CPU from 6.3-6.5 s to 4.7-5.0 s: 1.3-1.8 ms a job, about
 * a tenth of the whole control plane's CPU per job (the abstract-level layer in JavaScript, then
 * the batch's round trip through libuv's thread pool). The records are a few hundred bytes each
 * and the live state a few hundred records, which a log and a periodic snapshot hold as well.
 *
 * Files, in the work dir:
 * - `checkpoint.journal`: a snapshot line (`{"format":1,"s":{meta,grants,apps,workers}}`), then one
 *   line per delta (`{"d":{...}}`). When the journal has grown past `compactBytes` and four times
 *   the live state, the state is written as a new snapshot to `checkpoint.journal.tmp` and renamed
 *   over the journal (fsynced first when `sync`).
 * - `checkpoint.lock`: the pid, start time and boot id of the agent holding the journal. A second
 *   agent on the same work dir is refused while that process lives; a lock left by a process that
 *   is gone (kill -9) is taken over.
 *
 * Durability is the LevelDB backend's: a write has reached the operating system when it resolves,
 * so it survives the agent's own crash (the failure the checkpoint is for: a host crash takes the
 * workers with it); `sync: true` adds an fdatasync per write. A write that fails (ENOSPC, EIO)
 * throws after cutting the journal back to where it ended, so no torn line is left for the next
 * write to follow. A last line with no newline (a host crash mid-write) is dropped at load, and
 * the file cut back to the lines before it; an unreadable line before the last is refused, naming
 * the line.
 *
 * An agent that finds no journal but the LevelDB checkpoint an earlier version kept
 * (`<workDir>/checkpoint/`) loads that, writes it as the journal's first snapshot, and removes it.
 *
 * ```ts
 * const cp = await JournalCheckpoint.open(workDir);
 * const saved = await cp.load();                // emptyState() for a new work dir
 * await cp.write(core.takeDelta()!);             // one appended line
 * await cp.close();
 * ```
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { FailedPreconditionError, errorMessage } from '@fuxi/common';
import type { AgentState, AppEntry, CheckpointMeta, GrantEntry, StateDelta, WorkerEntry } from '../core/agent-core.js';
import { emptyDelta, emptyState } from '../core/state-delta.js';
import { LevelCheckpoint, type AgentCheckpoint } from './checkpoint.js';
import { readStartTime } from './proc-table.js';
import { readBootId } from './process-driver.js';

export const JOURNAL_FILE = 'checkpoint.journal';
export const JOURNAL_LOCK = 'checkpoint.lock';
/** Where the LevelDB checkpoint of earlier versions lived (migrated at open). */
export const LEGACY_LEVELDB_DIR = 'checkpoint';
export const JOURNAL_FORMAT = 1;

/** A journal below this size is never compacted (a snapshot per few hundred jobs at most). */
const DEFAULT_COMPACT_BYTES = 1 << 20;

const gk = (appId: string, suId: string): string => JSON.stringify([appId, suId]);
const ak = (appId: string): string => JSON.stringify(appId);
const wk = (appId: string, workerId: string): string => JSON.stringify([appId, workerId]);

export interface JournalOptions {
  /** fdatasync after every write (and before a compaction's rename). */
  sync?: boolean;
  /** Compaction threshold in bytes (tests make it small). */
  compactBytes?: number;
}

export class JournalCheckpoint implements AgentCheckpoint {
  readonly kind = 'journal';
  /** The live records as their JSON (what a snapshot writes), by key. */
  private meta: string;
  private readonly grants = new Map<string, string>();
  private readonly apps = new Map<string, string>();
  private readonly workers = new Map<string, string>();
  private liveBytes = 0;
  private fd = -1;
  /** Bytes of the journal that hold whole lines (a failed write is cut back to this). */
  private size = 0;
  private closed = false;
  /** Compactions done (tests). */
  compactions = 0;

  private constructor(
    readonly workDir: string,
    private readonly sync: boolean,
    private readonly compactBytes: number,
  ) {
    this.meta = JSON.stringify(emptyState().meta);
  }

  get file(): string {
    return path.join(this.workDir, JOURNAL_FILE);
  }

  /**
   * Takes the work dir's lock (FAILED_PRECONDITION when a live agent holds it), migrates a LevelDB
   * checkpoint of an earlier version, and opens (creating when missing) the journal.
   */
  static async open(workDir: string, opts: JournalOptions = {}): Promise<JournalCheckpoint> {
    fs.mkdirSync(workDir, { recursive: true });
    takeLock(workDir);
    const cp = new JournalCheckpoint(workDir, opts.sync ?? false, opts.compactBytes ?? DEFAULT_COMPACT_BYTES);
    try {
      if (!fs.existsSync(cp.file)) await cp.create();
      cp.fd = fs.openSync(cp.file, 'a', 0o600);
      cp.replay();
      return cp;
    } catch (e) {
      if (cp.fd >= 0) fs.closeSync(cp.fd);
      releaseLock(workDir);
      if (e instanceof FailedPreconditionError) throw e;
      throw new FailedPreconditionError(`cannot open the checkpoint ${cp.file}: ${errorMessage(e)}`);
    }
  }

  /** A new journal: the LevelDB checkpoint of an earlier version as its snapshot, else an empty one. */
  private async create(): Promise<void> {
    const legacy = path.join(this.workDir, LEGACY_LEVELDB_DIR);
    let from: AgentState | undefined;
    if (fs.existsSync(path.join(legacy, 'CURRENT'))) {
      const level = await LevelCheckpoint.open(legacy);
      try {
        from = await level.load();
      } finally {
        await level.close();
      }
    }
    if (from) this.absorb(from);
    // Written whole and fsynced before the LevelDB copy goes: never a moment with neither.
    this.writeSnapshot(true);
    if (from) fs.rmSync(legacy, { recursive: true, force: true });
  }

  load(): Promise<AgentState> {
    try {
      this.checkOpen();
    } catch (e) {
      return Promise.reject(e as Error);
    }
    const state: AgentState = {
      meta: JSON.parse(this.meta) as CheckpointMeta,
      grants: [...this.grants.values()].map((v) => JSON.parse(v) as GrantEntry),
      apps: [...this.apps.values()].map((v) => JSON.parse(v) as AppEntry),
      workers: [...this.workers.values()].map((v) => JSON.parse(v) as WorkerEntry),
    };
    state.workers.sort((a, b) => a.order - b.order);
    return Promise.resolve(state);
  }

  /** Reads the journal into the live maps (at open); a torn last line is dropped and cut off. */
  private replay(): void {
    const text = fs.readFileSync(this.file, 'utf8');
    const lines = text.split('\n');
    // The part after the last newline: '' for a whole journal, else a line torn by a crash.
    const torn = lines.pop() ?? '';
    this.size = Buffer.byteLength(text) - Buffer.byteLength(torn);
    if (torn !== '') fs.ftruncateSync(this.fd, this.size);
    lines.forEach((line, i) => {
      let rec: { format?: unknown; s?: AgentState; d?: StateDelta };
      try {
        rec = JSON.parse(line) as typeof rec;
      } catch (e) {
        throw new FailedPreconditionError(`the checkpoint ${this.file} is damaged at line ${i + 1}: ${errorMessage(e)}`);
      }
      if (i === 0) {
        if (rec.format !== JOURNAL_FORMAT || !rec.s)
          throw new FailedPreconditionError(`the checkpoint ${this.file} has format ${JSON.stringify(rec.format)}; this agent reads format ${JOURNAL_FORMAT}`);
        this.absorb(rec.s);
      } else if (rec.d) this.deltaLine({ ...emptyDelta(), ...rec.d })?.apply();
      else throw new FailedPreconditionError(`the checkpoint ${this.file} is damaged at line ${i + 1}: neither a snapshot nor a delta`);
    });
  }

  write(delta: StateDelta): Promise<void> {
    try {
      this.checkOpen();
      const d = this.deltaLine(delta);
      if (d === undefined) return Promise.resolve();
      this.append(d.line);
      d.apply();
      if (this.size > this.compactBytes && this.size > 4 * this.liveBytes) this.compact();
      return Promise.resolve();
    } catch (e) {
      return Promise.reject(e instanceof Error ? e : new Error(String(e)));
    }
  }

  close(): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.closed = true;
    if (this.fd >= 0) fs.closeSync(this.fd);
    this.fd = -1;
    releaseLock(this.workDir);
    return Promise.resolve();
  }

  /**
   * The delta as one line, and its changes to the live maps, made only once the line is written
   * (each record is stringified once: the same string goes into the line and the map).
   */
  private deltaLine(delta: StateDelta): { line: string; apply: () => void } | undefined {
    const parts: string[] = [];
    const ops: Array<[Map<string, string>, string, string | undefined]> = [];
    const meta = delta.meta ? JSON.stringify(delta.meta) : undefined;
    if (meta !== undefined) parts.push(`"meta":${meta}`);
    const list = (name: string, items: string[]): void => {
      if (items.length) parts.push(`"${name}":[${items.join(',')}]`);
    };
    const del = (m: Map<string, string>, key: string, json: string): string => {
      ops.push([m, key, undefined]);
      return json;
    };
    const put = (m: Map<string, string>, key: string, json: string): string => {
      ops.push([m, key, json]);
      return json;
    };
    list(
      'delGrants',
      delta.delGrants.map((r) => del(this.grants, gk(r.appId, r.suId), JSON.stringify({ appId: r.appId, suId: r.suId }))),
    );
    list(
      'putGrants',
      delta.putGrants.map((g) => put(this.grants, gk(g.appId, g.suId), JSON.stringify(g))),
    );
    list(
      'delApps',
      delta.delApps.map((id) => del(this.apps, ak(id), JSON.stringify(id))),
    );
    list(
      'putApps',
      delta.putApps.map((a) => put(this.apps, ak(a.appId), JSON.stringify(a))),
    );
    list(
      'delWorkers',
      delta.delWorkers.map((r) => del(this.workers, wk(r.appId, r.workerId), JSON.stringify({ appId: r.appId, workerId: r.workerId }))),
    );
    list(
      'putWorkers',
      delta.putWorkers.map((w) => put(this.workers, wk(w.appId, w.workerId), JSON.stringify(w))),
    );
    if (parts.length === 0) return undefined;
    return {
      line: `{"d":{${parts.join(',')}}}\n`,
      apply: () => {
        if (meta !== undefined) this.meta = meta;
        for (const [m, key, json] of ops) {
          if (json === undefined) this.del(m, key);
          else this.put(m, key, json);
        }
      },
    };
  }

  private put(m: Map<string, string>, key: string, json: string): void {
    this.liveBytes += json.length - (m.get(key)?.length ?? 0);
    m.set(key, json);
  }

  private del(m: Map<string, string>, key: string): void {
    this.liveBytes -= m.get(key)?.length ?? 0;
    m.delete(key);
  }

  /** A whole state (a snapshot) into the live maps, as the delta that puts every record of it. */
  private absorb(s: AgentState): void {
    this.deltaLine({ ...emptyDelta(), meta: s.meta, putGrants: s.grants, putApps: s.apps, putWorkers: s.workers })?.apply();
  }

  /** One line at the end; on failure the journal is cut back to its whole lines and the error goes on. */
  private append(line: string): void {
    const buf = Buffer.from(line);
    try {
      let off = 0;
      while (off < buf.length) off += fs.writeSync(this.fd, buf, off, buf.length - off);
      if (this.sync) fs.fdatasyncSync(this.fd);
      this.size += buf.length;
    } catch (e) {
      try {
        fs.ftruncateSync(this.fd, this.size);
      } catch {
        /* the next load drops the torn line */
      }
      // Nothing of the delta is applied: the agent writes it again with its next one (`unwritten`).
      throw new Error(`cannot append to ${this.file}: ${errorMessage(e)}`);
    }
  }

  /** The live state as one snapshot line, renamed over the journal. */
  private compact(): void {
    this.writeSnapshot(this.sync);
    fs.closeSync(this.fd);
    this.fd = fs.openSync(this.file, 'a', 0o600);
    this.size = fs.fstatSync(this.fd).size;
    this.compactions++;
  }

  private writeSnapshot(sync: boolean): void {
    const join = (m: Map<string, string>): string => [...m.values()].join(',');
    const line = `{"format":${JOURNAL_FORMAT},"s":{"meta":${this.meta},"grants":[${join(this.grants)}],"apps":[${join(this.apps)}],"workers":[${join(this.workers)}]}}\n`;
    const tmp = `${this.file}.tmp`;
    const fd = fs.openSync(tmp, 'w', 0o600);
    try {
      fs.writeSync(fd, line);
      if (sync) fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    fs.renameSync(tmp, this.file);
    if (sync) fsyncDir(this.workDir);
  }

  private checkOpen(): void {
    if (this.closed) throw new FailedPreconditionError(`the checkpoint ${this.file} is closed`);
  }
}

function fsyncDir(dir: string): void {
  const fd = fs.openSync(dir, 'r');
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

interface LockOwner {
  pid: number;
  startTime: string;
  bootId: string;
}

/**
 * The work dir's lock: created exclusively; one whose owner is gone (another boot, another process
 * under its pid, no process) is removed and taken. Two agents that find the same stale lock at the
 * same moment could both take it: one agent per work dir is the operator's rule this only checks.
 */
function takeLock(workDir: string): void {
  const file = path.join(workDir, JOURNAL_LOCK);
  const me: LockOwner = { pid: process.pid, startTime: readStartTime(process.pid), bootId: readBootId() };
  for (let attempt = 1; ; attempt++) {
    try {
      fs.writeFileSync(file, JSON.stringify(me) + '\n', { flag: 'wx', mode: 0o600 });
      return;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 2) throw e;
    }
    let owner: Partial<LockOwner> = {};
    try {
      owner = JSON.parse(fs.readFileSync(file, 'utf8')) as Partial<LockOwner>;
    } catch {
      /* half-written by a process that died: stale */
    }
    if (owner.pid === process.pid) throw new FailedPreconditionError(`the checkpoint in ${workDir} is already open in this process`);
    const alive = typeof owner.pid === 'number' && owner.bootId === me.bootId && owner.startTime !== '' && readStartTime(owner.pid) === owner.startTime;
    if (alive)
      throw new FailedPreconditionError(`the checkpoint in ${workDir} is in use by another agent process (pid ${owner.pid}; one agent per --work-dir)`);
    fs.rmSync(file, { force: true });
  }
}

function releaseLock(workDir: string): void {
  const file = path.join(workDir, JOURNAL_LOCK);
  try {
    const owner = JSON.parse(fs.readFileSync(file, 'utf8')) as Partial<LockOwner>;
    if (owner.pid === process.pid) fs.rmSync(file, { force: true });
  } catch {
    /* gone */
  }
}
