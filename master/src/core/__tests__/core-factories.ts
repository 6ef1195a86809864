/**
 * Builders and a small harness for MasterCore tests: a fake clock (a plain number), `nullLogger`,
 * per-app request / return sequence numbers, and `checkInvariants()` after every input, so each
 * test only says what it is about.
 */
import { add, normalizeJobSpec, nullLogger, res, scale, ZERO } from '@fuxi/common';
import type { JobSpec, Resource } from '@fuxi/common';
import { DEFAULT_CONFIG, MasterCore, type MasterCoreConfig } from '../master-core.js';
import {
  TERMINAL_STATES,
  type AmWorkerReport,
  type AssignmentEntry,
  type Effect,
  type GrantEntry,
  type HeartbeatInput,
  type JobRecord,
  type NodeInfo,
  type PlacementConstraints,
  type RequestDelta,
  type SlotReturn,
  type TaskProgress,
  type UnitConfig,
} from '../types.js';

export const EPOCH = '7';

/** An 8-core / 16 GiB node `n1` in rack `r1` at `n1:7001`. */
export function mockNodeInfo(over: Partial<NodeInfo> = {}): NodeInfo {
  const nodeId = over.nodeId ?? 'n1';
  return { nodeId, address: `${nodeId}:7001`, rack: 'r1', capacity: res(8000, 16384), labels: {}, bootId: `boot-${nodeId}`, ...over };
}

/**
 * A valid domain spec `job-1`: AM 0.5 core / 512 MB, one task `map` (200 x 1 core / 1 GiB: more
 * than any test asks for, so the request limits only matter where a test says so), built through
 * `normalizeJobSpec` from the user format. `raw` fields override the top level.
 */
export function mockSpec(raw: Record<string, unknown> = {}): JobSpec {
  return normalizeJobSpec({
    id: 'job-1',
    name: 'word count',
    am: { cpu: '500m', memory: 512 },
    tasks: [{ name: 'map', instances: 200, resources: { cpu: 1, memory: 1024 }, command: ['true'] }],
    ...raw,
  });
}

/** The AM resource of `mockSpec()`. */
export const AM_RES = res(500, 512);
/** One slot of `unit()`. */
export const SLOT = res(1000, 1024);

export function unit(suId = 'map', resource: Resource = SLOT, priority = 0): UnitConfig {
  return { suId, resource, priority };
}

export function delta(suId: string, n: number, location = ''): RequestDelta {
  return { suId, location, delta: n };
}

export function progress(name: string, over: Partial<TaskProgress> = {}): TaskProgress {
  return { name, total: 2, pending: 0, running: 0, succeeded: 0, failed: 0, retries: 0, ...over };
}

// ---- reading effects ------------------------------------------------------------------------------

export type EffectOf<K extends Effect['kind']> = Extract<Effect, { kind: K }>;

export function ofKind<K extends Effect['kind']>(effects: readonly Effect[], kind: K): Array<EffectOf<K>> {
  return effects.filter((e): e is EffectOf<K> => e.kind === kind);
}

export function indexOfKind(effects: readonly Effect[], kind: Effect['kind'], pred: (e: Effect) => boolean = () => true): number {
  return effects.findIndex((e) => e.kind === kind && pred(e));
}

/** Slots per `suId@nodeId` in an assignment table. */
export function asgnMap(table: readonly AssignmentEntry[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const a of table) out[`${a.suId}@${a.nodeId}`] = (out[`${a.suId}@${a.nodeId}`] ?? 0) + a.slots;
  return out;
}

/** Slots per `appId/suId` in a grant table. */
export function grantMap(table: readonly GrantEntry[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const g of table) out[`${g.appId}/${g.suId}`] = (out[`${g.appId}/${g.suId}`] ?? 0) + g.slots;
  return out;
}

export function grantTotal(table: readonly GrantEntry[]): Resource {
  return table.reduce((s, g) => add(s, scale(g.resource, g.slots)), ZERO);
}

export function totalSlots(table: ReadonlyArray<{ slots: number }>): number {
  return table.reduce((s, a) => s + a.slots, 0);
}

// ---- harness --------------------------------------------------------------------------------------

export interface HarnessOptions {
  config?: Partial<MasterCoreConfig>;
  nodes?: Array<Partial<NodeInfo>>;
  now?: number;
  /** The master's epoch (default `EPOCH`); a new leader taking over has a higher one. */
  epoch?: string;
}

/** What a well-behaved agent / AM would hold after applying every message the core sent it. */
export interface AgentView {
  seq: number;
  grants: GrantEntry[];
}
export interface AmView {
  seq: number;
  /** Slots per `suId@nodeId`. */
  slots: Map<string, number>;
}

/**
 * Drives one MasterCore. The clock is `h.now` (set it or call `advance`). Every method returns the
 * core's answer, checks the core's invariants and applies the effects to `agents` / `ams`, the
 * tables that agents and AMs would hold (what the shell would have delivered).
 */
export class Harness {
  readonly core: MasterCore;
  now: number;
  readonly agents = new Map<string, AgentView>();
  readonly ams = new Map<string, AmView>();
  private readonly reqSeq = new Map<string, number>();
  /**
   * Highest UpdateRequests seq per app that the core accepted (did not throw on), with the AM
   * attempt it was sent by: seqs are per attempt (a new attempt starts over).
   */
  readonly acceptedReqSeq = new Map<string, { attempt: number; seq: number }>();
  private readonly retSeq = new Map<string, number>();

  constructor(opts: HarnessOptions = {}) {
    this.core = new MasterCore(opts.epoch ?? EPOCH, { ...DEFAULT_CONFIG, ...opts.config }, nullLogger);
    this.now = opts.now ?? 1_000;
    for (const n of opts.nodes ?? []) this.addNode(n);
  }

  advance(ms: number): number {
    this.now += ms;
    return this.now;
  }

  /** Checks invariants and applies grant / assignment pushes to the agent and AM views. */
  observe(effects: readonly Effect[]): void {
    this.core.checkInvariants();
    for (const e of effects) {
      if (e.kind === 'grants') this.agents.set(e.nodeId, { seq: e.seq, grants: e.grants });
      if (e.kind === 'assignments' && e.full) this.setAm(e.appId, e.seq, e.assignments);
      if (e.kind === 'assignments' && !e.full) this.applyAmDelta(e.appId, e.seq, e.assignments);
    }
  }

  /** A delta push, as the AM takes it: only right after the seq it holds; entries are absolute counts. */
  private applyAmDelta(appId: string, seq: number, entries: readonly AssignmentEntry[]): void {
    const view = this.ams.get(appId);
    if (!view || seq !== view.seq + 1) return;
    view.seq = seq;
    for (const a of entries) {
      const k = `${a.suId}@${a.nodeId}`;
      if (a.slots > 0) view.slots.set(k, a.slots);
      else view.slots.delete(k);
    }
  }

  private setAm(appId: string, seq: number, table: readonly AssignmentEntry[]): void {
    this.ams.set(appId, { seq, slots: new Map(Object.entries(asgnMap(table))) });
  }

  addNode(over: Partial<NodeInfo> = {}): Effect[] {
    const { effects } = this.core.registerAgent(mockNodeInfo(over), EPOCH, this.now);
    this.observe(effects);
    return effects;
  }

  submit(spec: JobSpec = mockSpec()): { created: boolean; effects: Effect[] } {
    const { result, effects } = this.core.submitJob(spec, this.now);
    this.observe(effects);
    return { created: result.created, effects };
  }

  /** Registers the AM of `appId` (with the attempt the core expects unless given). */
  registerApp(appId = 'job-1', attempt?: number, address = `am-${appId}:9000`) {
    const r = this.core.registerApp(appId, attempt ?? this.core.getJob(appId).amAttempt, address, this.now);
    this.observe(r.effects);
    this.setAm(appId, r.seq, r.assignments);
    return r;
  }

  /** Submits `spec` and registers its AM. */
  start(spec: JobSpec = mockSpec()): Effect[] {
    const { effects } = this.submit(spec);
    const r = this.registerApp(spec.jobId);
    return [...effects, ...r.effects];
  }

  nextReqSeq(appId: string): number {
    const s = (this.reqSeq.get(appId) ?? 0) + 1;
    this.reqSeq.set(appId, s);
    return s;
  }

  /** UpdateRequests with the next seq; `assignmentSeq` defaults to the seq the AM view holds. */
  request(
    appId: string,
    deltas: RequestDelta[],
    opts: {
      units?: UnitConfig[];
      seq?: number;
      assignmentSeq?: number;
      progress?: TaskProgress[];
      attempt?: number;
      connectivityVersion?: number;
      constraints?: PlacementConstraints;
    } = {},
  ) {
    const seq = opts.seq ?? this.nextReqSeq(appId);
    const attempt = opts.attempt ?? this.core.getJob(appId).amAttempt;
    const assignmentSeq = opts.assignmentSeq ?? this.ams.get(appId)?.seq ?? 0;
    const extra = {
      ...(opts.connectivityVersion !== undefined ? { connectivityVersion: opts.connectivityVersion } : {}),
      ...(opts.constraints !== undefined ? { constraints: opts.constraints } : {}),
    };
    const r = this.core.updateRequests(
      { appId, attempt, seq, units: opts.units ?? [], deltas, assignmentSeq, progress: opts.progress ?? [], ...extra },
      this.now,
    );
    // Answered "report your state first" (a new leader that has not heard the AM): not taken.
    const prev = this.acceptedReqSeq.get(appId);
    if (!r.reportState) this.acceptedReqSeq.set(appId, { attempt, seq: prev?.attempt === attempt ? Math.max(seq, prev.seq) : seq });
    this.observe(r.effects);
    if (r.full) this.setAm(appId, r.full.seq, r.full.assignments);
    return r;
  }

  /** Declares `suId` (default `map`, 1 core / 1 GiB) and asks for `n` slots of it at `location`. */
  ask(appId: string, n: number, location = '', suId = 'map', resource: Resource = SLOT) {
    return this.request(appId, [delta(suId, n, location)], { units: [unit(suId, resource)] });
  }

  /** ReturnSlots with the next return seq (or `seq`); the AM view forgets the returned slots. */
  giveBack(appId: string, returns: SlotReturn[], seq?: number): Effect[] {
    const s = seq ?? (this.retSeq.get(appId) ?? 0) + 1;
    const fresh = s > (this.retSeq.get(appId) ?? 0);
    if (fresh) this.retSeq.set(appId, s);
    const effects = this.core.returnSlots({ appId, attempt: this.core.getJob(appId).amAttempt, seq: s, returns }, this.now);
    const view = this.ams.get(appId);
    if (fresh && view) {
      for (const r of returns) {
        const k = `${r.suId}@${r.nodeId}`;
        const left = (view.slots.get(k) ?? 0) - Math.min(view.slots.get(k) ?? 0, Math.max(0, r.slots));
        if (left > 0) view.slots.set(k, left);
        else view.slots.delete(k);
      }
    }
    this.observe(effects);
    return effects;
  }

  finish(appId: string, succeeded: boolean, message = succeeded ? 'all tasks succeeded' : 'task map failed', prog: TaskProgress[] = []): Effect[] {
    const effects = this.core.finishApp({ appId, attempt: this.core.getJob(appId).amAttempt, succeeded, message, progress: prog }, this.now);
    this.observe(effects);
    return effects;
  }

  kill(jobId: string, reason = ''): Effect[] {
    const effects = this.core.killJob(jobId, reason, this.now);
    this.observe(effects);
    return effects;
  }

  /** A heartbeat claiming the grant seq the agent view holds, unless `over.grantSeq` says otherwise. */
  heartbeat(nodeId: string, over: Partial<HeartbeatInput> = {}) {
    const hb: HeartbeatInput = {
      nodeId,
      epoch: this.core.epoch,
      grantSeq: this.agents.get(nodeId)?.seq ?? 0,
      used: ZERO,
      running: 0,
      pending: 0,
      amWorkers: [],
      ...over,
    };
    const r = this.core.heartbeat(hb, this.now);
    this.observe(r.effects);
    if (r.full) this.agents.set(nodeId, { seq: r.full.seq, grants: r.full.grants });
    return r;
  }

  /** Heartbeats from every node in `ids` (default: every healthy node). */
  heartbeatAll(ids?: string[]): void {
    for (const id of ids ??
      this.core
        .listNodes()
        .filter((n) => n.healthy)
        .map((n) => n.info.nodeId))
      this.heartbeat(id);
  }

  tick(): Effect[] {
    const effects = this.core.tick(this.now);
    this.observe(effects);
    return effects;
  }

  /**
   * Lets `ms` pass in steps of `step` (default one heartbeat interval): at each step every healthy
   * node not in `silentNodes` heartbeats, every registered AM not in `silentAms` calls in (an empty
   * UpdateRequests), and the core ticks. Returns every effect of the period, in order.
   */
  run(ms: number, opts: { silentNodes?: string[]; silentAms?: string[]; step?: number } = {}): Effect[] {
    const step = opts.step ?? 1000;
    const out: Effect[] = [];
    for (let left = ms; left > 0; left -= step) {
      this.advance(Math.min(step, left));
      for (const n of this.core.listNodes()) {
        if (n.healthy && !opts.silentNodes?.includes(n.info.nodeId)) out.push(...this.heartbeat(n.info.nodeId).effects);
      }
      for (const j of this.core.listJobs()) {
        if (TERMINAL_STATES.has(j.state) || j.amAddress === '' || opts.silentAms?.includes(j.jobId)) continue;
        out.push(...this.request(j.jobId, []).effects);
      }
      out.push(...this.tick());
    }
    return out;
  }

  // ---- failover: this harness is a new leader taking over from `old` ----

  /** Loads `old`'s hard state (jobs, roster); agents and AMs keep what they held under `old`. */
  takeOver(old: Harness): Effect[] {
    const jobs = old.core.listJobs().map((j) => JSON.parse(JSON.stringify(j)) as JobRecord);
    const roster = old.core.listNodes().map((n) => ({ nodeId: n.info.nodeId, address: n.info.address }));
    for (const [id, v] of old.agents) this.agents.set(id, { seq: v.seq, grants: v.grants });
    for (const [id, v] of old.ams) this.ams.set(id, { seq: v.seq, slots: new Map(v.slots) });
    const effects = this.core.loadHardState(jobs, roster, this.now);
    this.observe(effects);
    return effects;
  }

  /** AMs go on numbering their requests and returns where they were under `old`. */
  inheritSeqs(old: Harness): void {
    for (const [id, n] of old.reqSeq) this.reqSeq.set(id, n);
    for (const [id, n] of old.retSeq) this.retSeq.set(id, n);
  }

  /** A roster agent registers with this master and reports the grants it holds (its view by default). */
  agentReports(over: Partial<NodeInfo> & { nodeId: string }, grants: GrantEntry[] = this.agents.get(over.nodeId)?.grants ?? []): Effect[] {
    const reg = this.core.registerAgent(mockNodeInfo(over), EPOCH, this.now);
    this.observe(reg.effects);
    const effects = this.core.reportAgentState({ nodeId: over.nodeId, epoch: this.core.epoch, grants }, this.now);
    this.observe(effects);
    return [...reg.effects, ...effects];
  }

  /** The AM of `appId` reports its units, outstanding requests and the slots it holds (its view by default). */
  appReports(
    appId: string,
    opts: {
      units?: UnitConfig[];
      requests?: Array<{ suId: string; location: string; count: number }>;
      claims?: Record<string, number>;
      constraints?: PlacementConstraints;
    } = {},
  ): Effect[] {
    const claims = opts.claims ?? this.amSlots(appId);
    const effects = this.core.reportAppState(
      {
        appId,
        attempt: this.core.getJob(appId).amAttempt,
        address: `am-${appId}:9000`,
        units: opts.units ?? [unit()],
        requests: opts.requests ?? [],
        assignments: Object.entries(claims).map(([k, slots]) => {
          const [suId = '', nodeId = ''] = k.split('@');
          return { suId, nodeId, slots };
        }),
        ...(opts.constraints !== undefined ? { constraints: opts.constraints } : {}),
      },
      this.now,
    );
    this.observe(effects);
    return effects;
  }

  allocated(nodeId: string): Resource {
    const n = this.core.listNodes().find((x) => x.info.nodeId === nodeId);
    if (!n) throw new Error(`no node ${nodeId}`);
    return n.allocated;
  }

  totalAllocated(): Resource {
    return this.core.listNodes().reduce((s, n) => add(s, n.allocated), ZERO);
  }

  /** Slots per `suId@nodeId` the AM of `appId` believes it holds. */
  amSlots(appId: string): Record<string, number> {
    return Object.fromEntries(this.ams.get(appId)?.slots ?? []);
  }
}

export function amReport(appId: string, over: Partial<AmWorkerReport> = {}): AmWorkerReport {
  return { appId, amAttempt: 1, state: 'running', exitCode: 0, signal: '', message: '', ...over };
}
