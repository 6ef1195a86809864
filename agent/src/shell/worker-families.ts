/**
 * Tracking and stopping workers' process families (who is in one: core/process-family.ts).
 *
 * While a worker lives, its family is sampled from /proc every `sampleMs` and its members are
 * remembered (pid + start time), so a descendant that scrubs its environment and is then reparented
 * to init is still known. A stop runs in two phases over fresh snapshots every `pollMs`:
 *
 * 1. **TERM**: every member gets SIGTERM (and SIGCONT, so a stopped one can act on it); members
 *    that appear later get theirs when they are first seen. Ends early when the family is empty.
 * 2. **KILL**, once `graceMs` has passed: the family is frozen (SIGSTOP to every member, then a
 *    new snapshot, until one finds no member it has not stopped: a stopped process cannot fork),
 *    then every member gets SIGKILL; repeated every `pollMs` until two snapshots in a row find no
 *    member (a child caught in its exec shows no environment, so no marker, for a moment).
 *
 * Every signal goes to a pid only while it still has the start time the snapshot saw
 * (`signalProcess`). One snapshot per tick serves every family.
 *
 * With `groupPids` (the worker's cgroup, shell/cgroups.ts), every process in the worker's group is
 * a member too, read afresh at each step of a stop: a descendant that scrubbed its environment and
 * was reparented to init before a sample saw it is still stopped. And when a root ends on its own,
 * whatever is still in its group (a daemon it left behind) is stopped the same way, as a
 * container's processes end with its main one.
 *
 * ```ts
 * const families = new WorkerFamilies({ log });
 * families.track(pid, { appId, workerId, root: { pid, startTime }, marker });
 * families.stop(pid, 5000); // later
 * ```
 */
import { nullLogger, type Logger } from '@fuxi/common';
import { FAMILY_ENV, familyOf, newMembers, procKey, type ProcEntry, type ProcId } from '../core/process-family.js';
import { ProcTable, signalProcess } from './proc-table.js';

/** What identifies one worker's family. */
export interface FamilyRecord {
  appId: string;
  workerId: string;
  /** The worker's root process (the wrapper); absent when unknown. */
  root?: ProcId;
  /** The worker's marker (`FUXI_WORKER_FAMILY`); '' when it was launched without one. */
  marker: string;
}

export interface WorkerFamiliesOptions {
  /** How often live families are sampled (default 1000 ms). */
  sampleMs?: number;
  /** How often a stop looks again while it runs (default 100 ms). */
  pollMs?: number;
  log?: Logger;
  /** Pids never signalled, on top of the agent, its parent and init. */
  exclude?: number[];
  /** The process table (default: /proc). */
  table?: { read(): ProcEntry[] };
  /** Called with the live members of each family not being stopped, at every sample. */
  onSample?: (key: number, rec: FamilyRecord, members: readonly ProcId[]) => void;
  /** The pids in the worker's cgroup now ([] when it has none): members during a stop. */
  groupPids?: (rec: FamilyRecord) => number[];
  /** How long what a root left behind in its group gets between SIGTERM and SIGKILL (default 5000 ms). */
  leftoverGraceMs?: number;
}

export const DEFAULT_FAMILY_SAMPLE_MS = 1000;
export const DEFAULT_FAMILY_POLL_MS = 100;
export const DEFAULT_LEFTOVER_GRACE_MS = 5000;
/** A family still alive this long after its SIGKILL is reported again (a process stuck in D state). */
const STUCK_WARN_MS = 10_000;

interface Stopping {
  startedAt: number;
  deadline: number;
  graceMs: number;
  phase: 'term' | 'kill';
  /** Members that got SIGTERM (pid:startTime). */
  termed: Set<string>;
  lastWarn: number;
  /** The kill phase's last snapshot found no member (one more must, below). */
  emptyOnce: boolean;
}

interface Family {
  rec: FamilyRecord;
  /** Members seen by the last sample. */
  known: ProcId[];
  /** The root ended (its exit was reported); the family is kept only while a stop runs. */
  rootEnded: boolean;
  stopping?: Stopping;
}

export class WorkerFamilies {
  private readonly families = new Map<number, Family>();
  private readonly log: Logger;
  private readonly sampleMs: number;
  private readonly pollMs: number;
  private readonly exclude: number[];
  private readonly table: { read(): ProcEntry[] };
  private readonly onSample: WorkerFamiliesOptions['onSample'];
  private readonly groupPids: WorkerFamiliesOptions['groupPids'];
  private readonly leftoverGraceMs: number;
  private timer: NodeJS.Timeout | undefined;
  private timerDue = 0;
  /** Keys for stops whose root pid a new worker took (below 0: never a pid). */
  private nextDetachedKey = -1;
  private closed = false;

  constructor(opts: WorkerFamiliesOptions = {}) {
    this.log = opts.log ?? nullLogger;
    this.sampleMs = opts.sampleMs ?? DEFAULT_FAMILY_SAMPLE_MS;
    this.pollMs = opts.pollMs ?? DEFAULT_FAMILY_POLL_MS;
    this.exclude = [0, 1, process.pid, process.ppid, ...(opts.exclude ?? [])];
    this.table = opts.table ?? new ProcTable(FAMILY_ENV);
    this.onSample = opts.onSample;
    this.groupPids = opts.groupPids;
    this.leftoverGraceMs = opts.leftoverGraceMs ?? DEFAULT_LEFTOVER_GRACE_MS;
  }

  /** Starts sampling the family of the worker whose root is `key` (its pid). */
  track(key: number, rec: FamilyRecord): void {
    if (this.closed) return;
    const had = this.families.get(key);
    if (had && had.rootEnded) {
      // The pid of a worker whose root ended, its stop still running for what it left behind, was
      // taken by a new worker: that stop goes on under a key of its own, and the new worker is not
      // part of it.
      this.families.delete(key);
      this.families.set(this.nextDetachedKey--, had);
    } else if (had) {
      had.rec = rec;
      this.schedule();
      return;
    }
    this.families.set(key, { rec, known: rec.root ? [rec.root] : [], rootEnded: false });
    this.schedule();
  }

  has(key: number): boolean {
    return this.families.has(key);
  }

  /** The worker tracked under `key`, if any. */
  recordOf(key: number): FamilyRecord | undefined {
    return this.families.get(key)?.rec;
  }

  /** Number of stops still running. */
  get stopping(): number {
    let n = 0;
    for (const f of this.families.values()) if (f.stopping) n++;
    return n;
  }

  /**
   * The root's exit was seen: the family is forgotten unless a stop is still running, or processes
   * are left in the worker's group: those are stopped (SIGTERM, SIGKILL after `leftoverGraceMs`).
   */
  rootEnded(key: number): void {
    const f = this.families.get(key);
    if (!f) return;
    f.rootEnded = true;
    if (f.stopping) return;
    const left = this.groupPids?.(f.rec) ?? [];
    if (left.length === 0) {
      this.families.delete(key);
      return;
    }
    this.log.warn(
      { appId: f.rec.appId, workerId: f.rec.workerId, pid: key, left, graceMs: this.leftoverGraceMs },
      'the worker ended and left processes in its cgroup: stopping them',
    );
    this.startStop(f, this.leftoverGraceMs);
  }

  /**
   * Stops the family of `key` (tracked, or `rec` when it is not): SIGTERM now, SIGKILL after
   * `graceMs`, until none is left. A second stop of a family already stopping changes nothing.
   */
  stop(key: number, graceMs: number, rec?: FamilyRecord): void {
    if (this.closed) return;
    let f = this.families.get(key);
    if (!f) {
      if (!rec) return;
      f = { rec, known: rec.root ? [rec.root] : [], rootEnded: true };
      this.families.set(key, f);
    }
    if (f.stopping) return;
    this.startStop(f, graceMs);
  }

  private startStop(f: Family, graceMs: number): void {
    const now = Date.now();
    f.stopping = { startedAt: now, deadline: now + graceMs, graceMs, phase: 'term', termed: new Set(), lastWarn: now, emptyOnce: false };
    this.tick();
  }

  /** Stops sampling and abandons running stops (the processes are left as they are). */
  close(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.families.clear();
  }

  /** Who is in `f`; during a stop, with the pids in the worker's group as read now. */
  private query(f: Family) {
    const inGroup = f.stopping && this.groupPids ? new Set(this.groupPids(f.rec)) : undefined;
    return { ...(f.rec.root ? { root: f.rec.root } : {}), marker: f.rec.marker, known: f.known, exclude: this.exclude, ...(inGroup ? { inGroup } : {}) };
  }

  private tick(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.closed || this.families.size === 0) return;
    const now = Date.now();
    let snap = this.table.read();
    const killing: Array<[number, Family]> = [];
    const sampled: Array<[number, Family]> = [];
    for (const [key, f] of this.families) {
      const members = familyOf(snap, this.query(f));
      f.known = members.map((m) => ({ pid: m.pid, startTime: m.startTime }));
      const s = f.stopping;
      if (!s) {
        if (!f.rootEnded) sampled.push([key, f]);
        continue;
      }
      if (members.length === 0) {
        // In the kill phase the family forked while it was being frozen: a child caught inside its
        // exec has no readable environment, so no marker, for a moment. Two snapshots a poll
        // apart must both find nobody before the stop ends.
        if (s.phase === 'kill' && !s.emptyOnce) {
          s.emptyOnce = true;
          continue;
        }
        this.log.info(
          { appId: f.rec.appId, workerId: f.rec.workerId, pid: f.rec.root?.pid ?? key, ms: now - s.startedAt, phase: s.phase },
          'worker process family stopped',
        );
        this.families.delete(key);
        continue;
      }
      s.emptyOnce = false;
      if (s.phase === 'term') {
        const fresh = newMembers(members, s.termed);
        for (const m of fresh) {
          s.termed.add(procKey(m));
          if (signalProcess(m, 'SIGTERM')) signalProcess(m, 'SIGCONT');
        }
        if (fresh.length > 0 && s.termed.size > fresh.length)
          this.log.info({ appId: f.rec.appId, workerId: f.rec.workerId, pids: fresh.map((m) => m.pid) }, 'new members of a stopping worker family got SIGTERM');
        if (now < s.deadline) continue;
        s.phase = 'kill';
        this.log.warn(
          { appId: f.rec.appId, workerId: f.rec.workerId, pid: f.rec.root?.pid ?? key, graceMs: s.graceMs, left: members.map((m) => m.pid) },
          'worker family still alive after grace; freezing and sending SIGKILL',
        );
      } else if (now - s.lastWarn >= STUCK_WARN_MS) {
        s.lastWarn = now;
        this.log.warn(
          { appId: f.rec.appId, workerId: f.rec.workerId, pid: f.rec.root?.pid ?? key, left: members.map((m) => `${m.pid}:${m.state}`) },
          'worker family still alive after SIGKILL',
        );
      }
      killing.push([key, f]);
    }
    if (killing.length > 0) snap = this.freeze(killing, snap);
    for (const [, f] of killing) {
      const members = familyOf(snap, this.query(f));
      f.known = members.map((m) => ({ pid: m.pid, startTime: m.startTime }));
      for (const m of members) signalProcess(m, 'SIGKILL');
    }
    // After the loop: a callback may stop a family (which runs tick again).
    if (this.onSample) for (const [key, f] of sampled) if (!f.stopping && this.families.get(key) === f) this.onSample(key, f.rec, f.known);
    this.schedule();
  }

  /**
   * SIGSTOP to every member of every family in `killing`, then a new snapshot, until one shows no
   * member not yet stopped (a stopped process cannot fork). Returns the last snapshot.
   */
  private freeze(killing: Array<[number, Family]>, snap: ProcEntry[]): ProcEntry[] {
    const stopped = new Set<string>();
    for (let round = 0; round < 100; round++) {
      let fresh = 0;
      for (const [, f] of killing) {
        for (const m of newMembers(familyOf(snap, this.query(f)), stopped)) {
          stopped.add(procKey(m));
          signalProcess(m, 'SIGSTOP');
          fresh++;
        }
      }
      if (fresh === 0) break;
      snap = this.table.read();
    }
    return snap;
  }

  private schedule(): void {
    if (this.closed || this.families.size === 0) return;
    let busy = false;
    for (const f of this.families.values()) if (f.stopping) busy = true;
    const due = Date.now() + (busy ? this.pollMs : this.sampleMs);
    if (this.timer && this.timerDue <= due) return;
    if (this.timer) clearTimeout(this.timer);
    this.timerDue = due;
    this.timer = setTimeout(() => this.tick(), due - Date.now());
    this.timer.unref();
  }
}
