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
 *
 * A batch method (`batch`, call-batch.ts) is the router's own: its entries each name their route,
 * so one call carries calls for many instances, each handed to that instance's handler.
 */
import * as grpc from '@grpc/grpc-js';
import { routedBatchedCalls } from './call-batch.js';
import { toGrpcError } from './errors.js';
import { ROUTE_HEADER } from './route-address.js';
import type { HandlerObserver } from './server.js';

export { ROUTE_HEADER, routedAddress, splitRoute } from './route-address.js';

type Handler = (...args: never[]) => unknown;
type Handlers = Record<string, Handler>;

/** Dispatches the calls of one service, by their route, to the instances registered under it. */
export class ServiceRouter {
  private readonly routes = new Map<string, Handlers>();

  constructor(
    private readonly definition: grpc.ServiceDefinition,
    private readonly opts: { batch?: { method: string; allowed: ReadonlySet<string>; observe?: HandlerObserver; entryWaitMs?: number } } = {},
  ) {}

  /** Serves `handlers` (as `implement` makes them) under `route`; a route taken already is refused. */
  add(route: string, handlers: grpc.UntypedServiceImplementation): void {
    if (this.routes.has(route)) throw new Error(`route ${route} is served already`);
    for (const name of Object.keys(this.definition))
      if (name !== this.opts.batch?.method && typeof handlers[name] !== 'function') throw new Error(`no handler for ${name}`);
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
      const batch = this.opts.batch;
      if (batch && name === batch.method) {
        const run = routedBatchedCalls(
          this.definition,
          (route) => this.routes.get(route) as grpc.UntypedServiceImplementation | undefined,
          batch.allowed,
          batch.observe,
          batch.entryWaitMs,
        );
        out[name] = ((call: grpc.ServerUnaryCall<never, object>, cb: grpc.sendUnaryData<object>) => {
          run(call.request, call).then(
            (res) => cb(null, res),
            (e: unknown) => cb(toGrpcError(e) as grpc.ServiceError),
          );
        }) as grpc.handleUnaryCall<object, object>;
        continue;
      }
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
