#!/usr/bin/env node
/**
 * fuxi-local-cluster: runs a master and N agents on loopback in the foreground until Ctrl-C. Each
 * serves Prometheus metrics on a loopback port (printed as `metrics  http://...` after its line;
 * --no-metrics turns them off), and the master its web dashboard on the same port (printed as
 * `dashboard  http://.../` after its metrics line).
 *
 * Mutual TLS by default: it makes a CA and certificates under `<dir>/pki` (the master, each agent,
 * an `admin` client) and prints the `export` lines the CLI needs; --insecure runs plaintext.
 *
 *   fuxi-local-cluster --agents 3 --dir /tmp/fuxi
 *   export FUXI_MASTER=127.0.0.1:PORT FUXI_TLS_CA=... FUXI_TLS_CERT=... FUXI_TLS_KEY=...   # as printed
 *   fuxi submit job.yaml --wait                                                           # in another shell
 */
import { FUXI_VERSION } from '@fuxi/common';
import { Command, InvalidArgumentError } from 'commander';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalCluster } from './local-cluster.js';

function count(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1 || n > 64) throw new InvalidArgumentError('must be an integer from 1 to 64');
  return n;
}

/** The launcher learns each daemon's address from its "ready" log line (info): a level that hides it would never start. */
function logLevel(v: string): string {
  if (!['info', 'debug', 'trace'].includes(v)) {
    throw new InvalidArgumentError(`must be info, debug or trace, got "${v}" (the launcher reads each daemon's "ready" line, logged at info)`);
  }
  return v;
}

const program = new Command('fuxi-local-cluster')
  .version(FUXI_VERSION, '-V, --version', 'print the version and exit')
  .description('start a Fuxi-TS master and agents on loopback (stops them on Ctrl-C)')
  .option('--agents <n>', 'number of agents', count, 3)
  .option('--dir <dir>', 'root folder for data, work dirs and logs (default: a new temp dir)')
  .option('--agent-cpu <cores>', 'cores per agent', '2')
  .option('--agent-memory <mem>', 'memory per agent', '4Gi')
  .option('--log-level <level>', 'log level of the daemons: info, debug or trace (it waits for their "ready" lines, logged at info)', logLevel, 'info')
  .option('--no-metrics', 'do not serve Prometheus metrics (default: every daemon serves them on a loopback port)')
  .option('--keep-workers', 'leave workers running on stop (they survive agents by design)')
  .option('--insecure', 'plaintext, no TLS (default: mutual TLS with a CA and certificates made under <dir>/pki)')
  .showHelpAfterError();

async function main(): Promise<void> {
  program.parse();
  const o = program.opts<{
    agents: number;
    dir?: string;
    agentCpu: string;
    agentMemory: string;
    logLevel: string;
    metrics: boolean;
    keepWorkers?: boolean;
    insecure?: boolean;
  }>();
  const dir = o.dir ?? mkdtempSync(join(tmpdir(), 'fuxi-cluster-'));
  const cluster = await LocalCluster.start({
    dir,
    agents: o.agents,
    agentCpu: o.agentCpu,
    agentMemory: o.agentMemory,
    logLevel: o.logLevel,
    metrics: o.metrics,
    insecure: o.insecure ?? false,
  });
  // Each daemon's line, then where its metrics are (when served), and the master's dashboard.
  const metrics = (url: string | undefined) => (url ? `metrics  ${url}\n` : '');
  const dashboard = cluster.master.dashboardUrl ? `dashboard  ${cluster.master.dashboardUrl}\n` : '';
  process.stdout.write(
    `master  ${cluster.masterAddress}  pid ${cluster.master.pid}  log ${cluster.master.logFile}\n${metrics(cluster.master.metricsUrl)}${dashboard}`,
  );
  for (const a of cluster.agents) process.stdout.write(`${a.nodeId.padEnd(7)} ${a.address}  pid ${a.pid}  log ${a.logFile}\n${metrics(a.metricsUrl)}`);
  const env = { FUXI_MASTER: cluster.masterAddress, ...cluster.clientEnv() };
  const exports = Object.entries(env)
    .map(([k, v]) => `export ${k}=${v}\n`)
    .join('');
  const pki = cluster.pki ? `\ncertificates  ${cluster.pki.dir} (CA ca.crt; admin.crt is the CLI's)\n` : '\nINSECURE: plaintext, no TLS (--insecure)\n';
  process.stdout.write(`${pki}\n${exports}(Ctrl-C stops the cluster)\n`);
  const stop = () => {
    process.stdout.write('stopping...\n');
    cluster.stop({ killWorkers: !o.keepWorkers }).then(() => process.exit(0));
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

main().catch((e: unknown) => {
  process.stderr.write(`fuxi-local-cluster: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(1);
});
