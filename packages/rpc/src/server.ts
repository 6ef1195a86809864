/**
 * gRPC server plumbing: typed async handlers, error mapping, health checking and reflection on
 * every daemon.
 */
import * as grpc from '@grpc/grpc-js';
import type { ServingStatus } from 'grpc-health-check';
import type { MethodDefinition } from '@grpc/proto-loader';
import { fuxiFileDescriptorProtos } from '@fuxi/proto';
import { isWildcardHost, type Logger } from '@fuxi/common';
import * as os from 'node:os';
import { toGrpcError } from './errors.js';
import { maxMessageBytes } from './message-size.js';
import { addHealth, addReflection, type Health } from './introspection.js';
import { defaultTransport, type Transport } from './tls.js';
import { installPeerCertificateCache } from './node-fixes.js';

// Every call a TLS server answers names its caller by the peer's certificate: built once per connection.
installPeerCertificateCache();

type AnyMethod = MethodDefinition<object, object, object, object>;

/** Async handler for a unary method: gets the decoded request, returns the response or throws. */
export type UnaryImpl<M> =
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  M extends MethodDefinition<any, infer Res, infer ReqOut, any> ? (req: ReqOut, call: grpc.ServerUnaryCall<ReqOut, Res>) => Promise<Res> | Res : never;

/** Handler for a server-streaming method: write to `call`, end it, or throw. */
export type StreamImpl<M> =
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  M extends MethodDefinition<any, infer Res, infer ReqOut, any> ? (req: ReqOut, call: grpc.ServerWritableStream<ReqOut, Res>) => Promise<void> | void : never;

/** Known method names of a service definition (without its index signature). */
export type MethodName<D> = keyof { [K in keyof D as string extends K ? never : K]: true };

/**
 * Handlers by method name. One function type serves both kinds (so parameters are contextually
 * typed): unary handlers return the response; streaming handlers write to `call` and return void.
 */
export type ServiceImpl<D> = { [K in MethodName<D> & keyof D]: Handler<D[K]> };

export type Handler<M> =
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  M extends MethodDefinition<any, infer Res, infer ReqOut, any>
    ? (req: ReqOut, call: grpc.ServerUnaryCall<ReqOut, Res> & grpc.ServerWritableStream<ReqOut, Res>) => Promise<Res | void> | Res | void
    : never;

/**
 * Told of every call `implement()` handled: service (`fuxi.v1.MasterService`), method, status code
 * name (`OK`, `UNAVAILABLE`, ...) and the seconds from the request to the answer (a stream: until
 * its handler returned or threw). `@fuxi/rpc/metrics` `DaemonMetrics.grpc` records them.
 */
export type HandlerObserver = (service: string, method: string, code: string, seconds: number) => void;

/** The service name of a method path, `/fuxi.v1.AgentService/StartWorkers` -> `fuxi.v1.AgentService`. */
function serviceOf(def: AnyMethod): string {
  return def.path.split('/')[1] ?? '';
}

function codeName(code: number): string {
  return grpc.status[code] ?? String(code);
}

/**
 * Turns async handlers into grpc-js handlers with error mapping and a debug log per call; with
 * `observe`, each call's handling time and status code go to it.
 */
export function implement<D extends grpc.ServiceDefinition>(
  definition: D,
  impl: ServiceImpl<D>,
  log: Logger,
  observe?: HandlerObserver,
): grpc.UntypedServiceImplementation {
  const out: grpc.UntypedServiceImplementation = {};
  for (const name of Object.keys(definition)) {
    const def = definition[name] as unknown as AnyMethod;
    const fn = (impl as Record<string, (req: unknown, call: unknown) => unknown>)[name];
    if (!fn) throw new Error(`no handler for ${name}`);
    const service = serviceOf(def);
    const done = observe ? (start: bigint, code: number) => observe(service, name, codeName(code), Number(process.hrtime.bigint() - start) / 1e9) : () => {};
    if (def.responseStream) {
      out[name] = (call: grpc.ServerWritableStream<object, object>) => {
        const start = process.hrtime.bigint();
        Promise.resolve()
          .then(() => fn(call.request, call))
          .then(() => done(start, grpc.status.OK))
          .catch((e: unknown) => {
            const ge = toGrpcError(e);
            done(start, ge.code ?? grpc.status.UNKNOWN);
            log.debug({ method: name, err: String(e) }, 'stream failed');
            // emit('error') ends the stream with the mapped status; destroy() would send none.
            call.emit('error', Object.assign(new Error(String(e)), ge));
          });
      };
    } else {
      out[name] = (call: grpc.ServerUnaryCall<object, object>, cb: grpc.sendUnaryData<object>) => {
        const start = process.hrtime.bigint();
        Promise.resolve()
          .then(() => fn(call.request, call))
          .then(
            (res) => {
              done(start, grpc.status.OK);
              cb(null, res as object);
            },
            (e: unknown) => {
              const ge = toGrpcError(e);
              done(start, ge.code ?? grpc.status.UNKNOWN);
              if (ge.code === grpc.status.INTERNAL) log.error({ method: name, err: e instanceof Error ? e.stack : String(e) }, 'rpc failed');
              else log.debug({ method: name, code: ge.code, msg: ge.details }, 'rpc rejected');
              cb(ge as grpc.ServiceError);
            },
          );
      };
    }
  }
  return out;
}

export interface RunningServer {
  server: grpc.Server;
  port: number;
  /** host:port callers should use. */
  address: string;
  health: Health;
  setServing(status: ServingStatus): void;
  /** Graceful shutdown, forced after `graceMs`. */
  shutdown(graceMs?: number): Promise<void>;
}

export interface ServerOptions {
  /** Address to bind, e.g. `127.0.0.1:0` (port 0 = any free port). */
  bind: string;
  /**
   * Address to advertise (host:port; port 0 = the bound port). Default: the bound host and port,
   * or for a wildcard bind (0.0.0.0, ::) this host's first non-loopback IPv4 address.
   */
  advertise?: string;
  services: Array<{ definition: grpc.ServiceDefinition; handlers: grpc.UntypedServiceImplementation; name: string }>;
  log: Logger;
  /** Mutual TLS or plaintext; default the process's (`setDefaultTransport`). */
  transport?: Transport;
}

/**
 * What a server bound at `bind` (on `port`) tells its peers: `advertise` (its port 0 replaced by the
 * bound port), else the bound host, else for a wildcard bind this host's first non-loopback IPv4
 * address (loopback only on a host that has no other).
 */
export function advertisedAddress(bind: string, port: number, advertise?: string): string {
  if (advertise) {
    const i = advertise.lastIndexOf(':');
    return advertise.slice(i + 1) === '0' ? `${advertise.slice(0, i)}:${port}` : advertise;
  }
  const host = bind.slice(0, bind.lastIndexOf(':')) || '127.0.0.1';
  if (!isWildcardHost(host.replace(/^\[(.*)\]$/, '$1'))) return `${host}:${port}`;
  return `${primaryAddress()}:${port}`;
}

/** This host's first non-internal IPv4 address, or 127.0.0.1 when it has none. */
export function primaryAddress(): string {
  for (const list of Object.values(os.networkInterfaces())) {
    for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  }
  return '127.0.0.1';
}

/**
 * Starts a gRPC server with the given services plus grpc.health.v1 and server reflection (both
 * loaded on their first call: introspection.ts).
 */
export async function startServer(opts: ServerOptions): Promise<RunningServer> {
  const max = maxMessageBytes();
  const server = new grpc.Server({
    'grpc.max_receive_message_length': max,
    'grpc.max_send_message_length': max,
    // channelz (grpc-js's per-call tracing for its admin service) is served by nobody here; left
    // on, it costs every call (4 % of a new leader's CPU while every agent and AM reports to it).
    'grpc.enable_channelz': 0,
  });
  for (const s of opts.services) server.addService(s.definition, s.handlers);
  const names = opts.services.map((s) => s.name);
  const health = addHealth(server, Object.fromEntries([['', 'SERVING'], ...names.map((n) => [n, 'SERVING'])]) as Record<string, ServingStatus>);
  addReflection(server, fuxiFileDescriptorProtos);
  const transport = opts.transport ?? defaultTransport();
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync(opts.bind, transport.serverCredentials(), (err, p) => (err ? reject(err) : resolve(p)));
  });
  // TLS: serving (and saying so) only once the certificates are read.
  await transport.ready();
  const address = advertisedAddress(opts.bind, port, opts.advertise);
  return {
    server,
    port,
    address,
    health,
    setServing(status) {
      health.setStatus('', status);
      for (const n of names) health.setStatus(n, status);
    },
    shutdown(graceMs = 2000) {
      return new Promise<void>((resolve) => {
        const t = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, graceMs);
        server.tryShutdown(() => {
          clearTimeout(t);
          resolve();
        });
      });
    },
  };
}
