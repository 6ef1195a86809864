/**
 * @fuxi/rpc: gRPC plumbing shared by every daemon and the SDK: typed promise clients, async server
 * handlers, the one error <-> status mapping, callers' identities (auth.ts), health checking and reflection, a master
 * connection that follows leader redirects, and the one retry loop (`retry`, `Retrier`).
 *
 * ```ts
 * // Mutual TLS for every server and client of this process (tls.ts); or Transport.insecure().
 * setDefaultTransport(Transport.from({ tls: { ca: 'ca.crt', cert: 'node-1.crt', key: 'node-1.key' } }));
 * const srv = await startServer({ bind: '127.0.0.1:0', log, services: [{
 *   name: 'fuxi.v1.AgentService', definition: proto.AgentService.service,
 *   handlers: implement(proto.AgentService.service, impl, log) }] });
 *
 * // UNAVAILABLE / DEADLINE_EXCEEDED retried after 100, 200, 400 ... ms (jittered, capped at 2 s),
 * // for at most 60 s, and not past stop():
 * const res = await retry(() => agent.StartWorkers(req, { deadlineMs: 5000 }), {
 *   retryForMs: 60_000, signal: stopping.signal,
 *   onRetry: (f) => log.warn({ attempt: f.attempt, err: errorMessage(f.error) }, 'agent unavailable; retrying'),
 * });
 * ```
 */
export * from './errors.js';
export * from './server.js';
export * from './client.js';
export * from './master-connection.js';
export * from './call-gate.js';
export * from './mapping.js';
export * from './process-guards.js';
export * from './retry.js';
export * from './auth.js';
export * from './tls.js';
export * from './message-size.js';
export * from './stream-bounds.js';
export * from './routing.js';
export * from './call-batch.js';
