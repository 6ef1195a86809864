/**
 * The history test's clients: each loops over random calls (submit a new job, or a batch of two to
 * four in one `SubmitJobs` call, the SDK's `submitMany`; submit an id again with the same spec or
 * with another one; kill, get, watch, list) through its own `FuxiClient`,
 * and every call goes into the history with its outcome. A watch is `waitAll` of one job, as `fuxi
 * wait` does: the op is its stream's first record, and the wait goes on in the background until
 * the job ends (or the workload stops). Jobs are small: one task of one or two instances
 * whose workers sleep 1-3 s, so some are running whenever a fault hits and all finish soon after.
 *
 * A job's spec is a function of its id and variant ('a' or 'b'), so a client that submits an id
 * again can send the very same spec (a retry: `created: false`) or another (ALREADY_EXISTS). The
 * variant is in the job's name, which is how a read tells which spec a job holds.
 */
import { FuxiClient, type JobSpec } from '@fuxi/client';
import type { Transport } from '@fuxi/rpc';
import { normalizeJobSpec, seededRandom } from '@fuxi/common';
import type { JobInfo__Output } from '@fuxi/proto';
import type { HistoryRecorder, JobView } from './history.js';

export interface WorkloadOptions {
  masters: string[];
  /** The cluster's admin transport (mutual TLS). */
  transport: Transport;
  clients: number;
  /** Pause between one client's calls (uniform in [min, max] ms). */
  thinkMs: [number, number];
  /** Submits of new jobs wait while this many jobs may still be running. */
  maxActive: number;
  /** Deterministic choices. */
  seed: number;
  /**
   * Per call: how long the SDK retries UNAVAILABLE, and each attempt's deadline; client i gets
   * entry i modulo the list (impatient clients see more calls end unknown).
   */
  patience: Array<{ retryForMs: number; deadlineMs: number }>;
}

/** A seeded PRNG, uniform in [0, 1) (@fuxi/common `seededRandom`). */
export const rng = seededRandom;

function hash(s: string): number {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
  return h >>> 0;
}

/** The spec of job `jobId`, variant `variant`: one task, 1-2 instances sleeping 1-3 s. */
export function jobSpec(jobId: string, variant: 'a' | 'b'): JobSpec {
  const h = hash(`${jobId}/${variant}`);
  const instances = 1 + (h % 2);
  const sleepS = (1 + ((h >>> 4) % 21) / 10).toFixed(1);
  return normalizeJobSpec({
    id: jobId,
    name: `${jobId}-${variant}`,
    am: { cpu: 0.1, memory: 128 },
    tasks: [{ name: 'nap', instances, resources: { cpu: 0.1, memory: 32 }, command: ['sleep', sleepS], maxAttempts: 3 }],
  });
}

const view = (j: JobInfo__Output): JobView => ({ jobId: j.jobId, state: j.state, name: j.name });
const TERMINAL = new Set(['JOB_STATE_SUCCEEDED', 'JOB_STATE_FAILED', 'JOB_STATE_KILLED']);
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export class Workload {
  private stopping = false;
  private readonly loops: Promise<void>[] = [];
  /** Every id some client submitted, with the last state a read showed (or '' if none). */
  private readonly ids = new Map<string, { state: string; sentAtMs: number }>();
  private readonly clients: FuxiClient[] = [];

  constructor(
    private readonly h: HistoryRecorder,
    private readonly o: WorkloadOptions,
  ) {}

  start(): void {
    for (let c = 0; c < this.o.clients; c++) {
      const patience = this.o.patience[c % this.o.patience.length]!;
      const client = new FuxiClient({ masters: this.o.masters, transport: this.o.transport, ...patience });
      this.clients.push(client);
      this.loops.push(this.loop(`c${c + 1}`, client, rng(this.o.seed * 1000 + c)));
    }
  }

  /** Stops after the calls in flight complete. */
  async stop(): Promise<void> {
    this.stopping = true;
    await Promise.all(this.loops);
    for (const c of this.clients) c.close();
  }

  /** Ids some client sent. */
  sentIds(): string[] {
    return [...this.ids.keys()];
  }

  private active(): string[] {
    const now = Date.now();
    return [...this.ids].filter(([, v]) => !TERMINAL.has(v.state) && now - v.sentAtMs < 120_000).map(([id]) => id);
  }

  private async loop(process: string, client: FuxiClient, rand: () => number): Promise<void> {
    let n = 0;
    const pick = <T>(xs: readonly T[]): T | undefined => (xs.length ? xs[Math.floor(rand() * xs.length)] : undefined);
    while (!this.stopping) {
      const r = rand();
      const active = this.active();
      const known = [...this.ids.keys()];
      if (r < 0.37 && active.length < this.o.maxActive) {
        await this.submit(process, client, `h-${process}-${++n}`, 'a');
      } else if (r < 0.45 && active.length < this.o.maxActive) {
        // A batch: new ids, and now and then one sent before (a retry or another spec within it).
        const jobs: Array<[string, 'a' | 'b']> = Array.from({ length: 2 + Math.floor(rand() * 3) }, () => [`h-${process}-${++n}`, 'a']);
        const again = known.length && rand() < 0.3 ? pick(known) : undefined;
        if (again) jobs.push([again, rand() < 0.7 ? 'a' : 'b']);
        await this.submitBatch(process, client, jobs);
      } else if (r < 0.55 && known.length) {
        // The same id again: mostly the same spec (a retry), sometimes another one.
        await this.submit(process, client, pick(known)!, rand() < 0.7 ? 'a' : 'b');
      } else if (r < 0.7 && known.length) {
        const id = (rand() < 0.8 ? pick(active) : undefined) ?? pick(known)!;
        await this.h.record({ process, type: 'kill', jobId: id }, async () => ({ job: view(await client.kill(id, 'history test')) }));
      } else if (r < 0.86 && known.length) {
        const id = (rand() < 0.7 ? pick(active) : undefined) ?? pick(known)!;
        const op = await this.h.record({ process, type: 'get', jobId: id }, async () => ({ job: view(await client.get(id)) }));
        if (op.outcome === 'ok' && op.job) this.ids.get(id)!.state = op.job.state;
      } else if (r < 0.93 && known.length) {
        const id = (rand() < 0.7 ? pick(active) : undefined) ?? pick(known)!;
        await this.h.record({ process, type: 'watch', jobId: id }, () => this.firstWatched(client, id));
      } else {
        const op = await this.h.record({ process, type: 'list', jobId: '' }, async () => ({ jobs: (await client.list()).map(view) }));
        for (const j of op.jobs ?? []) {
          const k = this.ids.get(j.jobId);
          if (k) k.state = j.state;
        }
      }
      const [lo, hi] = this.o.thinkMs;
      await sleep(lo + rand() * (hi - lo));
    }
  }

  /** The first record a `waitAll` of the job gets from its stream; the wait goes on alone. */
  private firstWatched(client: FuxiClient, jobId: string): Promise<{ job: JobView }> {
    return new Promise((resolve, reject) => {
      client.waitAll({ jobIds: [jobId] }, { onChange: (j) => resolve({ job: view(j) }) }).then(
        () => reject(new Error('the watch ended without a record')),
        (e: unknown) => reject(e),
      );
    });
  }

  private async submitBatch(process: string, client: FuxiClient, jobs: ReadonlyArray<readonly [string, 'a' | 'b']>): Promise<void> {
    const specs = jobs.map(([id, variant]) => {
      if (!this.ids.has(id)) this.ids.set(id, { state: '', sentAtMs: Date.now() });
      return jobSpec(id, variant);
    });
    await this.h.recordMany(
      specs.map((spec) => ({ process, type: 'submit', jobId: spec.jobId, variant: spec.name })),
      async () => (await client.submitMany(specs)).map((r) => r.error ?? { created: r.created }),
    );
  }

  private async submit(process: string, client: FuxiClient, jobId: string, variant: 'a' | 'b'): Promise<void> {
    if (!this.ids.has(jobId)) this.ids.set(jobId, { state: '', sentAtMs: Date.now() });
    const spec = jobSpec(jobId, variant);
    await this.h.record({ process, type: 'submit', jobId, variant: spec.name }, async () => ({ created: (await client.submit(spec)).created }));
  }
}
