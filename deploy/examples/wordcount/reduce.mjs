#!/usr/bin/env node
// Word-count reduce: `node reduce.mjs INDEX MAPS`. Sums partition INDEX of every map's output
// and writes $WC_OUT/reduce-INDEX.json. Fails loudly when a map's output is missing.
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const [index, maps] = process.argv.slice(2).map(Number);
const out = process.env.WC_OUT;
if (!out || !Number.isInteger(index) || !Number.isInteger(maps)) {
  console.error('usage: WC_OUT=dir node reduce.mjs INDEX MAPS');
  process.exit(2);
}
const total = {};
for (let m = 0; m < maps; m++) {
  const part = JSON.parse(readFileSync(join(out, `map-${m}`, `part-${index}.json`), 'utf8'));
  for (const [w, c] of Object.entries(part)) total[w] = (total[w] ?? 0) + c;
}
const file = join(out, `reduce-${index}.json`);
writeFileSync(`${file}.tmp`, JSON.stringify(total));
renameSync(`${file}.tmp`, file);
console.log(`reduce ${index}: ${Object.keys(total).length} distinct words from ${maps} maps`);
