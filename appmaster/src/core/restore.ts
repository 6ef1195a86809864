/**
 * Failover (AM restart, attempt > 1): the instance table is rebuilt from the snapshot (hard state:
 * logged successes are done, a logged failure for good fails the job again) and the workers the
 * agents list (soft state): successes meanwhile are logged, running workers of any earlier attempt
 * adopted (they keep their slots, nothing is started again; older duplicates become shadows),
 * failures meanwhile retried as usual, and instances a later task's workers prove done are
 * inferred. Nodes that did not answer stay unlisted (nothing planned or returned there) until
 * `workersListed` brings their workers; nodes running adopted workers are polled, and an adopted
 * worker its agent no longer lists is lost. New attempts always get a number above every one seen.
 */
import { idOf, locate, setInstanceState, setOutput, logEntry, lookup, workerIdOf, type AmState, type Instance, type Task } from './am-state.js';
import { activateReady, failAttempt, finishJob, succeed } from './dag.js';
import { decodeEntry, encodeTopology, sameTopology, type SnapshotEntry } from './snapshot.js';
import type { ListedWorker, Recovery } from './types.js';
import { failureReason, onWorkerEvent } from './worker-events.js';
import { addShadow, adopt, dropShadow, releaseSlot, resendStops, stopWorker } from './workers.js';

/** A listed attempt that failed while the AM was down: its instance is retried as usual. */
interface Failure {
  task: Task;
  inst: Instance;
  w: ListedWorker;
}

/**
 * A restarted AM rebuilds its instance table: hard state (the snapshot log) first, then the
 * workers the agents list (soft state), then what follows from them. Runs before task activation.
 */
export function restore(st: AmState, r: Recovery): void {
  // 1. The snapshot: successes are done; a failure for good decided the job.
  const { logged, failedForGood } = replayLog(st, readLog(st, r.snapshot));
  // 2. The workers the agents list, by instance.
  const { adopted, doneMeanwhile, failures } = settleListed(st, r.workers);
  for (const n of r.unlistedNodes) st.unlisted.add(n);
  // 3. A task's workers exist only once every task it depends on succeeded: infer what the log lacks.
  inferDone(st, failures);
  st.log.info(
    { logged, adopted, doneMeanwhile, failedMeanwhile: failures.length, unlistedNodes: [...st.unlisted], workers: r.workers.length },
    'state recovered from the snapshot and the agents',
  );

  // 4. The job's fate, if the log already decided it.
  if (failedForGood) {
    finishJob(st, false, failedForGood.message ?? `task "${failedForGood.task}" instance ${failedForGood.instance} failed`);
    return;
  }
  // 5. Tasks whose dependencies are done become active; failures seen meanwhile are retried as usual.
  activateReady(st);
  for (const f of failures) {
    if (st.done) return;
    if (f.task.state !== 'active' || f.inst.state !== 'pending') continue;
    f.inst.attempt = f.w.attempt;
    failAttempt(st, f.task, f.inst, f.w.nodeId, `${failureReason(f.w)} while the application master was down`);
  }
}

/** The snapshot's log entries, if it is about this task graph (no topology yet: it is written now). */
function readLog(st: AmState, snapshot: Recovery['snapshot']): SnapshotEntry[] {
  const spec = st.spec!;
  if (snapshot.topology !== '' && !sameTopology(snapshot.topology, spec)) {
    st.log.error({ entries: snapshot.entries.length }, 'the snapshot describes another task graph; its log is ignored');
    return [];
  }
  if (snapshot.topology === '') st.out.topology = encodeTopology(spec);
  return snapshot.entries.map(decodeEntry).filter((e): e is SnapshotEntry => e !== undefined);
}

/** Logged successes are done (with where their output is); the first failure for good is returned. */
function replayLog(st: AmState, entries: readonly SnapshotEntry[]): { logged: number; failedForGood: SnapshotEntry | undefined } {
  let failedForGood: SnapshotEntry | undefined;
  let logged = 0;
  for (const e of entries) {
    const x = lookup(st, e.task, e.instance);
    if (!x) continue;
    x.inst.highest = Math.max(x.inst.highest, e.attempt);
    if (e.state === 'failed') {
      failedForGood ??= e;
    } else if (x.inst.state !== 'succeeded' || e.attempt > x.inst.attempt) {
      // A later success of the same instance (run again in a network partition) moves its output.
      if (x.inst.state !== 'succeeded') logged++;
      setInstanceState(x.task, x.inst, 'succeeded');
      x.inst.attempt = e.attempt;
      if (e.nodeAddress && e.nodeId && !st.nodeAddresses.has(e.nodeId)) st.nodeAddresses.set(e.nodeId, e.nodeAddress);
      if (e.workerId) setOutput(x.task, x.inst, { workerId: e.workerId, nodeId: e.nodeId, nodeAddress: e.nodeAddress ?? st.nodeAddresses.get(e.nodeId) ?? '' });
    }
  }
  return { logged, failedForGood };
}

/** The listed workers of our instances, by instance (in listing order); every attempt seen raises `highest`. */
function listedByInstance(st: AmState, workers: readonly ListedWorker[]): Map<Instance, { task: Task; list: ListedWorker[] }> {
  const byInstance = new Map<Instance, { task: Task; list: ListedWorker[] }>();
  for (const w of workers) {
    const id = idOf(w);
    const x = id && lookup(st, id.task, id.instance);
    if (!id || !x) continue;
    const ws = { ...w, task: id.task, instance: id.instance, attempt: id.attempt };
    x.inst.highest = Math.max(x.inst.highest, ws.attempt);
    const g = byInstance.get(x.inst) ?? { task: x.task, list: [] };
    g.list.push(ws);
    byInstance.set(x.inst, g);
  }
  return byInstance;
}

/** Settles every instance with listed workers (see `settleInstance`) and counts the outcomes. */
function settleListed(st: AmState, workers: readonly ListedWorker[]): { adopted: number; doneMeanwhile: number; failures: Failure[] } {
  const failures: Failure[] = [];
  let adopted = 0;
  let doneMeanwhile = 0;
  for (const [inst, { task, list }] of listedByInstance(st, workers)) {
    const outcome = settleInstance(st, task, inst, list);
    if (outcome === 'done') doneMeanwhile++;
    else if (outcome === 'adopted') adopted++;
    else if (outcome) failures.push(outcome);
  }
  return { adopted, doneMeanwhile, failures };
}

/** Newest attempt first; ties by node id. */
const newestFirst = (a: ListedWorker, b: ListedWorker) => b.attempt - a.attempt || (a.nodeId < b.nodeId ? -1 : a.nodeId > b.nodeId ? 1 : 0);

/**
 * One instance's listed workers: for a finished instance live duplicates are stopped; a success
 * meanwhile makes it done (logged now); else its newest live attempt is adopted (older ones become
 * shadows); else its newest failure is returned, to be retried.
 */
function settleInstance(st: AmState, task: Task, inst: Instance, list: ListedWorker[]): 'done' | 'adopted' | Failure | undefined {
  const live = list.filter((w) => w.state === 'running' || w.state === 'pending').sort(newestFirst);
  const stopLive = () => live.forEach((w) => stopWorker(st, w.nodeId, workerIdOf(task.spec.name, inst.index, w.attempt)));
  if (inst.state === 'succeeded') {
    stopLive(); // duplicates of a finished instance
    return undefined;
  }
  const ok = list.filter((w) => w.state === 'succeeded').sort(newestFirst)[0];
  if (ok) {
    // Finished while the AM was down: done, logged now; its slot is free for others or goes back.
    setInstanceState(task, inst, 'succeeded');
    inst.attempt = ok.attempt;
    const output = locate(st, ok.nodeId, workerIdOf(task.spec.name, inst.index, ok.attempt));
    setOutput(task, inst, output);
    logEntry(st, {
      task: task.spec.name,
      instance: inst.index,
      attempt: ok.attempt,
      nodeId: ok.nodeId,
      workerId: output.workerId,
      nodeAddress: output.nodeAddress,
      state: 'succeeded',
    });
    stopLive();
    return 'done';
  }
  const [current, ...older] = live;
  if (current) {
    adopt(st, task, inst, current);
    for (const w of older) addShadow(st, task, inst, w);
    return 'adopted';
  }
  const bad = list.filter((w) => w.state === 'failed' || w.state === 'killed' || w.state === 'rejected').sort(newestFirst);
  for (const w of bad) if (w.nodeId) inst.failedNodes.add(w.nodeId);
  // Neither done nor running: it failed while the AM was down (or its retry was never planned).
  const last = bad[0];
  return last ? { task, inst, w: last } : undefined;
}

/**
 * Every task that a task with workers (or failures meanwhile) depends on, directly or not, has
 * succeeded: its instances the log lacks are inferred done (and logged now).
 */
function inferDone(st: AmState, failures: readonly Failure[]): void {
  const evidence = [...st.tasks.values()].filter((t) => t.instances.some((i) => i.state !== 'waiting') || failures.some((f) => f.task === t));
  const inferred = new Set<Task>();
  const visit = (t: Task): void => {
    for (const d of t.spec.dependsOn) {
      const dt = st.tasks.get(d);
      if (!dt || inferred.has(dt)) continue;
      inferred.add(dt);
      visit(dt);
    }
  };
  evidence.forEach(visit);
  for (const t of inferred) {
    const missing = t.instances.filter((i) => i.state === 'waiting');
    if (missing.length === 0) continue;
    st.log.warn({ task: t.spec.name, instances: missing.length }, 'instances missing from the snapshot inferred done (a later task has workers)');
    for (const i of missing) {
      setInstanceState(t, i, 'succeeded');
      logEntry(st, { task: t.spec.name, instance: i.index, attempt: i.highest, nodeId: '', workerId: '', state: 'succeeded' });
    }
  }
}

/** A worker listed by a node that had not answered at the restart (see `workersListed`). */
function learnLate(st: AmState, nodeId: string, raw: ListedWorker): void {
  const id = idOf(raw);
  const x = id && lookup(st, id.task, id.instance);
  if (!id || !x) return;
  const { task, inst } = x;
  const w: ListedWorker = { ...raw, task: id.task, instance: id.instance, attempt: id.attempt, nodeId };
  inst.highest = Math.max(inst.highest, w.attempt);
  const known =
    (inst.state === 'running' && inst.attempt === w.attempt && inst.nodeId === nodeId) ||
    inst.shadows.some((sh) => sh.attempt === w.attempt && sh.nodeId === nodeId);
  if (known) {
    onWorkerEvent(st, nodeId, w);
    return;
  }
  const workerId = workerIdOf(task.spec.name, inst.index, w.attempt);
  switch (w.state) {
    case 'succeeded':
      if (inst.state === 'succeeded' || inst.state === 'failed') return;
      st.log.info({ task: task.spec.name, instance: inst.index, attempt: w.attempt, node: nodeId }, 'instance found done on an agent that answered late');
      if (inst.state === 'running') {
        stopWorker(st, inst.nodeId, workerIdOf(task.spec.name, inst.index, inst.attempt));
        releaseSlot(task, inst);
      }
      succeed(st, task, inst, w.attempt, nodeId);
      return;
    case 'running':
    case 'pending':
      if (inst.state === 'succeeded' || inst.state === 'failed') stopWorker(st, nodeId, workerId);
      else if (inst.state === 'running') addShadow(st, task, inst, w);
      else adopt(st, task, inst, w);
      return;
    default:
      inst.failedNodes.add(nodeId);
  }
}

/** Adopted attempts on `nodeId` that its agent no longer lists: lost (their events went elsewhere). */
function dropVanished(st: AmState, nodeId: string, listed: ReadonlySet<string>): void {
  for (const t of st.tasks.values()) {
    for (const inst of t.instances) {
      if (st.done) return;
      for (const sh of [...inst.shadows]) {
        if (sh.adopted && sh.nodeId === nodeId && !listed.has(workerIdOf(t.spec.name, inst.index, sh.attempt))) dropShadow(t, inst, sh);
      }
      if (inst.state !== 'running' || !inst.adopted || inst.nodeId !== nodeId) continue;
      if (listed.has(workerIdOf(t.spec.name, inst.index, inst.attempt))) continue;
      st.log.warn(
        { task: t.spec.name, instance: inst.index, attempt: inst.attempt, node: nodeId },
        'adopted worker no longer listed by its agent; counted as failed',
      );
      releaseSlot(t, inst);
      failAttempt(st, t, inst, nodeId, `worker vanished from the agent of ${nodeId}`);
    }
  }
}

/**
 * What the agent of `nodeId` lists (`ListWorkers`): from a node unlisted since the restart, its
 * workers are learnt (adopted, kept as shadows, stopped or counted done); from any other node the
 * statuses are worker events, and adopted workers missing from the list are lost.
 */
export function workersListed(st: AmState, nodeId: string, workers: readonly ListedWorker[]): void {
  if (st.unlisted.delete(nodeId)) {
    st.log.info({ node: nodeId, workers: workers.length }, 'agent listed its workers; adopting');
    for (const w of workers) {
      if (st.done) break;
      learnLate(st, nodeId, w);
    }
    resendStops(st, nodeId);
  } else {
    const listed = new Set<string>();
    for (const w of workers) {
      if (st.done) break;
      const id = idOf(w);
      if (id) listed.add(workerIdOf(id.task, id.instance, id.attempt));
      onWorkerEvent(st, nodeId, w);
    }
    dropVanished(st, nodeId, listed);
  }
}
