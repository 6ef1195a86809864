#!/usr/bin/env node
/**
 * `make demo`: starts a local cluster (1 master + 3 agents, embedded store), runs the bundled
 * word-count job (20 map instances, then 4 reduce instances), waits with progress, checks the
 * result against a direct count, prints it and stops the cluster.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { loadJobSpecFile } from '@fuxi/client';
import { LocalCluster } from './local-cluster.js';

const here = dirname(fileURLToPath(import.meta.url));
const exampleDir = resolve(here, '..', 'examples', 'wordcount');

function bar(done: number, total: number, width = 20): string {
  const n = total === 0 ? width : Math.round((done / total) * width);
  return `[${'#'.repeat(n)}${'.'.repeat(width - n)}]`;
}

async function main(): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'fuxi-demo-'));
  const out = join(dir, 'output');
  const log = (s: string) => process.stderr.write(`${s}\n`);
  log(`fuxi demo: starting 1 master + 3 agents under ${dir}`);
  const cluster = await LocalCluster.start({ dir, agents: 3, agentCpu: '2', agentMemory: '2Gi' });
  const client = cluster.client();
  let ok = false;
  try {
    const nodes = await client.nodes();
    log(`cluster up: master ${cluster.masterAddress}, agents ${nodes.map((n) => `${n.node?.nodeId}@${n.node?.address}`).join(', ')}`);
    const spec = loadJobSpecFile(join(exampleDir, 'job.yaml'));
    spec.env.WC_OUT = out;
    spec.env.WC_INPUT = join(exampleDir, 'input', 'corpus.txt');
    const { jobId } = await client.submit(spec);
    log(`submitted job ${jobId} (${spec.tasks.map((t) => `${t.name} x${t.instances}`).join(', ')})`);
    let last = '';
    let final;
    for await (const job of client.watch(jobId)) {
      const line = job.tasks.map((t) => `${t.name} ${bar(t.succeeded, t.total)} ${t.succeeded}/${t.total}${t.running ? ` (${t.running} running)` : ''}`).join('  ');
      const text = `${job.state.replace('JOB_STATE_', '').toLowerCase()}  ${line}`;
      if (text !== last) log(`  ${text}`);
      last = text;
      final = job;
    }
    if (!final || final.state !== 'JOB_STATE_SUCCEEDED') {
      log(`job ${jobId} did not succeed: ${final?.state ?? 'unknown'} ${final?.message ?? ''}`);
      return 1;
    }
    // The result, merged from the reducers' outputs.
    const counts = new Map<string, number>();
    for (const f of readdirSync(out).filter((x) => /^reduce-\d+\.json$/.test(x))) {
      for (const [w, c] of Object.entries(JSON.parse(readFileSync(join(out, f), 'utf8')) as Record<string, number>)) counts.set(w, (counts.get(w) ?? 0) + c);
    }
    // The check: a direct count in this process, with the workers' own tokenizer.
    const lib = (await import(pathToFileURL(join(exampleDir, 'wordcount-lib.mjs')).href)) as { words: (l: string) => string[] };
    const expected = new Map<string, number>();
    for (const line of readFileSync(spec.env.WC_INPUT, 'utf8').split('\n')) for (const w of lib.words(line)) expected.set(w, (expected.get(w) ?? 0) + 1);
    const same = counts.size === expected.size && [...expected].every(([w, c]) => counts.get(w) === c);
    const total = [...counts.values()].reduce((a, b) => a + b, 0);
    const top = [...counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).slice(0, 10);
    console.log(`word count of ${spec.env.WC_INPUT}: ${total} words, ${counts.size} distinct`);
    for (const [w, c] of top) console.log(`  ${w.padEnd(14)} ${c}`);
    console.log(same ? 'result verified: matches a direct count of the input' : 'result MISMATCH: differs from a direct count of the input');
    ok = same;
    return same ? 0 : 1;
  } finally {
    client.close();
    await cluster.stop({ killWorkers: true });
    if (ok) rmSync(dir, { recursive: true, force: true });
    else log(`logs kept in ${dir}`);
  }
}

main().then(
  (code) => process.exit(code),
  (e: unknown) => {
    process.stderr.write(`demo failed: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(1);
  },
);
