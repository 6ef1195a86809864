/**
 * A history of client calls, in the manner of Jepsen: every call a client makes is recorded with
 * who made it, what it asked, when it was invoked and when it completed, and its outcome:
 *
 * - `ok`: the master answered (the call took effect);
 * - `fail`: a definite refusal (INVALID_ARGUMENT, ALREADY_EXISTS, NOT_FOUND, and RESOURCE_EXHAUSTED,
 *   which the master answers while etcd is out of space for a change the store shows it has not
 *   made): the call did not take effect;
 * - `unknown`: anything else (UNAVAILABLE, DEADLINE_EXCEEDED, a broken connection, a timeout):
 *   the call may or may not have taken effect.
 *
 * The checker (`checker.ts`) reads only this and the state observed at the end.
 *
 * ```ts
 * const h = new HistoryRecorder();
 * await h.record({ process: 'c1', type: 'submit', jobId: 'j1', variant: 'j1-a' }, async () => {
 *   const r = await client.submit(spec);
 *   return { created: r.created };
 * });
 * ```
 */
import { FuxiError } from '@fuxi/common';

/** `watch`: the first record a `WatchJobs` stream sends for the job (a read, like `get`). */
export type OpType = 'submit' | 'kill' | 'get' | 'watch' | 'list';
export type Outcome = 'ok' | 'fail' | 'unknown';

/** A job as a read showed it: id, state (`JOB_STATE_*`) and name (the spec variant). */
export interface JobView {
  jobId: string;
  state: string;
  name: string;
}

export interface Op {
  /** Position in the history (order of invocation). */
  index: number;
  /** The client that made the call. */
  process: string;
  type: OpType;
  /** The job the call is about ('' for a list). */
  jobId: string;
  /** submit: which spec was sent (its job name; two variants of one id differ). */
  variant?: string;
  /** submit: sent in one `SubmitJobs` call with others (their ops share its times). */
  batch?: boolean;
  invokeMs: number;
  completeMs: number;
  outcome: Outcome;
  /** The error code when not ok (e.g. 'UNAVAILABLE', 'TIMEOUT'). */
  error?: string;
  message?: string;
  /** submit, ok: whether this call created the job. */
  created?: boolean;
  /** kill, get and watch, ok: the job as answered. */
  job?: JobView;
  /** list, ok: every job listed. */
  jobs?: JobView[];
}

/** What a call returns for the record. */
export type OpResult = Pick<Op, 'created' | 'job' | 'jobs'>;

/** Codes that mean the call did not take effect. */
export const DEFINITE_FAILURES: ReadonlySet<string> = new Set(['INVALID_ARGUMENT', 'ALREADY_EXISTS', 'NOT_FOUND', 'RESOURCE_EXHAUSTED']);

/** A call's failure as an outcome: definite failures are `fail`, everything else `unknown`. */
export function classifyFailure(e: unknown): { outcome: Outcome; error: string; message: string } {
  const message = e instanceof Error ? e.message : String(e);
  const code = e instanceof FuxiError ? e.code : e instanceof OpTimeoutError ? 'TIMEOUT' : 'ERROR';
  return { outcome: DEFINITE_FAILURES.has(code) ? 'fail' : 'unknown', error: code, message: message.slice(0, 300) };
}

/** A call that did not complete within the recorder's limit (its outcome is unknown). */
export class OpTimeoutError extends Error {}

export class HistoryRecorder {
  readonly ops: Op[] = [];

  constructor(
    private readonly now: () => number = Date.now,
    /** A call still running after this long is recorded as unknown (and left to finish alone). */
    private readonly opTimeoutMs = 60_000,
  ) {}

  /** Invokes `fn`, records the call and its outcome; never throws. */
  async record(what: Pick<Op, 'process' | 'type' | 'jobId' | 'variant'>, fn: () => Promise<OpResult>): Promise<Op> {
    const op: Op = { index: this.ops.length, ...what, invokeMs: this.now(), completeMs: 0, outcome: 'unknown' };
    this.ops.push(op);
    try {
      Object.assign(op, await this.limited(fn));
      op.outcome = 'ok';
    } catch (e) {
      Object.assign(op, classifyFailure(e));
    } finally {
      op.completeMs = this.now();
    }
    return op;
  }

  /**
   * One call that answers for several jobs (a `SubmitJobs` batch): an op per job, invoked and
   * completed together. `fn` gives each job's result, or its own error (a definite or unknown
   * failure of that job alone); when the call itself fails, every op has its failure.
   */
  async recordMany(whats: ReadonlyArray<Pick<Op, 'process' | 'type' | 'jobId' | 'variant'>>, fn: () => Promise<Array<OpResult | Error>>): Promise<Op[]> {
    const invokeMs = this.now();
    const base = this.ops.length;
    const ops = whats.map((w, i): Op => ({ index: base + i, ...w, batch: true, invokeMs, completeMs: 0, outcome: 'unknown' }));
    this.ops.push(...ops);
    try {
      const results = await this.limited(fn);
      for (const [i, op] of ops.entries()) {
        const r = results[i];
        if (r instanceof Error) Object.assign(op, classifyFailure(r));
        else if (r === undefined) Object.assign(op, classifyFailure(new Error('no result for this job')));
        else {
          Object.assign(op, r);
          op.outcome = 'ok';
        }
      }
    } catch (e) {
      for (const op of ops) Object.assign(op, classifyFailure(e));
    } finally {
      const completeMs = this.now();
      for (const op of ops) op.completeMs = completeMs;
    }
    return ops;
  }

  /** `fn`'s answer, or OpTimeoutError once it has run `opTimeoutMs` (it is then left to finish alone). */
  private async limited<T>(fn: () => Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    try {
      const call = fn();
      call.catch(() => undefined); // after a timeout nobody awaits it
      const limit = new Promise<never>(
        (_, reject) => (timer = setTimeout(() => reject(new OpTimeoutError(`no answer within ${this.opTimeoutMs} ms`)), this.opTimeoutMs)),
      );
      return await Promise.race([call, limit]);
    } finally {
      clearTimeout(timer);
    }
  }

  counts(): { operations: number; ok: number; fail: number; unknown: number; byType: Record<string, Record<Outcome, number>> } {
    const byType: Record<string, Record<Outcome, number>> = {};
    const total = { ok: 0, fail: 0, unknown: 0 };
    for (const op of this.ops) {
      // A batch's jobs apart from single calls (`submitBatched`).
      const t = (byType[op.batch ? `${op.type}Batched` : op.type] ??= { ok: 0, fail: 0, unknown: 0 });
      t[op.outcome]++;
      total[op.outcome]++;
    }
    return { operations: this.ops.length, ...total, byType };
  }
}
