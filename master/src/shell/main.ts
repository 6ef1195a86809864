#!/usr/bin/env node
/**
 * fuxi-master: the Fuxi-TS master daemon.
 *
 *   fuxi-master --listen 127.0.0.1:7070 --data-dir /var/lib/fuxi/master
 *   fuxi-master --config /etc/fuxi/master.yaml
 */
import { Command } from 'commander';
import { createLogger, errorMessage, InvalidArgumentError, loopbackAdvertiseProblem, portOf, FUXI_VERSION } from '@fuxi/common';
import { advertisedAddress, insecureListenWarning, installProcessGuards, reloadOnSighup, setDefaultTransport, setMaxMessageBytes, Transport } from '@fuxi/rpc';
import { applyConfig, defaultConfig, readConfigFile } from './config.js';
import { MasterServer } from './master-server.js';

/**
 * No AM command by default: the agent that starts an application master runs the fuxi-appmaster
 * installed on its own host (its `amCommand`), so the master's install path never matters.
 */
const defaultAm: string[] = [];

const program = new Command('fuxi-master')
  .version(FUXI_VERSION, '-V, --version', 'print the version and exit')
  .description('Fuxi-TS master: matches resource requests to machines')
  .option('-c, --config <file>', 'YAML or JSON config file (keys as the long flags, camelCase)')
  .option('--listen <host:port>', 'address to bind (default 127.0.0.1:7070)')
  .option('--advertise <host:port>', 'address agents, AMs and clients use (default: the bound address)')
  .option('--metrics-listen <host:port>', 'serve Prometheus metrics at http://host:port/metrics (default: off)')
  .option('--store <kind>', 'hard-state store: embedded (LevelDB, one master) or etcd (HA: standbys campaign)')
  .option('--data-dir <dir>', 'directory of the embedded store (default /var/lib/fuxi/master)')
  .option('--etcd-endpoints <urls>', 'etcd client URLs, comma-separated (default http://127.0.0.1:2379)')
  .option('--etcd-prefix <prefix>', 'key prefix of this cluster in etcd (default /fuxi/)')
  .option('--lease-ttl-sec <s>', 'leader lease TTL (default 5)')
  .option('--masters <addrs>', "every master's host:port, comma-separated (given to application masters)")
  .option('--recovery-deadline-ms <ms>', 'failover: longest aggregation window (default 5000)')
  .option('--am-timeout-ms <ms>', 'failover: fail an app whose AM has not reported by then (default 30000)')
  .option('--heartbeat-interval-ms <ms>', 'agent heartbeat interval')
  .option('--agent-timing-out-ms <ms>', 'an agent silent this long is timing out: slots reserved, AMs told (default 3000)')
  .option('--record-heartbeats <file>', 'append every agent heartbeat arrival ("<nodeId> <ms>") to this file, for make bench-detectors')
  .option('--agent-timeout-ms <ms>', 'an agent silent this long is lost: its slots are released (default 60000)')
  .option('--scheduling-interval-ms <ms>', 'batch scheduling: one pass for every request and return at most this often (0 = a pass per call; default 2)')
  .option('--am-stall-timeout-ms <ms>', 'an AM silent this long gets a new attempt (0 = never; default 30000)')
  .option('--max-am-attempts <n>', 'AM attempts per job (default 4; 1 = no AM failover)')
  .option('--external-scheduler-stall-ms <ms>', 'an external scheduler silent this long counts as gone (default 10000)')
  .option('--external-scheduler-fallback-ms <ms>', 'jobs of an external scheduler absent this long go to the built-in scheduler (default: they wait)')
  .option('--job-retention-ms <ms>', 'delete a finished job this long after it ended (default 604800000, 7 days)')
  .option('--job-retention-count <n>', 'keep at most this many finished jobs, deleting the oldest (default 100000)')
  .option('--max-job-spec-bytes <n>', 'refuse job specs larger than this (default 1048576; keep below etcd --max-request-bytes; 0 = no limit)')
  .option('--max-env-bytes <n>', 'refuse a job whose worker environment (job env + task env) is larger than this (default 65536; 0 = no limit)')
  .option('--max-env-vars <n>', 'refuse a job whose worker environment has more variables than this (default 256; 0 = no limit)')
  .option('--max-instances-per-job <n>', 'refuse a job with more instances than this over all its tasks (default 200000; 0 = no limit)')
  .option('--max-message-bytes <n>', 'largest gRPC message sent or received, bytes or 64Mi (default 64Mi)')
  .option('--submit-rate-per-sec <n>', 'jobs a second each caller may submit after its burst (default 50; 0 = no limit)')
  .option('--submit-burst <n>', 'jobs a caller may submit at once (default 2000)')
  .option('--speculation-allowance <fraction>', "an AM may hold and ask for a task's instances plus this fraction of them, at least one slot (default 0.1)")
  .option(
    '--max-am-share <fraction>',
    'application masters hold at most this share of the cluster, in every dimension; one always may run (default 0.1; 1: no limit)',
  )
  .option('--master-failover <bool>', 'soft-state inference when a master takes over (default true; false = unfinished jobs fail)')
  .option('--connectivity-aware <bool>', "place connected jobs by the hosts' reachability (default true; false = ignore broken links between hosts)")
  .option('--am-heartbeat-interval-ms <ms>', 'application master heartbeat interval')
  .option('--am-command <cmd>', "command line of the application master process (default: each agent runs its own host's fuxi-appmaster)")
  .option('--probe-all-up-to <n>', 'up to this many probing agents, each probes every other (default 64)')
  .option('--probe-sample <n>', 'above it, each agent probes this many peers on a hash ring... (default 16)')
  .option('--probe-max-targets <n>', '...plus hosts sharing an app with it, this many in all (default 64)')
  .option(
    '--tokens-file <file>',
    'static bearer tokens, one "token,name,role[,group...]" per line (roles admin, user, agent, master); reloaded on change and SIGHUP',
  )
  .option('--tls-ca <file>', 'mutual TLS: CA certificate (PEM) peers must be signed by (config: tls.ca)')
  .option('--tls-cert <file>', "mutual TLS: this master's certificate (CN=master, O=master; config: tls.cert)")
  .option('--tls-key <file>', 'mutual TLS: its private key (config: tls.key)')
  .option('--insecure', 'plaintext, no TLS (config: insecure: true); without it the master needs tls')
  .option('--log-level <level>', 'trace, debug, info, warn, error')
  .showHelpAfterError();

async function main(): Promise<void> {
  program.parse();
  const o = program.opts<Record<string, string | undefined>>();
  let cfg = defaultConfig(defaultAm);
  const { config, ...flags } = o;
  if (config) cfg = applyConfig(cfg, readConfigFile(config), config);
  cfg = applyConfig(cfg, flags, 'flags');
  // A loopback address told to peers on other hosts (standbys, agents, AMs): they would dial themselves.
  const key = cfg.advertise ? 'advertise' : 'listen';
  const problem = loopbackAdvertiseProblem(key, advertisedAddress(cfg.listen, portOf(cfg.listen) ?? 0, cfg.advertise || undefined), [
    ...cfg.masters,
    ...(cfg.store === 'etcd' ? cfg.etcdEndpoints : []),
  ]);
  if (problem) throw new InvalidArgumentError(key, problem.slice(problem.indexOf(': ') + 2));
  // TLS on by default: neither tls nor insecure: true is a configuration error naming `tls`.
  const transport = Transport.from({ tls: cfg.tls, insecure: cfg.insecure });
  const log = createLogger('master', { level: cfg.logLevel });
  installProcessGuards(log, 'fuxi-master');
  setDefaultTransport(transport);
  reloadOnSighup(transport, log);
  const warning = insecureListenWarning(transport, cfg.listen);
  if (warning) log.warn({ listen: cfg.listen }, warning);
  else log.info(transport.describe(), 'transport');
  setMaxMessageBytes(cfg.maxMessageBytes);
  const master = new MasterServer(cfg, log);
  await master.start();
  let stopping = false;
  const stop = (sig: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal: sig }, 'stopping');
    master.stop().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGHUP', () => master.reloadTokens());
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

main().catch((e: unknown) => {
  if (e instanceof InvalidArgumentError) {
    process.stderr.write(`fuxi-master: invalid configuration: ${e.message}\n`);
    process.exit(2);
  }
  process.stderr.write(`fuxi-master: ${errorMessage(e)}\n`);
  process.exit(1);
});
