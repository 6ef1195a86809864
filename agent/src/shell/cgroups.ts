/**
 * Enforced resources on the host (the decisions are core/resource-limits.ts; docs/architecture.md,
 * "Enforced resources").
 *
 * `openEnforcer` probes the host once: cgroup v2 (the agent's own v2 group, with memory and cpu
 * among its controllers and enabled for its children), then cgroup v1 (a test child created and
 * removed under the agent's own group of the memory and of the cpu controller), and picks the mode.
 * In a cgroup mode every worker gets a group of its own under the agent's own current group,
 * `<mount>/<own group>/fuxi-<nodeId>/<app>@<worker>` (one per controller in v1), with the memory
 * limit and CPU quota of its grant, made before the worker runs: the worker's wrapper writes its own
 * pid into the groups' `cgroup.procs` before it executes the command (process-driver.ts). When the
 * worker ends, `finish` reads whether the kernel killed something in the group for memory (v1
 * `memory.oom_control` oom_kill, v2 `memory.events` oom_kill) and the most it used, and removes the
 * group (again later while something of the worker still lives in it). `sweep` at start removes the
 * agent's groups of workers that are gone (re-adopted workers keep theirs: a group's path follows
 * from its app and worker id). A worker started by an earlier agent may have its group one level
 * deeper, `<app>/<worker>` (`legacyWorkerGroup`): `finish` and `sweep` find it there. In `rss`
 * mode nothing is made here: the process driver samples the family's RSS. `off` enforces nothing.
 *
 * ```ts
 * const enf = openEnforcer({ setting: 'auto', nodeId: 'n1', log });
 * const procsFiles = enf.prepare('app1', 'map.0.1', limitsFor(grant)); // the wrapper joins these
 * // ... the worker ends
 * const evidence = enf.finish('app1', 'map.0.1'); // oomVerdict(exitCode, signal, evidence)
 * ```
 */
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { InvalidArgumentError, nullLogger, type Logger } from '@fuxi/common';
import { cgroupMounts, dirUnder, type Mount } from './cgroup-paths.js';
import {
  agentGroup,
  cpuMaxLine,
  decideEnforcement,
  groupsToSweep,
  legacyWorkerGroup,
  parseWorkerGroupName,
  workerGroup,
  parseProcCgroup,
  type EnforcementMode,
  type EnforcementProbe,
  type EnforcementSetting,
  type OomEvidence,
  type WorkerLimits,
} from '../core/resource-limits.js';

export interface EnforcerOptions {
  setting: EnforcementSetting;
  nodeId: string;
  /** The agent's work dir: a digest of it is in the agent's group name (two agents of a host apart). */
  workDir?: string;
  log?: Logger;
  /** /proc/self/cgroup and /proc/self/mountinfo text (tests); default: read. */
  procSelfCgroup?: string;
  mountInfo?: string;
}

export interface ResourceEnforcer {
  readonly mode: EnforcementMode;
  /** Why this mode (what the probe found). */
  readonly reason: string;
  /** The agent's group directories (one per controller in v1; one in v2; none otherwise). */
  readonly agentDirs: readonly string[];
  /**
   * Makes the worker's groups with `limits`, before it runs; returns the `cgroup.procs` files its
   * wrapper writes its pid to ([] when no cgroup mode). Throws when a group cannot be made.
   */
  prepare(appId: string, workerId: string, limits: WorkerLimits): string[];
  /** The worker ended: what its group says about memory kills, then the group is removed. */
  finish(appId: string, workerId: string): OomEvidence | undefined;
  /** The worker's group directories (whether or not they exist). */
  groupDirs(appId: string, workerId: string): string[];
  /** The processes in the worker's groups now (none without a cgroup mode, or once they are gone). */
  groupPids(appId: string, workerId: string): number[];
  /** At start: removes the agent's groups of workers not in `live`, and earlier agents' empty app groups. */
  sweep(live: ReadonlyArray<{ appId: string; workerId: string }>): void;
  /** Stops retrying removals; removes the agent's groups that are empty. */
  close(): void;
}

function readText(file: string): string | undefined {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

function errText(e: unknown): string {
  return (e as NodeJS.ErrnoException).code ?? (e as Error).message ?? String(e);
}

/** Can a child group be made (and removed) in `dir`? '' when yes, else why not. */
function canMakeChild(dir: string): string {
  const probe = path.join(dir, `fuxi-probe-${process.pid}`);
  try {
    fs.mkdirSync(probe);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') return `cannot create a group in ${dir} (${errText(e)})`;
  }
  try {
    fs.rmdirSync(probe);
  } catch {
    /* left for the next start's probe */
  }
  return '';
}

/** The name of the leaf the agent moves itself into in cgroup v2 (no processes in inner groups). */
export const V2_AGENT_LEAF = 'fuxi-agent';

interface Layout {
  kind: 'v1' | 'v2';
  /** Agent group directory per controller ('' for v2's single hierarchy). */
  dirs: Array<{ controller: string; dir: string }>;
}

/** Probes the host (v2, then v1) and finds where the agent's groups go. */
function probeHost(opts: EnforcerOptions): { probe: EnforcementProbe; v1?: Layout; v2?: Layout } {
  const self = parseProcCgroup(opts.procSelfCgroup ?? readText('/proc/self/cgroup') ?? '');
  const mounts = cgroupMounts(opts.mountInfo ?? readText('/proc/self/mountinfo') ?? '');
  const probe: EnforcementProbe = { v2: { writable: false, controllers: [] }, v1: { memory: false, cpu: false } };
  let v2: Layout | undefined;
  let v1: Layout | undefined;
  // cgroup v2
  const m2 = mounts.find((m) => m.fstype === 'cgroup2');
  const own2 = self.get('');
  if (!m2 || own2 === undefined) probe.v2.problem = 'no cgroup v2 hierarchy';
  else {
    let base = own2;
    if (path.posix.basename(base) === V2_AGENT_LEAF) base = path.posix.dirname(base); // the leaf of an earlier start
    const dir = dirUnder(m2, base);
    const controllers = (readText(path.join(dir, 'cgroup.controllers')) ?? '').trim().split(/\s+/).filter(Boolean);
    probe.v2.controllers = controllers;
    if (controllers.includes('memory') && controllers.includes('cpu')) {
      const problem = enableV2(dir, opts.log ?? nullLogger) || canMakeChild(dir);
      if (problem) probe.v2.problem = problem;
      else {
        probe.v2.writable = true;
        v2 = { kind: 'v2', dirs: [{ controller: '', dir: path.join(m2.dir, agentGroup(relTo(m2, base), opts.nodeId, tagOf(opts))) }] };
      }
    } else probe.v2.problem = `the agent's cgroup v2 group ${dir} has no memory and cpu controllers (delegate them: systemd Delegate=yes)`;
  }
  // cgroup v1
  const dirs: Layout['dirs'] = [];
  const problems: string[] = [];
  for (const c of ['memory', 'cpu'] as const) {
    const m = mounts.find((x) => x.fstype === 'cgroup' && x.options.includes(c));
    const own = self.get(c);
    if (!m || own === undefined) {
      problems.push(`no cgroup v1 ${c} controller mounted`);
      continue;
    }
    const dir = dirUnder(m, own);
    const problem = canMakeChild(dir);
    if (problem) problems.push(problem);
    else {
      probe.v1[c] = true;
      dirs.push({ controller: c, dir: path.join(m.dir, agentGroup(relTo(m, own), opts.nodeId, tagOf(opts))) });
    }
  }
  if (problems.length > 0) probe.v1.problem = problems.join('; ');
  if (probe.v1.memory && probe.v1.cpu) v1 = { kind: 'v1', dirs };
  return { probe, ...(v1 ? { v1 } : {}), ...(v2 ? { v2 } : {}) };
}

/** 8 hex digits of the work dir's SHA-256 ('' without one). */
function tagOf(opts: EnforcerOptions): string {
  return opts.workDir ? createHash('sha256').update(path.resolve(opts.workDir)).digest('hex').slice(0, 8) : '';
}

/**
 * Removes every group of the agent `nodeId` with `workDir` that holds no process (tests, after
 * killing what they started; waits up to `waitMs` for processes still leaving). Nothing when the
 * host has no writable cgroup.
 */
export async function removeAgentGroups(nodeId: string, workDir: string, waitMs = 3000): Promise<void> {
  let enf: ResourceEnforcer;
  try {
    enf = openEnforcer({ setting: 'auto', nodeId, workDir });
  } catch {
    return;
  }
  const until = Date.now() + waitMs;
  for (;;) {
    enf.sweep([]);
    enf.close();
    if (enf.agentDirs.every((d) => !fs.existsSync(d)) || Date.now() >= until) return;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The group path `own` relative to mount `m` (what goes after the mount directory). */
function relTo(m: Mount, own: string): string {
  return path.relative(m.dir, dirUnder(m, own)).split(path.sep).join('/') || '';
}

/**
 * cgroup v2 lets only a group without processes enable controllers for its children: when the
 * agent's group has memory and cpu but not for its children, the agent moves itself (when it is the
 * group's only process) into the leaf `fuxi-agent` and enables them. '' when enabled.
 */
function enableV2(dir: string, log: Logger): string {
  const sub = path.join(dir, 'cgroup.subtree_control');
  const enabled = () => (readText(sub) ?? '').split(/\s+/);
  if (enabled().includes('memory') && enabled().includes('cpu')) return '';
  try {
    fs.writeFileSync(sub, '+memory +cpu');
    return '';
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EBUSY') return `cannot enable memory and cpu for the children of ${dir} (${errText(e)})`;
  }
  const procs = (readText(path.join(dir, 'cgroup.procs')) ?? '').split('\n').filter(Boolean);
  if (procs.length !== 1 || procs[0] !== String(process.pid))
    return `the agent's cgroup v2 group ${dir} holds other processes, so its children cannot get memory and cpu controllers`;
  try {
    const leaf = path.join(dir, V2_AGENT_LEAF);
    fs.mkdirSync(leaf, { recursive: true });
    fs.writeFileSync(path.join(leaf, 'cgroup.procs'), String(process.pid));
    fs.writeFileSync(sub, '+memory +cpu');
    log.info({ leaf }, 'moved the agent into a leaf of its cgroup v2 group to delegate memory and cpu to worker groups');
    return '';
  } catch (e) {
    return `cannot enable memory and cpu for the children of ${dir} (${errText(e)})`;
  }
}

/** Probes the host and opens the enforcer; a mode named explicitly that the host lacks is an error naming `resourceEnforcement`. */
export function openEnforcer(opts: EnforcerOptions): ResourceEnforcer {
  const log = opts.log ?? nullLogger;
  if (opts.setting === 'off') return new CgroupEnforcer('off', 'resource enforcement turned off', undefined, log);
  if (opts.setting === 'rss') return new CgroupEnforcer('rss', 'RSS sampling asked for (memory only)', undefined, log);
  const found = probeHost(opts);
  const d = decideEnforcement(opts.setting, found.probe);
  if (!d.ok) throw new InvalidArgumentError('resourceEnforcement', `${opts.setting} is not available on this host: ${d.reason}`);
  const layout = d.mode === 'cgroup-v2' ? found.v2 : d.mode === 'cgroup-v1' ? found.v1 : undefined;
  return new CgroupEnforcer(d.mode, d.reason, layout, log);
}

const RETRY_REMOVE_MS = 1000;
const RETRY_REMOVE_TIMES = 60;
/** The CFS period a new cgroup v1 cpu group has (the kernel's default, 100 ms). */
const V1_DEFAULT_CFS_PERIOD_US = 100_000;

class CgroupEnforcer implements ResourceEnforcer {
  private readonly retries = new Map<string, { left: number; legacy: boolean; timer: NodeJS.Timeout }>();
  /** Limits given to live groups (the OOM message's limit when the group cannot be read). */
  private readonly limits = new Map<string, WorkerLimits>();
  /** The agent's own directories are made (and in v2 delegate memory and cpu): checked once, and again when one is gone. */
  private agentDirsReady = false;

  constructor(
    readonly mode: EnforcementMode,
    readonly reason: string,
    private readonly layout: Layout | undefined,
    private readonly log: Logger,
  ) {}

  get agentDirs(): string[] {
    return this.layout ? this.layout.dirs.map((d) => d.dir) : [];
  }

  groupDirs(appId: string, workerId: string): string[] {
    if (!this.layout) return [];
    return this.layout.dirs.map((d) => workerGroup(d.dir, appId, workerId));
  }

  groupPids(appId: string, workerId: string): number[] {
    const pids = new Set<number>();
    for (const dir of this.groupDirs(appId, workerId)) {
      for (const line of (readText(path.join(dir, 'cgroup.procs')) ?? '').split('\n')) {
        const pid = Number(line);
        if (line !== '' && Number.isInteger(pid) && pid > 0) pids.add(pid);
      }
    }
    return [...pids];
  }

  prepare(appId: string, workerId: string, limits: WorkerLimits): string[] {
    if (!this.layout) return [];
    const dirs = this.groupDirs(appId, workerId);
    const procs: string[] = [];
    for (const [i, d] of this.layout.dirs.entries()) {
      const dir = dirs[i] as string;
      this.cancelRetry(dir);
      const fresh = this.makeGroup(dir);
      const c = this.layout.kind === 'v2' ? 'v2' : d.controller;
      if (c === 'v2') {
        write(dir, 'memory.max', limits.memoryBytes === null ? 'max' : String(limits.memoryBytes));
        write(dir, 'memory.swap.max', limits.memoryBytes === null ? 'max' : '0', true);
        write(dir, 'cpu.max', cpuMaxLine(limits));
      } else if (c === 'memory') {
        // memsw first when lowering (it must stay >= the limit), and no swap past the limit.
        const bytes = limits.memoryBytes === null ? '-1' : String(limits.memoryBytes);
        if (limits.memoryBytes === null) {
          write(dir, 'memory.memsw.limit_in_bytes', '-1', true);
          write(dir, 'memory.limit_in_bytes', bytes);
        } else {
          write(dir, 'memory.limit_in_bytes', bytes);
          write(dir, 'memory.memsw.limit_in_bytes', bytes, true);
        }
      } else if (c === 'cpu') {
        // A group made just now has the kernel's period (100 ms): written only when it differs.
        if (!fresh || limits.cpuPeriodUs !== V1_DEFAULT_CFS_PERIOD_US) write(dir, 'cpu.cfs_period_us', String(limits.cpuPeriodUs));
        write(dir, 'cpu.cfs_quota_us', limits.cpuQuotaUs === null ? '-1' : String(limits.cpuQuotaUs));
      }
      procs.push(path.join(dir, 'cgroup.procs'));
    }
    this.limits.set(`${appId}\0${workerId}`, limits);
    return procs;
  }

  /**
   * Makes the worker's group `dir` (and, the first time or when it is gone, the agent's group it is
   * in: in v2 with memory and cpu enabled for its children). True when the group is new, false
   * when it was there already (a launch tried again).
   */
  private makeGroup(dir: string): boolean {
    if (!this.agentDirsReady) this.makeAgentDirs();
    try {
      fs.mkdirSync(dir);
      return true;
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'EEXIST') return false;
      if (code !== 'ENOENT') throw e;
    }
    // The agent's directory went away (removed by hand, or when the agent's last group was).
    this.makeAgentDirs();
    fs.mkdirSync(dir);
    return true;
  }

  private makeAgentDirs(): void {
    for (const { dir } of this.layout?.dirs ?? []) {
      fs.mkdirSync(dir, { recursive: true });
      if (this.layout?.kind === 'v2') {
        const sub = (readText(path.join(dir, 'cgroup.subtree_control')) ?? '').split(/\s+/);
        if (!sub.includes('memory') || !sub.includes('cpu')) fs.writeFileSync(path.join(dir, 'cgroup.subtree_control'), '+memory +cpu');
      }
    }
    this.agentDirsReady = true;
  }

  finish(appId: string, workerId: string): OomEvidence | undefined {
    if (!this.layout) return undefined;
    const key = `${appId}\0${workerId}`;
    const given = this.limits.get(key);
    this.limits.delete(key);
    let dirs = this.groupDirs(appId, workerId);
    let legacy = false;
    if (!given && !fs.existsSync(dirs[0] as string)) {
      // A worker an earlier agent started may have its group where that agent made them.
      const old = this.layout.dirs.map((d) => legacyWorkerGroup(d.dir, appId, workerId));
      if (fs.existsSync(old[0] as string)) [dirs, legacy] = [old, true];
    }
    let ev: OomEvidence | undefined;
    for (const [i, d] of this.layout.dirs.entries()) {
      const dir = dirs[i] as string;
      if (this.layout.kind === 'v2') ev = readV2Evidence(dir, given);
      else if (d.controller === 'memory') ev = readV1Evidence(dir, given);
    }
    for (const dir of dirs) this.remove(dir, legacy);
    return ev;
  }

  sweep(live: ReadonlyArray<{ appId: string; workerId: string }>): void {
    if (!this.layout) return;
    for (const { dir: agentDir } of this.layout.dirs) {
      const found: Array<{ app: string; worker: string; dir: string }> = [];
      const appDirs: string[] = [];
      for (const name of subdirs(agentDir)) {
        const g = parseWorkerGroupName(name);
        if (g) found.push({ ...g, dir: path.join(agentDir, name) });
        else {
          // An earlier agent's app group, its workers' groups inside.
          appDirs.push(path.join(agentDir, name));
          for (const worker of subdirs(path.join(agentDir, name))) found.push({ app: name, worker, dir: path.join(agentDir, name, worker) });
        }
      }
      for (const g of groupsToSweep(found, live)) {
        try {
          fs.rmdirSync(g.dir);
          this.log.info({ group: g.dir }, 'removed the group of a worker that is gone');
        } catch (e) {
          this.log.warn({ group: g.dir, err: errText(e) }, 'group of a worker that is gone not removed (processes left in it?)');
        }
      }
      for (const d of appDirs) rmdirQuiet(d);
    }
  }

  close(): void {
    for (const r of this.retries.values()) clearTimeout(r.timer);
    this.retries.clear();
    if (!this.layout) return;
    for (const { dir } of this.layout.dirs) {
      // Earlier agents' app groups left empty; the workers' own groups stay for the next start.
      for (const name of subdirs(dir)) if (!parseWorkerGroupName(name)) rmdirQuiet(path.join(dir, name));
      rmdirQuiet(dir);
    }
  }

  /**
   * rmdir of the worker's group, retried while processes of the worker remain; for a group in an
   * earlier agent's layout (`legacy`), then of its app's group when no other worker's is in it.
   */
  private remove(dir: string, legacy: boolean): void {
    try {
      fs.rmdirSync(dir);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') return;
      if (code === 'EBUSY' && !this.retries.has(dir)) {
        const r = { left: RETRY_REMOVE_TIMES, legacy, timer: setTimeout(() => this.retry(dir), RETRY_REMOVE_MS) };
        r.timer.unref();
        this.retries.set(dir, r);
        return;
      }
      if (code !== 'EBUSY') this.log.warn({ group: dir, err: errText(e) }, 'could not remove a worker group');
      return;
    }
    if (legacy) rmdirQuiet(path.dirname(dir));
  }

  private retry(dir: string): void {
    const r = this.retries.get(dir);
    if (!r) return;
    try {
      fs.rmdirSync(dir);
      this.retries.delete(dir);
      if (r.legacy) rmdirQuiet(path.dirname(dir));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT' || --r.left <= 0) {
        this.retries.delete(dir);
        if (r.left <= 0) this.log.warn({ group: dir }, 'worker group still busy; left for the next start sweep');
        return;
      }
      r.timer = setTimeout(() => this.retry(dir), RETRY_REMOVE_MS);
      r.timer.unref();
    }
  }

  private cancelRetry(dir: string): void {
    const r = this.retries.get(dir);
    if (r) clearTimeout(r.timer);
    this.retries.delete(dir);
  }
}

function write(dir: string, file: string, value: string, optional = false): void {
  try {
    fs.writeFileSync(path.join(dir, file), value);
  } catch (e) {
    if (optional && ['ENOENT', 'EACCES', 'EINVAL', 'EPERM'].includes((e as NodeJS.ErrnoException).code ?? '')) return;
    throw new Error(`cannot write ${value} to ${path.join(dir, file)}: ${errText(e)}`);
  }
}

function readNumber(file: string): number | undefined {
  const t = readText(file)?.trim();
  if (t === undefined || t === '' || t === 'max') return undefined;
  const n = Number(t);
  return Number.isFinite(n) ? n : undefined;
}

/** `key value` lines (memory.oom_control, memory.events) -> the value of `key`. */
function keyed(text: string | undefined, key: string): number {
  for (const line of (text ?? '').split('\n')) {
    const [k, v] = line.trim().split(/\s+/);
    if (k === key) return Number(v) || 0;
  }
  return 0;
}

function readV1Evidence(dir: string, given: WorkerLimits | undefined): OomEvidence | undefined {
  const oc = readText(path.join(dir, 'memory.oom_control'));
  if (oc === undefined) return undefined;
  const oomKills = keyed(oc, 'oom_kill');
  // The limit the group was given is known unless the agent restarted since: read only then. The
  // most it used is only said when something was killed for memory.
  const limit = given ? undefined : readNumber(path.join(dir, 'memory.limit_in_bytes'));
  return {
    oomKills,
    maxUsageBytes: oomKills > 0 ? (readNumber(path.join(dir, 'memory.max_usage_in_bytes')) ?? 0) : 0,
    limitBytes: given ? given.memoryBytes : limit !== undefined && limit < 2 ** 62 ? limit : null,
  };
}

function readV2Evidence(dir: string, given: WorkerLimits | undefined): OomEvidence | undefined {
  const events = readText(path.join(dir, 'memory.events'));
  if (events === undefined) return undefined;
  const oomKills = keyed(events, 'oom_kill');
  const limit = () => readNumber(path.join(dir, 'memory.max'));
  return {
    oomKills,
    maxUsageBytes: oomKills > 0 ? (readNumber(path.join(dir, 'memory.peak')) ?? limit() ?? 0) : 0,
    limitBytes: given && given.memoryBytes !== null ? given.memoryBytes : (limit() ?? null),
  };
}

function subdirs(dir: string): string[] {
  try {
    return fs
      .readdirSync(dir, { withFileTypes: true })
      .filter((d) => d.isDirectory())
      .map((d) => d.name);
  } catch {
    return [];
  }
}

function rmdirQuiet(dir: string): void {
  try {
    fs.rmdirSync(dir);
  } catch {
    /* not empty, or gone */
  }
}
