/**
 * The agent's configuration: command-line flags over an optional YAML/JSON file (same names, in
 * camelCase) over host defaults. Every bad value is an InvalidArgumentError naming its key.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';
import { InvalidArgumentError, parseCpu, parseMemory, type Resource } from '@fuxi/common';
import { readTokenFile } from '@fuxi/rpc';
import { parseMetricsListen } from '@fuxi/rpc/metrics';
import { parseInsecure, parseTlsConfig, type TlsFiles } from '@fuxi/rpc/tls';
import { DEFAULT_MAX_MESSAGE_BYTES, parseMaxMessageBytes } from '@fuxi/rpc/message-size';
import { DEFAULT_PENDING_TIMEOUT_MS } from '../core/agent-core.js';
import { DEFAULT_PROBE_MISSES, DEFAULT_PROBE_PERIOD_MS } from '../core/probes.js';
import { ENFORCEMENT_SETTINGS, type EnforcementSetting } from '../core/resource-limits.js';
import { DEFAULT_STOP_GRACE_MS } from './process-driver.js';

export interface AgentConfig {
  /** Master addresses (host:port), the leader first when known. */
  masters: string[];
  /** Address the AgentService binds (host:port; port 0 = any free port). */
  listen: string;
  /** Address the master and AMs use to reach this agent; default: the bound one. */
  advertise: string | undefined;
  /** Address of the Prometheus metrics endpoint (`GET /metrics`); '' = off. */
  metricsListen: string;
  nodeId: string;
  rack: string;
  labels: Record<string, string>;
  capacity: Resource;
  workDir: string;
  /**
   * A finished worker's directory (logs, output) is deleted this long after it finished, once its
   * app has no running worker and no grant on this node any more. Default 24h (`workerRetention`).
   */
  workerRetentionMs: number;
  /**
   * Above this share of the work dir's file system in use (percent), finished worker directories
   * are deleted oldest-finished first, running apps' too (never a running worker's). 100: never. Default 90.
   */
  workDirMaxDiskPercent: number;
  stopGraceMs: number;
  pendingTimeoutMs: number;
  /**
   * After a restart from the local checkpoint, pending plans wait this long for the master to
   * confirm the grant table; then they run from the checkpoint's grants (the master is failing over
   * too: Table 3 row 12, "From Checkpoint"). Default 5000.
   */
  restoreGrantWaitMs: number;
  /** fsync every checkpoint batch (default false: a write survives the agent's own crash, not the host's). */
  checkpointSync: boolean;
  logLevel: string;
  /** A file holding this agent's bearer token for the master (role agent, named as this node; absent = none). */
  tokenFile?: string;
  /**
   * The built-in application master of this node's installation: what runs when the master asks
   * this agent to start an AM without naming a command (the default), so an AM is always the one
   * installed on the host that runs it.
   */
  amCommand: string[];
  /**
   * Runs the built-in AM of jobs that do not ask for `am: dedicated` inside this node's AM host
   * (`fuxi-amhost`, one long-lived process holding many AMs) instead of a process each. Default true.
   */
  amHost: boolean;
  /** This installation's `fuxi-amhost` (the appmaster package beside this one), run by this Node. */
  amHostCommand: string[];
  /**
   * Held back from the capacity offered to the cluster while hosting is on: the host process's own
   * base (each hosted AM's `__am__` slot is granted on top of it). Default 50m cpu, 96 MB.
   */
  amHostReserve: Resource;
  /** AMs of jobs with at least this many instances run in a worker thread of the host. Default 10,000. */
  amHostThreadInstances: number;
  /** Peer probing over UDP (core/probes.ts, shell/prober.ts). */
  probe: ProbeSettings;
  /**
   * How workers are held to their grants (shell/cgroups.ts): `cgroup-v2`, `cgroup-v1` (a cgroup per
   * worker with memory and CPU limits), `rss` (memory only: the family's RSS sampled, killed past
   * its grant), `off`, or `auto` (the first of these the host allows; the default).
   */
  resourceEnforcement: EnforcementSetting;
  /**
   * Mutual TLS: `{ca, cert, key}` PEM paths (this node's certificate: CN = its node id, O = agent,
   * SANs of the addresses it is dialed at). Its AMs and workers get the paths (never the key
   * material) in `FUXI_TLS_CA`, `FUXI_TLS_CERT`, `FUXI_TLS_KEY`. Required unless `insecure`.
   */
  tls?: TlsFiles | undefined;
  /**
   * The certificate job processes present over mutual TLS (`{cert, key}`, signed by the same CA;
   * role `worker`: it reads other agents' outputs and nothing on the master). Job processes run as
   * another user, who cannot read the agent's own key: give them this one (a key they may read).
   * Absent: they get the agent's files (which work only where they run as the agent's user).
   */
  workerTls?: { cert: string; key: string } | undefined;
  /**
   * Plaintext, no TLS (an explicit opt-out; loudly warned about beyond loopback). The master's calls
   * cannot be told from others' then, so a StopWorkers or UpdateGrants with no token is taken as the
   * master's. StartWorkers needs the app's current AM token on every cluster.
   */
  insecure?: boolean | undefined;
  /**
   * Who job processes run as when the agent runs as root (core/worker-identity.ts): this user
   * (default `nobody`), or `workerUsers[<quota group>]` for jobs of a group listed there. A user
   * that is uid 0 is a config error unless `allowRootWorkers` is true. An agent that is not root
   * runs them as itself and says so at start.
   */
  workerUser: string;
  workerUsers: Record<string, string>;
  allowRootWorkers: boolean;
  /** Absolute roots besides its own directory that a job's `cwd` may resolve into. Default none. */
  allowedPaths: string[];
  /** Largest gRPC message the agent sends or receives (packages/rpc/src/message-size.ts). Default 64 MiB. */
  maxMessageBytes: number;
}

/**
 * Peer probing: the agent pings the peers the master gives it every `periodMs` and finds one
 * unreachable after `misses` unanswered rounds; it answers its peers' pings on UDP `port` of its
 * advertised host (0: the agent's gRPC port). Off, it neither probes nor answers, and the master
 * gives it no targets and nobody it as a target.
 */
export interface ProbeSettings {
  enabled: boolean;
  periodMs: number;
  misses: number;
  port: number;
}

export const DEFAULT_PROBE: Readonly<ProbeSettings> = Object.freeze({
  enabled: true,
  periodMs: DEFAULT_PROBE_PERIOD_MS,
  misses: DEFAULT_PROBE_MISSES,
  port: 0,
});
const PROBE_KEYS = ['enabled', 'periodMs', 'misses', 'port'] as const;

/** Keys accepted in a config file (and, in kebab-case, as flags). */
export const CONFIG_KEYS = [
  'master',
  'listen',
  'advertise',
  'metricsListen',
  'nodeId',
  'rack',
  'labels',
  'cpu',
  'memory',
  'workDir',
  'workerRetention',
  'workDirMaxDiskPercent',
  'stopGraceMs',
  'pendingTimeoutMs',
  'restoreGrantWaitMs',
  'checkpointSync',
  'logLevel',
  'tokenFile',
  'amCommand',
  'amHost',
  'amHostCommand',
  'amHostCpu',
  'amHostMemory',
  'amHostThreadInstances',
  'probe',
  'resourceEnforcement',
  'tls',
  'workerTls',
  'insecure',
  'workerUser',
  'workerUsers',
  'allowRootWorkers',
  'allowedPaths',
  'maxMessageBytes',
] as const;
export type ConfigKey = (typeof CONFIG_KEYS)[number];
/** Flags that set one file of `tls` (`--tls-ca`, `--tls-cert`, `--tls-key`). */
export const TLS_FLAGS = { tlsCa: 'ca', tlsCert: 'cert', tlsKey: 'key' } as const;
/** Flags that set one file of `workerTls` (`--worker-tls-cert`, `--worker-tls-key`). */
export const WORKER_TLS_FLAGS = { workerTlsCert: 'cert', workerTlsKey: 'key' } as const;
export type TlsFlag = keyof typeof TLS_FLAGS;

export interface HostFacts {
  hostname: string;
  cpus: number;
  totalMemoryMb: number;
}

export function hostFacts(): HostFacts {
  return { hostname: os.hostname(), cpus: os.availableParallelism(), totalMemoryMb: Math.floor(os.totalmem() / (1024 * 1024)) };
}

export const DEFAULT_LISTEN = '127.0.0.1:0';
/**
 * This installation's `fuxi-appmaster` (the appmaster package beside this one), run by this Node:
 * its bundle (`make build`, scripts/bundle.mjs), which starts much faster than the module tree; the
 * module tree only in a tree compiled without bundling (`tsc -b` alone).
 */
export const DEFAULT_AM_COMMAND = [process.execPath, installedBin('../../../appmaster/dist/fuxi-appmaster.cjs', '../../../appmaster/dist/shell/main.js')];

function installedBin(bundled: string, unbundled: string): string {
  const b = fileURLToPath(new URL(bundled, import.meta.url));
  return fs.existsSync(b) ? b : fileURLToPath(new URL(unbundled, import.meta.url));
}

/**
 * This installation's `fuxi-amhost`, run by this Node: its bundle when there is one (it is ready in
 * about half the time, and an AM host's start is on the way back of every AM it held when it
 * crashed), else the module tree. Its AMs of large jobs run in threads on the module tree's
 * am-thread.js either way.
 */
export const DEFAULT_AM_HOST_COMMAND = [
  process.execPath,
  installedBin('../../../appmaster/dist/fuxi-amhost.cjs', '../../../appmaster/dist/shell/am-host-main.js'),
];
/** The AM host process's own base (measured: docs/architecture.md, "The AM host"). */
export const DEFAULT_AM_HOST_RESERVE: Resource = Object.freeze({ cpuMilli: 50, memoryMb: 96 });
export const DEFAULT_AM_HOST_THREAD_INSTANCES = 10_000;
export const DEFAULT_WORK_DIR = '/var/lib/fuxi/agent';
export const DEFAULT_RESTORE_GRANT_WAIT_MS = 5000;
export const DEFAULT_WORKER_RETENTION_MS = 24 * 3_600_000;
export const DEFAULT_WORK_DIR_MAX_DISK_PERCENT = 90;
const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'];

/** Reads a YAML or JSON config file into a plain object (keys are checked by `resolveConfig`). */
export function loadConfigFile(file: string): Record<string, unknown> {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    throw new InvalidArgumentError('config', `cannot read ${file}: ${(e as Error).message}`);
  }
  let v: unknown;
  try {
    v = file.endsWith('.json') ? JSON.parse(text) : parseYaml(text);
  } catch (e) {
    throw new InvalidArgumentError('config', `${file} is not valid ${file.endsWith('.json') ? 'JSON' : 'YAML'}: ${(e as Error).message}`);
  }
  if (v === null || v === undefined) return {};
  if (typeof v !== 'object' || Array.isArray(v)) throw new InvalidArgumentError('config', `${file} must hold a mapping of settings`);
  return v as Record<string, unknown>;
}

/**
 * Merges `flags` (set ones only) over `file` over host defaults, and validates.
 * `flags` and `file` use the camelCase keys of CONFIG_KEYS.
 */
export function resolveConfig(
  flags: Partial<Record<ConfigKey | TlsFlag, unknown>>,
  file: Record<string, unknown>,
  host: HostFacts = hostFacts(),
  defaultAmCommand: string[] = DEFAULT_AM_COMMAND,
  defaultAmHostCommand: string[] = DEFAULT_AM_HOST_COMMAND,
): AgentConfig {
  for (const k of Object.keys(file)) {
    if (!(CONFIG_KEYS as readonly string[]).includes(k)) throw new InvalidArgumentError(k, `unknown setting (known: ${CONFIG_KEYS.join(', ')})`);
  }
  const pick = (k: ConfigKey): unknown => (flags[k] !== undefined ? flags[k] : file[k]);

  const masterRaw = pick('master');
  if (masterRaw === undefined || masterRaw === '') throw new InvalidArgumentError('master', 'is required: the master address(es), host:port[,host:port...]');
  let masters: string[];
  if (typeof masterRaw === 'string') masters = masterRaw.split(',');
  else if (Array.isArray(masterRaw) && masterRaw.every((m) => typeof m === 'string')) masters = (masterRaw as string[]).flatMap((m) => m.split(','));
  else throw new InvalidArgumentError('master', `must be host:port or a list of them, got ${JSON.stringify(masterRaw)}`);
  masters = masters.map((m) => m.trim()).filter((m) => m !== '');
  if (masters.length === 0) throw new InvalidArgumentError('master', 'is required');
  masters.forEach((m) => checkHostPort('master', m, false));

  const listen = str('listen', pick('listen') ?? DEFAULT_LISTEN);
  checkHostPort('listen', listen, true);
  const advRaw = pick('advertise');
  const advertise = advRaw === undefined || advRaw === '' ? undefined : str('advertise', advRaw);
  if (advertise !== undefined) checkHostPort('advertise', advertise, true);
  const metricsListen = parseMetricsListen('metricsListen', pick('metricsListen'));

  const nodeId = str('nodeId', pick('nodeId') ?? host.hostname);
  if (!/^[A-Za-z0-9][A-Za-z0-9_.:-]*$/.test(nodeId))
    throw new InvalidArgumentError('nodeId', `must be letters, digits, '.', '_', ':' or '-', got ${JSON.stringify(nodeId)}`);
  const rack = str('rack', pick('rack') ?? 'default');
  if (!rack) throw new InvalidArgumentError('rack', 'must not be empty');

  const labels = parseLabels(pick('labels'));

  const cpuRaw = pick('cpu');
  const cpuMilli = cpuRaw === undefined ? host.cpus * 1000 : parseCpu(numberish(cpuRaw), 'cpu');
  if (cpuMilli <= 0) throw new InvalidArgumentError('cpu', 'must be positive');
  const memRaw = pick('memory');
  const memoryMb = memRaw === undefined ? host.totalMemoryMb : parseMemory(numberish(memRaw), 'memory');
  if (memoryMb <= 0) throw new InvalidArgumentError('memory', 'must be positive');

  const workDir = str('workDir', pick('workDir') ?? DEFAULT_WORK_DIR);
  if (!workDir) throw new InvalidArgumentError('workDir', 'must not be empty');
  const workerRetentionRaw = pick('workerRetention');
  const workerRetentionMs = workerRetentionRaw === undefined ? DEFAULT_WORKER_RETENTION_MS : parseDuration('workerRetention', workerRetentionRaw);
  const workDirMaxDiskPercent = percent('workDirMaxDiskPercent', pick('workDirMaxDiskPercent') ?? DEFAULT_WORK_DIR_MAX_DISK_PERCENT);

  const stopGraceMs = nonNegInt('stopGraceMs', pick('stopGraceMs') ?? DEFAULT_STOP_GRACE_MS);
  const pendingTimeoutMs = nonNegInt('pendingTimeoutMs', pick('pendingTimeoutMs') ?? DEFAULT_PENDING_TIMEOUT_MS);
  const restoreGrantWaitMs = nonNegInt('restoreGrantWaitMs', pick('restoreGrantWaitMs') ?? DEFAULT_RESTORE_GRANT_WAIT_MS);
  const checkpointSync = bool('checkpointSync', pick('checkpointSync') ?? false);
  const logLevel = str('logLevel', pick('logLevel') ?? process.env.FUXI_LOG_LEVEL ?? 'info');
  if (!LOG_LEVELS.includes(logLevel)) throw new InvalidArgumentError('logLevel', `must be one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(logLevel)}`);

  const tokenFileRaw = pick('tokenFile');
  const tokenFile = tokenFileRaw === undefined || tokenFileRaw === '' ? '' : str('tokenFile', tokenFileRaw);
  if (tokenFile) readTokenFile(tokenFile); // missing or empty: stop now, naming the key
  const amCommand = commandLine('amCommand', pick('amCommand'), defaultAmCommand);
  const amHost = bool('amHost', pick('amHost') ?? true);
  const amHostCommand = commandLine('amHostCommand', pick('amHostCommand'), defaultAmHostCommand);
  const reserveCpuRaw = pick('amHostCpu');
  const reserveMemRaw = pick('amHostMemory');
  const amHostReserve: Resource = {
    cpuMilli: reserveCpuRaw === undefined ? DEFAULT_AM_HOST_RESERVE.cpuMilli : parseCpu(numberish(reserveCpuRaw), 'amHostCpu'),
    memoryMb: reserveMemRaw === undefined ? DEFAULT_AM_HOST_RESERVE.memoryMb : parseMemory(numberish(reserveMemRaw), 'amHostMemory'),
  };
  if (amHost && (amHostReserve.cpuMilli >= cpuMilli || amHostReserve.memoryMb >= memoryMb))
    throw new InvalidArgumentError(
      amHostReserve.cpuMilli >= cpuMilli ? 'amHostCpu' : 'amHostMemory',
      `the AM host's reserve must be smaller than the node's capacity (cpu ${cpuMilli}m, memory ${memoryMb} MB)`,
    );
  const amHostThreadInstances = nonNegInt('amHostThreadInstances', pick('amHostThreadInstances') ?? DEFAULT_AM_HOST_THREAD_INSTANCES, 'an instance count');
  const probe = parseProbe(pick('probe'));
  const enfRaw = pick('resourceEnforcement') ?? 'auto';
  const resourceEnforcement = typeof enfRaw === 'string' ? enfRaw.trim() : enfRaw;
  if (typeof resourceEnforcement !== 'string' || !(ENFORCEMENT_SETTINGS as readonly string[]).includes(resourceEnforcement))
    throw new InvalidArgumentError('resourceEnforcement', `must be one of ${ENFORCEMENT_SETTINGS.join(', ')}, got ${JSON.stringify(enfRaw)}`);

  const workerUser = str('workerUser', pick('workerUser') ?? '').trim();
  const workerUsers = parseWorkerUsers(pick('workerUsers'));
  const allowRootWorkers = bool('allowRootWorkers', pick('allowRootWorkers') ?? false);
  const allowedPaths = parseAllowedPaths(pick('allowedPaths'));
  const mmRaw = pick('maxMessageBytes');
  const maxMessageBytes = mmRaw === undefined ? DEFAULT_MAX_MESSAGE_BYTES : parseMaxMessageBytes('maxMessageBytes', mmRaw);

  return {
    masters,
    listen,
    advertise,
    metricsListen,
    nodeId,
    rack,
    labels,
    capacity: { cpuMilli, memoryMb },
    workDir,
    workerRetentionMs,
    workDirMaxDiskPercent,
    stopGraceMs,
    pendingTimeoutMs,
    restoreGrantWaitMs,
    checkpointSync,
    logLevel,
    ...(tokenFile ? { tokenFile } : {}),
    amCommand,
    amHost,
    amHostCommand,
    amHostReserve,
    amHostThreadInstances,
    probe,
    resourceEnforcement: resourceEnforcement as EnforcementSetting,
    workerUser,
    workerUsers,
    allowRootWorkers,
    allowedPaths,
    maxMessageBytes,
    ...resolveTls(flags, file),
    ...resolveWorkerTls(flags as Record<string, unknown>, file),
  };
}

/** `tls` from the file, each of its files overridden by `--tls-ca/--tls-cert/--tls-key`; `insecure`. */
function resolveTls(flags: Partial<Record<ConfigKey | TlsFlag, unknown>>, file: Record<string, unknown>): { tls?: TlsFiles; insecure: boolean } {
  const tlsFlags = Object.keys(TLS_FLAGS).some((f) => flags[f as TlsFlag] !== undefined);
  // Flags over the file: --insecure drops the file's tls; --tls-* the file's insecure.
  const insecureRaw = flags.insecure !== undefined ? flags.insecure : tlsFlags ? undefined : file.insecure;
  const insecure = insecureRaw === undefined ? false : parseInsecure('insecure', insecureRaw);
  let tls: Record<string, unknown> | undefined;
  if (file.tls !== undefined && !(flags.insecure !== undefined && insecure)) tls = { ...parseTlsConfig('tls', file.tls) };
  for (const [flag, part] of Object.entries(TLS_FLAGS)) {
    const v = flags[flag as TlsFlag];
    if (v === undefined) continue;
    if (typeof v !== 'string' || v === '') throw new InvalidArgumentError(`--tls-${part}`, `must be a file path, got ${JSON.stringify(v)}`);
    tls = { ...(tls ?? {}), [part]: v };
  }
  return tls ? { tls: parseTlsConfig('tls', tls), insecure } : { insecure };
}

/** `workerUsers`: a mapping of quota group -> user, or as a flag `group=user[,group=user...]`. */
export function parseWorkerUsers(v: unknown): Record<string, string> {
  if (v === undefined || v === null || v === '') return {};
  let entries: Array<[string, unknown]>;
  if (typeof v === 'string') {
    entries = v
      .split(',')
      .filter((p) => p.trim() !== '')
      .map((p) => {
        const i = p.indexOf('=');
        if (i <= 0) throw new InvalidArgumentError('workerUsers', `must be group=user[,group=user...], got ${JSON.stringify(v)}`);
        return [p.slice(0, i).trim(), p.slice(i + 1).trim()];
      });
  } else if (typeof v === 'object' && !Array.isArray(v)) entries = Object.entries(v as Record<string, unknown>);
  else throw new InvalidArgumentError('workerUsers', `must be a mapping of quota group to user, got ${JSON.stringify(v)}`);
  const out: Record<string, string> = {};
  for (const [g, u] of entries) {
    if (typeof u !== 'string' || u.trim() === '') throw new InvalidArgumentError(`workerUsers.${g}`, `must be a user name, got ${JSON.stringify(u)}`);
    out[g] = u.trim();
  }
  return out;
}

/** `allowedPaths`: absolute directories (a list, or as a flag comma-separated). */
export function parseAllowedPaths(v: unknown): string[] {
  if (v === undefined || v === null || v === '') return [];
  const list = typeof v === 'string' ? v.split(',') : v;
  if (!Array.isArray(list) || !list.every((p) => typeof p === 'string'))
    throw new InvalidArgumentError('allowedPaths', `must be a list of absolute directories, got ${JSON.stringify(v)}`);
  const out = (list as string[]).map((p) => p.trim()).filter((p) => p !== '');
  for (const p of out) if (!p.startsWith('/')) throw new InvalidArgumentError('allowedPaths', `must be absolute, got ${JSON.stringify(p)}`);
  return out;
}

/**
 * `probe`: a mapping ({enabled, periodMs, misses, port}), or as a flag `key=value[,key=value...]`
 * (`--probe periodMs=500,misses=5`); `true` / `false` alone set `enabled`. Unset keys keep their
 * defaults (DEFAULT_PROBE).
 */
export function parseProbe(v: unknown): ProbeSettings {
  if (v === undefined || v === null) return { ...DEFAULT_PROBE };
  let entries: Array<[string, unknown]>;
  if (typeof v === 'boolean') entries = [['enabled', v]];
  else if (typeof v === 'string') {
    if (/^\s*(true|false)\s*$/i.test(v)) entries = [['enabled', v]];
    else {
      entries = [];
      for (const part of v.split(',').filter((p) => p.trim() !== '')) {
        const i = part.indexOf('=');
        if (i <= 0) throw new InvalidArgumentError('probe', `must be key=value[,key=value...] (keys: ${PROBE_KEYS.join(', ')}), got ${JSON.stringify(v)}`);
        entries.push([part.slice(0, i).trim(), part.slice(i + 1).trim()]);
      }
    }
  } else if (typeof v === 'object' && !Array.isArray(v)) entries = Object.entries(v as Record<string, unknown>);
  else throw new InvalidArgumentError('probe', `must be a mapping of ${PROBE_KEYS.join(', ')}, got ${JSON.stringify(v)}`);
  const out: ProbeSettings = { ...DEFAULT_PROBE };
  for (const [k, val] of entries) {
    const key = `probe.${k}`;
    switch (k) {
      case 'enabled':
        out.enabled = bool(key, val);
        break;
      case 'periodMs':
        out.periodMs = positiveInt(key, val, 'milliseconds');
        break;
      case 'misses':
        out.misses = positiveInt(key, val, 'unanswered rounds');
        break;
      case 'port':
        out.port = nonNegInt(key, val, 'a UDP port; 0: the gRPC port');
        if (out.port > 65535) throw new InvalidArgumentError(key, `must be a UDP port (0-65535), got ${JSON.stringify(val)}`);
        break;
      default:
        throw new InvalidArgumentError(key, `unknown setting (known: ${PROBE_KEYS.join(', ')})`);
    }
  }
  return out;
}

const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * A duration: a number with a unit (`ms`, `s`, `m`, `h`, `d`; e.g. "24h", "90m", "1.5d"), or a bare
 * integer of milliseconds. Returns milliseconds.
 */
export function parseDuration(key: string, v: unknown): number {
  if (typeof v === 'number' && Number.isInteger(v) && v >= 0) return v;
  const m = typeof v === 'string' ? /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$/.exec(v) : null;
  if (!m || (m[2] === undefined && !/^\d+$/.test(m[1] ?? '')))
    throw new InvalidArgumentError(key, `must be a duration such as "24h", "90m", "30s" or milliseconds, got ${JSON.stringify(v)}`);
  return Math.round(Number(m[1]) * (DURATION_UNITS[m[2] ?? 'ms'] ?? 1));
}

function percent(key: string, v: unknown): number {
  const n = typeof v === 'string' && /^\s*\d+(\.\d+)?\s*%?\s*$/.test(v) ? Number(v.replace('%', '')) : v;
  if (typeof n !== 'number' || !Number.isFinite(n) || n <= 0 || n > 100)
    throw new InvalidArgumentError(key, `must be a percentage of the disk above 0 and at most 100, got ${JSON.stringify(v)}`);
  return n;
}

function commandLine(key: string, v: unknown, dflt: string[]): string[] {
  if (v === undefined) return dflt;
  if (typeof v === 'string' && v.trim() !== '') return v.trim().split(/\s+/);
  if (Array.isArray(v) && v.length > 0 && v.every((x) => typeof x === 'string' && x !== '')) return v as string[];
  throw new InvalidArgumentError(key, `must be a command line (string or list of strings), got ${JSON.stringify(v)}`);
}

function bool(key: string, v: unknown): boolean {
  if (typeof v === 'boolean') return v;
  if (typeof v === 'string' && /^(true|false)$/i.test(v.trim())) return v.trim().toLowerCase() === 'true';
  throw new InvalidArgumentError(key, `must be true or false, got ${JSON.stringify(v)}`);
}

function str(key: string, v: unknown): string {
  if (typeof v === 'number') return String(v);
  if (typeof v !== 'string') throw new InvalidArgumentError(key, `must be a string, got ${JSON.stringify(v)}`);
  return v.trim();
}

/** A flag's string "2" is the number of cores 2, but "500m" stays a string. */
function numberish(v: unknown): unknown {
  return typeof v === 'string' && /^\s*\d+(\.\d+)?\s*$/.test(v) ? Number(v) : v;
}

function nonNegInt(key: string, v: unknown, what = 'milliseconds'): number {
  const n = typeof v === 'string' && /^\s*\d+\s*$/.test(v) ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 0)
    throw new InvalidArgumentError(key, `must be a non-negative integer (${what}), got ${JSON.stringify(v)}`);
  return n;
}

function positiveInt(key: string, v: unknown, what: string): number {
  const n = nonNegInt(key, v, what);
  if (n === 0) throw new InvalidArgumentError(key, `must be a positive integer (${what}), got ${JSON.stringify(v)}`);
  return n;
}

function checkHostPort(key: string, v: string, allowZero: boolean): void {
  const m = /^(.+):(\d{1,5})$/.exec(v);
  const port = m ? Number(m[2]) : NaN;
  if (!m || port > 65535 || (!allowZero && port === 0)) throw new InvalidArgumentError(key, `must be host:port, got ${JSON.stringify(v)}`);
}

function parseLabels(v: unknown): Record<string, string> {
  if (v === undefined || v === null) return {};
  const out: Record<string, string> = {};
  const entries: Array<[string, unknown]> = [];
  if (typeof v === 'string') {
    for (const part of v.split(',').filter((p) => p.trim() !== '')) {
      const i = part.indexOf('=');
      if (i <= 0) throw new InvalidArgumentError('labels', `must be key=value[,key=value...], got ${JSON.stringify(v)}`);
      entries.push([part.slice(0, i).trim(), part.slice(i + 1).trim()]);
    }
  } else if (Array.isArray(v)) {
    for (const part of v) entries.push(...Object.entries(parseLabels(part)));
  } else if (typeof v === 'object') {
    entries.push(...Object.entries(v as Record<string, unknown>));
  } else {
    throw new InvalidArgumentError('labels', `must be a mapping or key=value list, got ${JSON.stringify(v)}`);
  }
  for (const [k, val] of entries) {
    if (typeof val !== 'string' && typeof val !== 'number' && typeof val !== 'boolean') throw new InvalidArgumentError(`labels.${k}`, 'must be a string');
    out[k] = String(val);
  }
  return out;
}

/** `workerTls` from the file, each file overridden by `--worker-tls-cert/--worker-tls-key`. */
function resolveWorkerTls(flags: Record<string, unknown>, file: Record<string, unknown>): { workerTls?: { cert: string; key: string } } {
  let out: Record<string, unknown> = {};
  const raw = file.workerTls;
  if (raw !== undefined) {
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
      throw new InvalidArgumentError('workerTls', 'must be a mapping {cert, key} of PEM file paths');
    for (const k of Object.keys(raw)) if (k !== 'cert' && k !== 'key') throw new InvalidArgumentError(`workerTls.${k}`, 'unknown field (known: cert, key)');
    out = { ...(raw as Record<string, unknown>) };
  }
  for (const [flag, part] of Object.entries(WORKER_TLS_FLAGS)) if (flags[flag] !== undefined) out[part] = flags[flag];
  if (Object.keys(out).length === 0) return {};
  for (const k of ['cert', 'key'] as const)
    if (typeof out[k] !== 'string' || out[k] === '')
      throw new InvalidArgumentError(`workerTls.${k}`, `must be the path of a PEM file, got ${JSON.stringify(out[k])}`);
  return { workerTls: { cert: out.cert as string, key: out.key as string } };
}
