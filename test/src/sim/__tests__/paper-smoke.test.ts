/**
 * Smoke test of the paper evaluation benchmark (`make bench-paper`) in a tiny configuration: a real
 * etcd, 3 masters, 20 virtual nodes, 10 jobs, one simultaneous crash fault (the master plus AMs or
 * agents). Checks that it runs to the end and writes a report of the right shape; no timing or
 * outcome assertions (those are the benchmark's own checks, in the report).
 */
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const BENCH = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'bench', 'paper-eval.js');

function run(args: string[], timeoutMs: number): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BENCH, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (b: Buffer) => (out += b.toString()));
    child.stderr.on('data', (b: Buffer) => (out += b.toString()));
    const t = setTimeout(() => {
      // SIGTERM: the benchmark tears its processes down, by pid.
      if (child.pid !== undefined) process.kill(child.pid, 'SIGTERM');
      reject(new Error(`paper-eval did not finish within ${timeoutMs} ms:\n${out.slice(-3000)}`));
    }, timeoutMs);
    child.on('exit', (code) => {
      clearTimeout(t);
      resolve({ code, out });
    });
    child.on('error', reject);
  });
}

describe('paper evaluation benchmark (smoke, tiny configuration)', function () {
  this.timeout(170_000);
  let out: string;

  before(() => {
    out = mkdtempSync(join(tmpdir(), 'fuxi-paper-smoke-'));
  });
  after(() => rmSync(out, { recursive: true, force: true }));

  it('runs FT under one simultaneous crash fault and writes the report (JSON, Markdown, SVG)', async () => {
    const args = [
      '--cases',
      'FT/sim-crash',
      '--nodes',
      '20',
      '--hosts',
      '1',
      '--jobs',
      '10',
      '--active',
      '5',
      '--size-scale',
      '0.05',
      '--instance-ms',
      '1500',
      '--first-fault-ms',
      '1000',
      '--fault-interval-ms',
      '600000',
      '--lease-ttl-sec',
      '2',
      '--recovery-deadline-ms',
      '3000',
      '--agent-down-ms',
      '300',
      '--max-case-ms',
      '120000',
      '--out-dir',
      out,
      '--quiet',
    ];
    const r = await run(args, 160_000);
    expect(r.code, r.out).to.equal(0);
    for (const f of ['paper-eval.json', 'paper-eval.md', 'paper-eval-jct-cdf.svg']) expect(existsSync(join(out, f)), f).to.equal(true);

    const report = JSON.parse(readFileSync(join(out, 'paper-eval.json'), 'utf8')) as Record<string, unknown> & {
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      cases: Array<Record<string, any>>;
      checks: unknown[];
    };
    expect(report).to.include.keys('generatedAt', 'config', 'cases', 'checks', 'notes');
    expect(report.cases).to.have.length(1);
    const c = report.cases[0]!;
    expect(c).to.include({ name: 'FT/sim-crash', mode: 'FT', faults: 'sim-crash' });
    expect(c).to.include.keys(
      'durationMs',
      'jobs',
      'instances',
      'overheadUsPerInstance',
      'recovery',
      'requestHandling',
      'master',
      'jct',
      'faultsInjected',
      'events',
    );
    for (const k of ['small', 'medium', 'large', 'total']) {
      expect(c.jobs[k]).to.have.keys('submitted', 'completed', 'failed', 'unfinished');
      expect(c.instances[k]).to.include.keys('submitted', 'completed', 'rescheduled', 'reschedRatio', 'reschedOfCompleted');
    }
    expect(c.jobs.total.submitted).to.equal(10);
    expect(c.recovery).to.include.keys('master', 'agent', 'am');
    expect(c.recovery.master).to.include.keys('n', 'avg', 'stddev');
    expect(c.requestHandling.updateRequests).to.include.keys('count', 'avgMs', 'p50Ms', 'p99Ms');
    expect(c.master).to.have.keys('cpuPct', 'rssKb');
    expect(c.jct.cdf).to.be.an('array');
    expect(c.faultsInjected).to.be.an('array');
    expect(report.checks).to.be.an('array').that.is.not.empty;

    const md = readFileSync(join(out, 'paper-eval.md'), 'utf8');
    for (const h of ['## Tables 5 and 8', '## Table 6', '## Table 7', '## Figure 10']) expect(md).to.include(h);
    expect(readFileSync(join(out, 'paper-eval-jct-cdf.svg'), 'utf8')).to.match(/^<svg[\s\S]*<\/svg>\n$/);
  });
});
