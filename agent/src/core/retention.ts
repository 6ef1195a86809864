/**
 * What the agent keeps over time (the periodic tick): a plan that found no grant with room within
 * `pendingTimeoutMs` is REJECTED, and one with no grant at all already after `noGrantNoMasterMs`
 * when no master has answered for as long (cut off from the master, as in a partition that leaves
 * the agent's peers and AMs reaching it, the grant it waits for cannot arrive: its AM runs it
 * elsewhere at once instead of after a minute); finished workers are forgotten after `finishedRetentionMs`, or
 * oldest first beyond `maxFinished`; an app left with neither workers nor grants is forgotten too.
 */
import { isWorkerTerminal } from '@fuxi/common';
import { dropWorker, grantKey, touch, type CoreState, type WorkerRecord } from './core-state.js';
import { finish, grantTableReached, startPending } from './lifecycle.js';
import type { Effect } from './types.js';

/** Periodic: pending plans past their timeout are rejected; old finished workers forgotten. */
export function tick(st: CoreState, now: number): Effect[] {
  st.masterHeardAtMs ??= now;
  const effects = rejectTimedOut(st, now);
  effects.push(...startPending(st, now));
  collect(st, now);
  return effects;
}

function rejectTimedOut(st: CoreState, now: number): Effect[] {
  const effects: Effect[] = [];
  const masterSilentMs = now - (st.masterHeardAtMs ?? now);
  for (const w of st.live.values()) {
    if (w.state !== 'PENDING') continue;
    const waited = now - w.acceptedAtMs;
    const has = st.grants.get(grantKey(w.appId, w.suId));
    if (waited >= st.pendingTimeoutMs) {
      const t = w.grantTable;
      const why = !has
        ? 'no grant for its schedule unit arrived'
        : t && !grantTableReached(st, w)
          ? `the grant table holding its slot (seq ${t.seq} of master epoch ${t.epoch}) never arrived; this agent is at seq ${st.grantSeq} of epoch ${st.grantEpoch}`
          : `its grant (${has.slots} slot(s)) had no room`;
      effects.push(...finish(st, w, 'REJECTED', now, `plan waited ${Math.round(waited / 1000)}s and was rejected: ${why}`));
    } else if (!has && waited >= st.noGrantNoMasterMs && masterSilentMs >= st.noGrantNoMasterMs) {
      const why = `no grant for its schedule unit, and no master answered for ${Math.round(masterSilentMs / 100) / 10}s (this node is cut off from the masters)`;
      effects.push(...finish(st, w, 'REJECTED', now, `plan waited ${Math.round(waited / 100) / 10}s and was rejected: ${why}`));
    }
  }
  return effects;
}

/** Forgets finished workers past retention or over the limit, then the apps nothing refers to any more. */
function collect(st: CoreState, now: number): void {
  if (forgetFinished(st, now)) forgetIdleApps(st);
}

/** Returns whether any worker was forgotten. */
function forgetFinished(st: CoreState, now: number): boolean {
  let over = st.workers.size - st.live.size - st.maxFinished;
  let removed = false;
  const forget = (w: WorkerRecord) => {
    dropWorker(st, w);
    touch(st, w);
    removed = true;
  };
  if (over <= 0) {
    // Within the limit (every tick but a few): only age matters, and no list is sorted.
    for (const w of st.workers.values()) if (isWorkerTerminal(w.state) && now - w.finishedAtMs > st.retentionMs) forget(w);
    return removed;
  }
  const finished = [...st.workers.values()].filter((w) => isWorkerTerminal(w.state));
  finished.sort((a, b) => a.finishedAtMs - b.finishedAtMs || a.order - b.order);
  for (const w of finished) {
    if (over > 0 || now - w.finishedAtMs > st.retentionMs) {
      forget(w);
      over--;
    }
  }
  return removed;
}

/** Apps with neither workers nor grants left are forgotten (a later grant names the AM attempt again). */
function forgetIdleApps(st: CoreState): void {
  const inUse = new Set<string>();
  for (const w of st.workers.values()) inUse.add(w.appId);
  for (const g of st.grants.values()) inUse.add(g.appId);
  for (const appId of st.apps.keys()) {
    if (!inUse.has(appId)) {
      st.apps.delete(appId);
      st.dirtyApps.add(appId);
    }
  }
}
