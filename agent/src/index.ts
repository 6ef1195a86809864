/**
 * @fuxi/agent: the Fuxi-TS node agent. A pure core (`AgentCore`: grants x plans -> spawns, kills,
 * events), a process driver (`RealProcessDriver`: workers in their own process groups, stopped with
 * their whole process family, output and exit code in files), the local checkpoint
 * (`LevelCheckpoint` / `MemoryCheckpoint`: grants and the worker registry, restored on restart) and
 * the shell (`Agent`: gRPC server, master registration and heartbeats, re-adoption of live workers
 * after a restart) and the node's AM host as the agent sees it (`HostedAmDriver`,
 * `AmHostSupervisor`, `AmHostConnection`: many AMs in one `fuxi-amhost` process), and peer probing
 * (`ProbeCore`, `Prober`: UDP pings to the peers the master names, changes reported in heartbeats).
 *
 * ```ts
 * import { Agent, resolveConfig } from '@fuxi/agent';
 * const agent = new Agent(resolveConfig({ master: '127.0.0.1:7070', workDir: '/tmp/agent' }, {}), { log });
 * await agent.start();
 * ```
 */
export * from './core/agent-core.js';
export * from './core/state-delta.js';
export * from './core/probes.js';
export * from './shell/process-driver.js';
export * from './shell/checkpoint.js';
export * from './shell/event-sender.js';
export * from './shell/config.js';
export * from './shell/wire.js';
export * from './shell/agent.js';
export * from './shell/am-host-client.js';
export * from './shell/am-host-supervisor.js';
export * from './shell/hosted-am-driver.js';
export * from './shell/prober.js';
export * from './core/resource-limits.js';
export * from './shell/cgroups.js';
