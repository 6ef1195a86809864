/**
 * The agent's side of the node's AM host (docs/architecture.md, "The AM host"): it starts the
 * `fuxi-amhost` process like a worker (its own session and process group, stdout and stderr in
 * `<workDir>/amhost/host.log`, no pipe to the agent, so it outlives an agent restart), records it in
 * `<workDir>/amhost/host.json` (pid, /proc start time, boot id, socket), and talks to it over a unix
 * socket there (`host.sock`; under the temp dir when that path is too long for a socket).
 *
 * - **Start** at the node's first hosted AM, then long-lived; again at once when it dies while it
 *   held AMs (their new attempts are on their way).
 * - **Restart of the agent** (`attach`): the recorded host is adopted when it is still the same
 *   process (pid + start time + boot id, never a reused pid) and answers; what it lists as running
 *   is what `probe` calls alive. A recorded host that runs but does not answer is killed.
 * - **Death** of the host (its exit when it is the agent's child, the end of the connection, or
 *   its process gone from /proc) is the exit of every AM it held (signal, or "ended with the AM
 *   host"), so the master restarts each of them from its snapshot as a new attempt.
 * - **Hang**: a host that answers no ping for `hangMs` of the agent's own running time is killed
 *   (SIGKILL to its process group), which is the death above.
 *
 * ```ts
 * const host = new AmHostSupervisor({ workDir, command: cfg.amHostCommand, threadInstances: 10_000, log });
 * host.onExit((e) => report(e.appId, e.workerId, e.exitCode, e.signal));
 * await host.attach();                       // after an agent restart, before probing workers
 * const { pid, startTime } = await host.start({ key, appId, workerId, dir, env });
 * host.stop(key, 5000);
 * ```
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { errorMessage, nullLogger, UnavailableError, type AmHostExitEvent, type AmHostStats, type HostedAmSpec, type Logger } from '@fuxi/common';
import { AmHostConnection } from './am-host-client.js';
import { readBootId, readExitFile, readStartTime, sameProcessAlive, workerDir } from './process-driver.js';

/** The host process as the agent records it. */
export interface HostRecord {
  pid: number;
  startTime: string;
  bootId: string;
  socket: string;
}

export interface HostedExit {
  appId: string;
  workerId: string;
  /** The host's pid (the pid the agent recorded for the AM). */
  pid: number;
  exitCode: number | null;
  signal: string | null;
  /** Set when the host itself ended (both null otherwise means nothing is known). */
  detail?: string;
}

export interface AmHostSupervisorOptions {
  workDir: string;
  /** argv of `fuxi-amhost` (the agent setting `amHostCommand`). */
  command: string[];
  threadInstances: number;
  logLevel?: string;
  log?: Logger;
  /** A host answering no ping this long (agent running time) is killed. Default 20 s. */
  hangMs?: number;
  /** Ping period. Default 1 s. */
  pingMs?: number;
  /** A new host must accept a connection within this. Default 15 s. */
  startTimeoutMs?: number;
  /** How long a start of an AM may wait for the host's answer. Default 5 s. */
  requestTimeoutMs?: number;
  /** The host exits after this long with no AM and no agent. Default 60 s. */
  idleExitMs?: number;
}

export const DEFAULT_AM_HOST_HANG_MS = 20_000;

/** Where the socket goes: `<hostDir>/host.sock`, or under the temp dir when that is too long for a socket. */
export function amHostSocketPath(hostDir: string): string {
  const p = path.join(hostDir, 'host.sock');
  if (Buffer.byteLength(p) <= 100) return p;
  return path.join(os.tmpdir(), `fuxi-amhost-${createHash('sha1').update(path.resolve(hostDir)).digest('hex').slice(0, 16)}.sock`);
}

/** The recorded host of `<workDir>/amhost/host.json`, if any (tests and cluster tools read it too). */
export function readHostRecord(workDir: string): HostRecord | undefined {
  try {
    const r = JSON.parse(fs.readFileSync(path.join(workDir, 'amhost', 'host.json'), 'utf8')) as Partial<HostRecord>;
    if (typeof r.pid !== 'number' || r.pid <= 0 || typeof r.startTime !== 'string' || typeof r.socket !== 'string') return undefined;
    return { pid: r.pid, startTime: r.startTime, bootId: r.bootId ?? '', socket: r.socket };
  } catch {
    return undefined;
  }
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export class AmHostSupervisor {
  private readonly log: Logger;
  private readonly hostDir: string;
  private readonly socketPath: string;
  /** The live host (started or adopted by this agent run). */
  private current: HostRecord | undefined;
  /** The host an earlier agent run recorded (its AMs are recognised by its pid and start time). */
  private previous: HostRecord | undefined;
  private conn: AmHostConnection | undefined;
  private child: ChildProcess | undefined;
  private ensuring: Promise<void> | undefined;
  private reconnecting: Promise<void> | undefined;
  /** Hosted AMs this agent knows to be running in the current host: key -> worker (and its dir, where the host writes `exit`). */
  private readonly known = new Map<string, { appId: string; workerId: string; dir: string }>();
  /** Stops asked for while no connection was open (or lost with one): sent when it is open again. */
  private readonly pendingStops = new Map<string, number>();
  /** Keys the adopted host listed as running at attach. */
  private listed = new Set<string>();
  /** Exits of keys not known yet (ended between attach and adopt). */
  private readonly endedEarly = new Map<string, AmHostExitEvent>();
  private exitCb: (e: HostedExit) => void = () => {};
  private timer: NodeJS.Timeout | undefined;
  private pingOutstanding = false;
  private silentMs = 0;
  private lastTick = 0;
  private closed = false;

  constructor(private readonly opts: AmHostSupervisorOptions) {
    this.log = opts.log ?? nullLogger;
    this.hostDir = path.join(opts.workDir, 'amhost');
    this.socketPath = amHostSocketPath(this.hostDir);
  }

  onExit(cb: (e: HostedExit) => void): void {
    this.exitCb = cb;
  }

  /** The live host's pid (0: none). */
  get pid(): number {
    return this.current?.pid ?? 0;
  }

  /** Hosted AMs running (as far as this agent knows). */
  get running(): number {
    return this.known.size;
  }

  /** True when (pid, startTime) is the AM host, of this agent run or of the one before. */
  isHostProcess(pid: number, startTime: string): boolean {
    return [this.current, this.previous].some((r) => !!r && r.pid === pid && r.startTime === startTime);
  }

  /** After attach: did the adopted host list `key` as running? */
  wasRunning(key: string): boolean {
    return this.listed.has(key);
  }

  knows(key: string): boolean {
    return this.known.has(key);
  }

  /**
   * After an agent restart, before its workers are probed: adopts the host an earlier run
   * recorded when it is still that process and answers (its running AMs then probe alive).
   */
  async attach(): Promise<void> {
    const rec = readHostRecord(this.opts.workDir);
    if (!rec) return;
    this.previous = rec;
    const bootId = readBootId();
    if ((rec.bootId && bootId && rec.bootId !== bootId) || !sameProcessAlive(rec.pid, rec.startTime)) {
      this.log.info({ hostPid: rec.pid }, 'the AM host of the earlier agent run is gone; its AMs count as ended');
      return;
    }
    try {
      const ams = await this.connect(rec, 5000);
      this.current = rec;
      this.listed = new Set(ams);
      this.log.info({ hostPid: rec.pid, ams: ams.length }, 'AM host of the earlier agent run adopted');
    } catch (e) {
      this.log.warn({ hostPid: rec.pid, err: errorMessage(e) }, 'the AM host of the earlier agent run does not answer: killed; its AMs count as ended');
      this.kill(rec);
      this.conn?.close();
      this.conn = undefined;
    }
  }

  /** Starts a hosted AM (starting the host first when none runs). Resolves with the host's identity. */
  async start(spec: HostedAmSpec): Promise<{ pid: number; startTime: string; bootId: string }> {
    await this.ensure();
    const rec = this.current;
    const conn = this.conn;
    if (!rec || !conn) throw new UnavailableError('the AM host is not running');
    this.endedEarly.delete(spec.key);
    try {
      await conn.request({ op: 'start', am: spec }, this.opts.requestTimeoutMs ?? 5000);
    } catch (e) {
      // No answer in time, the connection still open: the host may have started it all the same,
      // and nobody would ever watch or stop it. The spawn fails, so it must not run.
      if (!conn.isClosed) conn.request({ op: 'stop', key: spec.key, graceMs: 0 }).catch(() => undefined);
      throw e;
    }
    this.known.set(spec.key, { appId: spec.appId, workerId: spec.workerId, dir: spec.dir });
    // Its exit came in the same read as the answer, before this continuation: reported a turn
    // later, after the agent has taken the spawn (an exit before it would be dropped).
    const early = this.endedEarly.get(spec.key);
    if (early) {
      this.endedEarly.delete(spec.key);
      setImmediate(() => this.hostExit(early));
    }
    return { pid: rec.pid, startTime: rec.startTime, bootId: rec.bootId };
  }

  /** Stops a hosted AM (its end comes as an exit). */
  stop(key: string, graceMs: number): void {
    if (!this.known.has(key)) {
      this.log.warn({ key }, 'stop of an AM the AM host does not run: nothing to do');
      return;
    }
    const conn = this.conn;
    if (!conn || conn.isClosed) {
      // Sent once the connection is open again; the host's death ends the AM anyway.
      this.pendingStops.set(key, graceMs);
      return;
    }
    conn.request({ op: 'stop', key, graceMs }, graceMs + 5000).catch((e: unknown) => {
      if (!this.known.has(key)) return;
      this.log.warn({ key, err: errorMessage(e) }, 'AM host did not take the stop; asked again once it answers');
      this.pendingStops.set(key, graceMs);
    });
  }

  /** A re-adopted hosted AM (after attach): its exit comes from the host. */
  adopt(key: string, appId: string, workerId: string): void {
    const pid = this.current?.pid ?? this.previous?.pid ?? 0;
    const early = this.endedEarly.get(key);
    if (early) {
      this.endedEarly.delete(key);
      setImmediate(() => this.exitCb({ appId, workerId, pid, exitCode: early.exitCode, signal: early.signal }));
      return;
    }
    if (!this.current) {
      setImmediate(() => this.exitCb({ appId, workerId, pid, exitCode: null, signal: null, detail: 'ended with the AM host' }));
      return;
    }
    this.known.set(key, { appId, workerId, dir: workerDir(this.opts.workDir, appId, workerId) });
  }

  /**
   * After the restore: AMs the adopted host runs that no worker of the checkpoint claimed (their
   * registry entries were lost) are stopped; nothing would ever watch or stop them otherwise.
   */
  stopUnclaimed(graceMs: number): void {
    const conn = this.conn;
    if (!conn) return;
    for (const key of this.listed) {
      if (this.known.has(key)) continue;
      this.log.warn({ key }, 'AM in the AM host that no worker of the checkpoint names: stopped');
      conn.request({ op: 'stop', key, graceMs }, graceMs + 5000).catch(() => undefined);
    }
    this.listed.clear();
  }

  /** The live host's stats (its AMs' instances and retries among them); undefined when no host runs or it does not answer. */
  async stats(timeoutMs = 1000): Promise<AmHostStats | undefined> {
    const conn = this.conn;
    if (!conn || !this.current) return undefined;
    try {
      return (await conn.request({ op: 'stats' }, timeoutMs)).stats;
    } catch {
      return undefined;
    }
  }

  /** Stops watching; the host and its AMs keep running (like workers across an agent restart). */
  close(): void {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.conn?.close();
    this.conn = undefined;
  }

  /** Kills the live host (tests: its crash). */
  killHost(): void {
    if (this.current) this.kill(this.current);
  }

  // ---------------------------------------------------------------- the host process

  private ensure(): Promise<void> {
    if (this.closed) return Promise.reject(new UnavailableError('the agent is stopping'));
    if (this.current && this.conn && !this.conn.isClosed) return Promise.resolve();
    // A live host whose connection dropped is connected to again, never doubled: a second host
    // would take over the socket, and the first one's AMs would be neither watched nor stopped.
    const rec = this.current;
    this.ensuring ??= (rec && sameProcessAlive(rec.pid, rec.startTime) ? this.reconnect(rec, 2000) : this.startHost()).finally(
      () => (this.ensuring = undefined),
    );
    return this.ensuring;
  }

  private async startHost(): Promise<void> {
    await fs.promises.mkdir(this.hostDir, { recursive: true });
    const [cmd, ...args] = this.opts.command;
    if (!cmd) throw new UnavailableError('no AM host command configured');
    const fd = fs.openSync(path.join(this.hostDir, 'host.log'), 'a');
    let child: ChildProcess;
    try {
      child = spawn(
        cmd,
        [
          ...args,
          '--socket',
          this.socketPath,
          '--thread-instances',
          String(this.opts.threadInstances),
          '--idle-exit-ms',
          String(this.opts.idleExitMs ?? 60_000),
          '--log-level',
          this.opts.logLevel ?? 'info',
        ],
        { cwd: this.hostDir, detached: true, stdio: ['ignore', fd, fd] },
      );
    } finally {
      fs.closeSync(fd);
    }
    const pid = child.pid;
    if (pid === undefined) {
      const err = await new Promise<Error>((r) => child.once('error', r));
      throw new UnavailableError(`the AM host could not be started (${cmd}): ${err.message}`);
    }
    child.on('error', () => undefined);
    child.unref();
    const rec: HostRecord = { pid, startTime: readStartTime(pid), bootId: readBootId(), socket: this.socketPath };
    this.child = child;
    this.current = rec;
    let exited = false;
    child.once('exit', (code, signal) => {
      exited = true;
      if (this.child === child) this.child = undefined;
      this.gone(rec, signal ? `killed by ${signal}` : `exited with code ${code}`, signal);
    });
    const tmp = path.join(this.hostDir, 'host.json.tmp');
    await fs.promises.writeFile(tmp, JSON.stringify(rec) + '\n');
    await fs.promises.rename(tmp, path.join(this.hostDir, 'host.json'));
    const until = Date.now() + (this.opts.startTimeoutMs ?? 15_000);
    for (;;) {
      if (exited || this.current !== rec)
        throw new UnavailableError(`the AM host (pid ${pid}) ended while starting; see ${path.join(this.hostDir, 'host.log')}`);
      try {
        await this.connect(rec, 1000);
        break;
      } catch (e) {
        if (Date.now() > until) {
          this.kill(rec);
          throw new UnavailableError(`the AM host (pid ${pid}) did not answer within its start timeout: ${errorMessage(e)}`);
        }
        await sleep(50);
      }
    }
    this.log.info({ hostPid: pid, socket: this.socketPath }, 'AM host started');
  }

  /** Opens the connection as the host's agent; resolves with the keys it runs. */
  private async connect(rec: HostRecord, timeoutMs: number): Promise<string[]> {
    const conn = await AmHostConnection.open(rec.socket, { timeoutMs });
    // Before the hello: an exit the host sends right after its answer (in the same read) is not lost.
    conn.onEvent((e) => this.hostExit(e));
    let hello;
    try {
      hello = await conn.request({ op: 'hello', role: 'agent' }, timeoutMs);
    } catch (e) {
      conn.close();
      throw e;
    }
    this.conn?.close();
    this.conn = conn;
    conn.onClose(() => this.connectionLost(rec, conn));
    this.silentMs = 0;
    this.pingOutstanding = false;
    this.lastTick = Date.now();
    if (!this.timer && !this.closed) {
      this.timer = setInterval(() => this.tick(), this.opts.pingMs ?? 1000);
      this.timer.unref();
    }
    return (hello.ams ?? []).map((a) => a.key);
  }

  /**
   * Connects again to the live host `rec` after its connection dropped. What it lists is matched
   * with what this agent knows: an AM it no longer runs ended meanwhile (its exit event went to no
   * one), and its end is read from its `exit` file; stops asked for meanwhile are sent now.
   */
  private reconnect(rec: HostRecord, timeoutMs: number): Promise<void> {
    // A host being started (or connected to) by `ensure` is connected to by that alone: a second
    // agent connection would take the host over from the first, cutting off a start sent on it.
    if (this.ensuring) return this.ensuring;
    // One at a time: the connection loss, the tick and a start all ask for it.
    this.reconnecting ??= this.reconnectOnce(rec, timeoutMs).finally(() => (this.reconnecting = undefined));
    return this.reconnecting;
  }

  private async reconnectOnce(rec: HostRecord, timeoutMs: number): Promise<void> {
    const running = new Set(await this.connect(rec, timeoutMs));
    if (this.current !== rec) return;
    for (const [key, w] of [...this.known]) {
      if (running.has(key)) continue;
      this.known.delete(key);
      this.pendingStops.delete(key);
      const code = readExitFile(w.dir);
      this.log.info({ key, exitCode: code }, 'hosted AM ended while the AM host connection was down');
      this.exitCb({
        appId: w.appId,
        workerId: w.workerId,
        pid: rec.pid,
        exitCode: code,
        signal: null,
        ...(code === null ? { detail: 'ended while the agent was not connected to its AM host' } : {}),
      });
    }
    const conn = this.conn;
    for (const [key, graceMs] of [...this.pendingStops]) {
      this.pendingStops.delete(key);
      if (this.known.has(key) && conn) this.stop(key, graceMs);
    }
  }

  private hostExit(e: AmHostExitEvent): void {
    const w = this.known.get(e.key);
    if (!w) {
      if (this.endedEarly.size >= 1000) this.endedEarly.delete(this.endedEarly.keys().next().value as string);
      this.endedEarly.set(e.key, e);
      return;
    }
    this.known.delete(e.key);
    this.pendingStops.delete(e.key);
    this.exitCb({ appId: w.appId, workerId: w.workerId, pid: this.current?.pid ?? 0, exitCode: e.exitCode, signal: e.signal });
  }

  /** The connection ended: the host died (its AMs with it), or it is still there (connect again). */
  private connectionLost(rec: HostRecord, conn: AmHostConnection): void {
    if (this.closed || this.conn !== conn) return;
    this.conn = undefined;
    if (!sameProcessAlive(rec.pid, rec.startTime)) {
      // The agent's own child: its exit event says how it ended (a signal); else it is gone now.
      if (this.child) setTimeout(() => this.gone(rec, 'its process is gone', null), 500).unref();
      else this.gone(rec, 'its process is gone', null);
      return;
    }
    this.log.warn({ hostPid: rec.pid }, 'AM host connection lost while the host runs; connecting again');
    void this.reconnect(rec, 2000).catch((e: unknown) =>
      this.log.warn({ hostPid: rec.pid, err: errorMessage(e) }, 'AM host not reachable; the hang check decides'),
    );
  }

  /** Every AM of the host ended with it; a new host starts at once when there were any. */
  private gone(rec: HostRecord, why: string, signal: string | null): void {
    if (this.current !== rec) return;
    this.current = undefined;
    this.conn?.close();
    this.conn = undefined;
    const ams = [...this.known.values()];
    this.known.clear();
    this.pendingStops.clear();
    this.listed.clear();
    fs.rmSync(path.join(this.hostDir, 'host.json'), { force: true });
    this.log.warn({ hostPid: rec.pid, why, ams: ams.length }, 'AM host ended: every AM it held ended with it');
    const detail = `ended with the AM host (pid ${rec.pid}: ${why})`;
    for (const a of ams) this.exitCb({ appId: a.appId, workerId: a.workerId, pid: rec.pid, exitCode: null, signal, detail });
    if (ams.length > 0 && !this.closed) void this.ensure().catch((e: unknown) => this.log.warn({ err: errorMessage(e) }, 'AM host could not be started again'));
  }

  /** Liveness and hang check: pings, counting only the agent's own on-time ticks. */
  private tick(): void {
    const rec = this.current;
    const now = Date.now();
    const period = this.opts.pingMs ?? 1000;
    const onTime = now - this.lastTick < 2 * period;
    this.lastTick = now;
    if (!rec || this.closed) return;
    if (!this.child && !sameProcessAlive(rec.pid, rec.startTime)) {
      this.gone(rec, 'its process is gone', null);
      return;
    }
    const conn = this.conn;
    if (this.pingOutstanding || !conn) {
      // An agent that was itself paused sees every ping late: only its on-time ticks count.
      this.silentMs = onTime ? this.silentMs + period : 0;
      if (this.silentMs >= (this.opts.hangMs ?? DEFAULT_AM_HOST_HANG_MS)) {
        this.log.error({ hostPid: rec.pid, silentMs: this.silentMs }, 'AM host answers nothing: killed (its AMs are restarted by the master)');
        this.silentMs = 0;
        this.kill(rec);
      }
      if (!conn) void this.reconnect(rec, Math.min(2000, period)).catch(() => undefined);
      return;
    }
    this.pingOutstanding = true;
    conn.request({ op: 'ping' }, (this.opts.hangMs ?? DEFAULT_AM_HOST_HANG_MS) + period).then(
      () => {
        this.pingOutstanding = false;
        this.silentMs = 0;
      },
      () => {
        this.pingOutstanding = false;
      },
    );
  }

  /** SIGKILL to the host's process group, after checking it is still that process. */
  private kill(rec: HostRecord): void {
    if (!sameProcessAlive(rec.pid, rec.startTime)) return;
    try {
      process.kill(-rec.pid, 'SIGKILL');
    } catch {
      try {
        process.kill(rec.pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
  }
}
