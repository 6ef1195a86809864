#!/usr/bin/env node
/**
 * `fuxi-amhost`: the node's AM host, many application masters in one process (am-host.ts). Its
 * agent starts it (own process group, outliving the agent like a worker) and talks to it over a
 * unix socket in the agent's work dir, one JSON message per line (`@fuxi/common`
 * am-host-protocol.ts):
 *
 *   fuxi-amhost --socket <path> [--thread-instances 10000] [--idle-exit-ms 60000] [--log-level info]
 *   fuxi-amhost --version
 *
 * Logs (pino JSON on stdout) "AM host ready" {socket, pid} once it listens. It exits 0 after
 * `--idle-exit-ms` with no AM and no agent connected (a host whose agent never came back), and 1
 * on an error no hosted AM owns. An error a hosted AM owns ends that AM alone.
 */
import * as fs from 'node:fs';
import * as net from 'node:net';
import { parseArgs } from 'node:util';
import { createLogger, encodeLine, errorMessage, FUXI_VERSION, LineDecoder, type AmHostAnswer, type AmHostRequest, type Logger } from '@fuxi/common';
import { CHANNEL_LINGER_MS, setChannelLingerMs } from '@fuxi/rpc';
import { AmHost, DEFAULT_THREAD_INSTANCES } from './am-host.js';

const DEFAULT_IDLE_EXIT_MS = 60_000;

const USAGE = `usage: fuxi-amhost --socket <path> [--thread-instances ${DEFAULT_THREAD_INSTANCES}] [--idle-exit-ms ${DEFAULT_IDLE_EXIT_MS}] [--log-level info]
       fuxi-amhost --version
The node's AM host: its agent starts it and talks to it over the unix socket <path>.
`;

function options(): { socket: string; threadInstances: number; idleExitMs: number; logLevel: string } {
  if (process.argv.includes('--version') || process.argv.includes('-V')) {
    process.stdout.write(`${FUXI_VERSION}\n`);
    process.exit(0);
  }
  if (process.argv.includes('--help') || process.argv.includes('-h')) {
    process.stdout.write(USAGE);
    process.exit(0);
  }
  let values: { socket?: string; 'thread-instances'?: string; 'idle-exit-ms'?: string; 'log-level'?: string };
  try {
    ({ values } = parseArgs({
      options: {
        socket: { type: 'string' },
        'thread-instances': { type: 'string', default: String(DEFAULT_THREAD_INSTANCES) },
        'idle-exit-ms': { type: 'string', default: String(DEFAULT_IDLE_EXIT_MS) },
        'log-level': { type: 'string', default: process.env.FUXI_LOG_LEVEL ?? 'info' },
      },
    }));
  } catch (e) {
    // An unknown flag, a flag without its value, a stray argument: named, with the usage.
    process.stderr.write(`fuxi-amhost: ${errorMessage(e)}\n${USAGE}`);
    process.exit(2);
  }
  const num = (name: string, v: string | undefined): number => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < 0) {
      process.stderr.write(`fuxi-amhost: --${name} must be an integer >= 0, got ${JSON.stringify(v)}\n`);
      process.exit(2);
    }
    return n;
  };
  if (!values.socket) {
    process.stderr.write('fuxi-amhost: --socket <path> is required\n');
    process.exit(2);
  }
  return {
    socket: values.socket,
    threadInstances: num('thread-instances', values['thread-instances']),
    idleExitMs: num('idle-exit-ms', values['idle-exit-ms']),
    logLevel: values['log-level'] ?? 'info',
  };
}

function serve(o: ReturnType<typeof options>, log: Logger): void {
  // Its AMs come and go: the next one takes the channels (to the master, to the agents) the last
  // one gave up, instead of a new TLS connection each.
  setChannelLingerMs(CHANNEL_LINGER_MS);
  const host = new AmHost({ log, threadInstances: o.threadInstances, logLevel: o.logLevel });
  const fatal = (what: string) => (e: unknown) => {
    if (host.attribute(e)) return;
    log.error({ err: e instanceof Error ? (e.stack ?? e.message) : String(e) }, `${what} outside every hosted AM (a bug); exiting`);
    setTimeout(() => process.exit(1), 200).unref();
    process.exitCode = 1;
  };
  process.on('uncaughtException', fatal('uncaught exception'));
  process.on('unhandledRejection', fatal('unhandled rejection'));

  let agent: net.Socket | undefined;
  let idleSince = Date.now();
  host.onExit((e) => {
    if (agent && !agent.destroyed) agent.write(encodeLine(e));
  });

  const answer = (req: AmHostRequest, conn: net.Socket): AmHostAnswer => {
    const ok = { id: req.id, ok: true as const, pid: process.pid };
    switch (req.op) {
      case 'hello':
        if (req.role === 'agent') {
          if (agent && agent !== conn) agent.destroy();
          agent = conn;
          log.info({ ams: host.size }, 'agent connected');
        }
        return { ...ok, ams: host.list() };
      case 'start':
        return { ...ok, ...host.start(req.am) };
      case 'stop':
        host.stop(req.key, req.graceMs);
        return ok;
      case 'list':
        return { ...ok, ams: host.list() };
      case 'ping':
        return ok;
      case 'fault':
        return host.fault(req.key, req.fault) ? ok : { id: req.id, ok: false, error: `no hosted application master ${req.key}` };
      case 'stats':
        return { ...ok, stats: host.stats(req.reset) };
      default:
        return { id: Number((req as { id?: unknown }).id) || 0, ok: false, error: `unknown op ${JSON.stringify((req as { op?: unknown }).op)}` };
    }
  };

  // A socket left by an earlier host: its agent knows that host is gone.
  fs.rmSync(o.socket, { force: true });
  const server = net.createServer((conn) => {
    const lines = new LineDecoder();
    conn.on('data', (chunk) => {
      let msgs: unknown[];
      try {
        msgs = lines.push(chunk);
      } catch (e) {
        log.warn({ err: errorMessage(e) }, 'AM host connection sent a line past the limit; closed');
        conn.destroy();
        return;
      }
      for (const msg of msgs) {
        const req = msg as AmHostRequest;
        let out: AmHostAnswer;
        try {
          out = answer(req, conn);
        } catch (e) {
          out = { id: Number(req?.id) || 0, ok: false, error: errorMessage(e) };
        }
        if (!conn.destroyed) conn.write(encodeLine(out));
      }
    });
    conn.on('error', () => undefined);
    conn.on('close', () => {
      if (agent !== conn) return;
      agent = undefined;
      idleSince = Date.now();
      log.info({ ams: host.size }, 'agent disconnected; hosted application masters keep running');
    });
  });
  server.listen(o.socket, () => {
    fs.chmodSync(o.socket, 0o600);
    log.info({ socket: o.socket, threadInstances: o.threadInstances }, 'AM host ready');
  });
  server.on('error', (e) => {
    log.error({ socket: o.socket, err: errorMessage(e) }, 'AM host cannot listen; exiting');
    process.exit(1);
  });

  const idle = setInterval(
    () => {
      if (host.size > 0 || agent) {
        idleSince = Date.now();
        return;
      }
      if (o.idleExitMs > 0 && Date.now() - idleSince >= o.idleExitMs) {
        log.info({ idleMs: Date.now() - idleSince }, 'no application master and no agent: AM host exiting');
        server.close();
        clearInterval(idle);
        setTimeout(() => process.exit(0), 100).unref();
      }
    },
    Math.max(100, Math.min(5000, o.idleExitMs / 4)),
  );
}

const opts = options();
serve(opts, createLogger('amhost', { level: opts.logLevel }));
