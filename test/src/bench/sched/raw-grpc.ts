/**
 * Minimal unary gRPC over node:http2, for the benchmark's load generator only. On this kind of
 * machine a grpc-js unary call costs the caller about twice the CPU of a bare HTTP/2 request, and the
 * load generator shares the machine with the master it measures: every microsecond it saves is one
 * the master does not lose. The wire format is standard gRPC (length-prefixed protobuf messages,
 * `grpc-status` trailers), encoded with the same generated service definitions, so the master's real
 * grpc-js server and clients see ordinary calls.
 *
 * Not a general gRPC implementation: no compression, no metadata beyond the basics, one message per
 * call each way, no retries.
 */
import http2 from 'node:http2';
import { connect as tcpConnect } from 'node:net';
import type { MethodDefinition } from '@grpc/proto-loader';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyMethod = MethodDefinition<any, any, any, any>;
type ReqOf<M> = M extends MethodDefinition<infer Req, infer _R, infer _RO, infer _ResO> ? Req : never;
type ResOf<M> = M extends MethodDefinition<infer _Req, infer _R, infer _RO, infer ResO> ? ResO : never;
type ReqOutOf<M> = M extends MethodDefinition<infer _Req, infer _R, infer ReqO, infer _ResO> ? ReqO : never;
type ResInOf<M> = M extends MethodDefinition<infer _Req, infer Res, infer _RO, infer _ResO> ? Res : never;

const { HTTP2_HEADER_STATUS, HTTP2_HEADER_CONTENT_TYPE, HTTP2_HEADER_PATH, HTTP2_HEADER_AUTHORITY } = http2.constants;

export class RawGrpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

function frame(msg: Buffer): Buffer {
  const out = Buffer.allocUnsafe(5 + msg.length);
  out[0] = 0;
  out.writeUInt32BE(msg.length, 1);
  msg.copy(out, 5);
  return out;
}

function unframe(body: Buffer): Buffer | undefined {
  if (body.length < 5) return undefined;
  if (body[0] !== 0) throw new RawGrpcError(12, 'compressed messages are not supported');
  return body.subarray(5, 5 + body.readUInt32BE(1));
}

/** A client for unary calls over one HTTP/2 connection (reopened when it closes). */
export class RawGrpcClient {
  private session: http2.ClientHttp2Session | undefined;
  private closed = false;

  constructor(private readonly address: string) {}

  private open(): http2.ClientHttp2Session {
    let s = this.session;
    if (s && !s.closed && !s.destroyed) return s;
    const i = this.address.lastIndexOf(':');
    const host = this.address.slice(0, i);
    const port = Number(this.address.slice(i + 1));
    s = http2.connect(`http://${this.address}`, { createConnection: () => tcpConnect({ host, port, noDelay: true }) });
    s.on('error', () => undefined);
    s.on('close', () => {
      if (this.session === s) this.session = undefined;
    });
    this.session = s;
    return s;
  }

  /** `token`: the bearer token of the call (an AM's attempt token), if any. */
  call<M extends AnyMethod>(def: M, req: ReqOf<M>, deadlineMs: number, token = ''): Promise<ResOf<M>> {
    if (this.closed) return Promise.reject(new RawGrpcError(1, 'client closed'));
    return new Promise((resolve, reject) => {
      let st: http2.ClientHttp2Stream;
      try {
        st = this.open().request(
          {
            ':method': 'POST',
            ':path': def.path,
            'content-type': 'application/grpc',
            te: 'trailers',
            'grpc-timeout': `${deadlineMs}m`,
            ...(token ? { authorization: `Bearer ${token}` } : {}),
          },
          { endStream: false },
        );
      } catch (e) {
        reject(new RawGrpcError(14, String(e)));
        return;
      }
      const chunks: Buffer[] = [];
      let status = -1;
      let message = '';
      const timer = setTimeout(() => {
        st.close(http2.constants.NGHTTP2_CANCEL);
        reject(new RawGrpcError(4, `deadline of ${deadlineMs} ms exceeded`));
      }, deadlineMs);
      const take = (h: http2.IncomingHttpHeaders): void => {
        if (h['grpc-status'] !== undefined) {
          status = Number(h['grpc-status']);
          message = decodeURIComponent(String(h['grpc-message'] ?? ''));
        }
      };
      st.on('response', take);
      st.on('trailers', take);
      st.on('data', (c: Buffer) => chunks.push(c));
      st.on('error', (e) => {
        clearTimeout(timer);
        reject(new RawGrpcError(14, String(e)));
      });
      st.on('end', () => {
        clearTimeout(timer);
        if (status !== 0) {
          reject(new RawGrpcError(status < 0 ? 13 : status, message || 'no grpc-status'));
          return;
        }
        try {
          const msg = unframe(Buffer.concat(chunks));
          resolve(def.responseDeserialize(msg ?? Buffer.alloc(0)) as ResOf<M>);
        } catch (e) {
          reject(e instanceof RawGrpcError ? e : new RawGrpcError(13, String(e)));
        }
      });
      st.end(frame(def.requestSerialize(req) as Buffer));
    });
  }

  /**
   * A server-streaming call: `onMessage` for each message as it arrives; resolves with the final
   * status when the stream ends (0 = OK). No deadline. Returns a function that cancels the stream.
   */
  stream<M extends AnyMethod>(
    def: M,
    req: ReqOf<M>,
    onMessage: (res: ResOf<M>) => void,
    onEnd: (status: number, message: string) => void,
    token = '',
  ): () => void {
    let st: http2.ClientHttp2Stream;
    try {
      st = this.open().request(
        { ':method': 'POST', ':path': def.path, 'content-type': 'application/grpc', te: 'trailers', ...(token ? { authorization: `Bearer ${token}` } : {}) },
        { endStream: false },
      );
    } catch (e) {
      onEnd(14, String(e));
      return () => undefined;
    }
    let status = -1;
    let message = '';
    let pending: Buffer = Buffer.alloc(0);
    let ended = false;
    const end = (code: number, msg: string): void => {
      if (ended) return;
      ended = true;
      onEnd(code, msg);
    };
    const take = (h: http2.IncomingHttpHeaders): void => {
      if (h['grpc-status'] !== undefined) {
        status = Number(h['grpc-status']);
        message = decodeURIComponent(String(h['grpc-message'] ?? ''));
      }
    };
    st.on('response', take);
    st.on('trailers', take);
    st.on('data', (c: Buffer) => {
      pending = pending.length === 0 ? c : Buffer.concat([pending, c]);
      while (pending.length >= 5) {
        const len = pending.readUInt32BE(1);
        if (pending.length < 5 + len) break;
        const body = pending.subarray(5, 5 + len);
        pending = pending.subarray(5 + len);
        onMessage(def.responseDeserialize(body) as ResOf<M>);
      }
    });
    st.on('error', (e) => end(14, String(e)));
    st.on('close', () => end(status < 0 ? 14 : status, message || 'stream closed'));
    st.end(frame(def.requestSerialize(req) as Buffer));
    return () => st.close(http2.constants.NGHTTP2_CANCEL);
  }

  close(): void {
    this.closed = true;
    this.session?.close();
  }
}

/** What a unary handler gets: the decoded request and the `:authority` the caller addressed. */
export type RawHandler<M extends AnyMethod> = (req: ReqOutOf<M>, authority: string) => ResInOf<M>;

/**
 * A server for unary calls, listening on any number of addresses with one set of handlers. A
 * handler returns the response or throws a RawGrpcError; unknown methods answer UNIMPLEMENTED.
 */
export class RawGrpcServer {
  private readonly handlers = new Map<string, { def: AnyMethod; fn: (req: unknown, authority: string) => unknown }>();
  private readonly servers: http2.Http2Server[] = [];
  private readonly sessions = new Set<http2.ServerHttp2Session>();

  handle<M extends AnyMethod>(def: M, fn: RawHandler<M>): this {
    this.handlers.set(def.path, { def, fn: fn as (req: unknown, authority: string) => unknown });
    return this;
  }

  /** Listens on host:port (port 0 = any); resolves with the port. */
  listen(host: string, port: number): Promise<number> {
    const server = http2.createServer({ noDelay: true } as http2.ServerOptions);
    server.on('session', (s) => {
      this.sessions.add(s);
      s.on('close', () => this.sessions.delete(s));
      s.on('error', () => undefined);
    });
    server.on('stream', (stream, headers) => this.onStream(stream, headers));
    this.servers.push(server);
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        const a = server.address();
        resolve(typeof a === 'object' && a ? a.port : port);
      });
    });
  }

  private onStream(stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders): void {
    stream.on('error', () => undefined);
    const h = this.handlers.get(String(headers[HTTP2_HEADER_PATH]));
    if (!h) {
      stream.respond(
        { [HTTP2_HEADER_STATUS]: 200, [HTTP2_HEADER_CONTENT_TYPE]: 'application/grpc', 'grpc-status': '12', 'grpc-message': 'unimplemented' },
        { endStream: true },
      );
      return;
    }
    const authority = String(headers[HTTP2_HEADER_AUTHORITY] ?? '');
    const chunks: Buffer[] = [];
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => {
      let out: Buffer;
      try {
        const msg = unframe(Buffer.concat(chunks)) ?? Buffer.alloc(0);
        out = frame(h.def.responseSerialize(h.fn(h.def.requestDeserialize(msg), authority)) as Buffer);
      } catch (e) {
        const code = e instanceof RawGrpcError ? e.code : 13;
        if (!stream.destroyed) {
          stream.respond(
            {
              [HTTP2_HEADER_STATUS]: 200,
              [HTTP2_HEADER_CONTENT_TYPE]: 'application/grpc',
              'grpc-status': String(code),
              'grpc-message': encodeURIComponent(String(e instanceof Error ? e.message : e)),
            },
            { endStream: true },
          );
        }
        return;
      }
      if (stream.destroyed) return;
      stream.respond({ [HTTP2_HEADER_STATUS]: 200, [HTTP2_HEADER_CONTENT_TYPE]: 'application/grpc' }, { waitForTrailers: true });
      stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
      stream.end(out);
    });
  }

  async close(): Promise<void> {
    for (const s of this.sessions) s.destroy();
    await Promise.all(this.servers.map((s) => new Promise<void>((r) => s.close(() => r()))));
  }
}
