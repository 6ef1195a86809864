/**
 * Pure helpers over the agent's durable state (`AgentState`) and its deltas (`StateDelta`, what
 * `AgentCore.takeDelta()` returns): the empty state, applying a delta, merging two deltas. The
 * in-memory checkpoint is `applyDelta` over a plain object; tests replay deltas with it.
 *
 * ```ts
 * let s = emptyState();
 * for (const d of deltas) s = applyDelta(s, d);   // == core.state()
 * ```
 */
import type { AgentState, AppEntry, GrantEntry, StateDelta, WorkerEntry } from './types.js';

const gk = (appId: string, suId: string): string => JSON.stringify([appId, suId]);
const wk = (appId: string, workerId: string): string => JSON.stringify([appId, workerId]);

/** A state with nothing in it (a new work dir). */
export function emptyState(): AgentState {
  return { meta: { nodeId: '', epoch: '0', grantEpoch: '0', grantSeq: '0' }, grants: [], apps: [], workers: [] };
}

/** True when `s` holds nothing worth restoring (no meta written, no records). */
export function isEmptyState(s: AgentState): boolean {
  return !s.meta.nodeId && s.grants.length === 0 && s.apps.length === 0 && s.workers.length === 0;
}

/** A copy of `delta` that shares nothing with it. */
export function copyDelta(delta: StateDelta): StateDelta {
  return clone(delta);
}

export function emptyDelta(): StateDelta {
  return { putGrants: [], delGrants: [], putApps: [], delApps: [], putWorkers: [], delWorkers: [] };
}

/** Deep copy via JSON: every record is plain data. */
function clone<T>(v: T): T {
  return JSON.parse(JSON.stringify(v)) as T;
}

/**
 * `state` with `delta` applied (a new object; the inputs are not changed). Grants and apps come out
 * in insertion order, workers sorted by acceptance order.
 */
export function applyDelta(state: AgentState, delta: StateDelta): AgentState {
  return clone(applyDeltaSharing(state, delta));
}

/**
 * `applyDelta` without the copy: the result shares its records with `state` and `delta` (the
 * in-memory checkpoint copies only the delta it is given, not its whole state at every write).
 */
export function applyDeltaSharing(state: AgentState, delta: StateDelta): AgentState {
  const grants = new Map<string, GrantEntry>(state.grants.map((g) => [gk(g.appId, g.suId), g]));
  const apps = new Map<string, AppEntry>(state.apps.map((a) => [a.appId, a]));
  const workers = new Map<string, WorkerEntry>(state.workers.map((w) => [wk(w.appId, w.workerId), w]));
  for (const r of delta.delGrants) grants.delete(gk(r.appId, r.suId));
  for (const g of delta.putGrants) grants.set(gk(g.appId, g.suId), g);
  for (const id of delta.delApps) apps.delete(id);
  for (const a of delta.putApps) apps.set(a.appId, a);
  for (const r of delta.delWorkers) workers.delete(wk(r.appId, r.workerId));
  for (const w of delta.putWorkers) workers.set(wk(w.appId, w.workerId), w);
  return {
    meta: delta.meta ?? state.meta,
    grants: [...grants.values()],
    apps: [...apps.values()],
    workers: [...workers.values()].sort((a, b) => a.order - b.order),
  };
}

/**
 * One delta with the effect of `a` then `b` (for a write that failed and is retried together with
 * the next one): for a key in both, `b`'s put or delete wins.
 */
export function mergeDeltas(a: StateDelta, b: StateDelta | undefined): StateDelta {
  if (!b) return a;
  const out = emptyDelta();
  const meta = b.meta ?? a.meta;
  if (meta) out.meta = meta;
  const grants = new Map<string, { put?: GrantEntry; del?: { appId: string; suId: string } }>();
  for (const d of [a, b]) {
    for (const r of d.delGrants) grants.set(gk(r.appId, r.suId), { del: r });
    for (const g of d.putGrants) grants.set(gk(g.appId, g.suId), { put: g });
  }
  const apps = new Map<string, { put?: AppEntry; del?: string }>();
  for (const d of [a, b]) {
    for (const id of d.delApps) apps.set(id, { del: id });
    for (const x of d.putApps) apps.set(x.appId, { put: x });
  }
  const workers = new Map<string, { put?: WorkerEntry; del?: { appId: string; workerId: string } }>();
  for (const d of [a, b]) {
    for (const r of d.delWorkers) workers.set(wk(r.appId, r.workerId), { del: r });
    for (const w of d.putWorkers) workers.set(wk(w.appId, w.workerId), { put: w });
  }
  for (const v of grants.values()) {
    if (v.put) out.putGrants.push(v.put);
    else if (v.del) out.delGrants.push(v.del);
  }
  for (const v of apps.values()) {
    if (v.put) out.putApps.push(v.put);
    else if (v.del !== undefined) out.delApps.push(v.del);
  }
  for (const v of workers.values()) {
    if (v.put) out.putWorkers.push(v.put);
    else if (v.del) out.delWorkers.push(v.del);
  }
  return out;
}
