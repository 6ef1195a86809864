/**
 * A bound on the calls one process has in flight, first come first served: a call over the bound
 * waits for a slot before it is sent, and its deadline starts when it is sent.
 *
 * Why (master calls, `MasterConnection`): in a failover every agent and AM of a process (an AM
 * host's hundreds of AMs, the node simulator's thousands) reports to the new leader within about a
 * second. Sent all at once, their answers queue behind each other in the process's own event loop;
 * when that backlog is longer than a call's deadline the deadline timers fire before the answers
 * are read, every such call is sent again, and the process does its failover work several times
 * over (measured on the rack failover benchmark: about half of the state reports were lost that
 * way). Bounded, each call is answered within its deadline and is sent once.
 *
 * ```ts
 * const gate = new CallGate(64);
 * const res = await gate.run(() => client.Heartbeat(req, { deadlineMs: 2000 }));
 * ```
 */
export class CallGate {
  private active = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(readonly limit: number) {
    if (!Number.isInteger(limit) || limit < 1) throw new Error(`a call gate needs a limit of at least 1, got ${limit}`);
  }

  /** Calls in flight now. */
  get inFlight(): number {
    return this.active;
  }

  /** Calls waiting for a slot now. */
  get queued(): number {
    return this.waiting.length;
  }

  /** Runs `fn` once a slot is free; the slot is held until its promise settles. */
  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.active < this.limit) this.active++;
    // A released slot passes straight to the first waiter (active stays as it is).
    else await new Promise<void>((resolve) => this.waiting.push(resolve));
    try {
      return await fn();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.active--;
    }
  }
}
