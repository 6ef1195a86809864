/**
 * The DAG AM core's one state object and its records: the job's tasks, each with its instances
 * (attempts, shadows, failed nodes, output) and its slots per node (holds) and outstanding
 * requests; the applied assignment table's (epoch, seq); nodes timing out or not listed yet; the
 * connectivity graph and the hosts given up in a partition; the job's result; and the outbox of
 * one step's effects. Every module of the core is a set of free
 * functions over `AmState`; `DagAppMaster` (dag-am.ts) is the facade the shell calls.
 *
 * Also the small shared helpers: worker ids, map keys and orders, lookups, and the outbox's flush.
 */
import { DEFAULT_ON_AGENT_TIMEOUT, DEFAULT_RERUN_AFTER_MS, nullLogger, taskPriority, type AgentTimeoutPolicy, type Logger } from '@fuxi/common';
import { encodeEntry, type SnapshotEntry } from './snapshot.js';
import type { AmEffect, JobSpec, PathRecord, RequestDelta, ScheduleUnitConfig, SlotReturn, TaskSpec, WorkerEvent, WorkerPlan } from './types.js';

export interface DagAmOptions {
  log?: Logger;
  /**
   * A returned slot whose assigned count has not dropped after this long is taken as gone anyway
   * (the master coalesced the return with a new placement on the same node). Default 15 s.
   */
  returnSettleMs?: number;
  /** The node (host) this AM runs on: never given up in a network partition (partitions.ts). */
  nodeId?: string;
}

export const DEFAULT_RETURN_SETTLE_MS = 15_000;

/** Worker ids are `${task}.${instance}.${attempt}` (instance from 0, attempt from 1). */
export function workerIdOf(task: string, instance: number, attempt: number): string {
  return `${task}.${instance}.${attempt}`;
}

/** Parses `${task}.${instance}.${attempt}` (the task name may itself contain dots). */
export function parseWorkerId(workerId: string): { task: string; instance: number; attempt: number } | undefined {
  const m = /^(.+)\.(\d+)\.(\d+)$/.exec(workerId);
  if (!m) return undefined;
  return { task: m[1]!, instance: Number(m[2]), attempt: Number(m[3]) };
}

/** The (task, instance, attempt) of an event: its fields, else parsed from the worker id. */
export function idOf(ev: WorkerEvent): { task: string; instance: number; attempt: number } | undefined {
  return ev.task ? { task: ev.task, instance: ev.instance, attempt: ev.attempt } : parseWorkerId(ev.workerId);
}

export type InstanceState = 'waiting' | 'pending' | 'running' | 'succeeded' | 'failed';

export type TaskState = 'waiting' | 'active' | 'succeeded' | 'failed';

/** An attempt that is still alive but no longer the instance's current one (it holds a slot). */
export interface Shadow {
  readonly attempt: number;
  readonly nodeId: string;
  started: boolean;
  /** Planned by an earlier AM attempt: its agent may not send us its events (polled). */
  readonly adopted: boolean;
  /** A slow attempt a speculative backup runs beside (speculation.ts): counted in `Task.speculating`. */
  readonly speculative?: boolean;
}

/** One instance of a task: its current (or last) attempt, its shadows and what it learnt from failures. */
export interface Instance {
  readonly index: number;
  /** Changed only through `setInstanceState`, which keeps the task's counts. */
  readonly state: InstanceState;
  /** The running attempt, or the last one; 0 = never started. */
  attempt: number;
  /** Highest attempt number planned or seen (by any AM attempt): the next attempt is one above. */
  highest: number;
  /**
   * Attempts that do not count against maxAttempts: started to replace one on a timing-out node or
   * on a host given up in a partition, or one whose slot was lost (the first LOST_SLOTS_FREE such
   * losses).
   */
  reruns: number;
  /** The partition (`NetState.partition`) in which it was last re-run for one; 0: never. At most once per partition. */
  partitionRerun: number;
  /** The task's `upstreamMoves` when the current attempt was planned (its FUXI_UPSTREAM was current then). */
  upstreamAt: number;
  /** Attempts that lost their slot (node lost, slot revoked). */
  lostSlots: number;
  /** Node of the running attempt ('' when not running). */
  nodeId: string;
  /** The agent reported the running attempt RUNNING. */
  started: boolean;
  /** The running attempt was planned by an earlier AM attempt (adopted after a restart). */
  adopted: boolean;
  /** Older attempts still alive (replaced on a timing-out node, or adopted duplicates): first success wins. */
  readonly shadows: Shadow[];
  readonly failedNodes: Set<string>;
  /** Nodes its next attempt should not use: where a backed-up or moved attempt ran (speculation.ts). */
  readonly avoidNodes: Set<string>;
  /**
   * Nodes failure prediction moved or killed an attempt of it off (verdicts.ts): never used again,
   * not even when it declined every other slot (the master grants the job none there either).
   */
  readonly predictedBad: Set<string>;
  /** Since its last failure this instance turned down a slot on a node it failed on. */
  declined: boolean;
  /** The attempt lost with its node; a late SUCCEEDED of it still counts. 0 = none. */
  lostAttempt: number;
  lastError: string;
  /** Where the succeeded attempt ran: its agent serves the instance's output to later tasks. Changed only through `setOutput`. */
  readonly output: OutputLocation | undefined;
}

/** The worker whose output a later task reads, and the agent (data service) that holds it. */
export interface OutputLocation {
  readonly workerId: string;
  readonly nodeId: string;
  readonly nodeAddress: string;
}

/** A task of the job: its SU, instances, outstanding requests and holds. */
export interface Task {
  readonly spec: TaskSpec;
  readonly index: number;
  readonly suId: string;
  readonly priority: number;
  readonly maxAttempts: number;
  state: TaskState;
  readonly instances: Instance[];
  /** How many instances are in each state (kept by `setInstanceState`: no step scans every instance). */
  readonly counts: Record<InstanceState, number>;
  /** No instance below this index is pending (placement looks for pending ones from here). */
  pendingFrom: number;
  retries: number;
  /** Instances run again because a network partition cut off their worker or output (partitions.ts). */
  reexecutions: number;
  /** Speculative attempts started for the task (backups, work moved off a slow host). */
  backups: number;
  /** Live speculative shadows (slow attempts a backup runs beside): the extra slots it may hold. */
  speculating: number;
  /** Run times of its succeeded attempts as the AM saw them (ms, the last DURATIONS_KEPT). */
  readonly durations: number[];
  /** Outputs of succeeded instances per node (kept by `setOutput`). */
  readonly outputHosts: Map<string, number>;
  /** Bumped when an output of a task this one depends on is run again: attempts planned before read a stale FUXI_UPSTREAM. */
  upstreamMoves: number;
  unitSent: boolean;
  /** The first request (spread over locality hints) was made. */
  requested: boolean;
  /** Location -> outstanding slot count. */
  readonly outstanding: Map<string, number>;
  /** Node id -> slots of this SU on it. */
  readonly holds: Map<string, Hold>;
}

/** The slots of a task's SU on one node. */
export interface Hold {
  readonly nodeId: string;
  /** Absolute count from the master. */
  held: number;
  /** Slots bound to running instances. */
  used: number;
  /** Slots returned whose drop the master has not shown yet (oldest first). */
  returning: Array<{ n: number; at: number; id: number }>;
  /**
   * The node's first grant table (master epoch, seq) that holds `held`, from the assignment: plans
   * on the hold carry it. The agent may still be on an older table, e.g. one from before a slot was
   * returned and placed here again, where a worker started now would be over the grant once the
   * table of the return arrives. Absent: unknown.
   */
  grantTable?: { epoch: string; seq: number };
}

/** A task of the job as it starts: waiting, its instances never run. */
export function newTask(job: JobSpec, ts: TaskSpec, index: number): Task {
  return {
    spec: ts,
    index,
    suId: ts.name,
    priority: taskPriority(job, ts),
    maxAttempts: Math.max(1, Math.floor(ts.maxAttempts)),
    state: 'waiting',
    instances: Array.from({ length: ts.instances }, (_, i) => newInstance(i)),
    counts: { waiting: ts.instances, pending: 0, running: 0, succeeded: 0, failed: 0 },
    pendingFrom: 0,
    retries: 0,
    reexecutions: 0,
    backups: 0,
    speculating: 0,
    durations: [],
    outputHosts: new Map(),
    upstreamMoves: 0,
    unitSent: false,
    requested: false,
    outstanding: new Map(),
    holds: new Map(),
  };
}

/** Moves an instance to `state`, keeping its task's counts and pending cursor. */
export function setInstanceState(task: Task, inst: Instance, state: InstanceState): void {
  if (inst.state === state) return;
  task.counts[inst.state]--;
  task.counts[state]++;
  (inst as { state: InstanceState }).state = state;
  if (state === 'pending' && inst.index < task.pendingFrom) task.pendingFrom = inst.index;
}

/** Sets (or clears) where an instance's output is, keeping its task's outputs per node. */
export function setOutput(task: Task, inst: Instance, output: OutputLocation | undefined): void {
  const old = inst.output?.nodeId;
  if (old) {
    const n = (task.outputHosts.get(old) ?? 1) - 1;
    if (n > 0) task.outputHosts.set(old, n);
    else task.outputHosts.delete(old);
  }
  (inst as { output: OutputLocation | undefined }).output = output;
  if (output?.nodeId) task.outputHosts.set(output.nodeId, (task.outputHosts.get(output.nodeId) ?? 0) + 1);
}

/** The task's pending instances in index order, from its cursor, while `more()` says so. */
export function* pendingInstances(task: Task, more: () => boolean = () => true): Generator<Instance> {
  const all = task.instances;
  while (task.pendingFrom < all.length && all[task.pendingFrom]!.state !== 'pending') task.pendingFrom++;
  for (let k = task.pendingFrom; k < all.length && more(); k++) {
    const inst = all[k]!;
    if (inst.state === 'pending') yield inst;
  }
}

/** An instance never run. */
function newInstance(index: number): Instance {
  return {
    index,
    state: 'waiting',
    attempt: 0,
    highest: 0,
    reruns: 0,
    partitionRerun: 0,
    upstreamAt: 0,
    lostSlots: 0,
    nodeId: '',
    started: false,
    adopted: false,
    shadows: [],
    failedNodes: new Set<string>(),
    avoidNodes: new Set<string>(),
    predictedBad: new Set<string>(),
    declined: false,
    lostAttempt: 0,
    lastError: '',
    output: undefined,
  };
}

/**
 * The connectivity graph as the master last sent it, and the hosts the AM gave up (partitions.ts).
 * A partition starts with a give-up while no host is given up and ends when none is any more.
 */
export interface NetState {
  /** Broken links between hosts (node ids), each as [a, b] with a < b, sorted. */
  links: Array<readonly [string, string]>;
  /** Nodes the master cannot hear while their peers still reach them: never given up. */
  partitioned: Set<string>;
  /** Hosts given up -> since when: nothing is planned there; usable again once no broken link touches them. */
  readonly avoid: Map<string, number>;
  /** Number of the current (or last) partition; 0: none yet. */
  partition: number;
  /** Broken links between job hosts that no give-up can mend (the AM's host, hosts partitioned from the master), logged once. */
  readonly unmendable: Set<string>;
}

/** What an attempt reported of its progress (speculation.ts). */
export interface AttemptProgress {
  /** When the AM first heard it running (its clock). */
  readonly startedAt: number;
  /** Fraction done it reported last (0: none). */
  fraction: number;
}

/** A data path as the AM last heard of it (paths.ts): the record and when it arrived. */
export interface PathObservation {
  record: PathRecord;
  seenAt: number;
  /** The reader's SDK reported it (its word beats the serving agent's). */
  byReader: boolean;
}

/** Speculative execution (speculation.ts, paths.ts): soft state, rebuilt from reports after a restart. */
export interface SpeculationState {
  mode: 'off' | 'base' | 'path';
  /** Live attempts by worker id: when they started and how far they are. */
  readonly attempts: Map<string, AttemptProgress>;
  /** Data paths by `${readerWorker}|${srcWorker}` (insertion order: oldest first, bounded). */
  readonly paths: Map<string, PathObservation>;
  /** Hosts found to be the slow end of data paths -> since when: avoided by later placements. */
  readonly slowHosts: Map<string, number>;
  /** Culprits not confirmed yet -> since when they have been one (judgement after judgement). */
  readonly suspects: Map<string, number>;
}

/** Effects accumulated during one step, flushed in a fixed order. */
export class Outbox {
  units: ScheduleUnitConfig[] = [];
  deltas = new Map<string, RequestDelta>();
  returns = new Map<string, SlotReturn>();
  plans = new Map<string, WorkerPlan[]>();
  stops = new Map<string, string[]>();
  topology = '';
  entries: string[] = [];
  finish: { succeeded: boolean; message: string } | undefined;
}

/** The core's state. Modules read and change it; only the facade flushes the outbox. */
export class AmState {
  readonly log: Logger;
  readonly returnSettleMs: number;
  spec: JobSpec | undefined;
  readonly tasks = new Map<string, Task>();
  readonly nodeAddresses = new Map<string, string>();
  /** Master epoch of the applied assignment table; `appliedSeq` is in that master's numbering. */
  appliedEpoch = '0';
  appliedSeq = 0;
  /** Number of `return` effects emitted so far; a return's id is its effect's number (from 1). */
  returnEffects = 0;
  policy: AgentTimeoutPolicy = DEFAULT_ON_AGENT_TIMEOUT;
  rerunAfterMs = DEFAULT_RERUN_AFTER_MS;
  /** Nodes the master reports timing out -> since when (our clock). */
  readonly timingOut = new Map<string, number>();
  /** Nodes holding our slots whose workers we do not know yet (their agent did not answer ListWorkers). */
  readonly unlisted = new Set<string>();
  /** Stops sent to a node that could not hear them (timing out, unlisted): sent again when it is back. */
  readonly stopsWhenBack = new Map<string, Set<string>>();
  /** The node this AM runs on ('' unknown). */
  readonly amNodeId: string;
  readonly net: NetState = { links: [], partitioned: new Set(), avoid: new Map(), partition: 0, unmendable: new Set() };
  readonly speculation: SpeculationState = { mode: 'path', attempts: new Map(), paths: new Map(), slowHosts: new Map(), suspects: new Map() };
  /** Nodes an operator is draining (from the master's graph): nothing new is planned there, free slots there go back. */
  readonly draining = new Set<string>();
  done: { succeeded: boolean; message: string } | undefined;
  out = new Outbox();

  constructor(opts: DagAmOptions = {}) {
    this.log = opts.log ?? nullLogger;
    this.returnSettleMs = opts.returnSettleMs ?? DEFAULT_RETURN_SETTLE_MS;
    this.amNodeId = opts.nodeId ?? '';
  }
}

/** A map key of two strings (SU and node, or SU and location). */
export function key(a: string, b: string): string {
  return `${a}\u0000${b}`;
}

/** A map's entries sorted by key: iteration orders that do not depend on insertion. */
export function byKey<T>(m: ReadonlyMap<string, T>): Array<[string, T]> {
  return [...m.entries()].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
}

/** `1 task`, `2 tasks`. */
export function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

/** The task and instance a (task, instance) pair names, if it is one of ours. */
export function lookup(st: AmState, task: string, instance: number): { task: Task; inst: Instance } | undefined {
  const t = st.tasks.get(task);
  const inst = t?.instances[instance];
  return t && inst ? { task: t, inst } : undefined;
}

/** Nothing is planned or returned on a node timing out or not listed since a restart, and its stops wait. */
export function blocked(st: AmState, nodeId: string): boolean {
  return st.timingOut.has(nodeId) || st.unlisted.has(nodeId);
}

/**
 * A host given up in a network partition, one being drained, or one found to be the slow end of
 * data paths: nothing is planned there and its free slots go back.
 */
export function avoided(st: AmState, nodeId: string): boolean {
  return st.net.avoid.has(nodeId) || st.draining.has(nodeId) || st.speculation.slowHosts.has(nodeId);
}

/** Where worker `workerId` on `nodeId` ran, as far as the assignments tell its address. */
export function locate(st: AmState, nodeId: string, workerId: string): OutputLocation {
  return { workerId, nodeId, nodeAddress: st.nodeAddresses.get(nodeId) ?? '' };
}

/** Appends an entry to the snapshot log (the step's `snapshot` effect). */
export function logEntry(st: AmState, e: SnapshotEntry): void {
  st.out.entries.push(encodeEntry(e));
}

/** The step's effects in the order written on `AmEffect`; the outbox is empty afterwards. */
export function flush(st: AmState): AmEffect[] {
  const o = st.out;
  st.out = new Outbox();
  const effects: AmEffect[] = [];
  if (o.topology || o.entries.length > 0) effects.push({ kind: 'snapshot', topology: o.topology, entries: o.entries });
  for (const [nodeId, workerIds] of o.stops) effects.push({ kind: 'stop', nodeId, nodeAddress: st.nodeAddresses.get(nodeId) ?? '', workerIds });
  const returns = [...o.returns.values()].filter((r) => r.slots > 0);
  if (returns.length > 0) {
    st.returnEffects++;
    effects.push({ kind: 'return', returns });
  }
  const deltas = [...o.deltas.values()].filter((d) => d.delta !== 0);
  if (deltas.length > 0 || o.units.length > 0) effects.push({ kind: 'request', units: o.units, deltas });
  for (const [nodeId, plans] of o.plans) effects.push({ kind: 'plan', nodeId, nodeAddress: st.nodeAddresses.get(nodeId) ?? '', plans });
  if (o.finish) effects.push({ kind: 'finish', ...o.finish });
  return effects;
}

/** Fraction done over a task's instances: succeeded ones 1, running ones what they reported. */
export function taskFraction(st: AmState, t: Task): number {
  if (t.instances.length === 0) return 1;
  let sum = t.counts.succeeded;
  if (t.counts.running > 0) {
    for (const inst of t.instances) {
      if (inst.state !== 'running') continue;
      sum += st.speculation.attempts.get(workerIdOf(t.spec.name, inst.index, inst.attempt))?.fraction ?? 0;
    }
  }
  return sum / t.instances.length;
}
