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
 *     [--listen-host 127.0.0.1] [--control] [--am-host] [--am-host-thread-instances 10000] [--probe false]
 *
 * Node ids are `<prefix>-nNNN`, racks `<prefix>-rack-K`; each node gets `<work-dir>/<nodeId>` (the
 * work dir defaults to a temp dir, removed on exit). A worker's plan may set SIM_DURATION_MS
 * (default one hour) and SIM_EXIT_CODE (default 0); its argv is ignored.
 *
 * Logs (pino JSON on stdout) one line `"host ready"` {prefix, nodes, agents: [{nodeId, address}]}
 * once every agent serves (they register with the master in the background). Agents and AMs log at
 * `--agent-log-level` (default warn). SIGTERM / SIGINT: stops every agent and simulated worker and
 * exits. Fake worker pids are unique in the host and never real pids (see sim-driver.ts).
 *
 * `--control` (the paper evaluation benchmark): commands on stdin, one per line, `<id> <command>
 * [args]`, each answered by a log line `"control reply"` {id, ok, ...}:
 *
 *   crash-agent <nodeId> <downMs>   the node's agent crashes and restarts after downMs (same address,
 *                                   same checkpoint, workers re-adopted); later "agent restarted"
 *                                   {nodeId, recoveredMs, adopted, ended}
 *   pause-agent <nodeId> <ms>       timing failure of the node's agent; later "agent resumed"
 *                                   {nodeId, recoveredMs}
 *   crash-am <appId>                the app's in-process AM dies (worker reported killed by SIGKILL)
 *   pause-am <appId> <ms>           the app's AM goes silent towards the master for ms; later
 *                                   "am resumed" {appId, recoveredMs} once the master answers it
 *   list-ams                        {ams: [{appId, amAttempt, nodeId}]}
 *   stats                           {apps: {appId: {spawns, amSpawns, killed, failed, wastedMs, spawned: [keys],
 *                                   succeeded: [keys]}}, nodes: {nodeId: {spawns, failed, killed, failedAtMs: [ms]}},
 *                                   rpc: {method: HistogramJson}} (keys "task:instance"; wastedMs: time
 *                                   of workers that did not succeed; non-AM workers only)
 *
 * With `--control` every master call of the host's agents and AMs is timed (rpc-timing.ts).
 *
 * `--proneness <json>` (the failure prediction benchmark): hidden failure proneness of some nodes,
 * `{"<nodeId>": {"fail": 0.45}, "<nodeId>": {"memoryFail": 0.6, "memoryAt": 0.7}}`: the node fails
 * that fraction of its workers, or of those started with at least `memoryAt` of its memory in use
 * (sim-driver.ts `hostFailure`). Flapping is the controller's: `pause-agent`.
 *
 * `--probe`: the virtual agents' peer probing (the agent setting `probe`: `true`, or
 * `key=value,...`); off by default, since every virtual node's pings would share this one process.
 *
 * `--am-host`: the AMs of every virtual node run in one real `fuxi-amhost` process (its socket and
 * record under `<work-dir>/amhost`) instead of in this process; AMs of jobs with at least
 * `--am-host-thread-instances` instances get a thread there. The AM fault commands do not apply.
 */
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { createInterface } from 'node:readline';
import { Agent, MemoryCheckpoint, resolveConfig, type AgentConfig, type SpawnSpec } from '@fuxi/agent';
import { createLogger, errorMessage, type Logger } from '@fuxi/common';
import { pauseAgent, restartAgent } from './agent-faults.js';
import { levelFilter, startInProcessAm } from './in-process-am.js';
import { instrumentMasterCalls } from './rpc-timing.js';
import { AM_SU } from '@fuxi/common';
import { PidCounter, SimProcessDriver, SIM_PID_BASE, type SimDriverObserver } from './sim-driver.js';
import { SharedAmHost } from './shared-am-host.js';
import { removeTree } from '@fuxi/deploy';

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
  control: boolean;
  /** Where the virtual agents bind (port 0 each): 127.0.0.1, or 0.0.0.0 on a rack host. */
  listenHost: string;
  /** AMs run in one real AM host process. */
  amHost: boolean;
  amHostThreadInstances: number;
  /** The agents' `probe` setting ('false' by default). */
  probe: string;
  /** Hidden failure proneness by node id (`--proneness`). */
  proneness: Record<string, Proneness>;
}

/** A node's hidden failure proneness: a fraction of every worker, or of those started under memory pressure. */
export interface Proneness {
  fail?: number;
  memoryFail?: number;
  memoryAt?: number;
}

function parseProneness(raw: string | undefined): Record<string, Proneness> {
  if (raw === undefined || raw === '') return {};
  const v: unknown = JSON.parse(raw);
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new Error('--proneness must be a JSON object keyed by node id');
  for (const [node, p] of Object.entries(v as Record<string, unknown>)) {
    if (typeof p !== 'object' || p === null) throw new Error(`--proneness.${node} must be an object like {"fail": 0.4}`);
    for (const [k, n] of Object.entries(p as Record<string, unknown>)) {
      if (!['fail', 'memoryFail', 'memoryAt'].includes(k)) throw new Error(`--proneness.${node}.${k} is not fail, memoryFail or memoryAt`);
      if (typeof n !== 'number' || n < 0 || n > 1) throw new Error(`--proneness.${node}.${k} must be a number from 0 to 1`);
    }
  }
  return v as Record<string, Proneness>;
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
      'listen-host': { type: 'string', default: '127.0.0.1' },
      control: { type: 'boolean', default: false },
      'am-host': { type: 'boolean', default: false },
      'am-host-thread-instances': { type: 'string', default: '10000' },
      probe: { type: 'string', default: 'false' },
      proneness: { type: 'string' },
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
  if (!/^[A-Za-z0-9][A-Za-z0-9_.-]*$/.test(values.prefix))
    throw new Error(`--prefix must be letters, digits, '.', '_' or '-', got ${JSON.stringify(values.prefix)}`);
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
    listenHost: String(values['listen-host']),
    control: values.control,
    amHost: values['am-host'],
    amHostThreadInstances: int('am-host-thread-instances', values['am-host-thread-instances'], 0),
    probe: values.probe,
    proneness: parseProneness(values.proneness),
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

  const timings = o.control ? instrumentMasterCalls() : undefined;
  const counts = new InstanceCounts();
  const pids = new PidCounter(o.pidBase);
  const drivers: SimProcessDriver[] = [];
  const agents: Agent[] = [];
  const configs: AgentConfig[] = [];
  const checkpoints: MemoryCheckpoint[] = [];
  const logs: Logger[] = [];
  const width = String(o.nodes).length;
  const shared = o.amHost ? new SharedAmHost({ workDir, threadInstances: o.amHostThreadInstances, log: log.child({ c: 'amhost' }) }) : undefined;
  for (let i = 0; i < o.nodes; i++) {
    const nodeId = `${o.prefix}-n${String(i + 1).padStart(width, '0')}`;
    const nlog = agentLog.child({ nodeId });
    const cfg = resolveConfig(
      {
        master: o.masters,
        listen: `${o.listenHost}:0`,
        nodeId,
        rack: `${o.prefix}-rack-${i % o.racks}`,
        cpu: o.cpu,
        memory: o.memory,
        workDir: join(workDir, nodeId),
        logLevel: o.agentLogLevel,
        probe: o.probe,
      },
      {},
    );
    const prone = o.proneness[nodeId];
    const agentIndex = i;
    const driver = new SimProcessDriver({
      pids,
      log: nlog,
      ...(prone
        ? {
            hostFailure: () => {
              const a = agents[agentIndex];
              const memUsed = a ? a.core.used().memoryMb / Math.max(1, a.config.capacity.memoryMb) : 0;
              const underPressure = prone.memoryFail !== undefined && memUsed >= (prone.memoryAt ?? 0.7);
              return 1 - (1 - (prone.fail ?? 0)) * (1 - (underPressure ? (prone.memoryFail ?? 0) : 0));
            },
          }
        : {}),
      runAppMaster: (spec) => (shared ? shared.run(spec) : startInProcessAm(spec, nlog)),
      ...(o.control ? { observer: counts.forNode(nodeId) } : {}),
    });
    const checkpoint = new MemoryCheckpoint();
    drivers.push(driver);
    configs.push(cfg);
    checkpoints.push(checkpoint);
    logs.push(nlog);
    agents.push(new Agent(cfg, { driver, log: nlog, tickMs: o.tickMs, checkpoint }));
  }
  await Promise.all(agents.map((a) => a.start()));
  log.info({ nodes: agents.length, workDir, agents: agents.map((a) => ({ nodeId: a.config.nodeId, address: a.address })) }, 'host ready');

  const status = setInterval(() => {
    const registered = agents.filter((a) => a.registered).length;
    const workers = drivers.reduce((n, d) => n + d.running, 0);
    log.debug({ registered, workers }, 'host status');
  }, 10_000);
  status.unref();

  if (o.control) {
    const byNode = new Map(configs.map((c, i) => [c.nodeId, i]));
    const busy = new Set<number>();
    const reply = (id: string, ok: boolean, fields: Record<string, unknown> = {}) => log.info({ id, ok, ...fields }, 'control reply');
    const handle = (line: string): void => {
      const [id = '', cmd = '', ...args] = line.trim().split(/\s+/);
      if (!id) return;
      const node = (nodeId: string | undefined): number | undefined => (nodeId === undefined ? undefined : byNode.get(nodeId));
      switch (cmd) {
        case 'crash-agent':
        case 'pause-agent': {
          const i = node(args[0]);
          const ms = Number(args[1] ?? '0');
          if (i === undefined || busy.has(i) || !(ms >= 0))
            return reply(id, false, { err: i === undefined ? 'unknown node' : busy.has(i) ? 'node is already failing' : 'bad ms' });
          busy.add(i);
          const nodeId = configs[i]!.nodeId;
          reply(id, true, { nodeId });
          if (cmd === 'pause-agent') {
            void pauseAgent(agents[i]!, ms)
              .then((r) => log.info({ nodeId, pausedMs: ms, recoveredMs: r.recoveredMs }, 'agent resumed'))
              .finally(() => busy.delete(i));
          } else {
            void restartAgent(agents[i]!, {
              config: configs[i]!,
              driver: drivers[i]!,
              checkpoint: checkpoints[i]!,
              log: logs[i]!,
              tickMs: o.tickMs,
              downMs: ms,
            })
              .then((r) => {
                agents[i] = r.agent;
                log.info({ nodeId, downMs: ms, recoveredMs: r.recoveredMs, adopted: r.adopted, ended: r.ended, address: r.agent.address }, 'agent restarted');
              })
              .catch((e: unknown) => log.error({ nodeId, err: errorMessage(e) }, 'agent restart failed'))
              .finally(() => busy.delete(i));
          }
          return;
        }
        case 'crash-am':
        case 'pause-am': {
          const appId = args[0] ?? '';
          const ms = Number(args[1] ?? '0');
          const i = drivers.findIndex((d) => d.appMasters().some((a) => a.appId === appId));
          if (i < 0) return reply(id, false, { appId, err: 'no application master of this app here' });
          if (cmd === 'crash-am') return reply(id, drivers[i]!.crashAppMaster(appId), { appId, nodeId: configs[i]!.nodeId });
          const resumed = drivers[i]!.pauseAppMaster(appId, ms);
          void resumed?.then((recoveredMs) => log.info({ appId, pausedMs: ms, recoveredMs }, 'am resumed'));
          return reply(id, resumed !== undefined, { appId, nodeId: configs[i]!.nodeId });
        }
        case 'list-ams':
          return reply(id, true, {
            ams: drivers.flatMap((d, i) => d.appMasters().map((a) => ({ appId: a.appId, amAttempt: a.amAttempt, nodeId: configs[i]!.nodeId }))),
          });
        case 'stats':
          return reply(id, true, {
            apps: counts.toJSON(),
            nodes: counts.nodesJSON(),
            rpc: Object.fromEntries([...(timings ?? new Map())].map(([k, h]) => [k, h.toJSON()])),
          });
        default:
          return reply(id, false, { err: `unknown command ${JSON.stringify(cmd)}` });
      }
    };
    createInterface({ input: process.stdin }).on('line', (line) => {
      try {
        handle(line);
      } catch (e) {
        log.error({ line, err: errorMessage(e) }, 'control command failed');
      }
    });
  }

  let stopping = false;
  const stop = (sig: string): void => {
    if (stopping) return;
    stopping = true;
    log.info({ signal: sig }, 'stopping the simulated nodes');
    setTimeout(() => process.exit(0), 5000).unref();
    void Promise.allSettled(agents.map((a) => a.stop())).then(() => {
      for (const d of drivers) d.shutdown();
      shared?.close();
      if (ownDir) removeTree(workDir);
      process.exit(0);
    });
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

/** Per app and per node: worker starts and ends seen by this host's simulated drivers (AM workers apart). */
class InstanceCounts implements SimDriverObserver {
  private readonly nodes = new Map<string, { spawns: number; failed: number; killed: number; failedAtMs: number[] }>();

  /** The observer of one node's driver: counts per app, and per node. */
  forNode(nodeId: string): SimDriverObserver {
    const n = { spawns: 0, failed: 0, killed: 0, failedAtMs: [] as number[] };
    this.nodes.set(nodeId, n);
    return {
      spawned: (spec) => {
        if (spec.suId !== AM_SU) n.spawns++;
        this.spawned(spec);
      },
      finished: (spec, exitCode, signal) => {
        if (spec.suId !== AM_SU && exitCode !== 0) {
          if (signal) n.killed++;
          else {
            n.failed++;
            n.failedAtMs.push(Date.now());
          }
        }
        this.finished(spec, exitCode, signal);
      },
    };
  }

  nodesJSON(): Record<string, unknown> {
    return Object.fromEntries(this.nodes);
  }

  private readonly apps = new Map<
    string,
    { spawns: number; amSpawns: number; killed: number; failed: number; wastedMs: number; spawned: Set<string>; succeeded: Set<string> }
  >();
  /** Start times of running (non-AM) workers, by app/worker id. */
  private readonly started = new Map<string, number>();

  private app(appId: string) {
    let a = this.apps.get(appId);
    if (!a) this.apps.set(appId, (a = { spawns: 0, amSpawns: 0, killed: 0, failed: 0, wastedMs: 0, spawned: new Set(), succeeded: new Set() }));
    return a;
  }

  spawned(spec: SpawnSpec): void {
    const a = this.app(spec.appId);
    if (spec.suId === AM_SU) {
      a.amSpawns++;
      return;
    }
    a.spawns++;
    a.spawned.add(`${spec.task}:${spec.instance}`);
    this.started.set(`${spec.appId}/${spec.workerId}`, Date.now());
  }

  finished(spec: SpawnSpec, exitCode: number | null, signal: string | null): void {
    if (spec.suId === AM_SU) return;
    const a = this.app(spec.appId);
    const k = `${spec.appId}/${spec.workerId}`;
    const ranMs = Date.now() - (this.started.get(k) ?? Date.now());
    this.started.delete(k);
    if (exitCode === 0) a.succeeded.add(`${spec.task}:${spec.instance}`);
    else {
      // A slot's time spent on an attempt that produced nothing (failed, or stopped).
      a.wastedMs += ranMs;
      if (signal) a.killed++;
      else a.failed++;
    }
  }

  toJSON(): Record<string, unknown> {
    return Object.fromEntries(
      [...this.apps].map(([appId, a]) => [
        appId,
        {
          spawns: a.spawns,
          amSpawns: a.amSpawns,
          killed: a.killed,
          failed: a.failed,
          wastedMs: a.wastedMs,
          spawned: [...a.spawned],
          succeeded: [...a.succeeded],
        },
      ]),
    );
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`agent-host: ${errorMessage(e)}\n`);
  process.exit(1);
});
