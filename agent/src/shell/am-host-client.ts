/**
 * A connection to the node's AM host over its unix socket (`@fuxi/common` am-host-protocol.ts):
 * requests answered by id, exit events pushed by the host, and the end of the connection. Used by
 * the agent's supervisor of the host and by tests that inject faults into hosted AMs.
 *
 * ```ts
 * const c = await AmHostConnection.open(socketPath, { timeoutMs: 5000 });
 * c.onEvent((e) => console.log(e.key, e.exitCode));
 * const { ams } = await c.request({ op: 'hello', role: 'agent' });
 * ```
 */
import * as net from 'node:net';
import { encodeLine, LineDecoder, UnavailableError, type AmHostAnswer, type AmHostEvent, type AmHostRequest } from '@fuxi/common';

type Ok = Extract<AmHostAnswer, { ok: true }>;
/** A request without its id (the connection numbers them). */
export type AmHostCall = AmHostRequest extends infer R ? (R extends { id: number } ? Omit<R, 'id'> : never) : never;

export class AmHostConnection {
  private nextId = 0;
  private readonly waiting = new Map<number, { resolve: (a: Ok) => void; reject: (e: Error) => void; timer: NodeJS.Timeout }>();
  private eventCb: (e: AmHostEvent) => void = () => {};
  private closeCb: () => void = () => {};
  private closed = false;

  private constructor(private readonly socket: net.Socket) {
    const lines = new LineDecoder();
    socket.on('data', (chunk) => {
      let msgs: unknown[];
      try {
        msgs = lines.push(chunk);
      } catch {
        socket.destroy(); // a line past the limit: the host is not speaking the protocol
        return;
      }
      for (const msg of msgs) this.receive(msg as AmHostAnswer | AmHostEvent);
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      this.closed = true;
      for (const [id, w] of this.waiting) {
        clearTimeout(w.timer);
        w.reject(new UnavailableError('the AM host connection closed'));
        this.waiting.delete(id);
      }
      this.closeCb();
    });
  }

  /** Connects to `socketPath`; rejects with UnavailableError when nothing answers within `timeoutMs`. */
  static open(socketPath: string, opts: { timeoutMs: number }): Promise<AmHostConnection> {
    return new Promise((resolve, reject) => {
      const socket = net.connect(socketPath);
      const timer = setTimeout(() => {
        socket.destroy();
        reject(new UnavailableError(`the AM host at ${socketPath} did not accept a connection within ${opts.timeoutMs} ms`));
      }, opts.timeoutMs);
      socket.once('connect', () => {
        clearTimeout(timer);
        socket.removeAllListeners('error');
        resolve(new AmHostConnection(socket));
      });
      socket.once('error', (e) => {
        clearTimeout(timer);
        reject(new UnavailableError(`the AM host at ${socketPath} is not reachable: ${e.message}`));
      });
    });
  }

  get isClosed(): boolean {
    return this.closed;
  }

  onEvent(cb: (e: AmHostEvent) => void): void {
    this.eventCb = cb;
  }

  onClose(cb: () => void): void {
    this.closeCb = cb;
  }

  /** Sends a request; resolves with the answer, rejects with its error, or UnavailableError (closed, or no answer within `timeoutMs`). */
  request(req: AmHostCall, timeoutMs = 5000): Promise<Ok> {
    if (this.closed) return Promise.reject(new UnavailableError('the AM host connection is closed'));
    const id = ++this.nextId;
    return new Promise<Ok>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting.delete(id);
        reject(new UnavailableError(`the AM host did not answer ${req.op} within ${timeoutMs} ms`));
      }, timeoutMs);
      this.waiting.set(id, { resolve, reject, timer });
      this.socket.write(encodeLine({ ...req, id }));
    });
  }

  close(): void {
    this.socket.destroy();
  }

  private receive(msg: AmHostAnswer | AmHostEvent): void {
    if ('ev' in msg) {
      this.eventCb(msg);
      return;
    }
    const w = this.waiting.get(msg.id);
    if (!w) return; // answered after its timeout
    this.waiting.delete(msg.id);
    clearTimeout(w.timer);
    if (msg.ok) w.resolve(msg);
    else w.reject(new Error(msg.error));
  }
}
