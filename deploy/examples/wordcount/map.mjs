#!/usr/bin/env node
// Word-count map: `node map.mjs INDEX MAPS`. Reads every MAPS-th line of $WC_INPUT starting at
// INDEX, counts words, and writes one partition per reducer ($WC_REDUCERS) as part-R.json into its
// output directory ($FUXI_OUTPUT_DIR, given by the agent). The agent that ran it serves those files
// to the reducers on other hosts once this worker succeeded: no filesystem is shared.
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { partitionOf, words } from './wordcount-lib.mjs';

const [index, maps] = process.argv.slice(2).map(Number);
const reducers = Number(process.env.WC_REDUCERS ?? 4);
const input = process.env.WC_INPUT;
const out = process.env.FUXI_OUTPUT_DIR;
if (!input || !out || !Number.isInteger(index) || !Number.isInteger(maps)) {
  console.error('usage: WC_INPUT=file FUXI_OUTPUT_DIR=dir node map.mjs INDEX MAPS');
  process.exit(2);
}
const lines = readFileSync(input, 'utf8').split('\n');
const parts = Array.from({ length: reducers }, () => ({}));
let n = 0;
for (let i = index; i < lines.length; i += maps) {
  for (const w of words(lines[i])) {
    const p = parts[partitionOf(w, reducers)];
    p[w] = (p[w] ?? 0) + 1;
    n++;
  }
}
mkdirSync(out, { recursive: true });
parts.forEach((p, r) => {
  const file = join(out, `part-${r}.json`);
  writeFileSync(`${file}.tmp`, JSON.stringify(p));
  renameSync(`${file}.tmp`, file);
});
console.log(`map ${index}/${maps}: ${n} words into ${reducers} partitions`);
