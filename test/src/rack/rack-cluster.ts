/**
 * A Fuxi cluster on the rack: etcd, three masters and the agents each on a host of its own (a
 * network namespace with its own address), started with the multi-host config files of
 * `deploy/config/cluster/` exactly as the README's "Run it on several machines" tells an operator
 * to write them; the harness adds only node ids, directories, the failure-detection timings of a
 * test, and the log level. The test process (and the `fuxi` CLI it runs) stays outside, on the
 * rack's bridge, as a client machine would.
 *
 * The addresses are the README's example rack: etcd 10.213.0.10, masters .11-.13, agents .21 up.
 *
 * ```ts
 * const rc = await RackCluster.start({ dir, agents: 3 });
 * const client = rc.ha.client();
 * await rc.rack.cut('a1', 'a2');
 * await rc.stop();
 * ```
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { HaCluster, REPO_ROOT, type ClusterPlacement, type HaClusterOptions } from '@fuxi/deploy';
import { prepareEtcd, type EtcdProcess } from '../etcd-harness.js';
import { Rack } from './rack.js';

/** The README's example rack: the addresses in deploy/config/cluster/*.yaml. */
export const RACK_SUBNET = '10.213.0';
export const RACK_PREFIX = 'fxr';
export const MASTER_HOSTS = ['m1', 'm2', 'm3'] as const;
export const RACK_HOSTS = [
  { name: 'etcd', octet: 10 },
  { name: 'm1', octet: 11 },
  { name: 'm2', octet: 12 },
  { name: 'm3', octet: 13 },
  { name: 'a1', octet: 21 },
  { name: 'a2', octet: 22 },
  { name: 'a3', octet: 23 },
];
export const MASTER_PORT = 7070;
export const CLUSTER_CONFIG = {
  master: join(REPO_ROOT, 'deploy', 'config', 'cluster', 'master.yaml'),
  agent: join(REPO_ROOT, 'deploy', 'config', 'cluster', 'agent.yaml'),
  /** etcd's settings (Debian's /etc/default/etcd): auto-compaction, space quota, request size. */
  etcd: join(REPO_ROOT, 'deploy', 'config', 'cluster', 'etcd.env'),
};

/** Flags the etcd harness sets itself (where etcd listens and keeps its data). */
const HARNESS_ETCD_FLAGS = new Set([
  'name',
  'data-dir',
  'listen-client-urls',
  'advertise-client-urls',
  'listen-peer-urls',
  'initial-advertise-peer-urls',
  'initial-cluster',
]);

/** The flags of an etcd environment file (`ETCD_X_Y=v` is `--x-y v`), but those the harness sets. */
export function etcdFlagsFromEnvFile(path: string): string[] {
  const flags: string[] = [];
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    const m = /^\s*ETCD_([A-Z0-9_]+)=(.*?)\s*$/.exec(line);
    if (!m) continue;
    const flag = m[1]!.toLowerCase().replace(/_/g, '-');
    if (!HARNESS_ETCD_FLAGS.has(flag)) flags.push(`--${flag}`, m[2]!.replace(/^"(.*)"$/, '$1'));
  }
  return flags;
}

/** Agent host names (a1, a2, ...) of a rack with `n` agent hosts. */
export const agentHosts = (n: number): string[] => Array.from({ length: n }, (_, i) => `a${i + 1}`);

/** Builds the rack (etcd, m1-m3, a1..aN): fails with one line when this machine cannot. */
export async function startRack(agentHostCount = 3, opts: { prefix?: string; subnet?: string } = {}): Promise<Rack> {
  const reason = Rack.preflight();
  if (reason) throw new Error(`the rack suites need network namespaces: ${reason}`);
  const hosts = RACK_HOSTS.filter((h) => !h.name.startsWith('a'));
  agentHosts(agentHostCount).forEach((name, i) => hosts.push({ name, octet: 21 + i }));
  return Rack.create({ prefix: opts.prefix ?? RACK_PREFIX, subnet: opts.subnet ?? RACK_SUBNET, hosts });
}

/**
 * etcd on its own host of the rack, with the config files' endpoint (http://<etcd host>:2379) and
 * the settings of deploy/config/cluster/etcd.env (auto-compaction, quota, request size).
 */
export async function startRackEtcd(rack: Rack): Promise<EtcdProcess> {
  const e = await prepareEtcd({
    host: rack.host('etcd').ip,
    wrap: rack.wrap('etcd'),
    startTimeoutMs: 30_000,
    extraArgs: etcdFlagsFromEnvFile(CLUSTER_CONFIG.etcd),
  });
  try {
    await e.start();
  } catch (err) {
    await e.stop();
    throw err;
  }
  return e;
}

/**
 * The config files of deploy/config/cluster/ for a rack on another subnet: the example rack's
 * addresses (RACK_SUBNET) replaced by `subnet`'s, written under `dir`. The example subnet itself
 * uses the files as they are.
 */
export function rackConfigs(dir: string, subnet: string): { master: string; agent: string } {
  if (subnet === RACK_SUBNET) return { master: CLUSTER_CONFIG.master, agent: CLUSTER_CONFIG.agent };
  const rewrite = (file: string) => readFileSync(file, 'utf8').split(`${RACK_SUBNET}.`).join(`${subnet}.`);
  const out = { master: join(dir, 'master.yaml'), agent: join(dir, 'agent.yaml') };
  mkdirSync(dir, { recursive: true });
  writeFileSync(out.master, rewrite(CLUSTER_CONFIG.master));
  writeFileSync(out.agent, rewrite(CLUSTER_CONFIG.agent));
  return out;
}

/**
 * Where every daemon runs: master i on m(i+1), agent i on agent host i % hosts, each with the
 * config file of its kind (`configs`: the example rack's, unless rewritten for another subnet).
 * Each host's address goes into its certificate (HaCluster issues them: the masters' one names
 * every master host, each agent's its own host).
 */
export function rackPlacement(rack: Rack, agentHostCount: number, configs: { master: string; agent: string } = CLUSTER_CONFIG): ClusterPlacement {
  return {
    masters: MASTER_HOSTS.map((m) => ({ address: `${rack.host(m).ip}:${MASTER_PORT}`, wrap: rack.wrap(m), config: configs.master })),
    // Each agent host's certificate names its own address (the harness issues one per host).
    agents: agentHosts(agentHostCount).map((a) => ({ address: '', wrap: rack.wrap(a), config: configs.agent, ips: [rack.host(a).ip] })),
  };
}

export interface RackClusterOptions extends Omit<HaClusterOptions, 'etcd' | 'placement' | 'masters'> {
  /** Agent hosts (default: one per agent, at most 3). */
  agentHosts?: number;
  /** Reuse a rack (and etcd) made by the caller; else one is made and removed by stop(). */
  rack?: Rack;
  etcd?: EtcdProcess;
  etcdPrefix?: string;
  /**
   * A rack of its own (when `rack` is not given): name prefix and subnet, so that it never meets
   * another rack on this machine (default 'fxr' on 10.213.0, the config files' example rack).
   */
  prefix?: string;
  subnet?: string;
}

export class RackCluster {
  private constructor(
    readonly rack: Rack,
    readonly etcd: EtcdProcess,
    readonly ha: HaCluster,
    private readonly owns: { rack: boolean; etcd: boolean },
  ) {}

  static async start(opts: RackClusterOptions): Promise<RackCluster> {
    const hosts = opts.agentHosts ?? Math.max(1, Math.min(3, opts.agents));
    mkdirSync(opts.dir, { recursive: true });
    const rack = opts.rack ?? (await startRack(hosts, { ...(opts.prefix ? { prefix: opts.prefix } : {}), ...(opts.subnet ? { subnet: opts.subnet } : {}) }));
    let etcd: EtcdProcess | undefined = opts.etcd;
    try {
      etcd ??= await startRackEtcd(rack);
      const { agentHosts: _h, rack: _r, etcd: _e, etcdPrefix, prefix: _p, subnet, ...rest } = opts;
      const configs = rackConfigs(join(opts.dir, 'config'), opts.rack ? rack.host('m1').ip.replace(/\.\d+$/, '') : (subnet ?? RACK_SUBNET));
      const ha = await HaCluster.start({
        ...rest,
        masters: MASTER_HOSTS.length,
        etcd: { endpoints: [etcd.endpoint], ...(etcdPrefix ? { prefix: etcdPrefix } : {}) },
        placement: rackPlacement(rack, hosts, configs),
        startTimeoutMs: opts.startTimeoutMs ?? 60_000,
      });
      return new RackCluster(rack, etcd, ha, { rack: !opts.rack, etcd: !opts.etcd });
    } catch (e) {
      if (!opts.etcd) await etcd?.stop().catch(() => undefined);
      if (!opts.rack) await rack.destroy().catch(() => undefined);
      throw e;
    }
  }

  /** Stops the cluster (workers too), then etcd and the rack when this cluster made them. */
  async stop(): Promise<void> {
    await this.ha.stop({ killWorkers: true }).catch(() => undefined);
    if (this.owns.etcd) await this.etcd.stop().catch(() => undefined);
    if (this.owns.rack) await this.rack.destroy();
  }
}
