/**
 * The cluster the history test runs on: a rack (`../rack/rack.ts`) with a three-member etcd, each
 * member on a host of its own (e1-e3), three masters (m1-m3) and agents (a1..aN), started from the
 * multi-host config files of `deploy/config/cluster/` rewritten for this rack's subnet and with all
 * three etcd endpoints. The rack has its own prefix and subnet, so it never meets another rack on
 * the machine (the default rack is 'fxr' on 10.213.0).
 *
 * It also watches every master and agent process: an exit that the nemesis did not announce
 * (`expectExit(pid)`) is recorded as a daemon exit.
 *
 * ```ts
 * const hc = await HistoryCluster.start({ dir, prefix: 'fxh', subnet: '10.214.0', agents: 3 });
 * await hc.killMaster(0); await hc.restartMaster(0);
 * const workers = await hc.runningWorkers();
 * await hc.stop();
 * ```
 */
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { HaCluster, hasExited, REPO_ROOT, waitExit, type ClusterPlacement, type HaClusterOptions } from '@fuxi/deploy';
import { startEtcdCluster, type EtcdProcess } from '../etcd-harness.js';
import { Rack } from '../rack/rack.js';
import { CLUSTER_CONFIG, etcdFlagsFromEnvFile } from '../rack/rack-cluster.js';
import type { DaemonExit, RunningWorker } from './checker.js';

export const ETCD_HOSTS = ['e1', 'e2', 'e3'] as const;
export const MASTER_HOSTS = ['m1', 'm2', 'm3'] as const;
const MASTER_PORT = 7070;
/** The subnet the config files in deploy/config/cluster/ are written for. */
const CONFIG_SUBNET = '10.213.0';

export interface HistoryClusterOptions extends Omit<HaClusterOptions, 'etcd' | 'placement' | 'masters'> {
  /** Rack prefix and subnet: never the ones another rack on this machine uses. */
  prefix: string;
  subnet: string;
  /** etcd's --quota-backend-bytes (small, so that the nemesis can fill it). */
  etcdQuotaBytes: number;
  etcdPrefix?: string;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

function sh(cmd: string, args: string[]): Promise<string> {
  return new Promise((resolve) => execFile(cmd, args, { timeout: 10_000, maxBuffer: 4 << 20 }, (_e, stdout) => resolve(String(stdout ?? ''))));
}

export class HistoryCluster {
  /** Exits nobody announced. */
  readonly daemonExits: DaemonExit[] = [];
  private readonly expected = new Set<number>();
  private readonly watched = new Set<ChildProcess>();
  private watching = true;

  private constructor(
    readonly rack: Rack,
    readonly etcd: EtcdProcess[],
    readonly ha: HaCluster,
    readonly opts: HistoryClusterOptions,
  ) {}

  /** Every etcd client URL, in member order. */
  get etcdEndpoints(): string[] {
    return this.etcd.map((e) => e.endpoint);
  }

  static async start(opts: HistoryClusterOptions): Promise<HistoryCluster> {
    const reason = Rack.preflight();
    if (reason) throw new Error(`the history test needs network namespaces: ${reason}`);
    mkdirSync(opts.dir, { recursive: true });
    const agentHosts = Array.from({ length: Math.max(1, Math.min(3, opts.agents)) }, (_, i) => `a${i + 1}`);
    const rack = await Rack.create({
      prefix: opts.prefix,
      subnet: opts.subnet,
      hosts: [
        ...MASTER_HOSTS.map((name, i) => ({ name, octet: 11 + i })),
        ...agentHosts.map((name, i) => ({ name, octet: 21 + i })),
        ...ETCD_HOSTS.map((name, i) => ({ name, octet: 31 + i })),
      ],
    });
    let etcd: EtcdProcess[] = [];
    try {
      etcd = await startEtcdCluster(
        ETCD_HOSTS.map((name) => ({ name, host: rack.host(name).ip, wrap: rack.wrap(name) })),
        {
          startTimeoutMs: 60_000,
          // deploy/config/cluster/etcd.env's settings, but a small quota, so the nemesis can fill
          // it, and the masters' own history compacted every minute.
          extraArgs: [
            ...withoutFlags(etcdFlagsFromEnvFile(CLUSTER_CONFIG.etcd), ['--quota-backend-bytes', '--auto-compaction-mode', '--auto-compaction-retention']),
            ...['--quota-backend-bytes', String(opts.etcdQuotaBytes), '--auto-compaction-mode', 'periodic', '--auto-compaction-retention', '1m'],
          ],
        },
      );
      const configs = writeConfigs(
        opts.dir,
        opts.subnet,
        etcd.map((e) => e.endpoint),
      );
      const placement: ClusterPlacement = {
        masters: MASTER_HOSTS.map((m) => ({ address: `${rack.host(m).ip}:${MASTER_PORT}`, wrap: rack.wrap(m), config: configs.master })),
        agents: agentHosts.map((a) => ({ address: '', wrap: rack.wrap(a), config: configs.agent, ips: [rack.host(a).ip] })),
      };
      const { prefix: _p, subnet: _s, etcdQuotaBytes: _q, etcdPrefix, ...rest } = opts;
      const ha = await HaCluster.start({
        ...rest,
        masters: MASTER_HOSTS.length,
        etcd: { endpoints: etcd.map((e) => e.endpoint), ...(etcdPrefix ? { prefix: etcdPrefix } : {}) },
        placement,
        startTimeoutMs: opts.startTimeoutMs ?? 90_000,
      });
      const hc = new HistoryCluster(rack, etcd, ha, opts);
      hc.watchAll();
      return hc;
    } catch (e) {
      await Promise.all(etcd.map((x) => x.stop().catch(() => undefined)));
      await rack.destroy().catch(() => undefined);
      throw e;
    }
  }

  /** Starts watching every current master and agent process (new incarnations too). */
  watchAll(): void {
    this.ha.masters.forEach((m) => this.watch(m.child, m.name));
    this.ha.agents.forEach((a) => this.watch(a.child, `agent ${a.nodeId}`));
  }

  private watch(child: ChildProcess, name: string): void {
    if (this.watched.has(child)) return;
    this.watched.add(child);
    const pid = child.pid ?? 0;
    const record = (code: number | null, signal: NodeJS.Signals | null) => {
      if (!this.watching || this.expected.delete(pid)) return;
      this.daemonExits.push({ daemon: name, pid, code, signal, atMs: Date.now() });
    };
    if (hasExited(child)) record(child.exitCode, child.signalCode);
    else child.once('exit', record);
  }

  /** The nemesis is about to kill `pid`: its exit is no anomaly. */
  expectExit(pid: number): void {
    this.expected.add(pid);
  }

  /** kill -9 of master `i`; waits for the exit. */
  async killMaster(i: number): Promise<void> {
    const m = this.ha.masters[i]!;
    if (hasExited(m.child)) return;
    this.expectExit(m.pid);
    this.ha.kill(m, 'SIGKILL');
    await waitExit(m.child, 10_000);
  }

  /** Starts master `i` again (a standby until it wins an election) and watches it. */
  async restartMaster(i: number): Promise<void> {
    const m = this.ha.masters[i]!;
    if (!hasExited(m.child)) await this.killMaster(i);
    const again = await this.ha.startMaster(i);
    this.watch(again.child, again.name);
  }

  /** Index of the serving leader (per the masters' logs), or undefined. */
  leaderIndex(): number | undefined {
    return this.ha.leader()?.master.index;
  }

  /**
   * Workers still running after the run: every worker an agent reports RUNNING (or PENDING), and
   * every process on an agent host whose environment names an app (FUXI_APP_ID).
   */
  async runningWorkers(): Promise<RunningWorker[]> {
    const out: RunningWorker[] = [];
    for (const { agent, state } of await this.ha.agentStates(10_000)) {
      for (const w of state.workers) {
        if (w.state !== 'WORKER_STATE_RUNNING' && w.state !== 'WORKER_STATE_PENDING') continue;
        out.push({ jobId: w.appId, node: agent.nodeId, pid: w.pid, source: 'agent', what: `${w.state} ${w.task}.${w.instance} (attempt ${w.attempt})` });
      }
    }
    for (const h of this.rack.hosts.filter((x) => /^a\d+$/.test(x.name))) {
      const pids = (await sh('ip', ['netns', 'pids', h.netns])).split(/\s+/).filter(Boolean).map(Number);
      for (const pid of pids) {
        let env = '';
        let cmd = '';
        try {
          env = readFileSync(`/proc/${pid}/environ`, 'utf8');
          cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
          const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
          if (/\) Z /.test(stat)) continue; // a zombie runs nothing
        } catch {
          continue; // gone
        }
        const app = env.split('\0').find((v) => v.startsWith('FUXI_APP_ID='));
        if (app) out.push({ jobId: app.slice('FUXI_APP_ID='.length), node: h.name, pid, source: 'process', what: cmd.slice(0, 120) });
      }
    }
    return out;
  }

  /** Stops watching, then stops the cluster (workers too), etcd and the rack. */
  async stop(): Promise<void> {
    this.watching = false;
    for (const m of this.ha.masters) if (m && m.stopped) this.ha.kill(m, 'SIGCONT');
    for (const e of this.etcd) {
      try {
        if (e.pid !== undefined) e.resume();
      } catch {
        /* gone */
      }
    }
    await this.ha.stop({ killWorkers: true }).catch(() => undefined);
    await Promise.all(this.etcd.map((e) => e.stop().catch(() => undefined)));
    await sleep(100);
    await this.rack.destroy();
  }
}

/** `flags` (pairs of flag and value) without the pairs of `drop`. */
function withoutFlags(flags: string[], drop: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i + 1 < flags.length; i += 2) if (!drop.includes(flags[i]!)) out.push(flags[i]!, flags[i + 1]!);
  return out;
}

/**
 * deploy/config/cluster/{master,agent}.yaml rewritten for this rack: its subnet in place of the
 * files' example one, and every etcd endpoint. Returns the paths written under `dir`.
 */
export function writeConfigs(dir: string, subnet: string, etcdEndpoints: string[]): { master: string; agent: string } {
  const src = join(REPO_ROOT, 'deploy', 'config', 'cluster');
  const rewrite = (text: string) => text.split(`${CONFIG_SUBNET}.`).join(`${subnet}.`);
  const master = rewrite(readFileSync(join(src, 'master.yaml'), 'utf8')).replace(/^etcdEndpoints:.*$/m, `etcdEndpoints: [${etcdEndpoints.join(', ')}]`);
  if (!master.includes(`etcdEndpoints: [${etcdEndpoints.join(', ')}]`)) throw new Error(`${src}/master.yaml has no etcdEndpoints line to rewrite`);
  const out = { master: join(dir, 'master.yaml'), agent: join(dir, 'agent.yaml') };
  writeFileSync(out.master, master);
  writeFileSync(out.agent, rewrite(readFileSync(join(src, 'agent.yaml'), 'utf8')));
  return out;
}
