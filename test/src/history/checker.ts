/**
 * The history checker: a pure function from a recorded history (`history.ts`) and the state
 * observed after every fault was healed to the anomalies found. No I/O, no clock.
 *
 * What a correct cluster guarantees, and the anomaly when it does not:
 *
 * - `lost`: a submit was acknowledged and the job is not there at the end.
 * - `duplicated`: a job id is listed twice, two submits of one id both answered `created: true`,
 *   or the job holds another spec than an acknowledged submit of its id sent.
 * - `phantom`: a job no client sent (an unknown id), or with a spec that no submit of its id may
 *   have created (only definitely refused submits sent it).
 * - `vanished`: a job shown (by an acknowledged submit, an ALREADY_EXISTS, a get, a watch's first
 *   record, a kill or a list) is missing from a read invoked after that (NOT_FOUND, left out of a
 *   list) or from the end.
 * - `regressed`: a job shown in a terminal state is later shown (or ends) in another state.
 * - `wrongEnd`: the job ended as its calls do not allow: killed without any kill invoked, or not
 *   killed although a kill was acknowledged while it ran.
 * - `orphanWorker`: a worker (or AM) of a finished job still runs, by its agent's account or as a
 *   process on its host.
 * - `daemonExit`: a master or agent exited that no fault killed.
 *
 * Those are safety anomalies. Two more are about liveness, reported beside them:
 *
 * - `failed`: the job failed (the workload's jobs succeed unless killed, so a fault made it fail).
 * - `unfinished`: not terminal after healing and waiting.
 */
import type { JobView, Op } from './history.js';

export const ANOMALY_KINDS = [
  'lost',
  'duplicated',
  'phantom',
  'vanished',
  'regressed',
  'wrongEnd',
  'orphanWorker',
  'daemonExit',
  'failed',
  'unfinished',
] as const;
export type AnomalyKind = (typeof ANOMALY_KINDS)[number];
/** The kinds that break a guarantee (the others, `failed` and `unfinished`, are about liveness). */
export const SAFETY_KINDS: ReadonlySet<AnomalyKind> = new Set([
  'lost',
  'duplicated',
  'phantom',
  'vanished',
  'regressed',
  'wrongEnd',
  'orphanWorker',
  'daemonExit',
]);

export interface Anomaly {
  kind: AnomalyKind;
  /** The job concerned ('' for a daemon exit). */
  jobId: string;
  detail: string;
  /** Indexes of the operations that show it. */
  ops: number[];
}

/** A worker or AM process seen running after healing. */
export interface RunningWorker {
  jobId: string;
  node: string;
  pid: number;
  /** Who reported it: the agent (GetAgentState) or the host's process table. */
  source: 'agent' | 'process';
  what: string;
}

export interface DaemonExit {
  daemon: string;
  pid: number;
  code: number | null;
  signal: string | null;
  atMs: number;
}

/** What was observed once every fault was healed and the jobs had time to finish. */
export interface FinalState {
  /** Every job the leader lists. */
  jobs: JobView[];
  /** Workers still running. */
  workers: RunningWorker[];
  /** Daemon exits no fault caused. */
  daemonExits: DaemonExit[];
}

export interface CheckResult {
  anomalies: Anomaly[];
  counts: Record<AnomalyKind, number>;
  /** Job ids with at least one acknowledged submit. */
  acknowledged: number;
  /** End state of every job listed at the end, by state. */
  endStates: Record<string, number>;
}

const TERMINAL = new Set(['JOB_STATE_SUCCEEDED', 'JOB_STATE_FAILED', 'JOB_STATE_KILLED']);
const KILLED = 'JOB_STATE_KILLED';

/** Evidence that a job existed: the op, when it completed, and what it showed. */
interface Shown {
  op: Op;
  atMs: number;
  state?: string;
  name?: string;
}

/** Evidence that a job did not exist at some point within [invokeMs, completeMs]. */
interface Missing {
  op: Op;
}

export function checkHistory(ops: readonly Op[], final: FinalState): CheckResult {
  const anomalies: Anomaly[] = [];
  const add = (kind: AnomalyKind, jobId: string, detail: string, opIdx: number[] = []) => anomalies.push({ kind, jobId, detail, ops: opIdx });

  const submits = new Map<string, Op[]>();
  const kills = new Map<string, Op[]>();
  const shown = new Map<string, Shown[]>();
  const missing = new Map<string, Missing[]>();
  const push = <T>(m: Map<string, T[]>, k: string, v: T) => {
    const l = m.get(k);
    if (l) l.push(v);
    else m.set(k, [v]);
  };

  for (const op of ops) {
    if (op.type === 'submit') {
      push(submits, op.jobId, op);
      if (op.outcome === 'ok') push(shown, op.jobId, { op, atMs: op.completeMs, ...(op.variant !== undefined ? { name: op.variant } : {}) });
      else if (op.error === 'ALREADY_EXISTS') push(shown, op.jobId, { op, atMs: op.completeMs });
    } else if (op.type === 'kill' || op.type === 'get' || op.type === 'watch') {
      if (op.type === 'kill') push(kills, op.jobId, op);
      if (op.outcome === 'ok' && op.job) push(shown, op.jobId, { op, atMs: op.completeMs, state: op.job.state, name: op.job.name });
      else if (op.error === 'NOT_FOUND') push(missing, op.jobId, { op });
    } else if (op.type === 'list' && op.outcome === 'ok' && op.jobs) {
      const seen = new Map<string, number>();
      for (const j of op.jobs) {
        seen.set(j.jobId, (seen.get(j.jobId) ?? 0) + 1);
        push(shown, j.jobId, { op, atMs: op.completeMs, state: j.state, name: j.name });
      }
      for (const [id, n] of seen) if (n > 1) add('duplicated', id, `listed ${n} times by one list`, [op.index]);
    }
  }
  // A list that leaves a job out is evidence it was missing, for every job shown before it.
  const lists = ops.filter((op) => op.type === 'list' && op.outcome === 'ok' && op.jobs);
  for (const op of lists) {
    const ids = new Set(op.jobs!.map((j) => j.jobId));
    for (const id of shown.keys()) if (!ids.has(id)) push(missing, id, { op });
  }

  const finalById = new Map<string, JobView[]>();
  for (const j of final.jobs) push(finalById, j.jobId, j);

  const ids = new Set<string>([...submits.keys(), ...shown.keys(), ...finalById.keys()]);
  let acknowledged = 0;
  for (const id of [...ids].sort()) {
    const subs = submits.get(id) ?? [];
    const okSubs = subs.filter((s) => s.outcome === 'ok');
    const sh = shown.get(id) ?? [];
    const fin = finalById.get(id) ?? [];
    const end = fin[0];
    if (okSubs.length > 0) acknowledged++;

    // phantom: nobody sent it, or only refused submits sent its spec.
    if (subs.length === 0) {
      add(
        'phantom',
        id,
        `job ${id} exists but no client submitted it`,
        sh.map((s) => s.op.index),
      );
      continue;
    }
    const mayCreate = new Set(subs.filter((s) => s.outcome !== 'fail').map((s) => s.variant));
    const names = new Map<string, Shown | undefined>();
    for (const s of sh) if (s.name !== undefined && !names.has(s.name)) names.set(s.name, s);
    if (end) names.set(end.name, names.get(end.name));
    for (const [name, s] of names) {
      if (!mayCreate.has(name)) {
        add('phantom', id, `job ${id} has spec ${name}, which only refused submits sent`, s ? [s.op.index] : []);
      }
    }

    // duplicated
    if (fin.length > 1) add('duplicated', id, `listed ${fin.length} times at the end`);
    const createdTwice = okSubs.filter((s) => s.created === true);
    if (createdTwice.length > 1)
      add(
        'duplicated',
        id,
        `created by ${createdTwice.length} submits`,
        createdTwice.map((s) => s.index),
      );
    for (const s of okSubs) {
      if (end && s.variant !== undefined && end.name !== s.variant) {
        add('duplicated', id, `submit acknowledged spec ${s.variant} but the job ends with spec ${end.name}`, [s.index]);
      }
    }

    // lost
    if (okSubs.length > 0 && !end)
      add(
        'lost',
        id,
        `submit acknowledged but job ${id} is missing at the end`,
        okSubs.map((s) => s.index),
      );

    // vanished: shown, then missing to a read invoked later, or at the end.
    const firstShown = [...sh].sort((a, b) => a.atMs - b.atMs)[0];
    if (firstShown) {
      const later = (missing.get(id) ?? []).filter((m) => m.op.invokeMs > firstShown.atMs);
      if (later.length > 0) {
        const m = later[0]!;
        add('vanished', id, `shown by op ${firstShown.op.index} (${firstShown.op.type}) then missing to op ${m.op.index} (${m.op.type})`, [
          firstShown.op.index,
          m.op.index,
        ]);
      } else if (!end && okSubs.length === 0) {
        add('vanished', id, `shown by op ${firstShown.op.index} (${firstShown.op.type}) but missing at the end`, [firstShown.op.index]);
      }
    }

    // regressed: a terminal state shown, then another state shown later or at the end.
    const terminalShown = sh.filter((s) => s.state !== undefined && TERMINAL.has(s.state)).sort((a, b) => a.atMs - b.atMs)[0];
    if (terminalShown) {
      const after = sh.find((s) => s.op.invokeMs > terminalShown.atMs && s.state !== undefined && s.state !== terminalShown.state);
      if (after) {
        add('regressed', id, `shown ${terminalShown.state} by op ${terminalShown.op.index}, then ${after.state} by op ${after.op.index}`, [
          terminalShown.op.index,
          after.op.index,
        ]);
      } else if (end && end.state !== terminalShown.state) {
        add('regressed', id, `shown ${terminalShown.state} by op ${terminalShown.op.index}, ends ${end.state}`, [terminalShown.op.index]);
      }
    }

    // The end state its calls require.
    if (!end) continue;
    const ks = kills.get(id) ?? [];
    if (!TERMINAL.has(end.state)) {
      add('unfinished', id, `still ${end.state} at the end`);
    } else if (end.state === KILLED && !ks.some((k) => k.outcome !== 'fail')) {
      add(
        'wrongEnd',
        id,
        'killed, but no kill was invoked that may have taken effect',
        ks.map((k) => k.index),
      );
    } else if (end.state !== KILLED && ks.some((k) => k.outcome === 'ok' && k.job && !TERMINAL.has(k.job.state))) {
      add(
        'wrongEnd',
        id,
        `a kill was acknowledged while it ran, yet it ends ${end.state}`,
        ks.map((k) => k.index),
      );
    } else if (end.state === 'JOB_STATE_FAILED') {
      add('failed', id, `failed (the workload's jobs succeed unless killed)`);
    }
  }

  // Workers of finished (or unknown) jobs that still run.
  const endState = new Map(final.jobs.map((j) => [j.jobId, j.state] as const));
  const seenWorkers = new Set<string>();
  for (const w of final.workers) {
    const st = endState.get(w.jobId);
    if (st !== undefined && !TERMINAL.has(st)) continue;
    const k = `${w.jobId}|${w.node}|${w.pid}`;
    if (seenWorkers.has(k)) continue;
    seenWorkers.add(k);
    add('orphanWorker', w.jobId, `${w.what} (pid ${w.pid} on ${w.node}, seen by ${w.source}) runs, job ${st ?? 'unknown'}`);
  }
  for (const x of final.daemonExits) {
    add('daemonExit', '', `${x.daemon} (pid ${x.pid}) exited (${x.code ?? x.signal}) at ${x.atMs}`);
  }

  const counts = Object.fromEntries(ANOMALY_KINDS.map((k) => [k, 0])) as Record<AnomalyKind, number>;
  for (const a of anomalies) counts[a.kind]++;
  const endStates: Record<string, number> = {};
  for (const j of final.jobs) endStates[j.state] = (endStates[j.state] ?? 0) + 1;
  return { anomalies, counts, acknowledged, endStates };
}
