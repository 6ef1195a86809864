/**
 * Times every master call made through `MasterConnection` in this process (the agents' heartbeats,
 * the AMs' UpdateRequests, ...): one round trip per successful attempt, in milliseconds, per method.
 * Installed by the simulated-node host when the benchmark asks for it; patches
 * `MasterConnection.prototype.client` once (test-only instrumentation, nothing else changes).
 *
 * ```ts
 * const timings = instrumentMasterCalls();
 * // ... later
 * timings.get('UpdateRequests')?.percentile(99);
 * ```
 */
import { MasterConnection } from '@fuxi/rpc';
import { Histogram } from './histogram.js';

const WRAPPED = Symbol('fuxi.sim.timed');
let installed: Map<string, Histogram> | undefined;

/** Starts timing master calls in this process (idempotent); returns the per-method histograms. */
export function instrumentMasterCalls(): Map<string, Histogram> {
  if (installed) return installed;
  const timings = new Map<string, Histogram>();
  installed = timings;
  const proto = MasterConnection.prototype as unknown as { client: (address?: string) => Record<string | symbol, unknown> };
  const original = proto.client;
  proto.client = function (this: MasterConnection, address?: string) {
    const c = original.call(this, address);
    if (c[WRAPPED]) return c;
    c[WRAPPED] = true;
    for (const [name, fn] of Object.entries(c)) {
      if (typeof fn !== 'function' || name === 'close' || !/^[A-Z]/.test(name)) continue;
      const call = fn as (req: unknown, opts?: unknown) => Promise<unknown>;
      c[name] = async (req: unknown, opts?: unknown) => {
        const t0 = performance.now();
        const res = await call(req, opts);
        let h = timings.get(name);
        if (!h) timings.set(name, (h = new Histogram()));
        h.add(performance.now() - t0);
        return res;
      };
    }
    return c;
  };
  return timings;
}
