#!/usr/bin/env node
// Word-count reduce: `node reduce.mjs INDEX`. Fetches partition INDEX of every map's output from
// the host that wrote it (the agents' data service; where each map ran is in $FUXI_UPSTREAM), sums
// them and writes counts.json into its own output directory ($FUXI_OUTPUT_DIR), from where
// `fuxi fetch JOB reduce INDEX counts.json` reads it. Fails loudly when a map's output is missing.
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fetchUpstream, upstreamOutputs } from '@fuxi/client/worker';

const index = Number(process.argv[2]);
const out = process.env.FUXI_OUTPUT_DIR;
if (!out || !Number.isInteger(index)) {
  console.error('usage: (inside a Fuxi worker) node reduce.mjs INDEX');
  process.exit(2);
}
const maps = upstreamOutputs('map');
const total = {};
let fetched = 0;
// A few fetches at a time: maps are spread over the rack's hosts.
const queue = [...maps];
await Promise.all(
  Array.from({ length: 4 }, async () => {
    for (let m = queue.shift(); m; m = queue.shift()) {
      const part = JSON.parse((await fetchUpstream('map', m.instance, `part-${index}.json`)).toString('utf8'));
      fetched++;
      for (const [w, c] of Object.entries(part)) total[w] = (total[w] ?? 0) + c;
    }
  }),
);
mkdirSync(out, { recursive: true });
const file = join(out, 'counts.json');
writeFileSync(`${file}.tmp`, JSON.stringify(total));
renameSync(`${file}.tmp`, file);
console.log(`reduce ${index}: ${Object.keys(total).length} distinct words from ${fetched} maps`);
