#!/usr/bin/env node
// Shuffle map: `node map.mjs INDEX REDUCES`. Writes one partition per reducer (part-R.bin, each
// SHUFFLE_PARTITION_BYTES long) into its output directory, from where the agent's data service
// serves it to the reducers on other hosts.
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { reportProgress } from '@fuxi/client/worker';
import { partition, partitionBytes } from './shuffle-lib.mjs';

const m = Number(process.argv[2]);
const reduces = Number(process.argv[3]);
const out = process.env.FUXI_OUTPUT_DIR;
if (!out || !Number.isInteger(m) || !Number.isInteger(reduces) || reduces <= 0) {
  console.error('usage: (inside a Fuxi worker) node map.mjs INDEX REDUCES');
  process.exit(2);
}
const size = partitionBytes();
mkdirSync(out, { recursive: true });
for (let r = 0; r < reduces; r++) {
  const file = join(out, `part-${r}.bin`);
  writeFileSync(`${file}.tmp`, partition(m, r, size));
  renameSync(`${file}.tmp`, file);
  reportProgress((r + 1) / reduces);
}
console.log(`map ${m}: ${reduces} partitions of ${size} bytes`);
