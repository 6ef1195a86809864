/**
 * Test doubles for agent restart suites: a fake master (register / heartbeat / report, with a grant
 * table it answers heartbeats with when the agent's seq differs, like the real one), a fake AM
 * (records WorkerEvents), and the agent binary run as a child process.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { nullLogger, UnavailableError } from '@fuxi/common';
import {
  loadFuxiProto,
  type Grant,
  type HeartbeatRequest__Output,
  type HeartbeatResponse,
  type RegisterAgentRequest__Output,
  type RegisterAgentResponse,
  type ReportAgentStateRequest__Output,
  type WorkerEventsRequest__Output,
  type WorkerStatus__Output,
} from '@fuxi/proto';
import { implement, startServer, type RunningServer } from '@fuxi/rpc';
import { stubs, waitFor } from './helpers.js';

export { waitFor };

export interface Stamped<T> {
  at: number;
  req: T;
}

export class FakeMaster {
  server!: RunningServer;
  epoch: string;
  /** The master's grant table for the node and its seq. */
  seq = '0';
  grants: Grant[] = [];
  down = false;
  wantReport = false;
  readonly registrations: Array<Stamped<RegisterAgentRequest__Output>> = [];
  readonly heartbeats: Array<Stamped<HeartbeatRequest__Output>> = [];
  readonly reports: Array<Stamped<ReportAgentStateRequest__Output>> = [];
  /** Heartbeats answered with the full table. */
  fullTablesSent = 0;

  constructor(epoch: string) {
    this.epoch = epoch;
  }

  get address(): string {
    return this.server.address;
  }

  private gate(): void {
    if (this.down) throw new UnavailableError('no leader right now');
  }

  async start(): Promise<this> {
    const def = loadFuxiProto().MasterService.service;
    const handlers = stubs(def, {
      RegisterAgent: (req: RegisterAgentRequest__Output): RegisterAgentResponse => {
        this.gate();
        this.registrations.push({ at: Date.now(), req });
        return { epoch: this.epoch, heartbeatIntervalMs: 200, reportState: this.wantReport && this.reports.length === 0 };
      },
      Heartbeat: (req: HeartbeatRequest__Output): HeartbeatResponse => {
        this.gate();
        this.heartbeats.push({ at: Date.now(), req });
        if (this.wantReport && this.reports.length === 0) return { epoch: this.epoch, reportState: true };
        if (req.grantSeq !== this.seq) {
          this.fullTablesSent++;
          return { epoch: this.epoch, fullGrants: true, grantSeq: this.seq, grants: this.grants };
        }
        return { epoch: this.epoch };
      },
      ReportAgentState: (req: ReportAgentStateRequest__Output) => {
        this.gate();
        this.reports.push({ at: Date.now(), req });
        return {};
      },
    });
    this.server = await startServer({
      bind: '127.0.0.1:0',
      log: nullLogger,
      services: [{ name: 'fuxi.v1.MasterService', definition: def, handlers: implement(def, handlers, nullLogger) }],
    });
    return this;
  }

  heartbeatsSince(t: number): Array<Stamped<HeartbeatRequest__Output>> {
    return this.heartbeats.filter((h) => h.at >= t);
  }

  async stop(): Promise<void> {
    await this.server?.shutdown(100);
  }
}

export class FakeAm {
  server!: RunningServer;
  readonly events: Array<{ at: number; event: WorkerStatus__Output }> = [];

  get address(): string {
    return this.server.address;
  }

  async start(): Promise<this> {
    const def = loadFuxiProto().AppMasterService.service;
    const handlers = stubs(def, {
      WorkerEvents: (req: WorkerEventsRequest__Output) => {
        for (const e of req.events) this.events.push({ at: Date.now(), event: e });
        return {};
      },
    });
    this.server = await startServer({
      bind: '127.0.0.1:0',
      log: nullLogger,
      services: [{ name: 'fuxi.v1.AppMasterService', definition: def, handlers: implement(def, handlers, nullLogger) }],
    });
    return this;
  }

  eventsOf(workerId: string, since = 0): WorkerStatus__Output[] {
    return this.events.filter((e) => e.at >= since && e.event.workerId === workerId).map((e) => e.event);
  }

  async stop(): Promise<void> {
    await this.server?.shutdown(100);
  }
}

/** The agent binary (`dist/shell/main.js`) as a child process; its JSON log lines are collected. */
export class AgentProcess {
  readonly child: ChildProcess;
  readonly lines: Array<{ at: number; line: Record<string, unknown> }> = [];
  readonly startedAt = Date.now();
  address = '';
  readyAt = 0;
  exited = false;
  private buf = '';

  constructor(args: string[]) {
    const main = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'main.js');
    this.child = spawn(process.execPath, [main, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    this.child.on('exit', () => (this.exited = true));
    const onData = (chunk: Buffer): void => {
      this.buf += chunk.toString('utf8');
      let i: number;
      while ((i = this.buf.indexOf('\n')) >= 0) {
        const text = this.buf.slice(0, i);
        this.buf = this.buf.slice(i + 1);
        let line: Record<string, unknown>;
        try {
          line = JSON.parse(text) as Record<string, unknown>;
        } catch {
          line = { msg: text };
        }
        this.lines.push({ at: Date.now(), line });
        if (line.msg === 'agent ready' && !this.readyAt) {
          this.readyAt = Date.now();
          this.address = String(line.address);
        }
      }
    };
    this.child.stdout!.on('data', onData);
    this.child.stderr!.on('data', onData);
  }

  get pid(): number {
    return this.child.pid ?? 0;
  }

  async ready(ms = 15_000): Promise<this> {
    await waitFor(() => this.readyAt > 0 || this.exited, ms, 'the agent to be ready');
    if (!this.readyAt) throw new Error(`the agent exited before it was ready:\n${this.lines.map((l) => JSON.stringify(l.line)).join('\n')}`);
    return this;
  }

  log(msg: string): Record<string, unknown> | undefined {
    return this.lines.find((l) => l.line.msg === msg)?.line;
  }

  /** kill -9: no cleanup of any kind. */
  async crash(): Promise<void> {
    if (this.exited) return;
    process.kill(this.pid, 'SIGKILL');
    await waitFor(() => this.exited, 5000, 'the agent to die');
  }
}
