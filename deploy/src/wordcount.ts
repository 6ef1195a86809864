/**
 * The bundled word-count example (`deploy/examples/wordcount/`): its spec, its result read back
 * from the hosts that hold it, and the check against a direct count. Used by `make demo`, and by
 * the lifecycle tests on loopback and on the rack, so all of them judge the job the same way.
 *
 * ```ts
 * const spec = wordcountSpec();                       // 20 maps, 4 reduces; env WC_INPUT set
 * const { jobId } = await client.submit(spec);
 * await client.waitFor(jobId);
 * const counts = await wordcountResult(client, jobId, spec);   // fetched from the reducers' hosts
 * const ok = sameCounts(counts, await expectedCounts(spec));
 * ```
 */
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { loadJobSpecFile, type FuxiClient, type JobSpec } from '@fuxi/client';
import { normalizeJobSpec } from '@fuxi/common';

const here = dirname(fileURLToPath(import.meta.url));
export const WORDCOUNT_DIR = resolve(here, '..', 'examples', 'wordcount');

/** The example's spec with absolute paths of this installation (every host has the same one). */
export function wordcountSpec(): JobSpec {
  const spec = loadJobSpecFile(join(WORDCOUNT_DIR, 'job.yaml'));
  spec.env.WC_INPUT = join(WORDCOUNT_DIR, 'input', 'corpus.txt');
  return spec;
}

/**
 * The example as the rack tests and benchmarks run it: 12 maps and 4 reducers of 0.2 cores and
 * 160 MiB each (a Node.js worker, counted by its cgroup), 3 attempts, id `<name>-<base-36 time>`. `mapCommand` replaces the maps' command
 * (it gets the instance and the instance count as $1 and $2, e.g. for a gate before `map.mjs`).
 */
export function smallWordcountSpec(name: string, mapCommand?: string[]): JobSpec {
  const spec = wordcountSpec();
  const task = { resources: { cpu: 0.2, memory: 160 }, cwd: WORDCOUNT_DIR, maxAttempts: 3 };
  return normalizeJobSpec({
    id: `${name}-${Date.now().toString(36)}`,
    name,
    env: spec.env,
    tasks: [
      { name: 'map', instances: 12, command: [...(mapCommand ?? ['node', 'map.mjs']), '${instance}', '${instances}'], ...task },
      { name: 'reduce', instances: 4, command: ['node', 'reduce.mjs', '${instance}'], dependsOn: ['map'], ...task },
    ],
  });
}

/** The counts the reducers wrote, each fetched from the agent that ran it (`counts.json`). */
export async function wordcountResult(client: Pick<FuxiClient, 'fetchOutput'>, jobId: string, spec: JobSpec): Promise<Map<string, number>> {
  const reducers = spec.tasks.find((t) => t.name === 'reduce')?.instances ?? 0;
  const counts = new Map<string, number>();
  for (let r = 0; r < reducers; r++) {
    const part = JSON.parse((await client.fetchOutput(jobId, 'reduce', r, 'counts.json')).toString('utf8')) as Record<string, number>;
    for (const [w, c] of Object.entries(part)) counts.set(w, (counts.get(w) ?? 0) + c);
  }
  return counts;
}

/** A direct count of the spec's input, with the workers' own tokenizer. */
export async function expectedCounts(spec: JobSpec): Promise<Map<string, number>> {
  const lib = (await import(pathToFileURL(join(WORDCOUNT_DIR, 'wordcount-lib.mjs')).href)) as { words: (l: string) => string[] };
  const expected = new Map<string, number>();
  for (const line of readFileSync(spec.env.WC_INPUT ?? '', 'utf8').split('\n')) for (const w of lib.words(line)) expected.set(w, (expected.get(w) ?? 0) + 1);
  return expected;
}

export function sameCounts(a: ReadonlyMap<string, number>, b: ReadonlyMap<string, number>): boolean {
  return a.size === b.size && [...b].every(([w, c]) => a.get(w) === c);
}
