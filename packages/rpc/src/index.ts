/**
 * @fuxi/rpc: gRPC plumbing shared by every daemon and the SDK: typed promise clients, async server
 * handlers, the one error <-> status mapping, health checking and reflection, and a master
 * connection that follows leader redirects.
 *
 * ```ts
 * const srv = await startServer({ bind: '127.0.0.1:0', log, services: [{
 *   name: 'fuxi.v1.AgentService', definition: proto.AgentService.service,
 *   handlers: implement(proto.AgentService.service, impl, log) }] });
 * ```
 */
export * from './errors.js';
export * from './server.js';
export * from './client.js';
export * from './master-connection.js';
export * from './mapping.js';
export * from './process-guards.js';
