/**
 * Prometheus metrics of a daemon (`@fuxi/rpc/metrics`; not re-exported by `@fuxi/rpc`, so the SDK
 * and the CLI never load prom-client): one registry per daemon, its HTTP endpoint
 * (`metricsListen`), the gRPC server handling-time metrics every daemon shares, and the bind
 * address check of the `metricsListen` settings. Names and labels: docs/architecture.md, "Metrics".
 *
 * ```ts
 * const metrics = new DaemonMetrics();
 * const grants = new Counter({ name: 'fuxi_master_grants_total', help: '...', registers: [metrics.registry] });
 * const handlers = implement(def, impl, log, metrics.grpc);   // per-method handling time
 * const http = await startMetricsServer({ bind: cfg.metricsListen, registry: metrics.registry, log });
 * log.info({ metrics: http.url }, 'metrics served');
 * ```
 */
import * as http from 'node:http';
import { collectDefaultMetrics, Counter, Histogram, Registry } from 'prom-client';
import { InvalidArgumentError, type Logger } from '@fuxi/common';
import type { HandlerObserver } from './server.js';

/**
 * Buckets (seconds) of request latencies, from 100 us to 10 s: gRPC handling, store writes and
 * scheduler passes are sub-millisecond on a quiet cluster and seconds on a loaded etcd.
 */
export const LATENCY_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** Buckets (seconds) of slower things: a request waiting for its grant, a failover phase. */
export const SLOW_BUCKETS = [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

/** A daemon's registry, with Node's process metrics (`process_*`, `nodejs_*`) and gRPC server metrics. */
export class DaemonMetrics {
  readonly registry = new Registry();
  private readonly handling: Histogram<'service' | 'method'>;
  private readonly handled: Counter<'service' | 'method' | 'code'>;
  /** Give to `implement()`: every call of that service is timed. */
  readonly grpc: HandlerObserver;

  constructor(opts: { processMetrics?: boolean } = {}) {
    if (opts.processMetrics !== false) collectDefaultMetrics({ register: this.registry });
    this.handling = new Histogram({
      name: 'fuxi_grpc_server_handling_seconds',
      help: 'Time a gRPC method of this daemon took, from the request to its answer (streams: to their end)',
      labelNames: ['service', 'method'],
      buckets: LATENCY_BUCKETS,
      registers: [this.registry],
    });
    this.handled = new Counter({
      name: 'fuxi_grpc_server_handled_total',
      help: 'gRPC calls this daemon answered, by method and status code name',
      labelNames: ['service', 'method', 'code'],
      registers: [this.registry],
    });
    this.grpc = (service, method, code, seconds) => {
      this.handling.observe({ service, method }, seconds);
      this.handled.inc({ service, method, code });
    };
  }
}

export interface MetricsServer {
  /** host:port bound (the real port when bound to port 0). */
  address: string;
  port: number;
  /** `http://address/metrics`. */
  url: string;
  close(): Promise<void>;
}

/**
 * Checks a `metricsListen` value (host:port, IPv6 in brackets; '' = off) and returns it; a bad
 * one is an InvalidArgumentError naming `field`.
 */
export function parseMetricsListen(field: string, v: unknown): string {
  if (v === '' || v === undefined || v === null) return '';
  if (typeof v !== 'string') throw new InvalidArgumentError(field, `must be host:port (or "" for off), got ${JSON.stringify(v)}`);
  const m = /^(?:([^\s:[\]]+)|\[([0-9a-fA-F:.]+)\]):(\d{1,5})$/.exec(v.trim());
  if (!m) throw new InvalidArgumentError(field, `must be host:port (or "" for off), got "${v}"`);
  const port = Number(m[3]);
  if (port > 65535) throw new InvalidArgumentError(field, `port must be at most 65535, got ${port}`);
  return v.trim();
}

/** Splits a checked host:port into what `net` listens on. */
export function splitHostPort(bind: string): { host: string; port: number } {
  const i = bind.lastIndexOf(':');
  return { host: bind.slice(0, i).replace(/^\[(.*)\]$/, '$1'), port: Number(bind.slice(i + 1)) };
}

/**
 * Serves `registry` in the Prometheus text format at `GET /metrics` on `bind` (port 0: any free
 * port), and what `routes` answers; any other path is 404. A failing collect answers 500 and is logged.
 */
export async function startMetricsServer(opts: {
  bind: string;
  registry: Registry;
  log: Logger;
  /** Other routes on the same server (the master's dashboard): true when it answered the request. */
  routes?: (req: http.IncomingMessage, res: http.ServerResponse) => boolean;
}): Promise<MetricsServer> {
  const { host, port } = splitHostPort(opts.bind);
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (path !== '/metrics' && opts.routes?.(req, res)) return;
    if (req.method !== 'GET' || path !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: metrics are at GET /metrics\n');
      return;
    }
    opts.registry.metrics().then(
      (text) => res.writeHead(200, { 'content-type': opts.registry.contentType }).end(text),
      (e: unknown) => {
        opts.log.warn({ err: e instanceof Error ? e.message : String(e) }, 'metrics collection failed');
        res.writeHead(500, { 'content-type': 'text/plain' }).end('metrics collection failed\n');
      },
    );
  });
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const bound = (server.address() as { port: number }).port;
  const address = `${host.includes(':') ? `[${host}]` : host}:${bound}`;
  return {
    address,
    port: bound,
    url: `http://${address}/metrics`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
