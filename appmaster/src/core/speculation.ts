/**
 * Speculative execution (job spec `speculation: off | base | path`, default `path`).
 *
 * - **Progress.** Worker events carry the fraction a worker reported and its data paths; the
 *   serving agents report the paths they serve (paths.ts). The AM notes when it first heard each
 *   attempt running and keeps the run times of succeeded attempts per task.
 * - **Base (LATE).** Every tick, per active task: a running attempt is slow when its progress rate
 *   (fraction / time running) is below SLOW_TASK_RATIO of the median rate of its peers (running
 *   attempts and succeeded ones, 1 / run time), or, reporting no progress, it has run twice as
 *   long as a succeeded attempt took; and it is worth a backup only when its estimated time left
 *   ((1 - fraction) / rate) is longer than a new attempt would take (the median run time). The
 *   slowest by time left get a backup on another node, up to `speculationCap` backups at once per
 *   task (the master's `speculationAllowance` leaves that room). The slow attempt keeps running as a
 *   speculative shadow: the first to succeed wins and the other is stopped, its slot returned.
 * - **Path (PBSE, seed 001).** A host found to be the slow end of data paths (paths.ts) in every
 *   judgement for CONFIRM_MS is marked slow for the job: nothing more is placed there (its free slots go back; the master is told to
 *   avoid it). The work it holds moves: outputs a task not yet finished still reads run again
 *   elsewhere (the readers' FUXI_UPSTREAM then points to the new copy), running attempts there that
 *   read or write data over the network run again elsewhere, and running readers whose
 *   FUXI_UPSTREAM still names the slow host run again once the new copies exist, unless they have
 *   already read everything they needed from it. A base-speculation backup of such a reader would
 *   read from the same slow host and be just as slow: that is why the culprit, not the reader, is
 *   speculated. Base speculation runs too, for slow attempts no slow path explains.
 *
 * Every speculative attempt counts in its task's `backups`, never as a failed attempt.
 */
import { speculationCap } from '@fuxi/common';
import { blocked, idOf, setInstanceState, setOutput, workerIdOf, type AmState, type Instance, type Task } from './am-state.js';
import { setTaskState } from './dag.js';
import { neededTasks } from './partitions.js';
import { judgePaths, observePath, percentile } from './paths.js';
import type { PathRecord, WorkerEvent } from './types.js';
import { liveWorkers, releaseSlot, stopWorker } from './workers.js';

/** An attempt is judged only after running this long (ms). */
export const MIN_RUNTIME_MS = 2_000;
/** Slow: a progress rate below this fraction of the median of its peers. */
export const SLOW_TASK_RATIO = 0.5;
/** Rates needed (running and succeeded attempts) before any attempt of a task is judged slow. */
export const MIN_PEERS = 3;
/** Run times kept per task. */
export const DURATIONS_KEPT = 64;
/**
 * A host is marked slow only after it has been the culprit of every judgement for this long: a
 * burst of load that stalls a few reads for a moment (a busy host, a garbage collection) is not a
 * slow link.
 */
export const CONFIRM_MS = 1_500;

/** Worker events of `nodeId`, before the core acts on them: progress, paths, start and run times. */
export function observeEvents(st: AmState, events: readonly WorkerEvent[], now: number): void {
  const sp = st.speculation;
  for (const ev of events) {
    const id = idOf(ev);
    if (!id) continue;
    const wid = ev.workerId || workerIdOf(id.task, id.instance, id.attempt);
    if (ev.state === 'running') {
      let a = sp.attempts.get(wid);
      if (!a) sp.attempts.set(wid, (a = { startedAt: now, fraction: 0 }));
      const f = ev.progress ?? 0;
      if (Number.isFinite(f) && f > 0) a.fraction = Math.min(1, f);
    } else if (ev.state !== 'pending') {
      const a = sp.attempts.get(wid);
      sp.attempts.delete(wid);
      const t = st.tasks.get(id.task);
      if (a && t && ev.state === 'succeeded') {
        t.durations.push(Math.max(1, now - a.startedAt));
        if (t.durations.length > DURATIONS_KEPT) t.durations.shift();
      }
    }
    for (const r of ev.paths ?? []) observePath(sp.paths, r, now, true);
  }
}

/** Paths a serving agent's data service measured. */
export function observePaths(st: AmState, records: readonly PathRecord[], now: number): void {
  for (const r of records) observePath(st.speculation.paths, r, now);
}

/** The tick's speculation: path-based first (mode 'path'), then base. */
export function checkSpeculation(st: AmState, now: number): void {
  if (st.done || !st.spec || st.speculation.mode === 'off') return;
  forgetEnded(st);
  if (st.speculation.mode === 'path') checkPaths(st, now);
  for (const t of st.tasks.values()) if (t.state === 'active') late(st, t, now);
}

// ------------------------------------------------------------------------------------ base

interface Candidate {
  inst: Instance;
  rate: number;
  left: number;
  elapsed: number;
}

/** LATE over one task (see the header). */
function late(st: AmState, t: Task, now: number): void {
  const cap = speculationCap(t.spec.instances);
  if (t.speculating >= cap || t.counts.running === 0) return;
  const rates: number[] = [];
  const cands: Candidate[] = [];
  for (const inst of t.instances) {
    if (inst.state !== 'running' || !inst.started || !inst.nodeId) continue;
    const a = st.speculation.attempts.get(workerIdOf(t.spec.name, inst.index, inst.attempt));
    if (!a) continue;
    const elapsed = now - a.startedAt;
    const rate = a.fraction > 0 && elapsed > 0 ? a.fraction / elapsed : 0;
    if (rate > 0) rates.push(rate);
    if (elapsed < MIN_RUNTIME_MS || a.fraction >= 1 || inst.shadows.some((s) => s.speculative) || blocked(st, inst.nodeId)) continue;
    if (st.speculation.slowHosts.has(inst.nodeId)) continue;
    cands.push({ inst, rate, left: rate > 0 ? (1 - a.fraction) / rate : Infinity, elapsed });
  }
  for (const d of t.durations) rates.push(1 / d);
  if (rates.length < MIN_PEERS || cands.length === 0) return;
  const median = percentile(rates, 0.5);
  const fresh = t.durations.length > 0 ? percentile(t.durations, 0.5) : 1 / median;
  const slow = cands
    .filter((c) => (c.rate > 0 ? c.rate < SLOW_TASK_RATIO * median : c.elapsed > 2 * fresh) && c.left > fresh)
    .sort((a, b) => b.left - a.left || b.elapsed - a.elapsed || a.inst.index - b.inst.index);
  for (const c of slow.slice(0, cap - t.speculating)) {
    st.log.warn(
      {
        task: t.spec.name,
        instance: c.inst.index,
        attempt: c.inst.attempt,
        node: c.inst.nodeId,
        rate: Number((c.rate * 1000).toFixed(4)),
        medianRate: Number((median * 1000).toFixed(4)),
        leftMs: Number.isFinite(c.left) ? Math.round(c.left) : null,
        newAttemptMs: Math.round(fresh),
      },
      'slow attempt; a speculative backup runs beside it on another node',
    );
    backUp(st, t, c.inst);
  }
}

/** A backup of the instance's running attempt: that attempt stays as a speculative shadow; the first to succeed wins. */
export function backUp(st: AmState, t: Task, inst: Instance): void {
  inst.shadows.push({ attempt: inst.attempt, nodeId: inst.nodeId, started: inst.started, adopted: inst.adopted, speculative: true });
  t.speculating++;
  t.backups++;
  inst.avoidNodes.add(inst.nodeId);
  setInstanceState(t, inst, 'pending');
  inst.nodeId = '';
  inst.started = false;
  inst.adopted = false;
  inst.reruns++;
  inst.declined = false;
}

// ------------------------------------------------------------------------------------ path

/** PBSE (see the header): new culprits are marked slow and their work moves; stale slow readers run again. */
function checkPaths(st: AmState, now: number): void {
  const sp = st.speculation;
  if (sp.paths.size === 0) return;
  const live = new Set(liveWorkers(st).map((w) => w.workerId));
  const judged = judgePaths(sp.paths.values(), now, (reader) => live.has(reader));
  if (judged.slow.length > 0)
    st.log.debug(
      {
        paths: judged.paths.length,
        slow: judged.slow.length,
        culprits: judged.culprits,
        referenceKbps: Math.round(judged.reference / 1024),
        suspects: [...sp.suspects.keys()],
      },
      'slow data paths',
    );
  for (const h of [...sp.suspects.keys()]) if (!judged.culprits.includes(h)) sp.suspects.delete(h);
  if (judged.culprits.length > 0) {
    const maxSlow = Math.max(1, Math.floor(st.nodeAddresses.size / 2));
    for (const h of judged.culprits) {
      if (sp.slowHosts.has(h)) continue;
      const mine = judged.slow.filter((p) => (p.record.srcNode === h || p.record.dstNode === h) && live.has(p.record.readerWorker));
      if (mine.length === 0) {
        sp.suspects.delete(h);
        continue;
      }
      const since = sp.suspects.get(h);
      if (since === undefined) sp.suspects.set(h, now);
      if (since === undefined || now - since < CONFIRM_MS) continue;
      sp.suspects.delete(h);
      if (sp.slowHosts.size >= maxSlow) {
        st.log.warn(
          { host: h, slowHosts: [...sp.slowHosts.keys()].sort(), hosts: st.nodeAddresses.size },
          'slow data paths point at another host; too many slow already, left as it is',
        );
        continue;
      }
      sp.slowHosts.set(h, now);
      st.log.warn(
        {
          host: h,
          slowPaths: mine.length,
          kbps: mine.slice(0, 8).map((p) => Math.round(p.bandwidth / 1024)),
          referenceKbps: Math.round(judged.reference / 1024),
        },
        'host is the slow end of data paths; its work moves elsewhere and nothing more goes there',
      );
      moveOff(st, h);
    }
  }
  if (sp.slowHosts.size > 0) restartStaleReaders(st);
}

/** The work `host` serves (outputs still needed) or reads and writes (running attempts of data tasks) moves elsewhere. */
function moveOff(st: AmState, host: string): void {
  const needed = neededTasks(st);
  let outputs = 0;
  let running = 0;
  for (const t of st.tasks.values()) {
    const dataTask = t.spec.dependsOn.length > 0 || hasDependents(st, t);
    for (const inst of t.instances) {
      if (inst.state === 'succeeded' && inst.output?.nodeId === host && needed.has(t)) {
        setOutput(t, inst, undefined);
        setInstanceState(t, inst, 'pending');
        moved(t, inst, host);
        if (t.state === 'succeeded') setTaskState(st, t, 'active');
        for (const d of st.tasks.values()) if (d.spec.dependsOn.includes(t.spec.name)) d.upstreamMoves++;
        outputs++;
      } else if (inst.state === 'running' && inst.nodeId === host && dataTask) {
        stopWorker(st, host, workerIdOf(t.spec.name, inst.index, inst.attempt));
        releaseSlot(t, inst);
        setInstanceState(t, inst, 'pending');
        moved(t, inst, host);
        running++;
      }
    }
  }
  st.log.info({ host, outputs, running }, 'work moved off a slow host');
}

/**
 * Running readers whose FUXI_UPSTREAM names outputs that moved off a slow host, once the new copies
 * exist: they run again, unless everything they read from a slow host is already read.
 */
function restartStaleReaders(st: AmState): void {
  const sp = st.speculation;
  for (const d of st.tasks.values()) {
    if (d.spec.dependsOn.length === 0 || d.state !== 'active' || d.counts.running === 0) continue;
    if (!d.spec.dependsOn.every((u) => st.tasks.get(u)?.state === 'succeeded')) continue;
    for (const inst of d.instances) {
      if (inst.state !== 'running' || inst.upstreamAt >= d.upstreamMoves || !inst.nodeId) continue;
      const wid = workerIdOf(d.spec.name, inst.index, inst.attempt);
      let fromSlow = 0;
      let unfinished = false;
      for (const o of sp.paths.values()) {
        const r = o.record;
        if (r.readerWorker !== wid || !sp.slowHosts.has(r.srcNode)) continue;
        fromSlow++;
        if (!r.done) unfinished = true;
      }
      if (fromSlow > 0 && !unfinished) continue;
      st.log.info(
        { task: d.spec.name, instance: inst.index, attempt: inst.attempt, node: inst.nodeId },
        'reader of outputs moved off a slow host runs again with the new copies',
      );
      stopWorker(st, inst.nodeId, wid);
      const from = inst.nodeId;
      releaseSlot(d, inst);
      setInstanceState(d, inst, 'pending');
      moved(d, inst, '');
      if (sp.slowHosts.has(from)) inst.avoidNodes.add(from);
    }
  }
}

/** The instance runs again as a speculative attempt (not a failure), not on `host`. */
function moved(t: Task, inst: Instance, host: string): void {
  if (host) inst.avoidNodes.add(host);
  inst.reruns++;
  inst.declined = false;
  inst.lostAttempt = 0;
  t.backups++;
}

function hasDependents(st: AmState, t: Task): boolean {
  for (const d of st.tasks.values()) if (d.spec.dependsOn.includes(t.spec.name)) return true;
  return false;
}

/** Progress of attempts that are no longer live is forgotten (stopped, lost, replaced). */
function forgetEnded(st: AmState): void {
  const sp = st.speculation;
  if (sp.attempts.size === 0) return;
  const live = new Set(liveWorkers(st).map((w) => w.workerId));
  for (const wid of [...sp.attempts.keys()]) if (!live.has(wid)) sp.attempts.delete(wid);
}
