/**
 * What an application master may ask for. The master does not take an AM's numbers on trust: the
 * job spec it holds says what the job may have, and every request is held against it.
 *
 * - A schedule unit (SU) is a task of the job: its id is the task's name (`__am__`, the AM's own
 *   slot, is the master's to request).
 * - One slot of it is no larger, in any dimension, than the task's per-instance resources.
 * - Its priority is no higher than the task's (the task's own when set, else the job's).
 * - A request that raises its outstanding slots may not take outstanding plus granted slots above
 *   the task's instances plus a speculation allowance (`speculationAllowance`, a fraction of the
 *   instances, at least one slot). The master has no count of finished instances of its own (the
 *   AM's progress is the AM's number), so it counts all instances. Slots on nodes that are not
 *   healthy (timing out, missing, not reported since a failover) do not count: the AM was told
 *   and may re-run their instances elsewhere; nor do they while a node is back for less than
 *   `backGraceMs`, the time its AMs take to hear that it is. Slots on a node partitioned from the
 *   master count: its AMs were not told, its workers run on.
 *
 * An UpdateRequests that breaks a rule is refused whole before anything changes
 * (`InvalidArgumentError` naming the field and the limit). A ReportAppState (an AM's state after a
 * master failover) is not: refusing it would leave the app unreported, so the offending entries
 * are dropped or clamped to the limit and a warning says which (`sanitizeReport`).
 */
import { AM_SU, dimensionsOver, InvalidArgumentError, min, speculationCap, taskPriority, type JobSpec, type Resource, type TaskSpec } from '@fuxi/common';
import { applyDelta, cancelOrder, outstandingOf } from './ledger.js';
import { DEFAULT_CONFIG, type AppState, type MasterState, type ScheduleUnitState } from './master-state.js';
import type { RequestDelta, UnitConfig, UnitView } from './types.js';

const LOCATION = /^(node|rack):.+$/;

/** Slots an SU of `task` may have outstanding and granted together: its instances plus the allowance. */
export function slotLimit(st: MasterState, task: Pick<TaskSpec, 'instances'>): number {
  const fraction = st.cfg.speculationAllowance ?? DEFAULT_CONFIG.speculationAllowance ?? 0;
  return task.instances + speculationCap(task.instances, fraction);
}

/** How long a node back from timing out (missing, lost, unreported) is not counted: its AMs hear it meanwhile. */
export function backGraceMs(st: MasterState): number {
  return Math.max(10_000, 10 * st.cfg.amHeartbeatIntervalMs);
}

/** The granted slots of `su` that count against its limit: those on healthy (or partitioned) nodes that are not just back. */
export function countedSlots(st: MasterState, su: ScheduleUnitState): number {
  if (su.granted === 0) return 0;
  let n = 0;
  for (const [nodeId, slots] of su.asgn) {
    const node = st.nodes.get(nodeId);
    if (!node || !node.reported || (node.status !== 'healthy' && node.status !== 'partitioned')) continue;
    if (node.backAtMs !== undefined && st.now - node.backAtMs < backGraceMs(st)) continue;
    n += slots;
  }
  return n;
}

function taskOf(spec: JobSpec, suId: string): { task: TaskSpec; index: number } | undefined {
  const index = spec.tasks.findIndex((t) => t.name === suId);
  const task = spec.tasks[index];
  return task ? { task, index } : undefined;
}

function tasksOf(spec: JobSpec): string {
  return spec.tasks.map((t) => t.name).join(', ');
}

/** Why `suId` names no unit an AM may use, or undefined. */
function suIdProblem(spec: JobSpec, suId: string): string | undefined {
  if (suId === AM_SU) return `"${AM_SU}" is reserved: the master requests the application master's slot itself`;
  if (!taskOf(spec, suId)) return `"${suId}" is not a task of job "${spec.jobId}" (tasks: ${tasksOf(spec)})`;
  return undefined;
}

/** The first problem of a unit (its suId names a task) as [field, reason], or undefined. */
function unitProblem(spec: JobSpec, u: UnitConfig): [string, string] | undefined {
  const { task, index } = taskOf(spec, u.suId)!;
  const at = `units[${u.suId}]`;
  if (u.resource.cpuMilli <= 0 || u.resource.memoryMb <= 0) return [`${at}.resource`, 'must be positive in every dimension'];
  const over = dimensionsOver(u.resource, task.resource)[0];
  if (over !== undefined) {
    return [
      `${at}.resource.${over}`,
      `${u.resource[over]} is more than task "${task.name}" declares per instance (${task.resource[over]}, tasks[${index}].resources)`,
    ];
  }
  const limit = taskPriority(spec, task);
  if (u.priority > limit) {
    const whose = task.priority !== 0 ? `task "${task.name}"'s priority` : `the job's priority (task "${task.name}" sets none)`;
    return [`${at}.priority`, `${u.priority} is above ${whose}, ${limit}`];
  }
  return undefined;
}

function describeLimit(st: MasterState, task: TaskSpec): string {
  return `${slotLimit(st, task)} (${task.instances} instances + ${slotLimit(st, task) - task.instances} speculation allowance, speculationAllowance)`;
}

/**
 * Checks an UpdateRequests before any of it is applied (all or nothing): units, then deltas in
 * order, then the count of each SU the call raises. Throws the first problem found.
 */
export function checkUpdate(st: MasterState, app: AppState, units: readonly UnitConfig[], deltas: readonly RequestDelta[]): void {
  const spec = app.job.spec;
  for (const u of units) {
    const bad = suIdProblem(spec, u.suId);
    if (bad) throw new InvalidArgumentError('units.suId', bad);
    const problem = unitProblem(spec, u);
    if (problem) throw new InvalidArgumentError(...problem);
  }
  const declared = new Set(units.map((u) => u.suId));
  // The SUs' requests as the call would leave them (copies).
  const after = new Map<string, { requests: Map<string, number> }>();
  for (const d of deltas) {
    const bad = suIdProblem(spec, d.suId);
    if (bad) throw new InvalidArgumentError('deltas.suId', bad);
    const su = app.sus.get(d.suId);
    if (!su && !declared.has(d.suId)) throw new InvalidArgumentError('deltas.suId', `schedule unit "${d.suId}" is not declared (send it in units first)`);
    if (d.location !== '' && !LOCATION.test(d.location)) {
      throw new InvalidArgumentError('deltas.location', `must be "", "node:<id>" or "rack:<name>", got "${d.location}"`);
    }
    let a = after.get(d.suId);
    if (!a) {
      a = { requests: new Map(su?.requests ?? []) };
      after.set(d.suId, a);
    }
    applyDelta(a.requests, d.location, d.delta);
  }
  for (const [suId, a] of after) {
    const su = app.sus.get(suId);
    const before = su ? outstandingOf(su) : 0;
    const outstanding = outstandingOf(a);
    if (outstanding <= before) continue; // a call that asks for no more is never refused on the count
    const { task } = taskOf(spec, suId)!;
    const limit = slotLimit(st, task);
    // Within the limit counting every granted slot: no need to look at the nodes.
    if (outstanding + (su?.granted ?? 0) <= limit) continue;
    const counted = su ? countedSlots(st, su) : 0;
    if (outstanding + counted > limit) {
      const uncounted = (su?.granted ?? 0) - counted;
      const besides = uncounted > 0 ? ` (and ${uncounted} on agents timing out or just back, not counted)` : '';
      throw new InvalidArgumentError(
        'deltas.delta',
        `schedule unit "${suId}" would have ${outstanding} slots outstanding and ${counted} granted${besides}; task "${task.name}" allows ${describeLimit(st, task)}`,
      );
    }
  }
}

export interface ReportedRequests {
  units: UnitConfig[];
  requests: Array<{ suId: string; location: string; count: number }>;
}

/**
 * An AM's reported units and outstanding requests (ReportAppState), with what breaks the rules
 * taken out instead of refused: units of no task are dropped (with their requests), a slot larger
 * than the task's or a priority above it is clamped to the task's, requests of bad locations are
 * dropped, and each SU's requests are cut (anywhere first, then racks, then nodes) to what its
 * limit leaves beside its counted slots. One warning lists every change.
 */
export function sanitizeReport(st: MasterState, app: AppState, report: ReportedRequests): ReportedRequests {
  const spec = app.job.spec;
  const changes: string[] = [];
  const units: UnitConfig[] = [];
  for (const u of report.units) {
    const bad = suIdProblem(spec, u.suId);
    if (bad) {
      changes.push(`unit dropped: ${bad}`);
      continue;
    }
    const { task } = taskOf(spec, u.suId)!;
    if (u.resource.cpuMilli <= 0 || u.resource.memoryMb <= 0) {
      changes.push(`unit "${u.suId}" dropped: its resource must be positive in every dimension`);
      continue;
    }
    let resource: Resource = u.resource;
    if (dimensionsOver(u.resource, task.resource).length > 0) {
      resource = min(u.resource, task.resource);
      changes.push(`unit "${u.suId}": slot clamped to the task's per-instance resources`);
    }
    const limit = taskPriority(spec, task);
    if (u.priority > limit) changes.push(`unit "${u.suId}": priority ${u.priority} clamped to ${limit}`);
    units.push({ suId: u.suId, resource, priority: Math.min(u.priority, limit) });
  }
  const bySu = new Map<string, Map<string, number>>();
  for (const r of report.requests) {
    if (r.count <= 0) continue;
    const bad = suIdProblem(spec, r.suId);
    if (bad) {
      changes.push(`request dropped: ${bad}`);
      continue;
    }
    if (r.location !== '' && !LOCATION.test(r.location)) {
      changes.push(`request of "${r.suId}" dropped: location must be "", "node:<id>" or "rack:<name>", got "${r.location}"`);
      continue;
    }
    const m = bySu.get(r.suId) ?? new Map<string, number>();
    m.set(r.location, (m.get(r.location) ?? 0) + r.count);
    bySu.set(r.suId, m);
  }
  const requests: ReportedRequests['requests'] = [];
  for (const [suId, m] of bySu) {
    const { task } = taskOf(spec, suId)!;
    const su = app.sus.get(suId);
    const counted = su ? countedSlots(st, su) : 0;
    const room = Math.max(0, slotLimit(st, task) - counted);
    let excess = outstandingOf({ requests: m }) - room;
    if (excess > 0) {
      changes.push(`requests of "${suId}" cut by ${excess} to ${room} (${counted} granted; task "${task.name}" allows ${describeLimit(st, task)})`);
      for (const loc of cancelOrder(m.keys())) {
        if (excess <= 0) break;
        const cut = Math.min(excess, m.get(loc) ?? 0);
        excess -= cut;
        m.set(loc, (m.get(loc) ?? 0) - cut);
      }
    }
    for (const [location, count] of m) if (count > 0) requests.push({ suId, location, count });
  }
  if (changes.length > 0) {
    st.log.warn(
      { appId: app.appId, attempt: app.job.amAttempt, changes: changes.slice(0, 20), more: Math.max(0, changes.length - 20) },
      'AM state report breaks the request limits; adopted without what breaks them',
    );
  }
  return { units, requests };
}

/** The app's schedule units with the numbers of their limits (tests, status views). */
export function unitViews(st: MasterState, app: AppState): UnitView[] {
  return [...app.sus.values()]
    .sort((a, b) => (a.suId < b.suId ? -1 : a.suId > b.suId ? 1 : 0))
    .map((su) => {
      const t = su.suId === AM_SU ? undefined : taskOf(app.job.spec, su.suId);
      return {
        suId: su.suId,
        resource: su.resource,
        priority: su.priority,
        outstanding: outstandingOf(su),
        granted: su.granted,
        counted: countedSlots(st, su),
        limit: t ? slotLimit(st, t.task) : 0,
      };
    });
}

/**
 * What a client may submit, beyond the spec's own rules (common/job-spec.ts) and its size
 * (`maxJobSpecBytes`, jobs.ts): every worker's environment (the job's `env` with its task's) holds
 * at most `maxEnvVars` variables of at most `maxEnvBytes` bytes together (`NAME=value\0` each, as
 * the kernel counts it), and a job has at most `maxInstancesPerJob` instances over all its tasks.
 * 0 turns a limit off.
 */
export interface JobInputLimits {
  maxEnvBytes: number;
  maxEnvVars: number;
  maxInstancesPerJob: number;
}

/** Defaults: far above real jobs, well below what breaks exec (128 KiB per string) or the scheduler. */
export const DEFAULT_JOB_INPUT_LIMITS: Readonly<JobInputLimits> = Object.freeze({ maxEnvBytes: 64 * 1024, maxEnvVars: 256, maxInstancesPerJob: 200_000 });

const utf8Bytes = (s: string): number => new TextEncoder().encode(s).length;

/** Throws InvalidArgumentError naming the field and the limit (its config key) at the first input over a limit. */
export function checkJobInputs(spec: JobSpec, limits: JobInputLimits): void {
  const jobEnv = Object.entries(spec.env ?? {});
  let instances = 0;
  (spec.tasks ?? []).forEach((t, i) => {
    instances += Number.isFinite(t.instances) ? Math.max(0, t.instances) : 0;
    const env = new Map<string, string>([...jobEnv, ...Object.entries(t.command?.env ?? {})]);
    const field = t.command?.env && Object.keys(t.command.env).length > 0 ? `tasks[${i}].env` : 'env';
    if (limits.maxEnvVars > 0 && env.size > limits.maxEnvVars)
      throw new InvalidArgumentError(field, `task "${t.name}" gets ${env.size} environment variables; the limit is ${limits.maxEnvVars} (maxEnvVars)`);
    if (limits.maxEnvBytes > 0) {
      let bytes = 0;
      for (const [k, v] of env) bytes += utf8Bytes(k) + utf8Bytes(String(v)) + 2;
      if (bytes > limits.maxEnvBytes)
        throw new InvalidArgumentError(field, `task "${t.name}" gets ${bytes} bytes of environment; the limit is ${limits.maxEnvBytes} (maxEnvBytes)`);
    }
  });
  if (limits.maxInstancesPerJob > 0 && instances > limits.maxInstancesPerJob)
    throw new InvalidArgumentError('tasks', `the job has ${instances} instances in all; the limit is ${limits.maxInstancesPerJob} (maxInstancesPerJob)`);
}
