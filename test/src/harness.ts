/**
 * Integration-test harness: a real local cluster (master + agents as child processes on loopback)
 * in a temp dir, torn down by pid after each suite; plus polling helpers.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { normalizeJobSpec, type JobSpec } from '@fuxi/common';
import { removeAgentGroups } from '@fuxi/agent';
import { isAlive, LocalCluster, waitForLogLine, type LocalClusterOptions, type ProcessInfo } from '@fuxi/deploy';

export { isAlive };

export async function startCluster(name: string, opts: Partial<LocalClusterOptions> = {}): Promise<LocalCluster> {
  const dir = mkdtempSync(join(tmpdir(), `fuxi-it-${name}-`));
  return LocalCluster.start({ dir, agents: 3, agentCpu: '2', agentMemory: '2Gi', heartbeatIntervalMs: 300, logLevel: 'debug', ...opts });
}

export async function stopCluster(c: LocalCluster | undefined, keepOnFailure: boolean): Promise<void> {
  if (!c) return;
  await c.stop({ killWorkers: true });
  // The agents' worker cgroups (their workers are gone now).
  for (const a of c.agents) if (a) await removeAgentGroups(a.nodeId, a.workDir);
  if (!keepOnFailure) rmSync(c.opts.dir, { recursive: true, force: true });
  else process.stderr.write(`  (logs kept in ${c.opts.dir})\n`);
}

export async function until<T>(what: string, fn: () => Promise<T | undefined | false> | T | undefined | false, timeoutMs = 60_000, everyMs = 100): Promise<T> {
  const end = Date.now() + timeoutMs;
  let lastErr: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined && v !== false) return v;
    } catch (e) {
      lastErr = e;
    }
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}${lastErr ? `: ${String(lastErr)}` : ''}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** A job from the user-facing format (validated like the CLI does). */
export function job(raw: Record<string, unknown>): JobSpec {
  return normalizeJobSpec(raw);
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Waits for a pino line `msg` logged by this process (a master or an agent); returns it. */
export async function waitForLog(p: ProcessInfo, msg: string, timeoutMs = 30_000): Promise<Record<string, unknown>> {
  return waitForLogLine(p.logFile, msg, p.child, timeoutMs);
}
