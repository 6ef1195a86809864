#!/usr/bin/env node
/**
 * fuxi-agent: the Fuxi-TS node agent.
 *
 *   fuxi-agent --master 127.0.0.1:7070 --listen 0.0.0.0:7071 --advertise node1:7071 --work-dir /var/lib/fuxi/agent
 *   fuxi-agent --config /etc/fuxi/agent.yaml
 *
 * When serving it logs one JSON line with msg "agent ready" and the `address` it serves at.
 * SIGTERM / SIGINT stop it without touching its workers (they keep running).
 *
 * Started again with the same --work-dir (after a crash, kill -9, or an upgrade), it restores its
 * grants and worker registry from `<work-dir>/checkpoint`, re-adopts the workers that still run (same
 * pid, /proc start time and boot id) and reports how the others ended; run it under systemd with
 * `KillMode=process` so that stopping the agent never stops its workers.
 */
import { Command, CommanderError } from 'commander';
import { createLogger, errorMessage, InvalidArgumentError, FUXI_VERSION } from '@fuxi/common';
import { insecureListenWarning, installProcessGuards, reloadOnSighup, setDefaultTransport, setMaxMessageBytes, Transport } from '@fuxi/rpc';
import { Agent } from './agent.js';
import { loadConfigFile, resolveConfig, type ConfigKey, type TlsFlag } from './config.js';
import { checkOwnCertificate } from './own-certificate.js';

const program = new Command('fuxi-agent')
  .version(FUXI_VERSION, '-V, --version', 'print the version and exit')
  .description('Fuxi-TS node agent: starts workers when the master grants and the application master plans')
  .option('-c, --config <file>', 'YAML or JSON config file (keys as the long flags, camelCase)')
  .option('--master <addr[,addr...]>', 'master address(es), host:port (required)')
  .option('--listen <host:port>', 'address to bind (default 127.0.0.1:0)')
  .option('--advertise <host:port>', 'address the master and AMs use (default: the bound address)')
  .option('--metrics-listen <host:port>', 'serve Prometheus metrics at http://host:port/metrics (default: off)')
  .option('--node-id <id>', 'node id (default: the hostname)')
  .option('--rack <name>', "rack name (default 'default')")
  .option('--labels <k=v,...>', 'node labels')
  .option('--cpu <cores>', 'CPU capacity offered, cores or millicores (default: all cores)')
  .option('--memory <quantity>', 'memory capacity offered, e.g. 8Gi (default: all memory)')
  .option('--work-dir <dir>', 'worker directories and logs (default /var/lib/fuxi/agent)')
  .option('--worker-retention <duration>', 'finished worker directories are deleted this long after they finished, once their job is done here (default 24h)')
  .option('--work-dir-max-disk-percent <n>', 'above this disk usage, finished worker directories go oldest first (default 90; 100: never)')
  .option('--stop-grace-ms <ms>', 'SIGTERM to SIGKILL grace when stopping a worker (default 5000)')
  .option('--pending-timeout-ms <ms>', 'a plan without a grant with room is rejected after this (default 60000)')
  .option(
    '--restore-grant-wait-ms <ms>',
    'after a restart, pending plans wait this long for the master to confirm grants, then use the checkpoint (default 5000)',
  )
  .option('--checkpoint-sync', 'fsync every local checkpoint write (default: off; writes survive an agent crash, not a host crash)')
  .option('--am-command <cmd>', "command line of this node's application master (default: the fuxi-appmaster installed beside this agent)")
  .option('--am-host <bool>', "run jobs' AMs (all but `am: dedicated`) in this node's AM host, one process for many (default true)")
  .option('--am-host-command <cmd>', 'command line of the AM host (default: the fuxi-amhost installed beside this agent)')
  .option('--am-host-cpu <cores>', "held back from the offered capacity for the AM host's own base (default 50m)")
  .option('--am-host-memory <quantity>', "held back from the offered capacity for the AM host's own base (default 96Mi)")
  .option('--am-host-thread-instances <n>', 'AMs of jobs with at least this many instances run in a thread of the AM host (default 10000)')
  .option(
    '--probe <settings>',
    'peer probing over UDP: false to turn it off, or key=value[,...] of enabled, periodMs (200), misses (3), port (0: the gRPC port)',
  )
  .option(
    '--resource-enforcement <mode>',
    'how workers are held to their grants: auto (default), cgroup-v2, cgroup-v1 (a cgroup per worker with memory and CPU limits), rss (memory only: RSS sampled, killed past the grant), off',
  )
  .option('--token-file <file>', "this agent's bearer token for the master (a tokens-file entry with role agent named as this node)")
  .option('--tls-ca <file>', 'mutual TLS: CA certificate (PEM) peers must be signed by (config: tls.ca)')
  .option('--tls-cert <file>', "mutual TLS: this node's certificate (CN=<node id>, O=agent; config: tls.cert)")
  .option('--tls-key <file>', 'mutual TLS: its private key (config: tls.key)')
  .option('--insecure', 'plaintext, no TLS (config: insecure: true); without it the agent needs tls')
  .option('--worker-tls-cert <file>', 'the certificate job processes present (role worker; config: workerTls.cert)')
  .option('--worker-tls-key <file>', 'its private key, readable by the worker users (config: workerTls.key)')
  .option('--worker-user <user>', 'when the agent runs as root, job processes run as this user (default nobody; never uid 0 without --allow-root-workers)')
  .option('--worker-users <group=user,...>', "users of the listed quota groups' job processes (default: --worker-user for all)")
  .option('--allow-root-workers <bool>', 'let a worker user be uid 0 (default false)')
  .option('--allowed-paths <dir,...>', "absolute directories a job's cwd may resolve into besides the worker's own (default none)")
  .option('--max-message-bytes <n>', 'largest gRPC message sent or received, bytes or 64Mi (default 64Mi)')
  .option('--log-level <level>', 'trace, debug, info, warn, error')
  .showHelpAfterError()
  .exitOverride();

async function main(): Promise<void> {
  try {
    program.parse();
  } catch (e) {
    if (e instanceof CommanderError) process.exit(e.exitCode === 0 ? 0 : 2);
    throw e;
  }
  const { config, ...flags } = program.opts<Partial<Record<ConfigKey | TlsFlag | 'config', string | boolean>>>();
  const file = typeof config === 'string' && config ? loadConfigFile(config) : {};
  const cfg = resolveConfig(flags, file);
  // TLS on by default: neither tls nor insecure: true is a configuration error naming `tls`.
  const transport = Transport.from({ tls: cfg.tls, insecure: cfg.insecure });
  checkOwnCertificate(transport.identity, cfg.nodeId);
  const log = createLogger('agent', { level: cfg.logLevel });
  installProcessGuards(log, 'fuxi-agent');
  setDefaultTransport(transport);
  reloadOnSighup(transport, log);
  const warning = insecureListenWarning(transport, cfg.listen);
  if (warning) log.warn({ listen: cfg.listen }, warning);
  else log.info(transport.describe(), 'transport');
  setMaxMessageBytes(cfg.maxMessageBytes);
  const agent = new Agent(cfg, { log });
  await agent.start();
  let stopping = false;
  const stop = (sig: string): void => {
    if (stopping) return;
    stopping = true;
    log.info({ signal: sig }, 'stopping (workers keep running)');
    // Let the loop drain (flushes the async log); force the exit if something lingers.
    setTimeout(() => process.exit(0), 3000).unref();
    agent.stop().then(
      () => {
        process.exitCode = 0;
      },
      (e: unknown) => {
        process.stderr.write(`fuxi-agent: error while stopping: ${errorMessage(e)}\n`);
        process.exitCode = 0;
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

main().catch((e: unknown) => {
  if (e instanceof InvalidArgumentError) {
    process.stderr.write(`fuxi-agent: invalid configuration: ${e.message}\n`);
    process.exit(2);
  }
  process.stderr.write(`fuxi-agent: ${errorMessage(e)}\n`);
  process.exit(1);
});
