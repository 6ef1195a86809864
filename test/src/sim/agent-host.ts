#!/usr/bin/env node
/**
 * A host of simulated nodes: many virtual nodes in one Node process, each a real `Agent` from
 * `@fuxi/agent` (its own node id, rack, capacity and gRPC port, registering and heartbeating with
 * the real masters) whose ProcessDriver is simulated: a worker is a timer (`SIM_DURATION_MS` in its
 * plan's environment), and an application-master worker is a real in-process `AppMaster` from
 * `@fuxi/appmaster`, so apps make progress. Used by the failover benchmark to reach hundreds of
 * nodes on one machine.
 *
 *   node test/dist/sim/agent-host.js --master a:1,b:2,c:3 --nodes 100 --prefix sim1 --cpu 23 --memory 82Gi
 *     [--racks 5] [--work-dir DIR] [--pid-base 5000000] [--log-level info] [--agent-log-level warn] [--tick-ms 1000]
 *
 * Node ids are `<prefix>-nNNN`, racks `<prefix>-rack-K`; each node gets `<work-dir>/<nodeId>` (the
 * work dir defaults to a temp dir, removed on exit). A worker's plan may set SIM_DURATION_MS
 * (default one hour) and SIM_EXIT_CODE (default 0); its argv is ignored.
 *
 * Logs (pino JSON on stdout) one line `"host ready"` {prefix, nodes, agents: [{nodeId, address}]}
 * once every agent serves (they register with the master in the background). Agents and AMs log at
 * `--agent-log-level` (default warn). SIGTERM / SIGINT: stops every agent and simulated worker and
 * exits. Fake worker pids are unique in the host and never real pids (see sim-driver.ts).
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Agent, MemoryCheckpoint, resolveConfig } from '@fuxi/agent';
import { createLogger, errorMessage } from '@fuxi/common';
import { levelFilter, startInProcessAm } from './in-process-am.js';
import { PidCounter, SimProcessDriver, SIM_PID_BASE } from './sim-driver.js';

const LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'];

interface HostOptions {
  masters: string;
  nodes: number;
  prefix: string;
  cpu: string;
  memory: string;
  racks: number;
  workDir: string | undefined;
  pidBase: number;
  logLevel: string;
  agentLogLevel: string;
  tickMs: number;
}

function parse(): HostOptions {
  const { values } = parseArgs({
    options: {
      master: { type: 'string' },
      nodes: { type: 'string', default: '100' },
      prefix: { type: 'string', default: 'sim' },
      cpu: { type: 'string', default: '23' },
      memory: { type: 'string', default: '82Gi' },
      racks: { type: 'string', default: '5' },
      'work-dir': { type: 'string' },
      'pid-base': { type: 'string', default: String(SIM_PID_BASE) },
      'log-level': { type: 'string', default: 'info' },
      'agent-log-level': { type: 'string', default: 'warn' },
      'tick-ms': { type: 'string', default: '1000' },
    },
    strict: true,
  });
  const int = (k: string, v: string | undefined, min: number): number => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < min) throw new Error(`--${k} must be an integer >= ${min}, got ${JSON.stringify(v)}`);
    return n;
  };
  if (!values.master) throw new Error('--master is required (host:port[,host:port...])');
  for (const k of ['log-level', 'agent-log-level'] as const) if (!LEVELS.includes(values[k])) throw new Error(`--${k} must be one of ${LEVELS.join(', ')}`);
  if (!/^[A-Za-z0-9][A-Za-z0-9_.-]*$/.test(values.prefix)) throw new Error(`--prefix must be letters, digits, '.', '_' or '-', got ${JSON.stringify(values.prefix)}`);
  return {
    masters: values.master,
    nodes: int('nodes', values.nodes, 1),
    prefix: values.prefix,
    cpu: values.cpu,
    memory: values.memory,
    racks: int('racks', values.racks, 1),
    workDir: values['work-dir'],
    pidBase: int('pid-base', values['pid-base'], SIM_PID_BASE),
    logLevel: values['log-level'],
    agentLogLevel: values['agent-log-level'],
    tickMs: int('tick-ms', values['tick-ms'], 10),
  };
}

async function main(): Promise<void> {
  const o = parse();
  const base = createLogger('agent-host', { level: 'trace' });
  const log = levelFilter(base, o.logLevel).child({ prefix: o.prefix });
  const agentLog = levelFilter(base, o.agentLogLevel);
  const ownDir = o.workDir === undefined;
  const workDir = o.workDir ?? mkdtempSync(join(tmpdir(), `fuxi-sim-${o.prefix}-`));
  mkdirSync(workDir, { recursive: true });

  process.on('unhandledRejection', (e) => log.error({ err: errorMessage(e) }, 'unhandled rejection'));
  process.on('uncaughtException', (e) => log.error({ err: e.stack ?? e.message }, 'uncaught exception'));

  const pids = new PidCounter(o.pidBase);
  const drivers: SimProcessDriver[] = [];
  const agents: Agent[] = [];
  const width = String(o.nodes).length;
  for (let i = 0; i < o.nodes; i++) {
    const nodeId = `${o.prefix}-n${String(i + 1).padStart(width, '0')}`;
    const nlog = agentLog.child({ nodeId });
    const cfg = resolveConfig(
      { master: o.masters, listen: '127.0.0.1:0', nodeId, rack: `${o.prefix}-rack-${i % o.racks}`, cpu: o.cpu, memory: o.memory, workDir: join(workDir, nodeId), logLevel: o.agentLogLevel },
      {},
    );
    const driver = new SimProcessDriver({ pids, log: nlog, runAppMaster: (spec) => startInProcessAm(spec, nlog) });
    drivers.push(driver);
    agents.push(new Agent(cfg, { driver, log: nlog, tickMs: o.tickMs, checkpoint: new MemoryCheckpoint() }));
  }
  await Promise.all(agents.map((a) => a.start()));
  log.info({ nodes: agents.length, workDir, agents: agents.map((a) => ({ nodeId: a.config.nodeId, address: a.address })) }, 'host ready');

  const status = setInterval(() => {
    const registered = agents.filter((a) => a.registered).length;
    const workers = drivers.reduce((n, d) => n + d.running, 0);
    log.debug({ registered, workers }, 'host status');
  }, 10_000);
  status.unref();

  let stopping = false;
  const stop = (sig: string): void => {
    if (stopping) return;
    stopping = true;
    log.info({ signal: sig }, 'stopping the simulated nodes');
    setTimeout(() => process.exit(0), 5000).unref();
    void Promise.allSettled(agents.map((a) => a.stop())).then(() => {
      for (const d of drivers) d.shutdown();
      if (ownDir) rmSync(workDir, { recursive: true, force: true });
      process.exit(0);
    });
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

main().catch((e: unknown) => {
  process.stderr.write(`agent-host: ${errorMessage(e)}\n`);
  process.exit(1);
});
