/**
 * Who may call what on the master: the one authorization table (`MASTER_METHODS`) and the checks
 * behind it. Pure: the shell resolves the caller (@fuxi/rpc auth.ts) and hands it in with what the
 * check needs of the target (the job's owner and group, the app's current attempt).
 *
 * Roles: `admin` (cluster operations, any job), `user` (submits into its groups, sees and kills its
 * own jobs and its groups' jobs), `agent` (a node agent, named by its node id), `am` (an
 * application master attempt, by its token), `master`, `anonymous`. On an insecure cluster (no TLS)
 * an anonymous caller counts as an admin: such a cluster trusts its network. AM calls need the
 * current attempt's token on every cluster.
 *
 * ```ts
 * authorize('KillJob', caller, { insecure: false, job: { owner: 'bob', group: 'gold' } });
 * // PermissionDeniedError: KillJob: permission denied: job owned by bob; alice may act only on her own jobs ...
 * ```
 */
import { PermissionDeniedError, UnauthenticatedError } from '@fuxi/common';

export type CallerRole = 'admin' | 'user' | 'master' | 'agent' | 'am' | 'anonymous';

/** A resolved caller (the shape of @fuxi/rpc `Caller`). */
export interface CallerIdentity {
  name: string;
  role: CallerRole;
  groups?: string[];
  appId?: string;
  attempt?: number;
}

/**
 * What a method needs:
 * - `agent`: a node agent (its name, when known, is the request's node id);
 * - `am`: the token of the app's current AM attempt;
 * - `am-or-viewer`: that, or a caller who may see the job (GetAppSnapshot: AMs resume from it, `fuxi status` shows it);
 * - `admin`: cluster operations;
 * - `submit`: an admin, or a user into one of its groups;
 * - `job`: an admin, or a user who owns the job or shares its group (reads and kills);
 * - `list`: an admin or a user (a user's list is filtered with `canSeeJob`);
 * - `known`: any authenticated caller (cluster-wide reads);
 * - `batch`: any caller: each call of the batch is authorized as that call alone (its own token).
 */
export type Requirement = 'agent' | 'am' | 'am-or-viewer' | 'admin' | 'submit' | 'job' | 'list' | 'known' | 'batch';

export const MASTER_METHODS = {
  RegisterAgent: 'agent',
  Heartbeat: 'agent',
  ReportAgentState: 'agent',
  WatchGrants: 'agent',
  RegisterApp: 'am',
  UpdateRequests: 'am',
  ReturnSlots: 'am',
  ReportAppState: 'am',
  FinishApp: 'am',
  WatchAssignments: 'am',
  SaveAppSnapshot: 'am',
  GetAppSnapshot: 'am-or-viewer',
  AmCalls: 'batch',
  SubmitJob: 'submit',
  SubmitJobs: 'submit',
  GetJob: 'job',
  KillJob: 'job',
  WatchJob: 'job',
  WatchJobs: 'job',
  ListJobs: 'list',
  ListNodes: 'known',
  GetClusterStatus: 'known',
  CordonNode: 'admin',
  UncordonNode: 'admin',
  DrainNode: 'admin',
  CreateTestbed: 'admin',
  DeleteTestbed: 'admin',
  ListTestbeds: 'known',
} as const satisfies Record<string, Requirement>;

export type MasterMethodName = keyof typeof MASTER_METHODS;

/** What a check needs to know of the call's target. */
export interface AuthzTarget {
  /** No TLS: anonymous callers count as admins (the AM token check stays). */
  insecure: boolean;
  /** Agent calls: the node the request names. */
  nodeId?: string;
  /** AM calls: the app the request names and its current attempt (absent: no such app). */
  app?: { appId: string; attempt: number; tokenRequired: boolean };
  /** Job calls: the job's owner and quota group (absent: no such job; the handler answers NOT_FOUND). */
  job?: { owner: string; group: string };
  /** Submits: the quota groups asked for. */
  groups?: string[];
}

/** The role a caller acts with: anonymous counts as admin on an insecure cluster. */
export function effectiveRole(caller: CallerIdentity, insecure: boolean): CallerRole {
  return caller.role === 'anonymous' && insecure ? 'admin' : caller.role;
}

/** Whether `caller` may see (and kill) a job of `owner` in quota group `group`. */
export function canSeeJob(caller: CallerIdentity, insecure: boolean, job: { owner: string; group: string }): boolean {
  const role = effectiveRole(caller, insecure);
  if (role === 'admin') return true;
  if (role !== 'user') return false;
  return job.owner === caller.name || (caller.groups ?? []).includes(job.group);
}

/** Throws PERMISSION_DENIED (or UNAUTHENTICATED for an anonymous caller) unless `caller` may call `method` on `target`. */
export function authorize(method: MasterMethodName, caller: CallerIdentity, target: AuthzTarget): void {
  const need: Requirement = MASTER_METHODS[method];
  const role = effectiveRole(caller, target.insecure);
  const deny = (reason: string): never => {
    if (caller.role === 'anonymous' && (role === 'anonymous' || need === 'am' || need === 'am-or-viewer'))
      throw new UnauthenticatedError(method, `no credentials (a client certificate or a bearer token) were presented; ${reason}`);
    throw new PermissionDeniedError(method, reason);
  };
  switch (need) {
    case 'agent':
      if (role === 'admin' && caller.role === 'anonymous') return;
      if (role !== 'agent') return deny(`needs a node agent; ${caller.name} is ${article(role)}`);
      if (target.nodeId !== undefined && target.nodeId !== caller.name) deny(`agent ${caller.name} may not act as node ${target.nodeId}`);
      return;
    case 'am':
      return checkAm(caller, target, deny);
    case 'am-or-viewer':
      if (caller.role === 'am') return checkAm(caller, target, deny);
      if (!target.job || canSeeJob(caller, target.insecure, target.job)) return;
      return deny(jobReason(caller, target.job));
    case 'admin':
      if (role !== 'admin') deny(`needs the admin role; ${caller.name} is ${article(role)}`);
      return;
    case 'known':
      if (role === 'anonymous') deny('needs an authenticated caller');
      return;
    case 'batch':
      return;
    case 'list':
      if (role !== 'admin' && role !== 'user') deny(`needs the admin or user role; ${caller.name} is ${article(role)}`);
      return;
    case 'submit': {
      if (role === 'admin') return;
      if (role !== 'user') return deny(`needs the admin or user role; ${caller.name} is ${article(role)}`);
      const mine = caller.groups;
      if (!mine || mine.length === 0) return;
      const other = (target.groups ?? []).find((g) => !mine.includes(g));
      if (other !== undefined) deny(`${caller.name} may submit only into quota groups ${mine.join(', ')}, not ${other}`);
      return;
    }
    case 'job':
      if (role !== 'admin' && role !== 'user') return deny(`needs the admin or user role; ${caller.name} is ${article(role)}`);
      if (target.job && !canSeeJob(caller, target.insecure, target.job)) deny(jobReason(caller, target.job));
      return;
  }
}

function checkAm(caller: CallerIdentity, target: AuthzTarget, deny: (reason: string) => never): void {
  const app = target.app;
  // No such app: nothing to protect; the handler answers NOT_FOUND (or the core refuses it).
  if (!app) return;
  // An app that has no token (a job from before attempt tokens, a simulated master) is fenced by its attempt number alone.
  if (app && !app.tokenRequired && (caller.role === 'anonymous' || effectiveRole(caller, target.insecure) === 'admin')) return;
  if (caller.role === 'anonymous') return deny(`needs the token of the application master's current attempt; none was presented`);
  if (caller.role !== 'am') return deny(`needs the token of the application master's current attempt; ${caller.name} is ${article(caller.role)}`);
  if (caller.appId !== app.appId) return deny(`the token is of application ${caller.appId ?? '?'}, not ${app.appId}`);
  if (caller.attempt !== app.attempt) deny(`the token is of attempt ${caller.attempt ?? '?'} of ${app.appId}; the current attempt is ${app.attempt}`);
}

function jobReason(caller: CallerIdentity, job: { owner: string; group: string }): string {
  const groups = caller.groups?.length ? ` and those of quota groups ${caller.groups.join(', ')}` : '';
  return `job owned by ${job.owner || '(nobody)'} in quota group ${job.group || 'default'}; ${caller.name} may act only on its own jobs${groups}`;
}

function article(role: CallerRole): string {
  return role === 'am' || role === 'admin' || role === 'agent' || role === 'anonymous' ? `an ${role}` : `a ${role}`;
}

/**
 * SchedulerService (external schedulers): an admin may register for any scope; a user only for a
 * scope of one of its quota groups (`group`: the registered quota group, or the testbed's group;
 * undefined when the testbed does not exist). Anonymous callers count as admins on an insecure
 * cluster, as elsewhere.
 */
export function authorizeScheduler(method: string, caller: CallerIdentity, insecure: boolean, group: string | undefined): void {
  const role = effectiveRole(caller, insecure);
  if (role === 'admin') return;
  if (role === 'anonymous') throw new UnauthenticatedError(method, 'no credentials (a client certificate or a bearer token) were presented');
  if (role !== 'user') throw new PermissionDeniedError(method, `needs the admin or user role; ${caller.name} is ${article(role)}`);
  if (group === undefined || !(caller.groups ?? []).includes(group))
    throw new PermissionDeniedError(
      method,
      `${caller.name} may schedule only for its own quota groups (${(caller.groups ?? []).join(', ') || 'none'}), not ${group ?? 'an unknown testbed'}`,
    );
}
