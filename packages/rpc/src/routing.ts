/**
 * Many instances of one service behind one server: an AM host serves each of its application
 * masters at the host's one port, so that a job costs its callers (its agents, the master) no new
 * connection and TLS handshake of their own, and the host no server per AM.
 *
 * An instance's address is the server's `host:port` with its route after a `#`
 * (`10.0.0.5:40123#job-1/2`). `connect` dials the `host:port` (one channel, one connection for every
 * instance there) and sends the route with every call (`fuxi-route`); the server's `ServiceRouter`
 * hands each call to the instance registered under that route. A call for a route that is not
 * there (the instance ended, or has not started) fails UNAVAILABLE, as a call to the closed port of
 * an instance with a server of its own would.
 *
 * ```ts
 * const router = new ServiceRouter(proto.AppMasterService.service);
 * const srv = await startServer({ bind, log, services: [{ name: 'fuxi.v1.AppMasterService', definition, handlers: router.handlers() }] });
 * router.add('job-1/2', implement(definition, impl, log));
 * const address = routedAddress(srv.address, 'job-1/2'); // '10.0.0.5:40123#job-1/2'
 * ```
 */
import * as grpc from '@grpc/grpc-js';

/** The metadata key carrying the route of a call. */
export const ROUTE_HEADER = 'fuxi-route';

/** `host:port#route`; a route is printable ASCII without spaces or `#` (encode it when it may not be). */
export function routedAddress(address: string, route: string): string {
  if (!/^[\x21-\x7e]+$/.test(route) || route.includes('#'))
    throw new Error(`route must be printable ASCII without spaces or '#', got ${JSON.stringify(route)}`);
  return `${address}#${route}`;
}

/** The `host:port` to dial and the route of an address (`route` undefined: a server of its own). */
export function splitRoute(address: string): { target: string; route: string | undefined } {
  const i = address.indexOf('#');
  return i < 0 ? { target: address, route: undefined } : { target: address.slice(0, i), route: address.slice(i + 1) };
}

type Handler = (...args: never[]) => unknown;
type Handlers = Record<string, Handler>;

/** Dispatches the calls of one service, by their route, to the instances registered under it. */
export class ServiceRouter {
  private readonly routes = new Map<string, Handlers>();

  constructor(private readonly definition: grpc.ServiceDefinition) {}

  /** Serves `handlers` (as `implement` makes them) under `route`; a route taken already is refused. */
  add(route: string, handlers: grpc.UntypedServiceImplementation): void {
    if (this.routes.has(route)) throw new Error(`route ${route} is served already`);
    for (const name of Object.keys(this.definition)) if (typeof handlers[name] !== 'function') throw new Error(`no handler for ${name}`);
    this.routes.set(route, handlers as unknown as Handlers);
  }

  /** Stops serving `route`: its calls from now on fail UNAVAILABLE (calls under way finish). */
  remove(route: string): void {
    this.routes.delete(route);
  }

  get size(): number {
    return this.routes.size;
  }

  /** The server-side handlers to register with the server (`startServer`'s `services`). */
  handlers(): grpc.UntypedServiceImplementation {
    const out: grpc.UntypedServiceImplementation = {};
    for (const [name, d] of Object.entries(this.definition)) {
      const def = d as grpc.MethodDefinition<object, object>;
      const target = (call: { metadata: grpc.Metadata }): Handler | undefined => {
        const route = call.metadata.get(ROUTE_HEADER)[0];
        return typeof route === 'string' ? this.routes.get(route)?.[name] : undefined;
      };
      const missing = (call: { metadata: grpc.Metadata }): Partial<grpc.StatusObject> => {
        const route = call.metadata.get(ROUTE_HEADER)[0];
        return {
          code: grpc.status.UNAVAILABLE,
          details:
            route === undefined
              ? `${def.path}: this server serves routed addresses (host:port#route) only`
              : `${def.path}: nothing serves ${String(route)} here`,
        };
      };
      if (def.requestStream) throw new Error(`${def.path}: client-streaming methods are not routed`);
      if (def.responseStream) {
        out[name] = ((call: grpc.ServerWritableStream<object, object>) => {
          const h = target(call);
          if (h) return (h as unknown as (c: typeof call) => void)(call);
          call.emit('error', missing(call));
        }) as grpc.handleServerStreamingCall<object, object>;
      } else {
        out[name] = ((call: grpc.ServerUnaryCall<object, object>, cb: grpc.sendUnaryData<object>) => {
          const h = target(call);
          if (h) return (h as unknown as (c: typeof call, cb: grpc.sendUnaryData<object>) => void)(call, cb);
          cb(missing(call) as grpc.ServerErrorResponse);
        }) as grpc.handleUnaryCall<object, object>;
      }
    }
    return out;
  }
}
