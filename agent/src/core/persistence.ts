/**
 * What the agent core hands to its local checkpoint: the delta of what changed since the previous
 * one (the records `touch` and the other modules marked dirty, as whole records to put or keys to
 * delete), and the whole durable state. `restore.ts` reads it back after a restart.
 */
import { copyGrant, meta, workerEntry, type CoreState } from './core-state.js';
import { grantTable } from './queries.js';
import type { AgentState, StateDelta } from './types.js';

/**
 * What changed since the previous call (undefined: nothing), as whole records to put and keys to
 * delete; the shell writes it to the local checkpoint as one atomic batch before it acknowledges
 * the input that caused it. Replaying every delta in order over an empty state gives `state()`.
 */
/** Whether anything changed since the last `takeDelta`. */
export function hasDelta(st: CoreState): boolean {
  return st.dirtyMeta || st.dirtyGrants.size > 0 || st.dirtyApps.size > 0 || st.dirtyWorkers.size > 0;
}

export function takeDelta(st: CoreState): StateDelta | undefined {
  if (!hasDelta(st)) return undefined;
  const d: StateDelta = { putGrants: [], delGrants: [], putApps: [], delApps: [], putWorkers: [], delWorkers: [] };
  if (st.dirtyMeta) d.meta = meta(st);
  for (const [k, ref] of st.dirtyGrants) {
    const g = st.grants.get(k);
    if (g) d.putGrants.push(copyGrant(g));
    else d.delGrants.push(ref);
  }
  for (const appId of st.dirtyApps) {
    const a = st.apps.get(appId);
    if (a) d.putApps.push({ appId, amAttempt: a.amAttempt, amAddress: a.amAddress });
    else d.delApps.push(appId);
  }
  for (const [k, ref] of st.dirtyWorkers) {
    const w = st.workers.get(k);
    if (w) d.putWorkers.push(workerEntry(w));
    else d.delWorkers.push(ref);
  }
  st.dirtyMeta = false;
  st.dirtyGrants.clear();
  st.dirtyApps.clear();
  st.dirtyWorkers.clear();
  return d;
}

/** The whole durable state (what the checkpoint holds once every delta is written). */
export function durableState(st: CoreState): AgentState {
  return {
    meta: meta(st),
    grants: grantTable(st),
    apps: [...st.apps].map(([appId, a]) => ({ appId, amAttempt: a.amAttempt, amAddress: a.amAddress })),
    workers: [...st.workers.values()].map(workerEntry),
  };
}
