/**
 * Time for the shell code in this package (the election's watchdog and backoff), injectable so tests
 * can move time by hand.
 */
export interface TimerHandle {
  cancel(): void;
}

export interface Clock {
  /** Milliseconds, monotonic enough for intervals (the system clock uses performance.now()). */
  now(): number;
  /** Calls `fn` once after `ms`. */
  setTimeout(fn: () => void, ms: number): TimerHandle;
}

/** Real time. Timers are unref'd: a pending watchdog or backoff never keeps the process alive. */
export const systemClock: Clock = {
  now: () => performance.now(),
  setTimeout(fn, ms) {
    const t = setTimeout(fn, ms);
    t.unref();
    return { cancel: () => clearTimeout(t) };
  },
};

/** A clock that moves only when told to (`advance`), firing due timers in time order. */
export class FakeClock implements Clock {
  private t: number;
  private seq = 0;
  private timers = new Map<number, { at: number; fn: () => void }>();

  constructor(start = 1_000_000) {
    this.t = start;
  }

  now(): number {
    return this.t;
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    const id = ++this.seq;
    this.timers.set(id, { at: this.t + Math.max(0, ms), fn });
    return { cancel: () => void this.timers.delete(id) };
  }

  /** Moves time forward by `ms`, running every timer that falls due (including ones they set). */
  advance(ms: number): void {
    const end = this.t + ms;
    for (;;) {
      let next: [number, { at: number; fn: () => void }] | undefined;
      for (const entry of this.timers) if (entry[1].at <= end && (!next || entry[1].at < next[1].at)) next = entry;
      if (!next) break;
      this.timers.delete(next[0]);
      this.t = Math.max(this.t, next[1].at);
      next[1].fn();
    }
    this.t = end;
  }

  /** Number of pending timers (tests). */
  pending(): number {
    return this.timers.size;
  }
}
