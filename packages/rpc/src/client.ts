/**
 * Typed promise clients for the Fuxi services, built from the generated service definitions.
 *
 * ```ts
 * const master = connect(loadFuxiProto().MasterService, '127.0.0.1:7070');
 * const { jobId } = await master.SubmitJob({ spec }, { deadlineMs: 5000 });
 * ```
 */
import * as grpc from '@grpc/grpc-js';
import type { MethodDefinition } from '@grpc/proto-loader';
import { fromGrpcError } from './errors.js';
import { tokenMetadata } from './auth.js';
import { defaultTransport, Transport } from './tls.js';
import { maxMessageBytes } from './message-size.js';
import { installAsyncResourceBindFix } from './node-fixes.js';
import { ROUTE_HEADER, splitRoute } from './route-address.js';

// Every call opens an HTTP/2 stream: without this, Node 20 spends ~8 µs on each (node-fixes.ts).
installAsyncResourceBindFix();

export interface CallOptions {
  /** Per-call deadline; every call has one (default 10 s). */
  deadlineMs?: number;
  /** The bearer token of this call, instead of the client's (`ConnectOptions.token`). */
  token?: string;
}

export const DEFAULT_DEADLINE_MS = 10_000;

type UnaryFn<M> =
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  M extends MethodDefinition<infer Req, any, any, infer ResOut> ? (req: Req, opts?: CallOptions) => Promise<ResOut> : never;
type StreamFn<M> =
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  M extends MethodDefinition<infer Req, any, any, infer ResOut> ? (req: Req, opts?: CallOptions) => ServerStream<ResOut> : never;

/** Unary methods by their proto name; server-streaming ones are under `stream`. */
export type TypedClient<D> = { [K in keyof D as string extends K ? never : K]: UnaryFn<D[K]> } & {
  readonly stream: { [K in keyof D as string extends K ? never : K]: StreamFn<D[K]> };
  readonly address: string;
  readonly raw: grpc.Client;
  close(): void;
};

export interface ServerStream<T> extends AsyncIterable<T> {
  cancel(): void;
}

type ServiceCtor = grpc.ServiceClientConstructor & { service: grpc.ServiceDefinition };

const CHANNEL_OPTIONS: grpc.ChannelOptions = {
  'grpc.initial_reconnect_backoff_ms': 100,
  'grpc.max_reconnect_backoff_ms': 2000,
  'grpc.enable_retries': 0,
  // Channels are already shared per address (acquireChannel), so grpc-js's process-wide
  // subchannel pool shares nothing more; and it costs: closing any channel walks the whole pool,
  // which keeps a key for every address the process ever called (an agent meets a new AM address
  // with every job). A channel of its own pool closes in constant time and leaves nothing behind.
  'grpc.use_local_subchannel_pool': 1,
  // No channelz (its per-call tracing is for an admin service nobody serves here): see server.ts.
  'grpc.enable_channelz': 0,
};

export interface ConnectOptions {
  /**
   * The bearer token sent with every call (`authorization: Bearer ...`): a string, or a function
   * asked at each call (a token that changes, e.g. read again from its file). None when empty.
   */
  token?: string | (() => string | undefined);
  /** Mutual TLS or plaintext; default the process's (`setDefaultTransport`). */
  transport?: Transport;
}

/**
 * A client of one service at `address`, over a transport (default: the process's,
 * `setDefaultTransport`): mutual TLS, verifying the server's certificate against `address`. The
 * third argument is that transport, or the options (`transport` and a bearer `token`).
 */
/** A channel shared by every client of one process to one address over one transport. */
interface SharedChannel {
  channel: grpc.Channel;
  refs: number;
  /** Set while no client holds it: it closes when this fires, unless a client takes it first. */
  closeTimer?: NodeJS.Timeout;
}

/**
 * How long a channel no client holds stays open for the next client to the same address, in a
 * process that turns it on (`setChannelLingerMs`; the AM host does). An AM host whose AMs come one
 * after another (a workflow submitting one job at a time) gave up its channels to the master and to
 * the agent with each AM, and the next AM opened new ones: a TLS handshake and an HTTP/2 session on
 * both sides for every job. Off by default: an open TLS channel keeps its process alive, and a
 * process that is done (a `fuxi` command, a script of the SDK) must not wait for it.
 */
export const CHANNEL_LINGER_MS = 10_000;

let lingerMs = 0;

/** Sets how long an unheld channel stays open (0, the default: it closes with its last client). */
export function setChannelLingerMs(ms: number): void {
  lingerMs = ms;
}

/**
 * One channel per (transport, address, message limit) per process, shared by reference count. An
 * AM host holding hundreds of AMs, or an agent, would otherwise hold one channel per AM and
 * master: each with its own resolver and load balancer, and every state change of the one
 * connection underneath (a master dying, reconnect attempts) fanned out to all of them.
 */
const sharedChannels = new WeakMap<Transport, Map<string, SharedChannel>>();

function acquireChannel(transport: Transport, address: string, max: number): { channel: grpc.Channel; release: () => void } {
  let byKey = sharedChannels.get(transport);
  if (!byKey) sharedChannels.set(transport, (byKey = new Map()));
  const key = `${address}\u0000${max}`;
  let entry = byKey.get(key);
  if (!entry) {
    entry = {
      channel: new grpc.Channel(address, transport.channelCredentials(), {
        ...CHANNEL_OPTIONS,
        'grpc.max_receive_message_length': max,
        'grpc.max_send_message_length': max,
      }),
      refs: 0,
    };
    byKey.set(key, entry);
  }
  const e = entry;
  e.refs++;
  if (e.closeTimer) {
    clearTimeout(e.closeTimer);
    e.closeTimer = undefined;
  }
  let released = false;
  return {
    channel: e.channel,
    release: () => {
      if (released) return;
      released = true;
      if (--e.refs > 0) return;
      const close = (): void => {
        e.closeTimer = undefined;
        if (e.refs > 0) return;
        if (byKey.get(key) === e) byKey.delete(key);
        e.channel.close();
      };
      if (lingerMs <= 0) return close();
      e.closeTimer = setTimeout(close, lingerMs);
      e.closeTimer.unref();
    },
  };
}

export function connect<D>(ctor: ServiceCtor & { service: D }, address: string, optsOrTransport: ConnectOptions | Transport = {}): TypedClient<D> {
  const connectOpts: ConnectOptions = optsOrTransport instanceof Transport ? { transport: optsOrTransport } : optsOrTransport;
  const transport = connectOpts.transport ?? defaultTransport();
  // A routed address (`host:port#route`, routing.ts): the channel is the server's, shared with
  // every other instance served there; the route goes with each call.
  const { target, route } = splitRoute(address);
  const shared = acquireChannel(transport, target, maxMessageBytes());
  const raw = new ctor(target, grpc.credentials.createInsecure(), { channelOverride: shared.channel });
  const tok = connectOpts.token;
  const metadata = (opts: CallOptions): grpc.Metadata => {
    const md = tokenMetadata(opts.token ?? (typeof tok === 'function' ? tok() : tok));
    if (route !== undefined) md.set(ROUTE_HEADER, route);
    return md;
  };
  const out: Record<string, unknown> = {};
  const streams: Record<string, unknown> = {};
  for (const [name, d] of Object.entries(ctor.service)) {
    const def = d as MethodDefinition<object, object, object, object>;
    if (def.responseStream) {
      streams[name] = (req: object, opts: CallOptions = {}) => openStream(raw, def, name, req, opts, metadata(opts));
      continue;
    }
    out[name] = (req: object, opts: CallOptions = {}) =>
      new Promise((resolve, reject) => {
        const deadline = new Date(Date.now() + (opts.deadlineMs ?? DEFAULT_DEADLINE_MS));
        withoutCallerStack(() =>
          raw.makeUnaryRequest(def.path, def.requestSerialize, def.responseDeserialize, req, metadata(opts), { deadline }, (err, res) => {
            if (err) reject(fromGrpcError(err, name));
            else resolve(res);
          }),
        );
      });
  }
  out.stream = streams;
  out.address = address;
  out.raw = raw;
  // The channel is shared: closing a client gives up its reference, and the last one closes it
  // (after the process's linger, when it set one, unless another client takes it meanwhile).
  out.close = () => shared.release();
  return out as TypedClient<D>;
}

/**
 * Runs `make` (a grpc-js call's creation) with no stack trace captured. grpc-js takes the caller's
 * stack at every call (`new Error()`) and formats it into the error of each call that fails: when a
 * master dies, a process's thousand streams to it fail at once, and those stacks were 5 % of a
 * simulated host's CPU in the failover. Our errors (RpcError) name the method and carry the status.
 */
export function withoutCallerStack<T>(make: () => T): T {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return make();
  } finally {
    Error.stackTraceLimit = limit;
  }
}

/**
 * The messages of a server-streaming call, then its failure if it failed. Node's stream iterator
 * (`for await` on the call) would do the same, but when a call fails it also destroys the stream
 * with a new AbortError, whose stack is taken and formatted: when a master dies, a process's
 * thousand streams to it fail at once, and those errors were 6 % of a simulated host's CPU in the
 * failover. Messages already received are read before the failure is thrown; a reader that stops
 * early (break, return, a throw in the loop) cancels the call.
 */
export async function* readCall<T>(call: grpc.ClientReadableStream<T>): AsyncGenerator<T, void, undefined> {
  let wake: (() => void) | undefined;
  let failure: Error | undefined;
  let ended = false;
  const poke = (): void => {
    const w = wake;
    wake = undefined;
    w?.();
  };
  const onError = (e: Error): void => {
    failure ??= e;
    poke();
  };
  const onEnd = (): void => {
    ended = true;
    poke();
  };
  call.on('readable', poke);
  call.on('error', onError);
  call.on('end', onEnd);
  try {
    for (;;) {
      const msg = call.read() as T | null;
      if (msg !== null) {
        yield msg;
        continue;
      }
      if (failure) throw failure;
      if (ended) return;
      await new Promise<void>((resolve) => (wake = resolve));
    }
  } finally {
    call.off('readable', poke);
    call.off('end', onEnd);
    call.off('error', onError);
    // A cancelled call still emits its CANCELLED error: it must find a listener.
    call.on('error', () => undefined);
    if (!ended && !failure) call.cancel();
  }
}

function openStream(
  raw: grpc.Client,
  def: MethodDefinition<object, object, object, object>,
  name: string,
  req: object,
  opts: CallOptions,
  metadata: grpc.Metadata,
): ServerStream<object> {
  const callOpts: grpc.CallOptions = opts.deadlineMs ? { deadline: new Date(Date.now() + opts.deadlineMs) } : {};
  const call = withoutCallerStack(() => raw.makeServerStreamRequest(def.path, def.requestSerialize, def.responseDeserialize, req, metadata, callOpts));
  return {
    cancel: () => call.cancel(),
    async *[Symbol.asyncIterator]() {
      try {
        yield* readCall(call);
      } catch (e) {
        const err = e as grpc.ServiceError;
        if (err.code === grpc.status.CANCELLED) return;
        throw typeof err.code === 'number' ? fromGrpcError(err, name) : e;
      }
    },
  };
}
