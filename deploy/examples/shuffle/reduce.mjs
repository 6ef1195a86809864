#!/usr/bin/env node
// Shuffle reduce: `node reduce.mjs INDEX`. Fetches partition INDEX of every map's output from the
// host that wrote it (the agents' data service; $FUXI_UPSTREAM says where), checks every byte,
// reports its progress as it goes, and writes result.json ({maps, bytes, digest}) into its output
// directory. The fetches are measured (by the SDK and by the serving agents) for the AM's
// path-based speculation.
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fetchUpstream, reportProgress, upstreamOutputs } from '@fuxi/client/worker';
import { digest, partition, partitionBytes } from './shuffle-lib.mjs';

const index = Number(process.argv[2]);
const out = process.env.FUXI_OUTPUT_DIR;
if (!out || !Number.isInteger(index)) {
  console.error('usage: (inside a Fuxi worker) node reduce.mjs INDEX');
  process.exit(2);
}
const size = partitionBytes();
const maps = upstreamOutputs('map');
const digests = new Array(maps.length);
let bytes = 0;
let done = 0;
const queue = [...maps];
await Promise.all(
  Array.from({ length: 4 }, async () => {
    for (let m = queue.shift(); m; m = queue.shift()) {
      const data = await fetchUpstream('map', m.instance, `part-${index}.bin`);
      if (!data.equals(partition(m.instance, index, size)))
        throw new Error(`map ${m.instance} part-${index}.bin: ${data.length} bytes, not what map ${m.instance} writes`);
      digests[m.instance] = digest(data);
      bytes += data.length;
      reportProgress(++done / maps.length);
    }
  }),
);
mkdirSync(out, { recursive: true });
const file = join(out, 'result.json');
writeFileSync(`${file}.tmp`, JSON.stringify({ maps: maps.length, bytes, digest: digest(Buffer.from(digests.join(''))) }));
renameSync(`${file}.tmp`, file);
console.log(`reduce ${index}: ${bytes} bytes from ${maps.length} maps`);
