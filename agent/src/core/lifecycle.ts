/**
 * A worker's life on this node: pending plans start when their grant has room (and the node's
 * capacity allows, and the grant table applied here is the one that holds the plan's slot or a
 * newer one), the spawn spec is the plan's command after substitution, the driver's reports
 * (spawned, spawn failed, exited) move the worker on, a stop is requested once, and every end goes
 * through `finish`, which logs it, pushes the status to the worker's AM (`event`) and keeps it for
 * the next heartbeat (the master's failure prediction learns from attempt ends).
 */
import { add, AM_SU, cmpInt64, fits, format, isWorkerActive, isWorkerTerminal, sub, substitute, ZERO, type Resource, type WorkerState } from '@fuxi/common';
import { copyWorker, grantKey, MAX_ENDS_TO_REPORT, setWorkerState, touch, wkey, type CoreState, type WorkerRecord } from './core-state.js';
import type { Effect, GrantEntry, SpawnSpec } from './types.js';

/** Ends a worker in `state` (terminal): logs it and tells its AM. */
export function finish(st: CoreState, w: WorkerRecord, state: WorkerState, now: number, message: string): Effect[] {
  setWorkerState(st, w, state);
  w.finishedAtMs = now;
  w.message = message;
  touch(st, w);
  const level = state === 'SUCCEEDED' ? 'info' : state === 'KILLED' ? 'info' : 'warn';
  const effects: Effect[] = [
    {
      kind: 'log',
      level,
      msg: `worker ${state.toLowerCase()}`,
      fields: { workerId: w.workerId, appId: w.appId, task: w.task, instance: w.instance, attempt: w.attempt, exitCode: w.exitCode, signal: w.signal, message },
    },
  ];
  effects.push(...event(st, w));
  // An AM that failed (crashed, killed from outside, ended with its host) is restarted by the
  // master once a heartbeat tells it: that heartbeat goes now, not an interval later. An AM
  // stopped on request, or one that ended by itself, is news the master already has.
  if (w.suId === AM_SU && state === 'FAILED') effects.push({ kind: 'tellMaster', why: 'an application master failed' });
  if (w.suId !== AM_SU) {
    st.endsToReport.push(copyWorker(w));
    if (st.endsToReport.length > MAX_ENDS_TO_REPORT) st.endsToReport.shift();
  }
  return effects;
}

/** The worker's status for its AM, at the app's newest AM address. */
export function event(st: CoreState, w: WorkerRecord): Effect[] {
  if (w.suId === AM_SU) return []; // the master learns about AM processes from heartbeats
  const amAddress = st.apps.get(w.appId)?.amAddress || w.amAddress;
  return [{ kind: 'event', appId: w.appId, amAddress, status: copyWorker(w) }];
}

/** Marks the worker as being stopped (once) and kills its process when its pid is known. */
export function requestStop(st: CoreState, w: WorkerRecord, reason: string): Effect[] {
  if (w.stopReason) return [];
  w.stopReason = reason;
  w.message = reason;
  touch(st, w);
  // A STARTING worker is killed as soon as its pid is known (workerSpawned).
  if (w.state === 'RUNNING' && w.pid > 0) return [{ kind: 'kill', appId: w.appId, workerId: w.workerId, pid: w.pid, reason }];
  return [];
}

/** What active workers hold: how many per grant key, and their resources together. */
interface Load {
  counts: Map<string, number>;
  used: Resource;
}

function activeLoad(st: CoreState): Load {
  const counts = new Map<string, number>();
  let used: Resource = ZERO;
  for (const a of st.live.values()) {
    if (!isWorkerActive(a.state)) continue;
    const k = grantKey(a.appId, a.suId);
    counts.set(k, (counts.get(k) ?? 0) + 1);
    used = add(used, a.resource);
  }
  return { counts, used };
}

/**
 * Starts every pending plan (oldest first) whose grant has room, once the grant table applied here
 * is the one that holds the plan's slot or newer (`grantTableReached`).
 */
export function startPending(st: CoreState, now: number): Effect[] {
  const effects: Effect[] = [];
  if (st.held) return effects;
  let load: Load | undefined;
  for (const w of st.live.values()) {
    if (w.state !== 'PENDING') continue;
    const key = grantKey(w.appId, w.suId);
    const grant = st.grants.get(key);
    if (!grant || !grantTableReached(st, w)) continue;
    load ??= activeLoad(st);
    if ((load.counts.get(key) ?? 0) >= grant.slots) continue;
    if (!fits(w.resource, grant.resource)) {
      effects.push(...finish(st, w, 'REJECTED', now, `plan resource (${format(w.resource)}) exceeds the granted slot (${format(grant.resource)})`));
      continue;
    }
    const after = add(load.used, grant.resource);
    if (!fits(after, st.capacity)) {
      effects.push(...noRoomYet(st, w, load.used, grant));
      continue;
    }
    setWorkerState(st, w, 'STARTING');
    w.resource = { ...grant.resource };
    touch(st, w);
    load.counts.set(key, (load.counts.get(key) ?? 0) + 1);
    load.used = after;
    w.startOrder = st.nextOrder++;
    effects.push({ kind: 'spawn', worker: spawnSpec(st, w) });
  }
  return effects;
}

/**
 * Whether the grant table applied here is the plan's (`PlanInput.grantTable`) or newer: the same
 * master's at that seq or above, or any newer master's. On an older table the room a plan sees may
 * be a slot its AM returned since: the table that takes it away, then the one that places it here
 * again, are still on their way, and a worker started now would be killed as over its grant.
 */
export function grantTableReached(st: CoreState, w: WorkerRecord): boolean {
  const t = w.grantTable;
  if (!t) return true;
  const c = cmpInt64(st.grantEpoch, t.epoch);
  return c > 0 || (c === 0 && cmpInt64(st.grantSeq, t.seq) >= 0);
}

/**
 * A plan whose grant has room while the node has none: it stays PENDING and starts once the node
 * has room, and this says why, once per plan. Usually the room is held by workers being stopped
 * (their grants revoked or shrunk: an AM whose job has just finished, a killed job's workers),
 * which the master no longer counts and has given to others already; the plan waits for them to
 * end, as a kubelet admits a pod only once the terminating ones are gone. When even without them
 * the plan would not fit, the master over-committed this node: an error.
 */
function noRoomYet(st: CoreState, w: WorkerRecord, used: Resource, grant: GrantEntry): Effect[] {
  const k = wkey(w.appId, w.workerId);
  if (st.roomWaits.has(k)) return [];
  st.roomWaits.add(k);
  let leaving: Resource = ZERO;
  let stopping = 0;
  for (const a of st.live.values()) {
    if (!isWorkerActive(a.state) || !a.stopReason) continue;
    leaving = add(leaving, a.resource);
    stopping++;
  }
  const fields = { workerId: w.workerId, appId: w.appId, suId: w.suId, used: format(used), slot: format(grant.resource), capacity: format(st.capacity) };
  if (stopping > 0 && fits(add(sub(used, leaving), grant.resource), st.capacity))
    return [
      { kind: 'log', level: 'info', msg: 'worker waits for stopping workers to free the node', fields: { ...fields, stopping, stoppingHold: format(leaving) } },
    ];
  return [{ kind: 'log', level: 'error', msg: 'REFUSING to start worker yet: node capacity would be exceeded (master over-committed this node?)', fields }];
}

/** The plan's command with `${instance}`, `${task}`, `${job}`, `${attempt}` substituted, plus the FUXI_* environment. */
export function spawnSpec(st: CoreState, w: WorkerRecord): SpawnSpec {
  const vars = { instance: w.instance, task: w.task, job: w.appId, attempt: w.attempt };
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(w.command.env)) env[k] = substitute(v, vars);
  Object.assign(env, {
    FUXI_APP_ID: w.appId,
    FUXI_TASK: w.task,
    FUXI_INSTANCE: String(w.instance),
    FUXI_ATTEMPT: String(w.attempt),
    FUXI_WORKER_ID: w.workerId,
    FUXI_NODE_ID: st.nodeId,
    FUXI_AM_ATTEMPT: String(w.amAttempt),
  });
  return {
    workerId: w.workerId,
    appId: w.appId,
    suId: w.suId,
    task: w.task,
    instance: w.instance,
    attempt: w.attempt,
    argv: w.command.argv.map((a) => substitute(a, vars)),
    env,
    cwd: substitute(w.command.cwd, vars),
    resource: { ...w.resource },
  };
}

/** The driver started the worker's process (`bootId`: the host's, identifies the process with pid + start time). */
export function workerSpawned(st: CoreState, appId: string, workerId: string, pid: number, startTime: string, now: number, bootId: string): Effect[] {
  const w = st.workers.get(wkey(appId, workerId));
  if (!w) return [{ kind: 'log', level: 'warn', msg: 'spawned an unknown worker', fields: { workerId, pid } }];
  if (w.state !== 'STARTING') {
    // Already exited (the exit raced the spawn report): just record the pid.
    if (w.pid === 0) {
      w.pid = pid;
      w.startTime = startTime;
      w.bootId = bootId;
      touch(st, w);
    }
    return [];
  }
  setWorkerState(st, w, 'RUNNING');
  w.pid = pid;
  w.startTime = startTime;
  w.bootId = bootId;
  w.startedAtMs = now;
  touch(st, w);
  const effects: Effect[] = [
    {
      kind: 'log',
      level: 'info',
      msg: 'worker started',
      fields: { workerId, appId: w.appId, suId: w.suId, task: w.task, instance: w.instance, attempt: w.attempt, pid },
    },
  ];
  effects.push(...event(st, w));
  if (w.stopReason) effects.push({ kind: 'kill', appId: w.appId, workerId, pid, reason: w.stopReason });
  return effects;
}

/** The driver could not start the worker's process. */
export function spawnFailed(st: CoreState, appId: string, workerId: string, message: string, now: number): Effect[] {
  const w = st.workers.get(wkey(appId, workerId));
  if (!w || w.state !== 'STARTING') return [];
  const effects = finish(st, w, w.stopReason ? 'KILLED' : 'REJECTED', now, `could not start the worker: ${message}`);
  effects.push(...startPending(st, now));
  return effects;
}

/**
 * The worker's process ended: `exitCode` when it exited, `signal` when a signal killed it (both
 * null: unknown, e.g. a re-adopted worker, not the agent's child, that left no exit code; `detail`
 * then says so).
 */
export function workerExited(
  st: CoreState,
  appId: string,
  workerId: string,
  exitCode: number | null,
  signal: string | null,
  now: number,
  detail: string,
): Effect[] {
  const w = st.workers.get(wkey(appId, workerId));
  if (!w) return [{ kind: 'log', level: 'warn', msg: 'exit of an unknown worker', fields: { workerId, exitCode, signal } }];
  if (isWorkerTerminal(w.state) || w.state === 'PENDING') return [];
  w.exitCode = exitCode;
  w.signal = signal;
  let state: WorkerState;
  let message: string;
  if (w.stopReason) {
    state = 'KILLED';
    message = w.stopReason;
  } else if (exitCode === 0) {
    state = 'SUCCEEDED';
    message = '';
  } else {
    state = 'FAILED';
    // `detail` from the shell: why nothing is known, or what ended it (`OOM: used X of Y`).
    message = detail ? detail : signal ? `killed by signal ${signal}` : `exit code ${exitCode ?? 'unknown'}`;
  }
  const effects = finish(st, w, state, now, message);
  effects.push(...startPending(st, now));
  return effects;
}
