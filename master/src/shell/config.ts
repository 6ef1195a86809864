/**
 * Master configuration: defaults, an optional YAML/JSON file, then command-line flags. Every bad
 * value is an InvalidArgumentError naming the key.
 */
import { readFileSync } from 'node:fs';
import { InvalidArgumentError, parseCpu, parseMemory, type Resource } from '@fuxi/common';
import { parseMetricsListen } from '@fuxi/rpc/metrics';
import { parseInsecure, parseTlsConfig, type TlsFiles } from '@fuxi/rpc/tls';
import { parse as parseYaml } from 'yaml';
import { parseDetectorConfig, type DetectorConfig } from '../core/detectors.js';
import { parsePredictionConfig } from '../core/prediction-config.js';
import { DEFAULT_PROBE_TARGETS } from '../core/probe-targets.js';
import type { QuotaGroup } from '../core/scheduler.js';
import { DEFAULT_JOB_INPUT_LIMITS } from '../core/request-limits.js';
import { DEFAULT_SUBMIT_RATE } from '../core/submit-rate.js';
import { DEFAULT_MAX_MESSAGE_BYTES, parseMaxMessageBytes } from '@fuxi/rpc';

export interface MasterConfig {
  /** Address to bind the gRPC server to. */
  listen: string;
  /** Address agents, AMs and clients should use (default: the bound address). */
  advertise: string;
  /** Address of the Prometheus metrics endpoint (`GET /metrics`); '' = off. */
  metricsListen: string;
  store: 'embedded' | 'memory' | 'etcd';
  dataDir: string;
  /** etcd client URLs (store: etcd). */
  etcdEndpoints: string[];
  /** Key prefix of this cluster in etcd. */
  etcdPrefix: string;
  /** Election lease TTL: a crashed leader is replaced after about this long. */
  leaseTtlSec: number;
  /** Every master's address (this one included): what AMs get to find the leader after a failover. */
  masters: string[];
  /** Failover: the aggregation window closes at the latest after this long. */
  recoveryDeadlineMs: number;
  /** Failover: an app whose AM has not reported by then is failed (its MockSU released). */
  amTimeoutMs: number;
  /** An agent silent this long is timing out: reserved, not schedulable, its AMs told. */
  agentTimingOutMs: number;
  /**
   * Which heartbeat failure detector decides that an agent is timing out (`{kind, ...params}`;
   * kinds fixed, chen, bertier, phi, sfd: master/src/core/detectors.ts). Default: bertier, with
   * agentTimingOutMs of silence until it has learnt an agent's beat. Unset parameters take the
   * kind's defaults (`resolvedDetector`).
   */
  failureDetector: Record<string, unknown>;
  /**
   * Failure prediction (master/src/core/prediction-config.ts): `false` turns it off; an object sets
   * its numbers (`blockAt`, `grayAt`, `halfLifeMs`, `failurePenalty`, ...). Default on.
   */
  failurePrediction: unknown;
  /** Append every agent heartbeat arrival (`<nodeId> <ms>`) to this file ('' = off): traces for `make bench-detectors`. */
  recordHeartbeats: string;
  /** An AM silent this long gets a new attempt; the old one is fenced (0 = never). */
  amStallTimeoutMs: number;
  /** Batch scheduling: one pass for all requests and returns at most this often (0 = a pass per call). */
  schedulingIntervalMs: number;
  /** AM attempts per job before it fails. */
  maxAmAttempts: number;
  /** An external scheduler silent this long (no Place call or keepalive) counts as gone. */
  externalSchedulerStallMs: number;
  /** Jobs of an external scheduler absent this long go to the built-in scheduler (0 = at once; unset = they wait). */
  externalSchedulerFallbackMs: number | undefined;
  /** Job specs above this many bytes are refused (keep below etcd's --max-request-bytes; 0 = no limit). */
  maxJobSpecBytes: number;
  /** A worker's environment (the job's `env` and its task's) above this many bytes is refused at submit (0 = no limit). */
  maxEnvBytes: number;
  /** ... above this many variables (0 = no limit). */
  maxEnvVars: number;
  /** A job with more instances than this over all its tasks is refused at submit (0 = no limit). */
  maxInstancesPerJob: number;
  /** Largest gRPC message this master sends or receives, in bytes (every server and client of it). */
  maxMessageBytes: number;
  /**
   * SubmitJob/SubmitJobs per caller (master/src/core/submit-rate.ts): jobs a second refilled into a
   * bucket of `submitBurst` jobs; past it RESOURCE_EXHAUSTED with a retry hint. 0 = no limit.
   */
  submitRatePerSec: number;
  submitBurst: number;
  /** A finished job is deleted this long after it ended. */
  jobRetentionMs: number;
  /** At most this many finished jobs are kept (the oldest ends are deleted first). */
  jobRetentionCount: number;
  /** An AM's outstanding plus granted slots of a task stay within its instances plus this fraction of them (at least one slot). */
  speculationAllowance: number;
  /** The share of the cluster AMs may hold (0 < share <= 1; 1: no limit). */
  maxAmShare: number;
  /** Soft-state inference when a master takes over (false: unfinished jobs fail; a baseline). */
  masterFailover: boolean;
  /**
   * Connectivity-aware placement (a connected job's slots only on hosts that reach all its hosts,
   * its AM on the most connected one, the graph to AMs); false ignores the graph (a baseline).
   */
  connectivityAware: boolean;
  heartbeatIntervalMs: number;
  agentTimeoutMs: number;
  amHeartbeatIntervalMs: number;
  /** argv of the application-master process; the app id etc. come in its environment. */
  amCommand: string[];
  quotaGroups: QuotaGroup[];
  logLevel: string;
  /**
   * Probe targets (master/src/core/probe-targets.ts): up to `probeAllUpTo` probing agents, each
   * probes every other; above it, `probeSample` peers on a hash ring plus the hosts sharing an app
   * with it, `probeMaxTargets` in all.
   */
  probeAllUpTo: number;
  probeSample: number;
  probeMaxTargets: number;
  /**
  /** The static tokens file (`token,name,role[,group...]` per line; '' = none), reloaded on change and SIGHUP. */
  tokensFile: string;
  /**
   * Mutual TLS: `{ca, cert, key}` PEM paths (the master's certificate: CN=master, O=master, SANs
   * of the addresses it is dialed at). Required unless `insecure`.
   */
  tls?: TlsFiles | undefined;
  /** Plaintext, no TLS (an explicit opt-out; loudly warned about beyond loopback). */
  insecure?: boolean | undefined;
}

const KEYS = [
  'listen',
  'advertise',
  'metricsListen',
  'store',
  'dataDir',
  'etcdEndpoints',
  'etcdPrefix',
  'leaseTtlSec',
  'masters',
  'recoveryDeadlineMs',
  'amTimeoutMs',
  'agentTimingOutMs',
  'failureDetector',
  'failurePrediction',
  'recordHeartbeats',
  'amStallTimeoutMs',
  'schedulingIntervalMs',
  'maxAmAttempts',
  'externalSchedulerStallMs',
  'externalSchedulerFallbackMs',
  'maxJobSpecBytes',
  'maxEnvBytes',
  'maxEnvVars',
  'maxInstancesPerJob',
  'maxMessageBytes',
  'submitRatePerSec',
  'submitBurst',
  'jobRetentionMs',
  'jobRetentionCount',
  'speculationAllowance',
  'maxAmShare',
  'masterFailover',
  'connectivityAware',
  'heartbeatIntervalMs',
  'agentTimeoutMs',
  'amHeartbeatIntervalMs',
  'amCommand',
  'quotaGroups',
  'logLevel',
  'probeAllUpTo',
  'probeSample',
  'probeMaxTargets',
  'tokensFile',
  'tls',
  'insecure',
] as const;

/** Flags that set one file of `tls` (`--tls-ca`, `--tls-cert`, `--tls-key`). */
const TLS_FLAGS = { tlsCa: 'ca', tlsCert: 'cert', tlsKey: 'key' } as const;

export function defaultConfig(defaultAmCommand: string[]): MasterConfig {
  return {
    listen: '127.0.0.1:7070',
    advertise: '',
    metricsListen: '',
    store: 'embedded',
    dataDir: '/var/lib/fuxi/master',
    etcdEndpoints: ['http://127.0.0.1:2379'],
    etcdPrefix: '/fuxi/',
    leaseTtlSec: 5,
    masters: [],
    recoveryDeadlineMs: 5000,
    amTimeoutMs: 30_000,
    agentTimingOutMs: 3000,
    // The winner of `make bench-detectors` on the recorded traces: as few mistakes as the fixed
    // 3 s timeout, detection 4.5x sooner (README, performance).
    failureDetector: { kind: 'bertier' },
    failurePrediction: true,
    recordHeartbeats: '',
    amStallTimeoutMs: 30_000,
    schedulingIntervalMs: 2,
    maxAmAttempts: 4,
    externalSchedulerStallMs: 10_000,
    externalSchedulerFallbackMs: undefined,
    maxJobSpecBytes: 1024 * 1024,
    maxEnvBytes: DEFAULT_JOB_INPUT_LIMITS.maxEnvBytes,
    maxEnvVars: DEFAULT_JOB_INPUT_LIMITS.maxEnvVars,
    maxInstancesPerJob: DEFAULT_JOB_INPUT_LIMITS.maxInstancesPerJob,
    maxMessageBytes: DEFAULT_MAX_MESSAGE_BYTES,
    submitRatePerSec: DEFAULT_SUBMIT_RATE.ratePerSec,
    submitBurst: DEFAULT_SUBMIT_RATE.burst,
    jobRetentionMs: 7 * 24 * 3600 * 1000,
    jobRetentionCount: 100_000,
    speculationAllowance: 0.1,
    maxAmShare: 0.1,
    masterFailover: true,
    connectivityAware: true,
    heartbeatIntervalMs: 1000,
    agentTimeoutMs: 60_000,
    amHeartbeatIntervalMs: 1000,
    amCommand: defaultAmCommand,
    quotaGroups: [{ name: 'default', weight: 1 }],
    logLevel: 'info',
    tokensFile: '',
    probeAllUpTo: DEFAULT_PROBE_TARGETS.allUpTo,
    probeSample: DEFAULT_PROBE_TARGETS.sample,
    probeMaxTargets: DEFAULT_PROBE_TARGETS.maxTargets,
  };
}

function positiveInt(key: string, v: unknown): number {
  const n = typeof v === 'string' && /^\d+$/.test(v.trim()) ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isInteger(n) || n <= 0) throw new InvalidArgumentError(key, `must be a positive integer, got ${JSON.stringify(v)}`);
  return n;
}

function str(key: string, v: unknown): string {
  if (typeof v !== 'string' || v.trim() === '') throw new InvalidArgumentError(key, `must be a non-empty string, got ${JSON.stringify(v)}`);
  return v;
}

function hostPort(key: string, v: unknown): string {
  const s = str(key, v);
  if (!/^[^\s:]+:\d{1,5}$|^\[[0-9a-fA-F:]+\]:\d{1,5}$/.test(s)) throw new InvalidArgumentError(key, `must be host:port, got "${s}"`);
  return s;
}

function list(key: string, v: unknown, each: (k: string, x: unknown) => string): string[] {
  const items =
    typeof v === 'string'
      ? v
          .split(',')
          .map((x) => x.trim())
          .filter((x) => x !== '')
      : v;
  if (!Array.isArray(items) || items.length === 0) throw new InvalidArgumentError(key, 'must be a non-empty list (or a comma-separated string)');
  return items.map((x, i) => each(`${key}[${i}]`, x));
}

function url(key: string, v: unknown): string {
  const s = str(key, v);
  if (!/^https?:\/\/[^\s/]+$/.test(s)) throw new InvalidArgumentError(key, `must be an http(s)://host:port URL, got "${s}"`);
  return s;
}

function quotaGroups(key: string, v: unknown): QuotaGroup[] {
  if (!Array.isArray(v)) throw new InvalidArgumentError(key, 'must be a list of {name, weight, limit}');
  const seen = new Set<string>();
  return v.map((g: unknown, i) => {
    const f = `${key}[${i}]`;
    if (typeof g !== 'object' || g === null) throw new InvalidArgumentError(f, 'must be an object');
    const o = g as Record<string, unknown>;
    for (const k of Object.keys(o))
      if (!['name', 'weight', 'limit'].includes(k)) throw new InvalidArgumentError(`${f}.${k}`, 'unknown field (known: name, weight, limit)');
    const name = str(`${f}.name`, o.name);
    if (seen.has(name)) throw new InvalidArgumentError(`${f}.name`, `duplicate quota group "${name}"`);
    seen.add(name);
    const weight = o.weight === undefined ? 1 : Number(o.weight);
    if (!(weight > 0) || !Number.isFinite(weight))
      throw new InvalidArgumentError(`${f}.weight`, `must be a number greater than 0, got ${JSON.stringify(o.weight)}`);
    let limit: Resource | undefined;
    if (o.limit !== undefined) {
      const l = o.limit as Record<string, unknown>;
      if (typeof l !== 'object' || l === null) throw new InvalidArgumentError(`${f}.limit`, 'must be {cpu, memory}');
      for (const k of Object.keys(l))
        if (!['cpu', 'memory'].includes(k)) throw new InvalidArgumentError(`${f}.limit.${k}`, 'unknown field (known: cpu, memory)');
      limit = { cpuMilli: parseCpu(l.cpu, `${f}.limit.cpu`), memoryMb: parseMemory(l.memory, `${f}.limit.memory`) };
    }
    return limit ? { name, weight, limit } : { name, weight };
  });
}

/** Applies raw key/values (from a file or flags) onto a config, validating each. */
export function applyConfig(base: MasterConfig, raw: Record<string, unknown>, source: string): MasterConfig {
  const cfg: MasterConfig = { ...base };
  for (const [k, v] of Object.entries(raw)) {
    if (v === undefined) continue;
    const key = source === 'flags' ? k : `${source}: ${k}`;
    if (source === 'flags' && k in TLS_FLAGS) {
      const part = TLS_FLAGS[k as keyof typeof TLS_FLAGS];
      cfg.tls = { ...(cfg.tls ?? { ca: '', cert: '', key: '' }), [part]: str(`--tls-${part}`, v) };
      cfg.insecure = false; // flags over the file: TLS files given on the command line win
      continue;
    }
    switch (k as (typeof KEYS)[number]) {
      case 'tls':
        cfg.tls = parseTlsConfig(source === 'flags' ? 'tls' : `${source}: tls`, v);
        break;
      case 'insecure':
        cfg.insecure = parseInsecure(key, v);
        // flags over the file: --insecure wins over the file's tls
        if (source === 'flags' && cfg.insecure) cfg.tls = undefined;
        break;
      case 'listen':
        cfg.listen = hostPort(key, v);
        break;
      case 'advertise':
        cfg.advertise = v === '' ? '' : hostPort(key, v);
        break;
      case 'metricsListen':
        cfg.metricsListen = parseMetricsListen(key, v);
        break;
      case 'store':
        if (v !== 'embedded' && v !== 'memory' && v !== 'etcd')
          throw new InvalidArgumentError(key, `must be "embedded", "memory" or "etcd", got ${JSON.stringify(v)}`);
        cfg.store = v;
        break;
      case 'etcdEndpoints':
        cfg.etcdEndpoints = list(key, v, url);
        break;
      case 'etcdPrefix':
        cfg.etcdPrefix = str(key, v);
        if (!cfg.etcdPrefix.endsWith('/')) throw new InvalidArgumentError(key, `must end with "/", got "${cfg.etcdPrefix}"`);
        break;
      case 'leaseTtlSec':
        cfg.leaseTtlSec = positiveInt(key, v);
        if (cfg.leaseTtlSec < 2) throw new InvalidArgumentError(key, 'must be at least 2 seconds');
        break;
      case 'masters':
        cfg.masters = list(key, v, hostPort);
        break;
      case 'recoveryDeadlineMs':
        cfg.recoveryDeadlineMs = positiveInt(key, v);
        break;
      case 'amTimeoutMs':
        cfg.amTimeoutMs = positiveInt(key, v);
        break;
      case 'agentTimingOutMs':
        cfg.agentTimingOutMs = positiveInt(key, v);
        break;
      case 'recordHeartbeats':
        cfg.recordHeartbeats = v === '' ? '' : str(key, v);
        break;
      case 'failurePrediction':
        parsePredictionConfig(v, key);
        cfg.failurePrediction = v;
        break;
      case 'failureDetector':
        parseDetectorConfig(v, cfg.agentTimingOutMs, key);
        cfg.failureDetector = v as Record<string, unknown>;
        break;
      case 'amStallTimeoutMs': {
        const n = typeof v === 'string' && /^\d+$/.test(v.trim()) ? Number(v) : v;
        if (typeof n !== 'number' || !Number.isInteger(n) || n < 0)
          throw new InvalidArgumentError(key, `must be an integer >= 0 (0 = never), got ${JSON.stringify(v)}`);
        cfg.amStallTimeoutMs = n;
        break;
      }
      case 'schedulingIntervalMs': {
        const n = typeof v === 'string' && /^\d+$/.test(v.trim()) ? Number(v) : v;
        if (typeof n !== 'number' || !Number.isInteger(n) || n < 0 || n > 1000)
          throw new InvalidArgumentError(key, `must be an integer from 0 to 1000 (0 = a scheduling pass per call), got ${JSON.stringify(v)}`);
        cfg.schedulingIntervalMs = n;
        break;
      }
      case 'maxAmAttempts':
        cfg.maxAmAttempts = positiveInt(key, v);
        break;
      case 'externalSchedulerStallMs':
        cfg.externalSchedulerStallMs = positiveInt(key, v);
        break;
      case 'externalSchedulerFallbackMs': {
        const n = typeof v === 'string' && /^\d+$/.test(v.trim()) ? Number(v) : v;
        if (typeof n !== 'number' || !Number.isInteger(n) || n < 0)
          throw new InvalidArgumentError(
            key,
            `must be an integer >= 0 (milliseconds without the scheduler before its jobs fall back; omit it to let them wait), got ${JSON.stringify(v)}`,
          );
        cfg.externalSchedulerFallbackMs = n;
        break;
      }
      case 'maxJobSpecBytes': {
        const n = typeof v === 'string' && /^\d+$/.test(v.trim()) ? Number(v) : v;
        if (typeof n !== 'number' || !Number.isInteger(n) || n < 0)
          throw new InvalidArgumentError(key, `must be an integer >= 0 (bytes; 0 = no limit), got ${JSON.stringify(v)}`);
        cfg.maxJobSpecBytes = n;
        break;
      }
      case 'maxEnvBytes':
      case 'maxEnvVars':
      case 'maxInstancesPerJob':
      case 'submitRatePerSec':
      case 'submitBurst': {
        const n = typeof v === 'string' && /^\d+$/.test(v.trim()) ? Number(v) : v;
        if (typeof n !== 'number' || !Number.isInteger(n) || n < 0)
          throw new InvalidArgumentError(key, `must be an integer >= 0 (0 = no limit), got ${JSON.stringify(v)}`);
        cfg[key as 'maxEnvBytes' | 'maxEnvVars' | 'maxInstancesPerJob' | 'submitRatePerSec' | 'submitBurst'] = n;
        break;
      }
      case 'maxMessageBytes':
        cfg.maxMessageBytes = parseMaxMessageBytes(key, v);
        break;
      case 'jobRetentionMs':
        cfg.jobRetentionMs = positiveInt(key, v);
        break;
      case 'jobRetentionCount':
        cfg.jobRetentionCount = positiveInt(key, v);
        break;
      case 'speculationAllowance': {
        const n = typeof v === 'string' && v.trim() !== '' ? Number(v) : v;
        if (typeof n !== 'number' || !Number.isFinite(n) || n < 0 || n > 10)
          throw new InvalidArgumentError(key, `must be a number from 0 to 10 (a fraction of a task's instances, e.g. 0.1), got ${JSON.stringify(v)}`);
        cfg.speculationAllowance = n;
        break;
      }
      case 'maxAmShare': {
        const n = typeof v === 'string' && v.trim() !== '' ? Number(v) : v;
        if (typeof n !== 'number' || !Number.isFinite(n) || n <= 0 || n > 1)
          throw new InvalidArgumentError(
            key,
            `must be a number above 0 and at most 1 (the share of the cluster AMs may hold, e.g. 0.1), got ${JSON.stringify(v)}`,
          );
        cfg.maxAmShare = n;
        break;
      }
      case 'masterFailover':
        if (v !== true && v !== false && v !== 'true' && v !== 'false') throw new InvalidArgumentError(key, `must be true or false, got ${JSON.stringify(v)}`);
        cfg.masterFailover = v === true || v === 'true';
        break;
      case 'connectivityAware':
        if (v !== true && v !== false && v !== 'true' && v !== 'false')
          throw new InvalidArgumentError(key, `must be true (place by the hosts' connectivity) or false (ignore it), got ${JSON.stringify(v)}`);
        cfg.connectivityAware = v === true || v === 'true';
        break;
      case 'dataDir':
        cfg.dataDir = str(key, v);
        break;
      case 'heartbeatIntervalMs':
        cfg.heartbeatIntervalMs = positiveInt(key, v);
        break;
      case 'agentTimeoutMs':
        cfg.agentTimeoutMs = positiveInt(key, v);
        break;
      case 'amHeartbeatIntervalMs':
        cfg.amHeartbeatIntervalMs = positiveInt(key, v);
        break;
      case 'amCommand':
        if (typeof v === 'string') cfg.amCommand = str(key, v).trim().split(/\s+/);
        else if (Array.isArray(v) && v.length > 0 && v.every((x) => typeof x === 'string' && x !== '')) cfg.amCommand = v as string[];
        else throw new InvalidArgumentError(key, 'must be a command line or a non-empty list of strings');
        break;
      case 'quotaGroups':
        cfg.quotaGroups = quotaGroups(key, v);
        break;
      case 'tokensFile':
        cfg.tokensFile = typeof v === 'string' ? v : str(key, v);
        break;
      case 'logLevel':
        if (!['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'].includes(String(v)))
          throw new InvalidArgumentError(key, `must be one of trace, debug, info, warn, error, fatal, silent; got ${JSON.stringify(v)}`);
        cfg.logLevel = String(v);
        break;
      case 'probeAllUpTo':
        cfg.probeAllUpTo = positiveInt(key, v);
        break;
      case 'probeSample':
        cfg.probeSample = positiveInt(key, v);
        break;
      case 'probeMaxTargets':
        cfg.probeMaxTargets = positiveInt(key, v);
        break;
      default:
        throw new InvalidArgumentError(key, `unknown setting (known: ${KEYS.join(', ')})`);
    }
  }
  if (cfg.tls) parseTlsConfig('tls', cfg.tls); // every file given (flags may set some of them)
  if (cfg.agentTimingOutMs <= cfg.heartbeatIntervalMs) {
    throw new InvalidArgumentError('agentTimingOutMs', `must be greater than heartbeatIntervalMs (${cfg.heartbeatIntervalMs})`);
  }
  if (cfg.probeMaxTargets < cfg.probeSample) {
    throw new InvalidArgumentError('probeMaxTargets', `must be at least probeSample (${cfg.probeSample}): the sample is part of the targets`);
  }
  if (cfg.agentTimeoutMs <= cfg.agentTimingOutMs) {
    throw new InvalidArgumentError('agentTimeoutMs', `must be greater than agentTimingOutMs (${cfg.agentTimingOutMs})`);
  }
  return cfg;
}

/** The failure detector the config asks for, with the kind's defaults and agentTimingOutMs as its bootstrap. */
export function resolvedDetector(cfg: MasterConfig): DetectorConfig {
  return parseDetectorConfig(cfg.failureDetector, cfg.agentTimingOutMs);
}

export function readConfigFile(path: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new InvalidArgumentError('config', `cannot read ${path}: ${(e as Error).message}`);
  }
  let raw: unknown;
  try {
    raw = parseYaml(text);
  } catch (e) {
    throw new InvalidArgumentError('config', `${path} is not valid YAML/JSON: ${(e as Error).message}`);
  }
  if (raw === null || raw === undefined) return {};
  if (typeof raw !== 'object' || Array.isArray(raw)) throw new InvalidArgumentError('config', `${path} must hold a mapping of settings`);
  return raw as Record<string, unknown>;
}
