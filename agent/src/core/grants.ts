/**
 * What the master grants and how its word is fenced: the master epoch bar (`checkEpoch`), grant
 * messages accepted in (epoch, seq) order and applied to the table (`updateGrants`), the table
 * enforced on running workers (the newest ones over a shrunk or revoked grant are killed), and the
 * AM attempt bar per app (`checkAmAttempt`, `raiseAmAttempt`) that grants and plans raise and that
 * fences plans and stops from older AM attempts.
 */
import { acceptTable, AM_SU, cmpInt64, equals, InvalidArgumentError, isWorkerActive, StaleEpochError, type Int64 } from '@fuxi/common';
import { copyGrant, grantKey, type CoreState, type WorkerRecord } from './core-state.js';
import { finish, requestStop, startPending } from './lifecycle.js';
import type { Effect, GrantEntry, UpdateGrantsInput } from './types.js';

/**
 * A command or answer from the master with `epoch`. A newer epoch raises the bar; an older one
 * means a deposed master: StaleEpochError.
 */
export function checkEpoch(st: CoreState, epoch: Int64): void {
  const c = cmpInt64(epoch, st.epoch);
  if (c < 0) throw new StaleEpochError('epoch', epoch, st.epoch);
  if (c > 0) {
    st.log.info({ from: st.epoch, to: epoch }, 'new master epoch');
    st.epoch = String(BigInt(epoch));
    st.dirtyMeta = true;
  }
}

/**
 * Master -> agent grant changes, ordered by (epoch, seq) lexicographically. Every master numbers
 * its own messages: from a master newer than the one whose table is applied, the applied seq
 * counts as 0. A delta applies only on its base (`baseSeq`, else `seq` - 1) being the applied seq; `full`
 * replaces the table unless it is older than the applied one from the same master (seq below);
 * a full table from a newer master always applies, whatever its seq. Otherwise the message is
 * ignored (the master heals it with the full table on the next heartbeat). A stale epoch throws
 * StaleEpochError. Returns the applied seq (in the message's epoch).
 */
export function updateGrants(st: CoreState, req: UpdateGrantsInput, now: number): { appliedSeq: Int64; applied: boolean; effects: Effect[] } {
  checkEpoch(st, req.epoch);
  validateGrants(req.grants);
  const seq = BigInt(req.seq || '0');
  const base = req.baseSeq !== undefined ? { base: BigInt(req.baseSeq) } : {};
  const verdict = acceptTable({ epoch: st.grantEpoch, seq: BigInt(st.grantSeq) }, { epoch: req.epoch, seq, full: req.full, ...base });
  if (verdict.kind === 'stale') throw new StaleEpochError('epoch', req.epoch, st.grantEpoch);
  if (verdict.kind !== 'apply') {
    const why =
      verdict.kind === 'out-of-order' ? 'grant delta out of order; ignored (the next heartbeat brings the full table)' : 'older full grant table ignored';
    st.log.info({ epoch: req.epoch, seq: req.seq, appliedEpoch: st.grantEpoch, applied: st.grantSeq }, why);
    return { appliedSeq: verdict.base.toString(), applied: false, effects: [] };
  }
  if (verdict.newerMaster && st.grantEpoch !== '0') {
    st.log.info({ from: st.grantEpoch, to: req.epoch, seq: req.seq, full: req.full, oldSeq: st.grantSeq }, 'grant table now follows a new master');
  }
  const touched = applyGrants(st, req, seq);
  // A table applied from the master is the master's word: pending plans may start on it.
  st.held = false;
  const effects: Effect[] = [];
  for (const g of req.grants) if ((g.amAttempt ?? 0) > 0) effects.push(...raiseAmAttempt(st, g.appId, g.amAttempt ?? 0, now, 'grant'));
  effects.push(...enforceGrants(st, touched));
  effects.push(...startPending(st, now));
  return { appliedSeq: st.grantSeq, applied: true, effects };
}

function validateGrants(grants: readonly GrantEntry[]): void {
  grants.forEach((g, i) => {
    if (!g.appId) throw new InvalidArgumentError(`grants[${i}].appId`, 'must not be empty');
    if (!g.suId) throw new InvalidArgumentError(`grants[${i}].suId`, 'must not be empty');
    if (!Number.isInteger(g.slots) || g.slots < 0) throw new InvalidArgumentError(`grants[${i}].slots`, `must be a non-negative integer, got ${g.slots}`);
  });
}

/** Applies an accepted message to the table and its (epoch, seq); returns the keys it touched. */
function applyGrants(st: CoreState, req: UpdateGrantsInput, seq: bigint): Set<string> {
  const touched = new Set<string>();
  // A full table replaces the old one; only the grants that changed are written to the checkpoint
  // (a full table comes with heartbeats: rewriting hundreds of unchanged grants each time was most
  // of an agent's checkpoint traffic).
  const before = req.full ? new Map(st.grants) : undefined;
  if (before) {
    for (const k of before.keys()) touched.add(k);
    st.grants.clear();
  }
  for (const g of req.grants) {
    const k = grantKey(g.appId, g.suId);
    touched.add(k);
    const old = before ? before.get(k) : st.grants.get(k);
    if (g.slots === 0) st.grants.delete(k);
    else st.grants.set(k, copyGrant(g));
    const now = st.grants.get(k);
    if (!before || !old || !now || !sameGrant(old, now)) st.dirtyGrants.set(k, { appId: g.appId, suId: g.suId });
  }
  if (before) for (const [k, g] of before) if (!st.grants.has(k)) st.dirtyGrants.set(k, { appId: g.appId, suId: g.suId });
  st.grantSeq = seq.toString();
  st.grantEpoch = String(BigInt(req.epoch || '0'));
  st.dirtyMeta = true;
  return touched;
}

function sameGrant(a: GrantEntry, b: GrantEntry): boolean {
  return a.slots === b.slots && equals(a.resource, b.resource) && (a.amAttempt ?? 0) === (b.amAttempt ?? 0) && (a.amTokenHash ?? '') === (b.amTokenHash ?? '');
}

/**
 * Kills the newest workers of each touched (app, su) that exceed its grant. The active workers are
 * grouped by grant in one pass: a full table touches every grant, and a scan of every worker per
 * grant made each full table cost grants x workers.
 */
function enforceGrants(st: CoreState, touched: ReadonlySet<string>): Effect[] {
  if (touched.size === 0) return [];
  const byKey = new Map<string, WorkerRecord[]>();
  for (const w of st.live.values()) {
    if (!isWorkerActive(w.state) || w.stopReason) continue;
    const k = grantKey(w.appId, w.suId);
    if (!touched.has(k)) continue;
    const list = byKey.get(k);
    if (list) list.push(w);
    else byKey.set(k, [w]);
  }
  const effects: Effect[] = [];
  for (const [key, keeping] of byKey) effects.push(...enforceGrant(st, key, keeping));
  return effects;
}

/** Kills the newest of `keeping` (the active workers of (app, su) not already stopping) over its grant. */
function enforceGrant(st: CoreState, key: string, keeping: WorkerRecord[]): Effect[] {
  const slots = st.grants.get(key)?.slots ?? 0;
  let excess = keeping.length - slots;
  if (excess <= 0) return [];
  const effects: Effect[] = [];
  const reason = slots === 0 ? 'grant revoked' : `grant shrunk to ${slots} slot(s)`;
  keeping.sort((a, b) => b.startOrder - a.startOrder);
  for (const w of keeping) {
    if (excess-- <= 0) break;
    // An AM whose slot the master released (its job ended: FinishApp, or a kill) is stopped as a
    // matter of course, not a worker running over its grant.
    if (w.suId === AM_SU && slots === 0)
      effects.push({
        kind: 'log',
        level: 'info',
        msg: 'stopping an application master whose slot was released',
        fields: { workerId: w.workerId, appId: w.appId },
      });
    else
      effects.push({ kind: 'log', level: 'warn', msg: 'killing worker over its grant', fields: { workerId: w.workerId, appId: w.appId, suId: w.suId, slots } });
    effects.push(...requestStop(st, w, reason));
  }
  return effects;
}

/** Throws StaleEpochError for an AM attempt older than the newest seen for the app. */
export function checkAmAttempt(st: CoreState, appId: string, amAttempt: number): void {
  const newest = st.apps.get(appId)?.amAttempt ?? 0;
  if (amAttempt < newest) throw new StaleEpochError('am attempt', amAttempt, newest);
}

/**
 * Raises the app's AM attempt bar to `attempt` (never lowers it; creates the app record). Plans of
 * older attempts that have not started are void then: REJECTED. Running workers are left alone
 * (the new attempt adopts them).
 */
export function raiseAmAttempt(st: CoreState, appId: string, attempt: number, now: number, source: 'plan' | 'grant'): Effect[] {
  let app = st.apps.get(appId);
  if (!app) {
    app = { amAttempt: 0, amAddress: '' };
    st.apps.set(appId, app);
    st.dirtyApps.add(appId);
  }
  if (attempt <= app.amAttempt) return [];
  const from = app.amAttempt;
  app.amAttempt = attempt;
  st.dirtyApps.add(appId);
  const effects: Effect[] = [];
  if (from > 0)
    effects.push({ kind: 'log', level: 'info', msg: 'AM attempt bar raised: older attempts are fenced', fields: { appId, from, to: attempt, source } });
  for (const w of st.live.values()) {
    if (w.appId === appId && w.state === 'PENDING' && w.amAttempt < attempt) {
      effects.push(...finish(st, w, 'REJECTED', now, `plan of AM attempt ${w.amAttempt} superseded by attempt ${attempt}`));
    }
  }
  return effects;
}
