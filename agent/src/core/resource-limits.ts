/**
 * Enforced resources (pure: the shell, shell/cgroups.ts, probes the host, writes the control files
 * and samples /proc; docs/architecture.md, "Enforced resources").
 *
 * Each worker runs inside limits taken from its grant: its own cgroup with a memory limit and a CPU
 * quota where the host lets the agent create groups (cgroup v2 with memory and cpu delegated, else
 * the v1 memory and cpu controllers), and where neither is writable a fallback that still enforces
 * memory: the RSS of the worker's process family sampled, the family killed past its grant. A
 * worker killed for memory ends FAILED with `OOM: used X of Y`.
 *
 * ```ts
 * const d = decideEnforcement('auto', { v2: { writable: false, controllers: [] }, v1: { memory: true, cpu: true } });
 * // { ok: true, mode: 'cgroup-v1', reason: '...' }
 * limitsFor({ cpuMilli: 500, memoryMb: 64 }); // { memoryBytes: 67108864, cpuQuotaUs: 50000, cpuPeriodUs: 100000 }
 * ```
 */
import type { Resource } from '@fuxi/common';

/** How the agent enforces its workers' grants. */
export type EnforcementMode = 'cgroup-v2' | 'cgroup-v1' | 'rss' | 'off';
/** The `resourceEnforcement` setting: a mode, or `auto` (the best the host allows). */
export type EnforcementSetting = 'auto' | EnforcementMode;
export const ENFORCEMENT_SETTINGS: readonly EnforcementSetting[] = ['auto', 'cgroup-v2', 'cgroup-v1', 'rss', 'off'];

/** What the shell found on the host. */
export interface EnforcementProbe {
  /** cgroup v2: the agent's group may get children with the listed controllers enabled. */
  v2: { writable: boolean; controllers: readonly string[]; problem?: string };
  /** cgroup v1: a child group could be created under the agent's own group of each controller. */
  v1: { memory: boolean; cpu: boolean; problem?: string };
}

export type EnforcementDecision = { ok: true; mode: EnforcementMode; reason: string } | { ok: false; reason: string };

function v2Usable(p: EnforcementProbe): boolean {
  return p.v2.writable && p.v2.controllers.includes('memory') && p.v2.controllers.includes('cpu');
}

function v2Why(p: EnforcementProbe): string {
  if (!p.v2.writable) return p.v2.problem || 'no writable cgroup v2 group';
  return `cgroup v2 controllers delegated: ${p.v2.controllers.join(' ') || 'none'} (memory and cpu needed)`;
}

function v1Why(p: EnforcementProbe): string {
  if (p.v1.memory && !p.v1.cpu) return p.v1.problem || 'the cgroup v1 cpu controller is not writable';
  if (!p.v1.memory) return p.v1.problem || 'the cgroup v1 memory controller is not writable';
  return '';
}

/**
 * Which mode to run in. `auto` takes cgroup v2, else v1, else RSS sampling; a mode named explicitly
 * that the host does not allow is refused (`ok: false`, the reason), never silently replaced.
 */
export function decideEnforcement(setting: EnforcementSetting, p: EnforcementProbe): EnforcementDecision {
  const v1 = p.v1.memory && p.v1.cpu;
  switch (setting) {
    case 'off':
      return { ok: true, mode: 'off', reason: 'resource enforcement turned off' };
    case 'rss':
      return { ok: true, mode: 'rss', reason: 'RSS sampling asked for (memory only)' };
    case 'cgroup-v2':
      return v2Usable(p) ? { ok: true, mode: 'cgroup-v2', reason: 'cgroup v2 memory and cpu delegated' } : { ok: false, reason: v2Why(p) };
    case 'cgroup-v1':
      return v1 ? { ok: true, mode: 'cgroup-v1', reason: 'cgroup v1 memory and cpu controllers writable' } : { ok: false, reason: v1Why(p) };
    case 'auto':
      if (v2Usable(p)) return { ok: true, mode: 'cgroup-v2', reason: 'cgroup v2 memory and cpu delegated' };
      if (v1) return { ok: true, mode: 'cgroup-v1', reason: `cgroup v1 memory and cpu controllers writable (v2: ${v2Why(p)})` };
      return { ok: true, mode: 'rss', reason: `no writable cgroup (v2: ${v2Why(p)}; v1: ${v1Why(p)}): RSS sampling, memory only` };
  }
}

/** The CFS period every quota is expressed over (100 ms). */
export const CPU_PERIOD_US = 100_000;
/** The kernel's smallest quota (1 ms). */
export const MIN_CPU_QUOTA_US = 1_000;

export interface WorkerLimits {
  /** null: no memory limit (the grant names no memory). */
  memoryBytes: number | null;
  /** Microseconds of CPU per `cpuPeriodUs`; null: no CPU limit (the grant names no CPU). */
  cpuQuotaUs: number | null;
  cpuPeriodUs: number;
}

/** The limits of a worker granted `r`: memory MB -> bytes, cpuMilli -> a CFS quota over 100 ms. */
export function limitsFor(r: Resource): WorkerLimits {
  const memoryBytes = r.memoryMb > 0 ? Math.round(r.memoryMb * 1024 * 1024) : null;
  const cpuQuotaUs = r.cpuMilli > 0 ? Math.max(MIN_CPU_QUOTA_US, Math.round((r.cpuMilli * CPU_PERIOD_US) / 1000)) : null;
  return { memoryBytes, cpuQuotaUs, cpuPeriodUs: CPU_PERIOD_US };
}

/** `cpu.max` (v2) for the limits: "<quota> <period>", or "max <period>". */
export function cpuMaxLine(l: WorkerLimits): string {
  return `${l.cpuQuotaUs ?? 'max'} ${l.cpuPeriodUs}`;
}

/** Bytes for a person: MB with one decimal below 10 GB ("612.3 MB"), else GB. */
export function formatBytes(n: number): string {
  const mb = n / (1024 * 1024);
  if (mb >= 10 * 1024) return `${(mb / 1024).toFixed(1)} GB`;
  return Number.isInteger(mb) ? `${mb} MB` : `${mb.toFixed(1)} MB`;
}

/** The message of a worker killed for memory. */
export function oomMessage(usedBytes: number, limitBytes: number): string {
  return `OOM: used ${formatBytes(usedBytes)} of ${formatBytes(limitBytes)}`;
}

/** True when `message` is that of a worker killed for memory. */
export function isOomMessage(message: string): boolean {
  return message.startsWith('OOM: ');
}

/** What the shell read of a worker's group (or its RSS sampler) when the worker ended. */
export interface OomEvidence {
  /** Processes of the group the kernel (or the RSS sampler) killed for memory. */
  oomKills: number;
  /** The most the group used (bytes; the sampler: the RSS it saw); read only when something was killed (0 otherwise). */
  maxUsageBytes: number;
  limitBytes: number | null;
}

/**
 * The exit message of a worker that ended with `exitCode` / `signal`, given its group's evidence:
 * `OOM: used X of Y` when something in it was killed for memory and the worker did not succeed; ''
 * otherwise (the usual "exit code N" applies).
 */
export function oomVerdict(exitCode: number | null, signal: string | null, ev: OomEvidence | undefined): string {
  if (!ev || ev.oomKills <= 0 || ev.limitBytes === null) return '';
  if (exitCode === 0 && signal === null) return '';
  return oomMessage(Math.max(ev.maxUsageBytes, 0), ev.limitBytes);
}

/** True when a family's RSS passed its memory limit (the fallback's kill decision). */
export function overMemory(rssBytes: number, l: WorkerLimits): boolean {
  return l.memoryBytes !== null && rssBytes > l.memoryBytes;
}

/**
 * The agent's group of one controller: `<own group>/fuxi-<nodeId>[-<tag>]`, relative to the
 * controller's mount (the agent's own group from /proc/self/cgroup; never anywhere else). The tag
 * (the shell's: a digest of the work dir) keeps two agents of one host apart even when they share
 * a group and a node id.
 */
export function agentGroup(ownGroup: string, nodeId: string, tag = ''): string {
  const own = ownGroup.replace(/\/+$/, '');
  return `${own}/fuxi-${groupName(nodeId)}${tag ? `-${groupName(tag)}` : ''}`;
}

/**
 * Separates the app from the worker in a group's name. Never in a `groupName` (its safe set is
 * letters, digits, `_`, `.` and `-`; anything else is percent-encoded, `@` as `_40`).
 */
export const GROUP_SEP = '@';

/**
 * A worker's group under the agent's: `<agent group>/<app>@<worker>`, one level. A group per app
 * above the workers' (the layout of earlier agents, `legacyWorkerGroup`) cost two more mkdirs and
 * two more rmdirs per one-task job in cgroup v1, each a kernel cgroup made or freed, and limited
 * nothing.
 */
export function workerGroup(agent: string, appId: string, workerId: string): string {
  return `${agent}/${groupName(appId)}${GROUP_SEP}${groupName(workerId)}`;
}

/** Where earlier agents made a worker's group, `<agent group>/<app>/<worker>`: still found for workers they started. */
export function legacyWorkerGroup(agent: string, appId: string, workerId: string): string {
  return `${agent}/${groupName(appId)}/${groupName(workerId)}`;
}

/** A directory name under the agent's group -> the app and worker of a one-level group; undefined for an earlier agent's app group. */
export function parseWorkerGroupName(name: string): { app: string; worker: string } | undefined {
  const i = name.indexOf(GROUP_SEP);
  if (i <= 0 || i === name.length - 1) return undefined;
  return { app: name.slice(0, i), worker: name.slice(i + 1) };
}

/** A cgroup-directory-safe name for an id (no `/`, never `.` or `..`, no control-file look-alikes). */
export function groupName(id: string): string {
  if (/^[A-Za-z0-9_-][A-Za-z0-9_.-]*$/.test(id) && !/^(cgroup|memory|cpu|tasks|notify_on_release|release_agent)[._]?/.test(id)) return id;
  return 'x' + encodeURIComponent(id).replace(/\./g, '%2E').replace(/\*/g, '%2A').replace(/%/g, '_');
}

/**
 * /proc/<pid>/cgroup text -> the group of each controller: v1 lines `N:memory,xyz:/path` give one
 * entry per controller, the v2 line `0::/path` the entry ''.
 */
export function parseProcCgroup(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of text.split('\n')) {
    const m = /^\d+:([^:]*):(.*)$/.exec(line.trim());
    if (!m) continue;
    const [, ctrls = '', p = '/'] = m;
    if (ctrls === '') out.set('', p);
    else for (const c of ctrls.split(',')) out.set(c, p);
  }
  return out;
}

/**
 * Which of the agent's groups (app/worker pairs found under its group at start, in either layout)
 * the start-up sweep removes: every one but those of live workers (re-adopted ones keep theirs).
 */
export function groupsToSweep<G extends { app: string; worker: string }>(found: readonly G[], live: ReadonlyArray<{ appId: string; workerId: string }>): G[] {
  const keep = new Set(live.map((w) => `${groupName(w.appId)}/${groupName(w.workerId)}`));
  return found.filter((g) => !keep.has(`${g.app}/${g.worker}`));
}
