/**
 * Host health from failure prediction: per host a score (the predicted failure probability of an
 * attempt there, failure-model.ts), decaying by half every `halfLifeMs` once predictions drop; a
 * host at `grayAt` or above gets fewer new workers (only when nothing else has room), at `blockAt`
 * none. Per job: a host where the job's own attempts failed `jobBlockFailures` times within the
 * last `halfLifeMs` gets none of that job's new workers (it is let back as the failures age). Never more than `maxBlockedFraction` of
 * the hosts are blocked, for the cluster or for one job (the worst first; the rest stay gray), so
 * a bad model cannot empty the cluster.
 *
 * Memory caps (`setMemoryCaps`): a host whose attempts fail under memory pressure, at
 * `pressureCapAt` of those or more and twice its rate otherwise, takes new workers only while its
 * memory allocated stays below the pressure level (sched-blacklist.ts); below it the host is as good
 * as any, so it is not listed for the cluster.
 *
 * What the scheduler gets is `HostBlacklist` (sched-types.ts); what `fuxi nodes` shows is `entries`.
 * Pure: time comes in as `nowMs`.
 */
import type { HostBlacklist } from './sched-types.js';

export interface BlacklistConfig {
  grayAt: number;
  blockAt: number;
  halfLifeMs: number;
  jobBlockFailures: number;
  maxBlockedFraction: number;
  /** Failure rate under memory pressure from which a host is memory-capped. */
  pressureCapAt: number;
}

export const DEFAULT_BLACKLIST_CONFIG: BlacklistConfig = {
  grayAt: 0.25,
  blockAt: 0.45,
  halfLifeMs: 10 * 60_000,
  jobBlockFailures: 2,
  maxBlockedFraction: 0.25,
  pressureCapAt: 0.3,
};

/** 'blocked' and 'gray' for the cluster; 'job': blocked only for the jobs listed; 'memory': memory-capped only. */
export type HostLevel = 'gray' | 'blocked' | 'job' | 'memory';

/** A host listed, for `fuxi nodes`. */
export interface BlacklistEntry {
  nodeId: string;
  level: HostLevel;
  score: number;
  reason: string;
  /** Jobs that block the host for themselves. */
  jobs: string[];
}

interface Scored {
  score: number;
  updatedMs: number;
  reason: string;
}

export class Blacklist {
  private readonly hosts = new Map<string, Scored>();
  /** Per job, per host: times of the job's failures there (the last `jobBlockFailures`). */
  private readonly jobs = new Map<string, Map<string, number[]>>();
  private memoryCaps = new Map<string, number>();
  private capReasons = new Map<string, string>();

  constructor(readonly config: BlacklistConfig = DEFAULT_BLACKLIST_CONFIG) {}

  /** A fresh prediction for `nodeId`: the score becomes the larger of it and the decayed old score. */
  observeHost(nodeId: string, predicted: number, reason: string, nowMs: number): void {
    const old = this.hosts.get(nodeId);
    const decayed = old === undefined ? 0 : this.decay(old, nowMs);
    if (predicted >= decayed) this.hosts.set(nodeId, { score: predicted, updatedMs: nowMs, reason });
    else if (old !== undefined) this.hosts.set(nodeId, { score: decayed, updatedMs: nowMs, reason: old.reason });
  }

  /** An attempt of `appId` failed on `nodeId`. */
  recordJobFailure(appId: string, nodeId: string, nowMs: number): void {
    let m = this.jobs.get(appId);
    if (m === undefined) this.jobs.set(appId, (m = new Map()));
    let times = m.get(nodeId);
    if (times === undefined) m.set(nodeId, (times = []));
    times.push(nowMs);
    while (times.length > Math.max(1, Math.ceil(this.config.jobBlockFailures))) times.shift();
  }

  /**
   * Failure prediction moved or killed one of the job's running attempts off the host: the job
   * gets no new worker there within the half-life, as if it had failed there `jobBlockFailures`
   * times (its AM may ask for that host again, e.g. by locality).
   */
  blockForJob(appId: string, nodeId: string, nowMs: number): void {
    for (let i = 0; i < Math.max(1, Math.ceil(this.config.jobBlockFailures)); i++) this.recordJobFailure(appId, nodeId, nowMs);
  }

  /** The memory-capped hosts now (each with its cap, a fraction of its memory, and why), replacing the last. */
  setMemoryCaps(caps: ReadonlyMap<string, { cap: number; reason: string }>): void {
    this.memoryCaps = new Map([...caps].map(([id, c]) => [id, c.cap]));
    this.capReasons = new Map([...caps].map(([id, c]) => [id, c.reason]));
  }

  /** The job ended: its own list goes. */
  forgetJob(appId: string): void {
    this.jobs.delete(appId);
  }

  /** A host left the cluster. */
  forgetHost(nodeId: string): void {
    this.hosts.delete(nodeId);
    this.memoryCaps.delete(nodeId);
    this.capReasons.delete(nodeId);
    for (const m of this.jobs.values()) m.delete(nodeId);
  }

  /** The host's score now (0 when unknown). */
  score(nodeId: string, nowMs: number): number {
    const s = this.hosts.get(nodeId);
    return s === undefined ? 0 : this.decay(s, nowMs);
  }

  /** What the scheduler skips now, with `hostCount` hosts in the cluster (for the cap). */
  view(nowMs: number, hostCount: number): HostBlacklist {
    const { blockAt, grayAt, jobBlockFailures } = this.config;
    const cap = Math.floor(this.config.maxBlockedFraction * hostCount);
    const scored = [...this.hosts].map(([id, s]) => ({ id, score: this.decay(s, nowMs) })).filter((h) => h.score >= grayAt);
    scored.sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    const blocked = new Set<string>();
    const gray = new Set<string>();
    for (const h of scored) {
      if (h.score >= blockAt && blocked.size < cap) blocked.add(h.id);
      else gray.add(h.id);
    }
    const perApp = new Map<string, ReadonlySet<string>>();
    for (const [appId, m] of this.jobs) {
      const from = nowMs - this.config.halfLifeMs;
      const hosts = [...m].map(([id, t]) => ({ id, score: t.filter((x) => x > from).length })).filter((h) => h.score >= jobBlockFailures);
      if (hosts.length === 0) continue;
      hosts.sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
      perApp.set(appId, new Set(hosts.slice(0, cap).map((h) => h.id)));
    }
    return { blocked, gray, perApp, ...(this.memoryCaps.size > 0 ? { memoryCap: this.memoryCaps } : {}) };
  }

  /** The listed hosts with their level and reason, by node id. */
  entries(nowMs: number, hostCount: number): BlacklistEntry[] {
    const v = this.view(nowMs, hostCount);
    const byHost = new Map<string, string[]>();
    for (const [appId, hosts] of v.perApp) for (const h of hosts) byHost.set(h, [...(byHost.get(h) ?? []), appId]);
    const ids = new Set([...v.blocked, ...v.gray, ...byHost.keys(), ...this.memoryCaps.keys()]);
    return [...ids].sort().map((id) => {
      const s = this.hosts.get(id);
      const jobs = (byHost.get(id) ?? []).sort();
      const level: HostLevel = v.blocked.has(id) ? 'blocked' : v.gray.has(id) ? 'gray' : byHost.has(id) ? 'job' : 'memory';
      const reason =
        v.blocked.has(id) || v.gray.has(id)
          ? (s?.reason ?? '')
          : level === 'job'
            ? `failed ${jobs.length === 1 ? 'its job' : 'jobs'} repeatedly`
            : (this.capReasons.get(id) ?? '');
      return { nodeId: id, level, score: this.score(id, nowMs), reason, jobs };
    });
  }

  private decay(s: Scored, nowMs: number): number {
    const dt = Math.max(0, nowMs - s.updatedMs);
    return s.score * Math.pow(0.5, dt / this.config.halfLifeMs);
  }
}
