/**
 * The simulated-node hosts of one experiment case (test/src/sim/agent-host.ts with `--control`):
 * each a process serving many virtual nodes, driven through its stdin control channel; replies and
 * fault-recovery lines are read back from its log.
 *
 * ```ts
 * const host = await SimHost.start({ index: 0, prefix: 'h1', nodes: 150, masters, dir, cpu: '23', memory: '82Gi' });
 * await host.command('crash-agent', 'h1-n001', '1000');
 * const stats = await host.command('stats');
 * await host.stop();
 * ```
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, mkdirSync, openSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LogTail, terminate, type LogRecord } from '@fuxi/deploy';

const here = dirname(fileURLToPath(import.meta.url));
/** test/dist/bench/paper -> test/dist/sim/agent-host.js */
export const HOST_BIN = join(here, '..', '..', 'sim', 'agent-host.js');

export const HOST_LOG_MSGS = ['host ready', 'control reply', 'agent restarted', 'agent resumed', 'agent restart failed', 'am resumed'] as const;

export interface SimHostOptions {
  index: number;
  prefix: string;
  nodes: number;
  masters: readonly string[];
  dir: string;
  cpu: string;
  memory: string;
  racks?: number;
  agentLogLevel?: string;
  startTimeoutMs?: number;
  /** Hidden failure proneness of nodes (agent-host.ts `--proneness`, JSON). */
  proneness?: string;
}

export class SimHost {
  private nextId = 1;
  agents: Array<{ nodeId: string; address: string }> = [];

  private constructor(
    readonly opts: SimHostOptions,
    readonly child: ChildProcess,
    readonly logFile: string,
    readonly log: LogTail,
  ) {}

  static async start(o: SimHostOptions): Promise<SimHost> {
    const logFile = join(o.dir, `${o.prefix}.log`);
    mkdirSync(dirname(logFile), { recursive: true });
    const fd = openSync(logFile, 'a');
    const args = [
      HOST_BIN,
      '--control',
      '--master',
      o.masters.join(','),
      '--nodes',
      String(o.nodes),
      '--prefix',
      o.prefix,
      '--cpu',
      o.cpu,
      '--memory',
      o.memory,
      '--racks',
      String(o.racks ?? 5),
      '--work-dir',
      join(o.dir, o.prefix),
      '--pid-base',
      String(5_000_000 + o.index * 20_000_000),
      '--log-level',
      'info',
      '--agent-log-level',
      o.agentLogLevel ?? 'warn',
      ...(o.proneness ? ['--proneness', o.proneness] : []),
    ];
    const child = spawn(process.execPath, args, { stdio: ['pipe', fd, fd] });
    closeSync(fd);
    child.on('error', () => undefined);
    child.stdin?.on('error', () => undefined);
    const host = new SimHost(o, child, logFile, new LogTail(logFile, HOST_LOG_MSGS));
    try {
      const rec = await host.log.waitFor((r) => r.msg === 'host ready' && r.pid === child.pid, {
        what: '"host ready"',
        child,
        timeoutMs: o.startTimeoutMs ?? 120_000,
      });
      host.agents = rec.agents as SimHost['agents'];
    } catch (e) {
      await terminate(child);
      throw e;
    }
    return host;
  }

  get pid(): number {
    return this.child.pid ?? 0;
  }

  owns(nodeId: string): boolean {
    return nodeId.startsWith(`${this.opts.prefix}-`);
  }

  /** Sends a control command; resolves with its "control reply" record. */
  async command(cmd: string, ...args: string[]): Promise<LogRecord> {
    const id = `c${this.nextId++}`;
    if (!this.child.stdin || this.child.stdin.destroyed) throw new Error(`${this.opts.prefix}: control channel closed`);
    this.child.stdin.write(`${id} ${[cmd, ...args].join(' ')}\n`);
    return this.log.waitFor((r) => r.msg === 'control reply' && r.id === id && r.pid === this.child.pid, {
      what: `reply to ${cmd}`,
      child: this.child,
      timeoutMs: 60_000,
    });
  }

  /** Records of `msg` logged since the host started (e.g. "agent restarted"). */
  records(msg: string): LogRecord[] {
    this.log.poll();
    return this.log.records.filter((r) => r.msg === msg && r.pid === this.child.pid);
  }

  async stop(): Promise<void> {
    this.child.stdin?.end();
    await terminate(this.child, 10_000);
  }
}
