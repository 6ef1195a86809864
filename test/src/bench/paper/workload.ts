/**
 * The paper's workload (section 5.1), scaled: jobs of three sizes (10 / 100 / 1,000 instances in
 * 20 / 45 / 35 % proportion in the paper), every instance 0.5 core and 1 GB running a fixed time,
 * each AM 100 MB. Pure and seeded: the same options give the same job list.
 *
 * ```ts
 * const jobs = makeWorkload({ ...DEFAULT_WORKLOAD, jobs: 400 }, 'ft-sim-crash');
 * client.submit(jobSpec(jobs[0]!, DEFAULT_WORKLOAD));
 * ```
 */
import { normalizeJobSpec, type JobSpec, seededRandom } from '@fuxi/common';

export const CATEGORIES = ['small', 'medium', 'large'] as const;
export type Category = (typeof CATEGORIES)[number];

export interface WorkloadOptions {
  /** Jobs in all. */
  jobs: number;
  /** Instances per job of each category (already scaled). */
  sizes: [number, number, number];
  /** Share of each category, in percent (any positive weights). */
  mix: [number, number, number];
  /** Per instance. */
  instanceCpu: number;
  instanceMemory: string;
  amCpu: number;
  amMemory: string;
  /** Instance run time (ms) and the +- fraction each job's time is drawn from. */
  instanceMs: number;
  instanceJitter: number;
  /** Probability that an instance attempt fails (exit code 1); the AM runs it again up to maxAttempts. */
  instanceFailure: number;
  /** maxAttempts of every task. */
  maxAttempts: number;
  seed: number;
}

export interface PlannedJob {
  id: string;
  index: number;
  category: Category;
  instances: number;
  instanceMs: number;
}

/** A seeded PRNG, uniform in [0, 1) (@fuxi/common `seededRandom`). */
export const rng = seededRandom;

/** The job list of one experiment case; `prefix` makes job ids unique per case. */
export function makeWorkload(o: WorkloadOptions, prefix: string): PlannedJob[] {
  const rand = rng(o.seed);
  const total = o.mix.reduce((a, b) => a + b, 0);
  const width = String(o.jobs).length;
  const out: PlannedJob[] = [];
  for (let i = 0; i < o.jobs; i++) {
    const r = rand() * total;
    const c = r < o.mix[0] ? 0 : r < o.mix[0] + o.mix[1] ? 1 : 2;
    const jitter = 1 + o.instanceJitter * (2 * rand() - 1);
    out.push({
      id: `${prefix}-${String(i + 1).padStart(width, '0')}-${CATEGORIES[c]![0]}`,
      index: i,
      category: CATEGORIES[c]!,
      instances: o.sizes[c]!,
      instanceMs: Math.max(1, Math.round(o.instanceMs * jitter)),
    });
  }
  return out;
}

export function jobSpec(j: PlannedJob, o: WorkloadOptions): JobSpec {
  return normalizeJobSpec({
    id: j.id,
    name: `paper-${j.category}`,
    env: { SIM_DURATION_MS: String(j.instanceMs), ...(o.instanceFailure > 0 ? { SIM_FAIL_PROBABILITY: String(o.instanceFailure) } : {}) },
    am: { cpu: o.amCpu, memory: o.amMemory },
    tasks: [
      {
        name: 'work',
        instances: j.instances,
        resources: { cpu: o.instanceCpu, memory: o.instanceMemory },
        command: ['sim-worker', '${instance}'],
        maxAttempts: o.maxAttempts,
      },
    ],
  });
}
