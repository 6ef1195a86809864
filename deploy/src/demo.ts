#!/usr/bin/env node
/**
 * `make demo`: starts a local cluster (1 master + 3 agents, embedded store), runs the bundled
 * word-count job (20 map instances, then 4 reduce instances), waits with progress, checks the
 * result (each reducer's output, fetched from the agent that ran it) against a direct count, prints
 * it and stops the cluster. Mutual TLS like any cluster (a CA and certificates made under its
 * folder); `--insecure` runs it in plaintext.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LocalCluster, removeTree } from './local-cluster.js';
import { expectedCounts, sameCounts, wordcountResult, wordcountSpec } from './wordcount.js';

function bar(done: number, total: number, width = 20): string {
  const n = total === 0 ? width : Math.round((done / total) * width);
  return `[${'#'.repeat(n)}${'.'.repeat(width - n)}]`;
}

async function main(): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'fuxi-demo-'));
  const log = (s: string) => process.stderr.write(`${s}\n`);
  const insecure = process.argv.includes('--insecure');
  log(`fuxi demo: starting 1 master + 3 agents under ${dir} (${insecure ? 'INSECURE: plaintext' : `mutual TLS, certificates in ${join(dir, 'pki')}`})`);
  const cluster = await LocalCluster.start({ dir, agents: 3, agentCpu: '2', agentMemory: '2Gi', insecure });
  const client = cluster.client();
  let ok = false;
  try {
    const nodes = await client.nodes();
    log(`cluster up: master ${cluster.masterAddress}, agents ${nodes.map((n) => `${n.node?.nodeId}@${n.node?.address}`).join(', ')}`);
    const spec = wordcountSpec();
    const { jobId } = await client.submit(spec);
    log(`submitted job ${jobId} (${spec.tasks.map((t) => `${t.name} x${t.instances}`).join(', ')})`);
    let last = '';
    let final;
    for await (const job of client.watch(jobId)) {
      const line = job.tasks
        .map((t) => `${t.name} ${bar(t.succeeded, t.total)} ${t.succeeded}/${t.total}${t.running ? ` (${t.running} running)` : ''}`)
        .join('  ');
      const text = `${job.state.replace('JOB_STATE_', '').toLowerCase()}  ${line}`;
      if (text !== last) log(`  ${text}`);
      last = text;
      final = job;
    }
    if (!final || final.state !== 'JOB_STATE_SUCCEEDED') {
      log(`job ${jobId} did not succeed: ${final?.state ?? 'unknown'} ${final?.message ?? ''}`);
      return 1;
    }
    // The result: each reducer's counts.json, fetched from the host that ran it (nothing shared).
    const counts = await wordcountResult(client, jobId, spec);
    // The check: a direct count in this process, with the workers' own tokenizer.
    const same = sameCounts(counts, await expectedCounts(spec));
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
    if (ok) removeTree(dir);
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
