/**
 * The rack: hosts made of Linux network namespaces on one machine, for everything that crosses
 * hosts (jobs, failover, partitions, slow links). Each host is a namespace `<prefix>-<name>` with
 * loopback up and one veth (`eth0`, `<subnet>.<octet>/24`) on a bridge `<prefix>-br` in the root
 * namespace, where the test process (and the CLI it runs) sits at `<subnet>.1`. Hosts have no
 * default route: they reach the /24 and nothing else, so no traffic leaves the machine. A route
 * `unreachable <subnet>.0/24` (metric 4000) in the root namespace refuses traffic to the subnet
 * whenever the bridge is gone.
 *
 * Faults: `cut(a, b)` / `heal(a, b)` drop traffic between two hosts (nftables, a table per host),
 * `isolate(a)` drops everything between `a` and the rest (test process included), `slow(a, rate)`
 * puts a token bucket (tc tbf) on `a`'s link both ways. Processes started with `spawn()` run
 * inside a host (`ip netns exec`, which execs in place: the child's pid is the command's).
 *
 * Everything made is removed by `destroy()`, by exit handlers when the process ends without it, and
 * by the sweep at the next `create()` with the same prefix after a SIGKILLed run (processes still
 * inside its namespaces are killed by pid, from `ip netns pids`).
 *
 * ```ts
 * const rack = await Rack.create({ hosts: [{ name: 'm1', octet: 11 }, { name: 'a1', octet: 21 }] });
 * const child = rack.spawn('m1', process.execPath, ['server.js'], { logFile: '/tmp/m1.log' });
 * await rack.cut('m1', 'a1');
 * await rack.heal('m1', 'a1');
 * await rack.slow('a1', '1mbit');
 * await rack.destroy();
 * ```
 */
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

export interface RackHost {
  name: string;
  ip: string;
  netns: string;
}

export interface RackOptions {
  /** Name prefix of every namespace, link and rule made (default 'fxr'; at most 4 characters). */
  prefix?: string;
  /** First three octets of the /24 (default '10.213.0'); the bridge side gets .1. */
  subnet?: string;
  /** Hosts to make: a short name ([a-z0-9-], at most 6 characters) and the last octet of its address. */
  hosts: Array<{ name: string; octet: number }>;
}

/** Why this machine cannot build a rack (not root, a tool missing): one line. */
export class RackUnavailableError extends Error {}

const TABLE = 'fuxirack';

function sh(cmd: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(cmd, args, { timeout: 30_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0;
      resolve({ code, stdout: String(stdout), stderr: String(stderr) });
    });
  });
}

async function must(cmd: string, args: string[]): Promise<string> {
  const r = await sh(cmd, args);
  if (r.code !== 0) throw new Error(`${cmd} ${args.join(' ')}: ${r.stderr.trim() || `exit ${r.code}`}`);
  return r.stdout;
}

function quiet(cmd: string, args: string[]): void {
  try {
    execFileSync(cmd, args, { stdio: 'ignore', timeout: 10_000 });
  } catch {
    /* best effort */
  }
}

function has(cmd: string): boolean {
  try {
    execFileSync(cmd, ['-V'], { stdio: 'ignore' });
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code !== 'ENOENT';
  }
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export class Rack {
  readonly hosts: RackHost[];
  readonly bridgeIp: string;
  private readonly children = new Set<ChildProcess>();
  private readonly slowed = new Set<string>();
  private readonly cuts = new Set<string>();
  private readonly isolated = new Set<string>();
  private destroyed = false;
  private readonly onExit = () => this.destroySync();
  private readonly onSignal = (sig: NodeJS.Signals) => {
    this.destroySync();
    process.kill(process.pid, sig);
  };

  private constructor(
    readonly prefix: string,
    readonly subnet: string,
    hosts: RackOptions['hosts'],
  ) {
    this.bridgeIp = `${subnet}.1`;
    this.hosts = hosts.map((h) => ({ name: h.name, ip: `${subnet}.${h.octet}`, netns: `${prefix}-${h.name}` }));
  }

  /** Undefined when this machine can build a rack, else the one-line reason it cannot. */
  static preflight(): string | undefined {
    if (process.getuid?.() !== 0) return 'not root: network namespaces, veths and nftables need root (CI runs as root)';
    if (!has('ip')) return '`ip` (iproute2) is not installed: apt-get install iproute2';
    if (!existsSync('/run/netns') && !existsSync('/var/run/netns')) {
      try {
        mkdirSync('/run/netns', { recursive: true });
      } catch {
        return '`ip netns` cannot be used: /run/netns cannot be made';
      }
    }
    if (!has('nft')) return '`nft` (nftables) is not installed: apt-get install nftables';
    if (!has('tc')) return '`tc` (iproute2) is not installed: apt-get install iproute2';
    return undefined;
  }

  /** Builds the rack (after sweeping leftovers of an earlier run with the same prefix). */
  static async create(opts: RackOptions): Promise<Rack> {
    const reason = Rack.preflight();
    if (reason) throw new RackUnavailableError(reason);
    const prefix = opts.prefix ?? 'fxr';
    const subnet = opts.subnet ?? '10.213.0';
    if (!/^[a-z][a-z0-9]{0,3}$/.test(prefix)) throw new Error(`rack prefix ${JSON.stringify(prefix)}: 1-4 lowercase letters or digits`);
    if (!/^\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(subnet)) throw new Error(`rack subnet ${JSON.stringify(subnet)}: three octets, e.g. 10.213.0`);
    for (const h of opts.hosts) {
      if (!/^[a-z0-9][a-z0-9-]{0,5}$/.test(h.name)) throw new Error(`rack host name ${JSON.stringify(h.name)}: [a-z0-9-], at most 6 characters`);
      if (!Number.isInteger(h.octet) || h.octet < 2 || h.octet > 254) throw new Error(`rack host ${h.name}: octet ${h.octet} not in 2..254`);
    }
    await Rack.sweep(prefix, subnet);
    const rack = new Rack(prefix, subnet, opts.hosts);
    process.once('exit', rack.onExit);
    process.once('SIGINT', rack.onSignal);
    process.once('SIGTERM', rack.onSignal);
    try {
      await rack.build();
    } catch (e) {
      await rack.destroy();
      throw e;
    }
    return rack;
  }

  /** A handle on a rack built earlier (by another process, e.g. rack-cli's `up`): builds nothing, owns nothing. */
  static attach(opts: RackOptions): Rack {
    const rack = new Rack(opts.prefix ?? 'fxr', opts.subnet ?? '10.213.0', opts.hosts);
    rack.destroyed = true; // never torn down by this handle: `Rack.sweep(prefix)` does that
    return rack;
  }

  /** Keeps the rack when this process exits (it is removed later by `Rack.sweep(prefix)`). */
  release(): void {
    this.destroyed = true;
    process.removeListener('exit', this.onExit);
    process.removeListener('SIGINT', this.onSignal);
    process.removeListener('SIGTERM', this.onSignal);
  }

  /**
   * Removes what a run with `prefix` left: its processes (by pid), namespaces, links, route, hosts
   * files. With `subnet`, only that subnet's unreachable route (another rack's stays), else every one.
   */
  static async sweep(prefix: string, subnet?: string): Promise<void> {
    const list = await sh('ip', ['netns', 'list']);
    const names = list.stdout
      .split('\n')
      .map((l) => l.trim().split(/\s+/)[0] ?? '')
      .filter((n) => n.startsWith(`${prefix}-`));
    for (const ns of names) {
      const pids = (await sh('ip', ['netns', 'pids', ns])).stdout.split(/\s+/).filter(Boolean).map(Number);
      for (const pid of pids) {
        try {
          process.kill(pid, 'SIGCONT');
          process.kill(pid, 'SIGKILL');
        } catch {
          /* gone */
        }
      }
      await sh('ip', ['netns', 'del', ns]);
      rmSync(`/etc/netns/${ns}`, { recursive: true, force: true });
    }
    const links = (await sh('ip', ['-o', 'link', 'show'])).stdout
      .split('\n')
      .map((l) => /^\d+:\s+([^:@\s]+)/.exec(l)?.[1] ?? '')
      .filter((n) => n.startsWith(`${prefix}-`));
    for (const l of links) await sh('ip', ['link', 'del', l]);
    const routes = (await sh('ip', ['route', 'show', 'type', 'unreachable'])).stdout
      .split('\n')
      .filter((l) => /metric 4000/.test(l) && (subnet === undefined || l.trim().split(/\s+/)[1] === `${subnet}.0/24`));
    for (const r of routes) {
      const dst = r.trim().split(/\s+/)[1];
      if (dst) await sh('ip', ['route', 'del', 'unreachable', dst, 'metric', '4000']);
    }
  }

  private get bridge(): string {
    return `${this.prefix}-br`;
  }

  private vethOf(h: RackHost): string {
    return `${this.prefix}-${h.name}`;
  }

  private async build(): Promise<void> {
    await must('ip', ['route', 'add', 'unreachable', `${this.subnet}.0/24`, 'metric', '4000']);
    await must('ip', ['link', 'add', this.bridge, 'type', 'bridge']);
    await must('ip', ['addr', 'add', `${this.bridgeIp}/24`, 'dev', this.bridge]);
    await must('ip', ['link', 'set', this.bridge, 'up']);
    const hostsFile = ['127.0.0.1 localhost', `${this.bridgeIp} ${this.prefix}-client`, ...this.hosts.map((h) => `${h.ip} ${h.name}`)].join('\n') + '\n';
    for (const h of this.hosts) {
      await must('ip', ['netns', 'add', h.netns]);
      mkdirSync(`/etc/netns/${h.netns}`, { recursive: true });
      writeFileSync(`/etc/netns/${h.netns}/hosts`, hostsFile);
      await must('ip', ['link', 'add', this.vethOf(h), 'type', 'veth', 'peer', 'name', 'eth0', 'netns', h.netns]);
      await must('ip', ['link', 'set', this.vethOf(h), 'master', this.bridge, 'up']);
      await must('ip', ['-n', h.netns, 'addr', 'add', `${h.ip}/24`, 'dev', 'eth0']);
      await must('ip', ['-n', h.netns, 'link', 'set', 'eth0', 'up']);
      await must('ip', ['-n', h.netns, 'link', 'set', 'lo', 'up']);
      // One nftables table per host; cut/isolate add rules to it.
      await must('ip', ['netns', 'exec', h.netns, 'nft', 'add', 'table', 'inet', TABLE]);
      await must('ip', ['netns', 'exec', h.netns, 'nft', `add chain inet ${TABLE} in { type filter hook input priority 0; policy accept; }`]);
      await must('ip', ['netns', 'exec', h.netns, 'nft', `add chain inet ${TABLE} out { type filter hook output priority 0; policy accept; }`]);
    }
    // Wait for the links (and duplicate address detection) to settle.
    for (let i = 0; i < 50; i++) {
      const st = await sh('ip', ['-o', 'link', 'show', 'master', this.bridge]);
      if (st.stdout.split('\n').filter((l) => /state UP|LOWER_UP/.test(l)).length >= this.hosts.length) break;
      await sleep(50);
    }
  }

  host(name: string): RackHost {
    const h = this.hosts.find((x) => x.name === name);
    if (!h) throw new Error(`no host ${JSON.stringify(name)} on the rack (hosts: ${this.hosts.map((x) => x.name).join(', ')})`);
    return h;
  }

  /** argv prefix that runs a command inside host `name`. */
  wrap(name: string): string[] {
    return ['ip', 'netns', 'exec', this.host(name).netns];
  }

  /** Starts `cmd args` inside host `name`; its pid is the command's own. Remembered for destroy(). */
  spawn(name: string, cmd: string, args: string[], opts: { logFile?: string; env?: NodeJS.ProcessEnv; cwd?: string; detached?: boolean } = {}): ChildProcess {
    const argv = [...this.wrap(name), cmd, ...args];
    let fd: number | undefined;
    if (opts.logFile) {
      mkdirSync(dirname(opts.logFile), { recursive: true });
      fd = openSync(opts.logFile, 'a');
    }
    const child = spawn(argv[0]!, argv.slice(1), {
      stdio: fd === undefined ? 'ignore' : ['ignore', fd, fd],
      env: { ...process.env, ...(opts.env ?? {}) },
      ...(opts.cwd ? { cwd: opts.cwd } : {}),
      detached: !!opts.detached,
    });
    if (fd !== undefined) closeSync(fd);
    child.on('error', () => undefined);
    this.children.add(child);
    child.once('exit', () => this.children.delete(child));
    return child;
  }

  /** Runs a command to completion inside host `name`. */
  exec(name: string, cmd: string, args: string[], opts: { timeoutMs?: number } = {}): Promise<{ code: number; stdout: string; stderr: string }> {
    const argv = [...this.wrap(name), cmd, ...args];
    return new Promise((resolve) => {
      execFile(argv[0]!, argv.slice(1), { timeout: opts.timeoutMs ?? 30_000, maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
        const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0;
        resolve({ code, stdout: String(stdout), stderr: String(stderr) });
      });
    });
  }

  private nft(h: RackHost, rule: string): Promise<string> {
    return must('ip', ['netns', 'exec', h.netns, 'nft', rule]);
  }

  /** Drops every packet between hosts a and b, both ways. Idempotent. */
  async cut(a: string, b: string): Promise<void> {
    const [x, y] = [this.host(a), this.host(b)];
    const k = [x.name, y.name].sort().join('|');
    if (this.cuts.has(k)) return;
    for (const [h, peer] of [
      [x, y],
      [y, x],
    ] as const) {
      await this.nft(h, `add rule inet ${TABLE} in ip saddr ${peer.ip} drop comment "cut-${peer.name}"`);
      await this.nft(h, `add rule inet ${TABLE} out ip daddr ${peer.ip} drop comment "cut-${peer.name}"`);
    }
    this.cuts.add(k);
  }

  /** Undoes cut(a, b). */
  async heal(a: string, b: string): Promise<void> {
    const [x, y] = [this.host(a), this.host(b)];
    const k = [x.name, y.name].sort().join('|');
    await this.deleteRules(x, `cut-${y.name}`);
    await this.deleteRules(y, `cut-${x.name}`);
    this.cuts.delete(k);
  }

  /** Drops every packet between host a and everything else (other hosts and the test process). */
  async isolate(a: string): Promise<void> {
    const h = this.host(a);
    if (this.isolated.has(h.name)) return;
    await this.nft(h, `add rule inet ${TABLE} in iifname "eth0" drop comment "isolate"`);
    await this.nft(h, `add rule inet ${TABLE} out oifname "eth0" drop comment "isolate"`);
    this.isolated.add(h.name);
  }

  /** Removes every cut and isolation of host a, or of every host. */
  async healAll(a?: string): Promise<void> {
    for (const h of a ? [this.host(a)] : this.hosts) {
      await must('ip', ['netns', 'exec', h.netns, 'nft', 'flush', 'chain', 'inet', TABLE, 'in']);
      await must('ip', ['netns', 'exec', h.netns, 'nft', 'flush', 'chain', 'inet', TABLE, 'out']);
      this.isolated.delete(h.name);
      for (const k of [...this.cuts])
        if (k.split('|').includes(h.name)) {
          const other = k.split('|').find((n) => n !== h.name) ?? h.name;
          await this.deleteRules(this.host(other), `cut-${h.name}`);
          this.cuts.delete(k);
        }
    }
  }

  private async deleteRules(h: RackHost, comment: string): Promise<void> {
    const listing = await must('ip', ['netns', 'exec', h.netns, 'nft', '-a', 'list', 'table', 'inet', TABLE]);
    let chain = '';
    for (const line of listing.split('\n')) {
      const c = /^\s*chain (\w+)/.exec(line);
      if (c) chain = c[1]!;
      const m = /comment "([^"]+)" # handle (\d+)/.exec(line);
      if (m && m[1] === comment && chain) await this.nft(h, `delete rule inet ${TABLE} ${chain} handle ${m[2]}`);
    }
  }

  /** A token bucket of `rate` (tc syntax, e.g. '1mbit') on host a's link, both directions. */
  async slow(a: string, rate: string): Promise<void> {
    const h = this.host(a);
    const tbf = ['root', 'tbf', 'rate', rate, 'burst', '32kbit', 'latency', '400ms'];
    await must('ip', ['netns', 'exec', h.netns, 'tc', 'qdisc', 'replace', 'dev', 'eth0', ...tbf]);
    await must('tc', ['qdisc', 'replace', 'dev', this.vethOf(h), ...tbf]);
    this.slowed.add(h.name);
  }

  async unslow(a: string): Promise<void> {
    const h = this.host(a);
    await sh('ip', ['netns', 'exec', h.netns, 'tc', 'qdisc', 'del', 'dev', 'eth0', 'root']);
    await sh('tc', ['qdisc', 'del', 'dev', this.vethOf(h), 'root']);
    this.slowed.delete(h.name);
  }

  /** Kills what runs on the rack (by pid), then removes every namespace, link, route and file. Safe twice. */
  async destroy(): Promise<void> {
    if (this.destroyed) return;
    for (const c of this.children) {
      if (c.pid === undefined || c.exitCode !== null || c.signalCode !== null) continue;
      try {
        process.kill(c.pid, 'SIGCONT');
        process.kill(c.pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
    await Rack.sweep(this.prefix, this.subnet);
    this.destroyed = true;
    process.removeListener('exit', this.onExit);
    process.removeListener('SIGINT', this.onSignal);
    process.removeListener('SIGTERM', this.onSignal);
  }

  /** destroy() for an exiting process (synchronous; no events run after 'exit'). */
  private destroySync(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    for (const h of this.hosts) {
      let pids: number[] = [];
      try {
        pids = execFileSync('ip', ['netns', 'pids', h.netns], { encoding: 'utf8' }).split(/\s+/).filter(Boolean).map(Number);
      } catch {
        /* no such namespace */
      }
      for (const pid of pids) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          /* gone */
        }
      }
      quiet('ip', ['netns', 'del', h.netns]);
      rmSync(`/etc/netns/${h.netns}`, { recursive: true, force: true });
      quiet('ip', ['link', 'del', this.vethOf(h)]);
    }
    quiet('ip', ['link', 'del', this.bridge]);
    quiet('ip', ['route', 'del', 'unreachable', `${this.subnet}.0/24`, 'metric', '4000']);
  }
}
