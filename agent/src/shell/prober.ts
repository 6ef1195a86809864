/**
 * The agent's UDP prober and probe responder: one socket on the agent's advertised IP (port: the
 * agent's gRPC port unless `probe.port` says otherwise) that pings the probe targets every period
 * and answers every ping it gets. Decisions are the core's (core/probes.ts); this file owns the
 * socket, the timer and the datagrams.
 *
 * A datagram (`encodeProbe`), 10 bytes plus the node id:
 *
 * | bytes | what |
 * | --- | --- |
 * | 0-3 | magic `FXPB` |
 * | 4 | kind: 1 ping, 2 pong |
 * | 5 | length L of the node id (1-255 bytes of UTF-8) |
 * | 6 .. 6+L | the sender's node id |
 * | 6+L .. 10+L | the round (uint32, big-endian) |
 *
 * A pong carries the responder's own node id and the ping's round. Anything else (short, another
 * magic or kind, a bad length) is counted as garbage and dropped; a pong from a peer that is not
 * a target, or for a round not sent, is dropped by the core. Send errors (a firewall dropping the
 * packet on the way out, no route) are a missed answer like any other.
 *
 * ```ts
 * const p = new Prober({ nodeId: 'a1', host: '10.0.0.1', port: 7071, periodMs: 200, misses: 3, log });
 * await p.start();
 * p.core.setTargets(3, [{ nodeId: 'a2', address: '10.0.0.2:7071' }], Date.now());
 * p.core.report(); // into the heartbeat
 * p.stop();
 * ```
 */
import * as dgram from 'node:dgram';
import { isIPv6 } from 'node:net';
import { errorMessage, hostOf, InvalidArgumentError, nullLogger, portOf, type Logger } from '@fuxi/common';
import { ProbeCore, type ProbeChange } from '../core/probes.js';

export const PROBE_MAGIC = 'FXPB';
const PING = 1;
const PONG = 2;
const HEADER = 6;
const MAX_ID_BYTES = 255;

export interface ProbeDatagram {
  kind: 'ping' | 'pong';
  nodeId: string;
  seq: number;
}

/** The datagram of a ping or pong from `nodeId` for round `seq`. */
export function encodeProbe(d: ProbeDatagram): Buffer {
  const id = Buffer.from(d.nodeId, 'utf8');
  if (id.length < 1 || id.length > MAX_ID_BYTES) throw new RangeError(`node id of ${id.length} bytes`);
  const buf = Buffer.alloc(HEADER + id.length + 4);
  buf.write(PROBE_MAGIC, 0, 'latin1');
  buf[4] = d.kind === 'ping' ? PING : PONG;
  buf[5] = id.length;
  id.copy(buf, HEADER);
  buf.writeUInt32BE(d.seq >>> 0, HEADER + id.length);
  return buf;
}

/** The datagram's ping or pong, or undefined for anything that is not one. */
export function decodeProbe(buf: Buffer): ProbeDatagram | undefined {
  if (buf.length < HEADER + 1 + 4 || buf.toString('latin1', 0, 4) !== PROBE_MAGIC) return undefined;
  const kind = buf[4] === PING ? 'ping' : buf[4] === PONG ? 'pong' : undefined;
  const len = buf[5]!;
  if (!kind || len < 1 || buf.length !== HEADER + len + 4) return undefined;
  return { kind, nodeId: buf.toString('utf8', HEADER, HEADER + len), seq: buf.readUInt32BE(HEADER + len) };
}

/** The size of a ping or pong of `nodeId` (bytes of UDP payload). */
export function probeDatagramBytes(nodeId: string): number {
  return HEADER + Buffer.byteLength(nodeId, 'utf8') + 4;
}

export interface ProbeStats {
  pingsSent: number;
  pongsSent: number;
  pingsReceived: number;
  pongsReceived: number;
  /** UDP payload bytes. */
  bytesSent: number;
  bytesReceived: number;
  /** Datagrams that were no ping or pong. */
  garbage: number;
  sendErrors: number;
}

export interface ProberOptions {
  nodeId: string;
  /** The IP (or name) to bind: the agent's advertised host. */
  host: string;
  /** The UDP port to bind. */
  port: number;
  /** When `port` is taken, bind any free port instead (a default port) or fail (a configured one). */
  fallbackToAnyPort?: boolean;
  periodMs: number;
  misses: number;
  log?: Logger;
  now?: () => number;
}

export class Prober {
  readonly core: ProbeCore;
  private readonly log: Logger;
  private readonly now: () => number;
  private socket: dgram.Socket | undefined;
  private timer: NodeJS.Timeout | undefined;
  private boundPort = 0;
  private readonly counts: ProbeStats = {
    pingsSent: 0,
    pongsSent: 0,
    pingsReceived: 0,
    pongsReceived: 0,
    bytesSent: 0,
    bytesReceived: 0,
    garbage: 0,
    sendErrors: 0,
  };

  constructor(private readonly opts: ProberOptions) {
    this.core = new ProbeCore({ periodMs: opts.periodMs, misses: opts.misses });
    this.log = opts.log ?? nullLogger;
    this.now = opts.now ?? Date.now;
  }

  /** The UDP port bound (after start). */
  get port(): number {
    return this.boundPort;
  }

  /** host:port of the responder (after start). */
  get address(): string {
    return `${isIPv6(this.opts.host) ? `[${this.opts.host}]` : this.opts.host}:${this.boundPort}`;
  }

  stats(): ProbeStats {
    return { ...this.counts };
  }

  /** Binds the socket and starts the rounds. A port it cannot bind: InvalidArgumentError('probe.port'). */
  async start(): Promise<void> {
    let socket: dgram.Socket;
    try {
      socket = await this.bind(this.opts.port);
    } catch (e) {
      if (!this.opts.fallbackToAnyPort || this.opts.port === 0) throw this.bindError(e);
      this.log.warn({ host: this.opts.host, port: this.opts.port, err: errorMessage(e) }, 'probe port taken; the prober binds another');
      try {
        socket = await this.bind(0);
      } catch (e2) {
        throw this.bindError(e2);
      }
    }
    this.socket = socket;
    this.boundPort = socket.address().port;
    socket.on('message', (msg, rinfo) => this.onMessage(msg, rinfo));
    socket.on('error', (err) => this.log.warn({ err: errorMessage(err) }, 'probe socket error'));
    this.timer = setInterval(() => this.round(), this.opts.periodMs);
    this.timer.unref();
    this.log.info({ address: this.address, periodMs: this.opts.periodMs, misses: this.opts.misses }, 'prober ready');
  }

  /** Stops the rounds and closes the socket. */
  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    const s = this.socket;
    this.socket = undefined;
    try {
      s?.close();
    } catch {
      /* already closed */
    }
  }

  private bindError(e: unknown): InvalidArgumentError {
    return new InvalidArgumentError('probe.port', `cannot bind UDP ${this.opts.host}:${this.opts.port}: ${errorMessage(e)}`);
  }

  private bind(port: number): Promise<dgram.Socket> {
    return new Promise((resolve, reject) => {
      const s = dgram.createSocket({ type: isIPv6(this.opts.host) ? 'udp6' : 'udp4' });
      const fail = (err: Error) => {
        try {
          s.close();
        } catch {
          /* not open */
        }
        reject(err);
      };
      s.once('error', fail);
      s.bind({ address: this.opts.host, port, exclusive: true }, () => {
        s.off('error', fail);
        resolve(s);
      });
    });
  }

  /** One period: the core's changes are logged, its pings sent. */
  private round(): void {
    const { pings, changes } = this.core.tick(this.now());
    this.logChanges(changes);
    for (const p of pings) this.send(encodeProbe({ kind: 'ping', nodeId: this.opts.nodeId, seq: p.seq }), p.address, 'ping');
  }

  private send(buf: Buffer, address: string, kind: 'ping' | 'pong'): void {
    const s = this.socket;
    const port = portOf(address);
    if (!s || port === undefined) return;
    s.send(buf, port, hostOf(address), (err) => {
      if (err) {
        this.counts.sendErrors++;
        return;
      }
      this.counts.bytesSent += buf.length;
      if (kind === 'ping') this.counts.pingsSent++;
      else this.counts.pongsSent++;
    });
  }

  private onMessage(msg: Buffer, rinfo: dgram.RemoteInfo): void {
    this.counts.bytesReceived += msg.length;
    const d = decodeProbe(msg);
    if (!d) {
      this.counts.garbage++;
      return;
    }
    if (d.kind === 'ping') {
      this.counts.pingsReceived++;
      const to = rinfo.family === 'IPv6' ? `[${rinfo.address}]:${rinfo.port}` : `${rinfo.address}:${rinfo.port}`;
      this.send(encodeProbe({ kind: 'pong', nodeId: this.opts.nodeId, seq: d.seq }), to, 'pong');
      return;
    }
    this.counts.pongsReceived++;
    const change = this.core.answer(d.nodeId, d.seq, this.now());
    if (change) this.logChanges([change]);
  }

  private logChanges(changes: readonly ProbeChange[]): void {
    for (const c of changes) {
      this.log.info(
        { peer: c.nodeId, address: this.core.addressOf(c.nodeId), silentMs: c.silentMs },
        c.reachable ? 'peer reachable again' : 'peer unreachable: its probes go unanswered',
      );
    }
  }
}
