/**
 * The agent's process driver when the node hosts AMs: application-master workers the agent marked
 * as hosted (`FUXI_AM_HOSTED=1`: a built-in AM of a job that did not ask for `am: dedicated`) go to
 * the node's AM host (am-host-supervisor.ts); every other worker goes to the real driver. To the
 * agent core a hosted AM is a worker like any other, `am.<attempt>` of `__am__`: it has the host's
 * pid and start time, a worker dir (its log in `stdout`, its `exit` written by the host), its stop
 * is a stop request to the host, and its end, whatever ends it (finish, crash, stop, the host's
 * death), is that worker's exit. So the master's accounting, fencing and AM restarts, and the
 * agent's checkpoint, are the same for both kinds.
 *
 * When the host cannot be started at all, a hosted AM runs as a dedicated one (its command is the
 * agent's `amCommand`).
 *
 * ```ts
 * const driver = new HostedAmDriver(new RealProcessDriver({ workDir }), new AmHostSupervisor({ workDir, command, threadInstances, log }), { workDir });
 * await driver.attach();                      // after an agent restart, before probing
 * ```
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { AM_SU, errorMessage, redactedEnv, nullLogger, UnavailableError, type Logger } from '@fuxi/common';
import type { Liveness, SpawnSpec, WorkerRef } from '../core/agent-core.js';
import type { AmHostSupervisor } from './am-host-supervisor.js';
import { readExitFile, workerDir, type ExitInfo, type ProcessDriver, type RegisteredWorker, type SpawnResult } from './process-driver.js';

/** Set by the agent on the plan of an AM that runs in the node's AM host. */
export const AM_HOSTED_ENV = 'FUXI_AM_HOSTED';

export function isHostedSpawn(spec: Pick<SpawnSpec, 'suId' | 'env'>): boolean {
  return spec.suId === AM_SU && spec.env[AM_HOSTED_ENV] === '1';
}

const keyOf = (w: { appId: string; workerId: string }) => `${w.appId}/${w.workerId}`;

export class HostedAmDriver implements ProcessDriver {
  private readonly log: Logger;
  private exitCb: (e: ExitInfo) => void = () => {};

  constructor(
    private readonly inner: ProcessDriver,
    readonly host: AmHostSupervisor,
    private readonly opts: { workDir: string; log?: Logger },
  ) {
    this.log = opts.log ?? nullLogger;
    inner.onExit((e) => this.exitCb(e));
    host.onExit((e) =>
      this.exitCb({ appId: e.appId, workerId: e.workerId, pid: e.pid, exitCode: e.exitCode, signal: e.signal, ...(e.detail ? { detail: e.detail } : {}) }),
    );
  }

  onExit(cb: (e: ExitInfo) => void): void {
    this.exitCb = cb;
  }

  async attach(): Promise<void> {
    await this.inner.attach?.();
    await this.host.attach();
  }

  async spawn(spec: SpawnSpec): Promise<SpawnResult> {
    if (!isHostedSpawn(spec)) return this.inner.spawn(spec);
    const dir = workerDir(this.opts.workDir, spec.appId, spec.workerId);
    // `recursive` returns the first directory it made: undefined when there was one (an earlier run).
    const made = await fs.promises.mkdir(dir, { recursive: true });
    if (made === undefined) for (const f of ['exit', 'exit.tmp', 'pid', 'family']) await fs.promises.rm(path.join(dir, f), { force: true });
    await fs.promises.writeFile(
      path.join(dir, 'cmd.json'),
      JSON.stringify({ ...spec, env: redactedEnv(spec.env), hosted: true, startedAt: new Date().toISOString() }, null, 2) + '\n',
    );
    const am = { key: keyOf(spec), appId: spec.appId, workerId: spec.workerId, dir, env: spec.env };
    // Sent again once when the host was unavailable: a host that died under the request is
    // replaced, and a connection that closed under it while the host runs is made again (a start
    // is idempotent by key at the host: an AM the first request started is not started twice).
    // When no host can be started at all, the AM runs in a process of its own instead.
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.host.start(am);
      } catch (e) {
        if (!(e instanceof UnavailableError)) throw e;
        if (attempt < 2) continue;
        if (this.host.pid > 0) throw e;
        this.log.warn({ appId: spec.appId, workerId: spec.workerId, err: errorMessage(e) }, 'AM host unavailable; running the AM as a dedicated process');
        return this.inner.spawn(spec);
      }
    }
  }

  kill(pid: number, graceMs?: number, worker?: WorkerRef): void {
    if (worker && this.host.knows(keyOf(worker))) {
      this.host.stop(keyOf(worker), graceMs ?? 5000);
      return;
    }
    // Never the host process itself through the real driver: an AM of it that already ended.
    if (pid > 0 && pid === this.host.pid) {
      this.log.info({ hostPid: pid, ...worker }, 'stop of a hosted AM that has ended: nothing to do');
      return;
    }
    this.inner.kill(pid, graceMs, worker);
  }

  logPath(appId: string, workerId: string, stream: 'stdout' | 'stderr'): string {
    return this.inner.logPath(appId, workerId, stream);
  }

  probe(w: RegisteredWorker): Liveness {
    if (!this.host.isHostProcess(w.pid, w.startTime)) return this.inner.probe ? this.inner.probe(w) : { kind: 'gone' };
    if (this.host.wasRunning(keyOf(w))) return { kind: 'alive', pid: w.pid, startTime: w.startTime, bootId: w.bootId };
    const dir = workerDir(this.opts.workDir, w.appId, w.workerId);
    const code = readExitFile(dir);
    if (code === null) return { kind: 'gone' };
    try {
      return { kind: 'exited', exitCode: code, atMs: Math.floor(fs.statSync(path.join(dir, 'exit')).mtimeMs) };
    } catch {
      return { kind: 'exited', exitCode: code };
    }
  }

  adopt(w: RegisteredWorker): void {
    if (this.host.isHostProcess(w.pid, w.startTime)) this.host.adopt(keyOf(w), w.appId, w.workerId);
    else this.inner.adopt?.(w);
  }

  /** After the agent's restore (every live worker adopted): the host's AMs no worker claimed are stopped. */
  restored(graceMs: number): void {
    this.host.stopUnclaimed(graceMs);
  }

  close(): void {
    this.inner.close();
    this.host.close();
  }
}
