/**
 * The shuffle example (`deploy/examples/shuffle/`): maps write one partition per reducer, reducers
 * fetch theirs from every map's host through the agents' data service and check every byte. The
 * straggler benchmark and the rack test of speculation run it; `shuffleResultOk` reads each
 * reducer's result from the host that holds it and checks it against what the maps must have
 * written.
 *
 * ```ts
 * const spec = shuffleSpec('pbse', { maps: 6, reduces: 6, partitionBytes: 512 * 1024, speculation: 'path' });
 * const { jobId } = await client.submit(spec);
 * await client.waitFor(jobId);
 * expect(await shuffleResultOk(client, jobId, spec)).to.equal(true);
 * ```
 */
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { FuxiClient, JobSpec } from '@fuxi/client';
import { normalizeJobSpec, type SpeculationMode } from '@fuxi/common';

const here = dirname(fileURLToPath(import.meta.url));
export const SHUFFLE_DIR = resolve(here, '..', 'examples', 'shuffle');

export interface ShuffleOptions {
  maps: number;
  reduces: number;
  /** Bytes of each partition (a multiple of 4). */
  partitionBytes: number;
  speculation?: SpeculationMode;
  /** Per task: cpu cores and MiB (default 0.2 and 160: a Node.js worker and its page cache, counted by its cgroup). */
  cpu?: number;
  memoryMiB?: number;
}

/** The job, id `<name>-<base-36 time>`; maxAttempts 3. */
export function shuffleSpec(name: string, o: ShuffleOptions): JobSpec {
  const task = { resources: { cpu: o.cpu ?? 0.2, memory: o.memoryMiB ?? 160 }, cwd: SHUFFLE_DIR, maxAttempts: 3 };
  return normalizeJobSpec({
    id: `${name}-${Date.now().toString(36)}${Math.floor(Math.random() * 1296).toString(36)}`,
    name,
    env: { SHUFFLE_PARTITION_BYTES: String(o.partitionBytes) },
    ...(o.speculation ? { speculation: o.speculation } : {}),
    tasks: [
      { name: 'map', instances: o.maps, command: ['node', 'map.mjs', '${instance}', String(o.reduces)], ...task },
      { name: 'reduce', instances: o.reduces, command: ['node', 'reduce.mjs', '${instance}'], dependsOn: ['map'], ...task },
    ],
  });
}

/** Whether every reducer's result.json says it read every map's partition, byte for byte. */
export async function shuffleResultOk(client: Pick<FuxiClient, 'fetchOutput'>, jobId: string, spec: JobSpec): Promise<boolean> {
  const lib = (await import(pathToFileURL(join(SHUFFLE_DIR, 'shuffle-lib.mjs')).href)) as {
    partition: (m: number, p: number, size: number) => Buffer;
    digest: (b: Buffer) => string;
  };
  const maps = spec.tasks.find((t) => t.name === 'map')?.instances ?? 0;
  const reduces = spec.tasks.find((t) => t.name === 'reduce')?.instances ?? 0;
  const size = Number(spec.env.SHUFFLE_PARTITION_BYTES);
  for (let r = 0; r < reduces; r++) {
    const got = JSON.parse((await client.fetchOutput(jobId, 'reduce', r, 'result.json')).toString('utf8')) as { maps: number; bytes: number; digest: string };
    const digests = Array.from({ length: maps }, (_, m) => lib.digest(lib.partition(m, r, size)));
    if (got.maps !== maps || got.bytes !== maps * size || got.digest !== lib.digest(Buffer.from(digests.join('')))) return false;
  }
  return true;
}
