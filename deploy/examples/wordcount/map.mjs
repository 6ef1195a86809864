#!/usr/bin/env node
// Word-count map: `node map.mjs INDEX MAPS`. Reads every MAPS-th line of $WC_INPUT starting at
// INDEX, counts words, and writes one partition per reducer ($WC_REDUCERS) to
// $WC_OUT/map-INDEX/part-R.json (atomically, so a retried attempt simply overwrites).
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { partitionOf, words } from './wordcount-lib.mjs';

const [index, maps] = process.argv.slice(2).map(Number);
const reducers = Number(process.env.WC_REDUCERS ?? 4);
const input = process.env.WC_INPUT;
const out = process.env.WC_OUT;
if (!input || !out || !Number.isInteger(index) || !Number.isInteger(maps)) {
  console.error('usage: WC_INPUT=file WC_OUT=dir node map.mjs INDEX MAPS');
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
const dir = join(out, `map-${index}`);
mkdirSync(dir, { recursive: true });
parts.forEach((p, r) => {
  const file = join(dir, `part-${r}.json`);
  writeFileSync(`${file}.tmp`, JSON.stringify(p));
  renameSync(`${file}.tmp`, file);
});
console.log(`map ${index}/${maps}: ${n} words into ${reducers} partitions`);
