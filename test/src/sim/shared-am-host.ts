/**
 * One real AM host (`fuxi-amhost`) for every virtual node of a simulated-node host: the AM workers
 * of all its agents run in that one process, as they would in a node's AM host (the AM host
 * benchmark measures that process's event loop). A `runAppMaster` for `SimProcessDriver`.
 *
 * ```ts
 * const shared = new SharedAmHost({ workDir, threadInstances: 10_000, log });
 * const driver = new SimProcessDriver({ pids, runAppMaster: (spec) => shared.run(spec) });
 * ```
 */
import { join } from 'node:path';
import { AmHostSupervisor, DEFAULT_AM_HOST_COMMAND, type SpawnSpec } from '@fuxi/agent';
import { errorMessage, type Logger } from '@fuxi/common';
import type { SimAppMasterHandle } from './sim-driver.js';

export class SharedAmHost {
  private readonly host: AmHostSupervisor;
  private readonly waiting = new Map<string, (code: number) => void>();

  constructor(private readonly opts: { workDir: string; threadInstances: number; log: Logger; command?: string[] }) {
    this.host = new AmHostSupervisor({
      workDir: opts.workDir,
      command: opts.command ?? DEFAULT_AM_HOST_COMMAND,
      threadInstances: opts.threadInstances,
      log: opts.log,
    });
    this.host.onExit((e) => {
      const key = `${e.appId}/${e.workerId}`;
      this.waiting.get(key)?.(e.exitCode ?? 1);
      this.waiting.delete(key);
    });
  }

  /** Starts the AM worker in the shared host. */
  run(spec: SpawnSpec): SimAppMasterHandle {
    const key = `${spec.appId}/${spec.workerId}`;
    const dir = join(this.opts.workDir, 'apps', spec.appId, spec.workerId);
    const exited = new Promise<number>((resolve) => this.waiting.set(key, resolve));
    this.host.start({ key, appId: spec.appId, workerId: spec.workerId, dir, env: spec.env }).catch((e: unknown) => {
      this.opts.log.warn({ key, err: errorMessage(e) }, 'AM could not start in the shared AM host');
      this.waiting.get(key)?.(1);
      this.waiting.delete(key);
    });
    return { exited, kill: () => this.host.stop(key, 1000) };
  }

  /** Ends the host and its AMs. */
  close(): void {
    this.host.killHost();
    this.host.close();
  }
}
