#!/usr/bin/env node
/**
 * `fuxi-appmaster`: the built-in DAG application master. The agent starts it as a worker with
 * FUXI_MASTER (comma-separated master addresses), FUXI_APP_ID, FUXI_AM_ATTEMPT and FUXI_NODE_ID in
 * its environment, and where it runs: FUXI_BIND_HOST (the agent's listen host; the AM binds
 * `FUXI_BIND_HOST:0`) and FUXI_NODE_HOST (the host as peers reach it; the AM advertises
 * `FUXI_NODE_HOST:<bound port>`, never loopback on a rack). FUXI_AM_BIND and FUXI_AM_ADVERTISE
 * override both; FUXI_LOG_LEVEL is optional. Exits 0 once FinishApp went through (whether the job succeeded or failed), 1 on a fatal
 * error (the master then restarts the AM or fails the job), 143 on SIGTERM (its agent stops it).
 * Its last log line carries the process's CPU time (`cpuMs`). Mutual TLS with the files its agent
 * names in FUXI_TLS_CA, FUXI_TLS_CERT and FUXI_TLS_KEY, or plaintext with FUXI_INSECURE=1; with
 * neither it exits 1.
 */
import { createLogger, errorMessage, FUXI_VERSION, InvalidArgumentError } from '@fuxi/common';
import { AppMaster, configFromEnv } from './app-master.js';

async function main(): Promise<number> {
  if (process.argv.includes('--version') || process.argv.includes('-V')) {
    process.stdout.write(`${FUXI_VERSION}\n`);
    return 0;
  }
  const log = createLogger('appmaster');
  const fail = (what: string) => (e: unknown) => {
    log.error({ err: e instanceof Error ? (e.stack ?? e.message) : String(e) }, what);
    process.exit(1);
  };
  process.on('uncaughtException', fail('uncaught exception'));
  process.on('unhandledRejection', fail('unhandled rejection'));
  // Stopped by its agent (the app is over, or a newer attempt runs): gone at once, as before, with its CPU time logged.
  process.on('SIGTERM', () => {
    const cpu = process.cpuUsage();
    log.info({ cpuMs: Math.round((cpu.user + cpu.system) / 1000) }, 'application master stopped (SIGTERM)');
    process.exit(143);
  });
  try {
    const cfg = configFromEnv(process.env, log);
    // TLS on by default: the agent always says (FUXI_TLS_* or FUXI_INSECURE=1); a bare start is refused.
    if (!cfg.transport)
      throw new InvalidArgumentError('FUXI_TLS_CA', 'required: FUXI_TLS_CA, FUXI_TLS_CERT and FUXI_TLS_KEY (or FUXI_INSECURE=1 for plaintext)');
    const am = new AppMaster(cfg);
    const result = await am.run();
    const cpu = process.cpuUsage();
    log.info({ succeeded: result.succeeded, message: result.message, cpuMs: Math.round((cpu.user + cpu.system) / 1000) }, 'application master exiting');
    return 0;
  } catch (e) {
    log.error({ err: errorMessage(e) }, 'application master failed');
    return 1;
  }
}

main().then(
  (code) => process.exit(code),
  () => process.exit(1),
);
