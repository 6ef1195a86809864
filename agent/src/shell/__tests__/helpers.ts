/** Helpers shared by the agent shell suites. */
import * as fs from 'node:fs';
import { nullLogger, UnavailableError } from '@fuxi/common';
import type * as grpc from '@grpc/grpc-js';
import type { loadFuxiProto } from '@fuxi/proto';
import { batchedCalls, implement, startServer, tokenHash, type RunningServer } from '@fuxi/rpc';

/**
 * The AM token of the suites' apps: their grants carry its hash and their plans present it (an
 * agent accepts plans only with the app's current AM token).
 */
export const AM_TOKEN = 'the-am-token-of-the-agent-suites';
export const AM_TOKEN_HASH = tokenHash(AM_TOKEN);

/**
 * Removes a work dir, again when something made an entry in it meanwhile: a spawn helper outlives
 * its agent until its workers have ended, and writes the exit file of a worker killed just before
 * (fs.rmSync's own retries only retry the rmdir, never what was made after it listed the directory).
 */
export function removeWorkDir(dir: string, attempts = 30): void {
  for (let i = 1; ; i++) {
    try {
      fs.rmSync(dir, { recursive: true, force: true });
      return;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOTEMPTY' || i >= attempts) throw e;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 100);
    }
  }
}

/** Polls `cond` every 10 ms until it holds; throws after `ms`. */
export async function waitFor(cond: () => boolean, ms = 10_000, what = 'condition'): Promise<void> {
  const until = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/**
 * Handlers for `definition`: every method throws UNAVAILABLE unless given in `over`; a batch method
 * (`Calls`) not given runs each entry by the handlers given (call-batch.ts).
 */
export function stubs(definition: grpc.ServiceDefinition, over: Record<string, unknown>): never {
  const impl: Record<string, unknown> = {};
  for (const name of Object.keys(definition)) {
    impl[name] = () => {
      throw new UnavailableError(`${name} not implemented by the fake`);
    };
  }
  const out: Record<string, unknown> = { ...impl, ...over };
  if ('Calls' in definition && !('Calls' in over)) out.Calls = batchedCalls(definition, () => out, new Set(Object.keys(over)));
  return out as never;
}

/** Whether `pid` is a live process (not gone, not a zombie). */
export function alive(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

/** Kills the process group of each of `pids` (workers are group leaders), those still there. */
export function killGroups(pids: readonly number[]): void {
  for (const pid of pids) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
  }
}

/** A fake server of `fuxi.v1.<service>` on a loopback port: `handlers` answer, every other method is UNAVAILABLE (`stubs`). */
export function startFake(
  proto: ReturnType<typeof loadFuxiProto>,
  service: 'MasterService' | 'AppMasterService',
  handlers: Record<string, unknown>,
): Promise<RunningServer> {
  const definition = proto[service].service;
  return startServer({
    bind: '127.0.0.1:0',
    log: nullLogger,
    services: [{ name: `fuxi.v1.${service}`, definition, handlers: implement(definition, stubs(definition, handlers), nullLogger) }],
  });
}
