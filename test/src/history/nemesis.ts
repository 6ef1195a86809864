/**
 * The nemesis: faults, one at a time, each held a few seconds and then healed, with every fault
 * recorded (kind, variant, targets, start and heal times). The kinds take turns, so every kind is
 * hit about as often:
 *
 * - `masterKill`: kill -9 of the leader (mostly) or a standby; restarted after the hold.
 * - `masterPause`: SIGSTOP of the leader (mostly) or a standby, shorter or longer than its lease;
 *   then SIGCONT.
 * - `etcdKill`: kill -9 of one etcd member (quorum kept; often the raft leader) or of two (quorum
 *   lost); restarted on their data.
 * - `etcdPause`: SIGSTOP of one member or two, then SIGCONT.
 * - `etcdLinkCut`: master-to-etcd links dropped with nftables: the leading master from every
 *   member, one master from one member, or one member from every master.
 * - `etcdSpaceFull`: etcd's space quota filled (big keys outside the masters' prefix) until it
 *   raises NOSPACE; then freed: keys deleted, history compacted, every member defragmented, the
 *   alarm disarmed.
 *
 * Between faults it waits (bounded) for a serving leader and a healthy etcd, so faults do not pile
 * up into one long outage.
 */
import { randomBytes } from 'node:crypto';
import type { HistoryCluster } from './history-cluster.js';
import { ETCD_HOSTS, MASTER_HOSTS } from './history-cluster.js';
import { etcdCompact, etcdDefragment, etcdDeletePrefix, etcdDisarmAll, etcdPut, etcdStatus } from './etcd-admin.js';

export const FAULT_KINDS = ['masterKill', 'masterPause', 'etcdKill', 'etcdPause', 'etcdLinkCut', 'etcdSpaceFull'] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

export interface FaultRecord {
  kind: FaultKind;
  variant: string;
  targets: string[];
  startMs: number;
  healedMs: number;
  /** What else was seen (e.g. how many bytes filled etcd). */
  note?: string;
}

export interface NemesisOptions {
  /** How long a fault is held (uniform in [min, max] ms). */
  holdMs: [number, number];
  /** Pause after a fault is healed and the cluster is back (uniform in [min, max] ms). */
  gapMs: [number, number];
  /** The masters' lease TTL (a pause longer than it deposes the leader). */
  leaseTtlMs: number;
  /** Key prefix the space filler writes under (outside the masters' prefix). */
  fillPrefix: string;
  rand: () => number;
  log: (s: string) => void;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export class Nemesis {
  readonly faults: FaultRecord[] = [];
  /** Waits after healing that ended without a serving leader and a healthy etcd. */
  settleTimeouts = 0;
  private stopping = false;
  private filled = false;

  constructor(
    private readonly hc: HistoryCluster,
    private readonly o: NemesisOptions,
  ) {}

  /** Runs `count` faults (or until stop()), each healed before the next. */
  async run(count: number): Promise<void> {
    let order: FaultKind[] = [];
    for (let i = 0; i < count && !this.stopping; i++) {
      if (order.length === 0) order = this.shuffle([...FAULT_KINDS]);
      const kind = order.shift()!;
      const rec = await this.inject(kind);
      this.o.log(
        `fault ${i + 1}/${count}: ${rec.kind} ${rec.variant} [${rec.targets.join(' ')}] held ${rec.healedMs - rec.startMs} ms${rec.note ? ` (${rec.note})` : ''}`,
      );
      if (!(await this.settle(60_000))) {
        this.settleTimeouts++;
        this.o.log('  the cluster was not back within 60 s of the heal');
      }
      await sleep(this.between(this.o.gapMs));
    }
  }

  stop(): void {
    this.stopping = true;
  }

  counts(): Record<FaultKind, number> {
    const c = Object.fromEntries(FAULT_KINDS.map((k) => [k, 0])) as Record<FaultKind, number>;
    for (const f of this.faults) c[f.kind]++;
    return c;
  }

  variants(): Record<string, number> {
    const c: Record<string, number> = {};
    for (const f of this.faults) c[`${f.kind}/${f.variant}`] = (c[`${f.kind}/${f.variant}`] ?? 0) + 1;
    return c;
  }

  /** Undoes whatever may still be broken (after an aborted run): safe at any time. */
  async healAll(): Promise<void> {
    const { ha, rack, etcd } = this.hc;
    for (const m of ha.masters) if (m.stopped) ha.kill(m, 'SIGCONT');
    for (const e of etcd) if (e.pid !== undefined) e.resume();
    await rack.healAll();
    await Promise.all(etcd.map((e) => (e.pid === undefined ? this.startMember(e) : Promise.resolve())));
    if (this.filled) await this.free();
    for (let i = 0; i < ha.masters.length; i++)
      if (ha.masters[i]!.child.exitCode !== null || ha.masters[i]!.child.signalCode !== null) await this.hc.restartMaster(i);
  }

  /** True once a master leads and every etcd member answers (within `timeoutMs`). */
  async settle(timeoutMs: number): Promise<boolean> {
    const until = Date.now() + timeoutMs;
    while (Date.now() < until) {
      const up = await Promise.all(
        this.hc.etcdEndpoints.map((e) =>
          etcdStatus(e, 2000).then(
            () => true,
            () => false,
          ),
        ),
      );
      if (up.every(Boolean) && this.hc.leaderIndex() !== undefined) return true;
      await sleep(200);
    }
    return false;
  }

  private between([lo, hi]: [number, number]): number {
    return Math.round(lo + this.o.rand() * (hi - lo));
  }

  private shuffle<T>(xs: T[]): T[] {
    for (let i = xs.length - 1; i > 0; i--) {
      const j = Math.floor(this.o.rand() * (i + 1));
      [xs[i], xs[j]] = [xs[j]!, xs[i]!];
    }
    return xs;
  }

  /** The leader's index (70%) or another master's. */
  private pickMaster(): { i: number; role: 'leader' | 'standby' } {
    const leader = this.hc.leaderIndex();
    if (leader !== undefined && this.o.rand() < 0.7) return { i: leader, role: 'leader' };
    const others = MASTER_HOSTS.map((_, i) => i).filter((i) => i !== leader);
    return { i: others[Math.floor(this.o.rand() * others.length)]!, role: 'standby' };
  }

  /** Index of etcd's raft leader (by the members' own status), or a random member. */
  private async etcdLeader(): Promise<number> {
    const sts = await Promise.all(this.hc.etcdEndpoints.map((e) => etcdStatus(e, 2000).catch(() => undefined)));
    const leader = sts.find((s) => s?.leader)?.leader;
    const i = sts.findIndex((s) => s && s.memberId === leader);
    return i >= 0 ? i : Math.floor(this.o.rand() * ETCD_HOSTS.length);
  }

  private async pickMembers(n: number): Promise<number[]> {
    const first = this.o.rand() < 0.5 ? await this.etcdLeader() : Math.floor(this.o.rand() * ETCD_HOSTS.length);
    const rest = this.shuffle(ETCD_HOSTS.map((_, i) => i).filter((i) => i !== first));
    return [first, ...rest].slice(0, n);
  }

  private async startMember(e: HistoryCluster['etcd'][number]): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await e.start();
        return;
      } catch (err) {
        if (attempt >= 3) throw err;
        this.o.log(`  etcd ${e.endpoint} did not start (${String(err).split('\n')[0]}); again`);
        await e.crash();
      }
    }
  }

  private async inject(kind: FaultKind): Promise<FaultRecord> {
    const hold = this.between(this.o.holdMs);
    const rec: FaultRecord = { kind, variant: '', targets: [], startMs: Date.now(), healedMs: 0 };
    const { ha, rack, etcd } = this.hc;
    switch (kind) {
      case 'masterKill': {
        const { i, role } = this.pickMaster();
        rec.variant = role;
        rec.targets = [MASTER_HOSTS[i]!];
        rec.startMs = Date.now();
        await this.hc.killMaster(i);
        await sleep(hold);
        await this.hc.restartMaster(i);
        break;
      }
      case 'masterPause': {
        const { i, role } = this.pickMaster();
        const long = this.o.rand() < 0.5;
        const ms = long ? this.o.leaseTtlMs + hold : Math.min(hold, this.o.leaseTtlMs / 2);
        rec.variant = `${role}-${long ? 'pastLease' : 'withinLease'}`;
        rec.targets = [MASTER_HOSTS[i]!];
        const m = ha.masters[i]!;
        rec.startMs = Date.now();
        ha.kill(m, 'SIGSTOP');
        await sleep(ms);
        ha.kill(m, 'SIGCONT');
        break;
      }
      case 'etcdKill':
      case 'etcdPause': {
        const lost = this.o.rand() < 0.4;
        const members = await this.pickMembers(lost ? 2 : 1);
        rec.variant = lost ? 'quorumLost' : 'quorumKept';
        rec.targets = members.map((i) => ETCD_HOSTS[i]!);
        rec.startMs = Date.now();
        if (kind === 'etcdKill') {
          await Promise.all(members.map((i) => etcd[i]!.crash()));
          await sleep(hold);
          await Promise.all(members.map((i) => this.startMember(etcd[i]!)));
        } else {
          for (const i of members) etcd[i]!.pause();
          await sleep(hold);
          for (const i of members) etcd[i]!.resume();
        }
        break;
      }
      case 'etcdLinkCut': {
        const r = this.o.rand();
        let pairs: Array<[string, string]>;
        if (r < 0.4) {
          const leader = this.hc.leaderIndex() ?? 0;
          rec.variant = 'leaderFromEtcd';
          pairs = ETCD_HOSTS.map((e) => [MASTER_HOSTS[leader]!, e]);
        } else if (r < 0.7) {
          const m = MASTER_HOSTS[this.hc.leaderIndex() ?? Math.floor(this.o.rand() * 3)]!;
          const e = ETCD_HOSTS[Math.floor(this.o.rand() * 3)]!;
          rec.variant = 'oneLink';
          pairs = [[m, e]];
        } else {
          const e = ETCD_HOSTS[await this.etcdLeader()]!;
          rec.variant = 'memberFromMasters';
          pairs = MASTER_HOSTS.map((m) => [m, e]);
        }
        rec.targets = pairs.map(([a, b]) => `${a}-${b}`);
        rec.startMs = Date.now();
        for (const [a, b] of pairs) await rack.cut(a, b);
        await sleep(hold);
        for (const [a, b] of pairs) await rack.heal(a, b);
        break;
      }
      case 'etcdSpaceFull': {
        rec.variant = 'quota';
        rec.targets = [...ETCD_HOSTS];
        rec.startMs = Date.now();
        rec.note = await this.fill();
        await sleep(hold);
        await this.free();
        break;
      }
    }
    rec.healedMs = Date.now();
    this.faults.push(rec);
    return rec;
  }

  /** Writes big keys under the fill prefix until etcd refuses with NOSPACE. */
  private async fill(): Promise<string> {
    this.filled = true;
    const endpoint = this.hc.etcdEndpoints[0]!;
    const chunk = 256 * 1024;
    const max = Math.ceil((this.hc.opts.etcdQuotaBytes * 2) / chunk) + 20;
    for (let n = 0; n < max; n++) {
      try {
        await etcdPut(endpoint, `${this.o.fillPrefix}${n}`, randomBytes(chunk));
      } catch (e) {
        const msg = e instanceof Error ? e.message : String(e);
        if (/space exceeded|NOSPACE/i.test(msg)) return `NOSPACE after ${n} puts of ${chunk} bytes`;
        throw e;
      }
    }
    return `no NOSPACE after ${max} puts`;
  }

  /** Deletes the fill keys, compacts, defragments every member and disarms the alarm. */
  private async free(): Promise<void> {
    const eps = this.hc.etcdEndpoints;
    const endpoint = eps[0]!;
    for (let attempt = 1; ; attempt++) {
      try {
        const rev = await etcdDeletePrefix(endpoint, this.o.fillPrefix);
        await etcdCompact(endpoint, rev).catch((e: Error) => {
          if (!/compacted/.test(e.message)) throw e; // already compacted past it: fine
        });
        for (const e of eps) await etcdDefragment(e);
        await etcdDisarmAll(endpoint);
        this.filled = false;
        return;
      } catch (e) {
        if (attempt >= 5) throw e;
        this.o.log(`  freeing etcd failed (${e instanceof Error ? e.message : String(e)}); again`);
        await sleep(1000);
      }
    }
  }
}
