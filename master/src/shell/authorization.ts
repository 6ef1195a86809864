/**
 * Every MasterService call is authorized before its handler runs: the caller is resolved from its
 * bearer token or certificate (@fuxi/rpc auth.ts; an AM's token is looked up in the job it names)
 * and checked against the one table of the core (authz.ts) with what the check needs of the
 * target (the node, the app's current attempt, the job's owner and group). The handler finds the
 * caller with `callerOfCall(call)` (the owner of a submission, a user's list of jobs).
 */
import { DEFAULT_QUOTA_GROUP, type JobSpec } from '@fuxi/common';
import type { MasterServiceDefinition } from '@fuxi/proto';
import { ANONYMOUS, callerOf, tokenHash, type Authn, type Caller, type ServiceImpl, type TokenTable } from '@fuxi/rpc';
import { amTokenAttempt } from '../core/am-tokens.js';
import { authorize, MASTER_METHODS, type AuthzTarget, type MasterMethodName } from '../core/authz.js';
import type { MasterCore } from '../core/master-core.js';
import type { JobRecord } from '../core/types.js';

export interface AuthorizationContext {
  readonly core: MasterCore;
  readonly insecure: boolean;
  tokens(): TokenTable | undefined;
}

const callers = new WeakMap<object, Caller>();

/** The caller an authorized call was made by (anonymous for calls that did not pass here). */
export function callerOfCall(call: object): Caller {
  return callers.get(call) ?? ANONYMOUS;
}

/** The job's owner and quota group, as authz.ts checks them. */
function jobTarget(job: Readonly<JobRecord>): { owner: string; group: string } {
  return { owner: job.owner ?? '', group: job.spec.quotaGroup || DEFAULT_QUOTA_GROUP };
}

function jobOrUndefined(core: MasterCore, jobId: string): Readonly<JobRecord> | undefined {
  return core.jobRecord(jobId);
}

type Req = Record<string, unknown>;

/** What the check of `method` needs of its target (authz.ts `AuthzTarget`). */
function targetOf(method: MasterMethodName, req: Req, m: AuthorizationContext): AuthzTarget[] {
  const base = { insecure: m.insecure };
  switch (MASTER_METHODS[method]) {
    case 'agent': {
      const node = req.node as { nodeId?: string } | null | undefined;
      const nodeId = typeof req.nodeId === 'string' ? req.nodeId : (node?.nodeId ?? '');
      return [{ ...base, nodeId }];
    }
    case 'am':
    case 'am-or-viewer': {
      const job = jobOrUndefined(m.core, String(req.appId ?? ''));
      if (!job) return [base];
      return [{ ...base, app: { appId: job.jobId, attempt: job.amAttempt, tokenRequired: job.amTokenHash !== undefined }, job: jobTarget(job) }];
    }
    case 'submit': {
      const specs = (method === 'SubmitJobs' ? (req.specs as Array<Pick<JobSpec, 'quotaGroup'>>) : [req.spec as Pick<JobSpec, 'quotaGroup'> | null]) ?? [];
      return [{ ...base, groups: specs.map((s) => s?.quotaGroup || DEFAULT_QUOTA_GROUP) }];
    }
    case 'job': {
      const ids = method === 'WatchJobs' ? [...((req.jobIds as string[]) ?? [])] : [String(req.jobId ?? '')];
      const jobs = ids.map((id) => jobOrUndefined(m.core, id)).filter((j) => j !== undefined);
      if (method === 'WatchJobs' && req.arrayId) jobs.push(...m.core.listJobs([], String(req.arrayId)));
      return jobs.length > 0 ? jobs.map((j) => ({ ...base, job: jobTarget(j) })) : [base];
    }
    default:
      return [base];
  }
}

/** The handlers, each behind its authorization check. */
export function authorizeCalls(h: ServiceImpl<MasterServiceDefinition>, m: AuthorizationContext): ServiceImpl<MasterServiceDefinition> {
  type Fn = (req: Req, call: Parameters<typeof callerOf>[0] & object) => Promise<unknown>;
  const out: Record<string, Fn> = {};
  for (const [name, fn] of Object.entries(h as unknown as Record<string, Fn>)) {
    const method = name as MasterMethodName;
    out[name] = async (req, call) => {
      const authn: Authn = {
        insecure: m.insecure,
        tokens: () => m.tokens(),
        // An AM's token is looked up in the app its request names (every AM call names one).
        amToken: (token) => {
          const appId = typeof req.appId === 'string' ? req.appId : '';
          const attempt = amTokenAttempt(jobOrUndefined(m.core, appId), tokenHash(token));
          return attempt === undefined ? undefined : { appId, attempt };
        },
      };
      const caller = callerOf(call, authn, method);
      for (const target of targetOf(method, req, m)) authorize(method, caller, target);
      callers.set(call, caller);
      return fn(req, call);
    };
  }
  return out as unknown as ServiceImpl<MasterServiceDefinition>;
}
