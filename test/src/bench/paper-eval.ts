#!/usr/bin/env node
/**
 * Benchmark (not a test): the failover evaluation of the Fuxi-FT paper (section 5: Tables 4-8,
 * Figures 9-10), scaled down to one machine. For each case (a failover mode of Table 4 under one
 * fault type), a real etcd, real masters and simulated-node hosts run a stream of jobs while faults
 * are injected; see paper/run-case.ts for what is measured and how.
 *
 *   make bench-paper
 *   node test/dist/bench/paper-eval.js [--cases FT/sim-crash,NoFO/sim-crash] [--nodes 300] [--jobs 400] [--active 200] ...
 *   node test/dist/bench/paper-eval.js --help
 *
 * Writes <out-dir>/paper-eval.json, paper-eval.md and paper-eval-jct-cdf.svg (out-dir: the
 * repository's bench-results/). Progress on stderr, the summary on stdout. Exit code 0 when the
 * report was written (the checks' results are in it), 1 when a case could not run.
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startEtcd, type EtcdProcess } from '../etcd-harness.js';
import { caseName, parseOptions, type PaperEvalOptions } from './paper/options.js';
import { cdfSvg, checks, markdown, type PaperEvalReport } from './paper/report.js';
import { activeTeardowns, runCase, type CaseResult } from './paper/run-case.js';

const here = dirname(fileURLToPath(import.meta.url));
/** The repository root (this file is test/dist/bench/paper-eval.js). */
const REPO = join(here, '..', '..', '..');

export const REPORT_FILES = { json: 'paper-eval.json', md: 'paper-eval.md', svg: 'paper-eval-jct-cdf.svg' } as const;

function configOf(o: PaperEvalOptions): Record<string, unknown> {
  const { cases, workload, outDir: _out, keep: _keep, quiet: _quiet, ...rest } = o;
  return { cases: cases.map(caseName), ...rest, ...workload };
}

async function main(): Promise<number> {
  const o = parseOptions(process.argv.slice(2), join(REPO, 'bench-results'));
  const say = (s: string) => {
    if (!o.quiet) process.stderr.write(`[bench-paper ${new Date().toISOString().slice(11, 19)}] ${s}\n`);
  };
  const started = Date.now();
  const dir = mkdtempSync(join(tmpdir(), 'fuxi-bench-paper-'));
  // Workers run as another user (nobody): they must be able to pass through.
  chmodSync(dir, 0o711);
  let etcd: EtcdProcess | undefined;
  let ok = false;
  let stopping = false;
  const onSignal = (sig: string) => {
    if (stopping) return;
    stopping = true;
    say(`${sig}: stopping (logs kept in ${dir})`);
    void Promise.allSettled([...activeTeardowns].map((t) => t()))
      .then(() => etcd?.stop())
      .finally(() => process.exit(130));
  };
  // Whatever goes wrong, the processes this run started are stopped, by pid.
  process.on('unhandledRejection', (e) => {
    if (!stopping) say(`unexpected error: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
    onSignal('unhandledRejection');
  });
  process.on('uncaughtException', (e) => {
    if (!stopping) say(`unexpected error: ${e.stack ?? e.message}`);
    onSignal('uncaughtException');
  });
  process.once('SIGINT', () => onSignal('SIGINT'));
  process.once('SIGTERM', () => onSignal('SIGTERM'));
  try {
    say(`work dir ${dir}; cases ${o.cases.map(caseName).join(', ')}`);
    etcd = await startEtcd();
    const results: CaseResult[] = [];
    for (const [i, c] of o.cases.entries()) {
      say(`case ${i + 1}/${o.cases.length}: ${caseName(c)}`);
      results.push(await runCase(c, o, { etcdEndpoint: etcd.endpoint, dir, say }, i));
    }
    const report: PaperEvalReport = {
      generatedAt: new Date().toISOString(),
      wallClockMs: Date.now() - started,
      config: configOf(o),
      cases: results,
      checks: checks(results),
      notes: [
        'Scaled down from the paper (300 nodes x 23 cores / 82 GB; 4,000 jobs of 10/100/1,000 instances, 2,000 active, 50 s instances, a fault every 300 s): ' +
          'job sizes, counts, instance time and fault interval are flags (see --help); defaults fit about 20 minutes on 2 cores.',
        "AMFO is `--master-failover false`: a new leader fails every unfinished job (no soft-state inference), where the paper's AMFO re-ran their instances; so AMFO here fails the jobs that NoFO fails on master faults.",
        "Agent timing failure = the virtual node's agent stops heartbeating and handles its RPCs and worker exits only when it resumes; AM timing failure = the AM stops heartbeating and calling the master; master timing failure = SIGSTOP past the lease, then SIGCONT.",
        "Request handling = client-side round trips of successful calls (the master does not time its handlers); they include the hosts' event-loop delays.",
      ],
    };
    const out = resolve(o.outDir);
    mkdirSync(out, { recursive: true });
    writeFileSync(join(out, REPORT_FILES.json), JSON.stringify(report, null, 2) + '\n');
    writeFileSync(join(out, REPORT_FILES.svg), cdfSvg(results));
    writeFileSync(join(out, REPORT_FILES.md), markdown(report, REPORT_FILES.svg));
    const lines = results.map(
      (r) =>
        `  ${r.name.padEnd(18)} jobs ${r.jobs.total.completed}/${r.jobs.total.submitted} ok, ${r.jobs.total.failed} failed; instances ${r.instances.total.completed}/${r.instances.total.submitted}, ` +
        `rescheduled ${r.instances.total.rescheduled} (${(100 * r.instances.total.reschedRatio).toFixed(3)} %); overhead ${r.overheadUsPerInstance} us/instance; ` +
        `recovery master ${r.recovery.master.avg} s, agent ${r.recovery.agent.avg} s, AM ${r.recovery.am.avg} s`,
    );
    process.stdout.write(
      [
        `paper evaluation: ${results.length} cases in ${Math.round((Date.now() - started) / 1000)} s`,
        ...lines,
        ...report.checks.map((c) => `  ${c.pass ? 'PASS' : 'FAIL'} ${c.name}: ${c.detail}`),
        `  written to ${join(out, REPORT_FILES.md)} (+ .json, .svg)`,
        '',
      ].join('\n'),
    );
    ok = true;
    return 0;
  } catch (e) {
    say(`failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
    return 1;
  } finally {
    await etcd?.stop().catch(() => undefined);
    if (ok && !o.keep) rmSync(dir, { recursive: true, force: true });
    else say(`logs kept in ${dir}`);
  }
}

main().then(
  (code) => process.exit(code),
  (e: unknown) => {
    process.stderr.write(`bench-paper: ${String(e)}\n`);
    process.exit(1);
  },
);
