/**
 * How long slot requests wait for their grant, and how many slots the scheduler granted: what the
 * master's metrics (`fuxi_master_grants_total`, `fuxi_master_request_to_grant_seconds`) read.
 *
 * Each schedule unit keeps a queue of its outstanding requests by the time they were first seen,
 * oldest first (`[sinceMs, slots]`). `noteRequests` brings the queue in step with the unit's
 * outstanding total: more slots asked for are appended at `now`; fewer (cancelled, or cleared by a
 * restart) are taken off the newest end. `placed` takes granted slots off the oldest end and
 * records each one's wait. Locations are not told apart: a grant serves the oldest request of its
 * unit, which is what an AM asking for "N more" means.
 *
 * ```ts
 * const gw = new GrantWaits();
 * gw.noteRequests(su, 1000);      // su.requests totals 3: [[1000, 3]]
 * gw.placed(su, 2, 1250);         // two slots waited 250 ms
 * gw.drain();                     // { granted: 2, waits: [[250, 2]] }
 * ```
 */

/** The part of a schedule unit these figures need. */
export interface WaitingUnit {
  requests: ReadonlyMap<string, number>;
  /** Outstanding slots by when they were first seen, oldest first (kept here). */
  waits?: Array<[sinceMs: number, slots: number]>;
}

/** Waits recorded and not drained are kept up to this many entries (the oldest are dropped). */
export const MAX_PENDING_WAITS = 10_000;

function total(requests: ReadonlyMap<string, number>): number {
  let n = 0;
  for (const v of requests.values()) n += v;
  return n;
}

export class GrantWaits {
  /** Slots the scheduler granted, ever (by this core). */
  private granted = 0;
  /** Recorded waits not drained yet: [ms, slots]. */
  private waits: Array<[ms: number, slots: number]> = [];

  /** Brings the unit's queue in step with its outstanding requests, as of `now`. */
  noteRequests(su: WaitingUnit, now: number): void {
    const want = total(su.requests);
    const q = (su.waits ??= []);
    let have = 0;
    for (const [, n] of q) have += n;
    if (want > have) {
      q.push([now, want - have]);
      return;
    }
    let drop = have - want;
    while (drop > 0 && q.length > 0) {
      const last = q[q.length - 1]!;
      const m = Math.min(last[1], drop);
      last[1] -= m;
      drop -= m;
      if (last[1] === 0) q.pop();
    }
  }

  /** `slots` of the unit were granted at `now`: the oldest requests are served. */
  placed(su: WaitingUnit, slots: number, now: number): void {
    this.granted += slots;
    const q = (su.waits ??= []);
    let left = slots;
    while (left > 0 && q.length > 0) {
      const first = q[0]!;
      const m = Math.min(first[1], left);
      this.record(Math.max(0, now - first[0]), m);
      first[1] -= m;
      left -= m;
      if (first[1] === 0) q.shift();
    }
    // Granted with no request on record (asked for before this core knew the unit): no wait known.
  }

  private record(ms: number, slots: number): void {
    const last = this.waits[this.waits.length - 1];
    if (last && last[0] === ms) last[1] += slots;
    else this.waits.push([ms, slots]);
    if (this.waits.length > MAX_PENDING_WAITS) this.waits.splice(0, this.waits.length - MAX_PENDING_WAITS);
  }

  /** Slots granted so far, and the waits recorded since the last drain (which empties them). */
  drain(): { granted: number; waits: Array<[ms: number, slots: number]> } {
    const waits = this.waits;
    this.waits = [];
    return { granted: this.granted, waits };
  }
}
