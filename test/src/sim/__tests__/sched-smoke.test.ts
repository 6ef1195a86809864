/**
 * Smoke test of the scheduler benchmark (`make bench-sched`): a tiny configuration (50 virtual
 * nodes, 4 apps, about a second of load) against the real master, checking that it runs and that
 * bench-results-style JSON has the expected shape. No timing assertions: this is not the benchmark.
 */
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { terminate, waitExit, removeTree } from '@fuxi/deploy';

const BENCH = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'bench', 'sched.js');

describe('scheduler benchmark (smoke)', function () {
  this.timeout(120_000);
  let dir = '';

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'fuxi-sched-smoke-'));
  });
  after(() => {
    if (dir) removeTree(dir);
  });

  it('runs 50 nodes for a moment and writes the results JSON', async () => {
    const out = join(dir, 'sched.json');
    const args = [
      BENCH,
      '--scales',
      '50',
      '--apps',
      '4',
      '--windows',
      '8',
      '--fill',
      '0.25',
      '--warmup-ms',
      '300',
      '--duration-ms',
      '1000',
      '--hb-phase-ms',
      '600',
      '--idle-ms',
      '300',
      '--out',
      out,
    ];
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (b: Buffer) => (output += b.toString()));
    child.stderr.on('data', (b: Buffer) => (output += b.toString()));
    try {
      expect(await waitExit(child, 100_000), `the benchmark did not finish:\n${output}`).to.equal(true);
    } finally {
      await terminate(child);
    }
    expect(child.exitCode, output).to.equal(0);

    const r = JSON.parse(readFileSync(out, 'utf8')) as Record<string, unknown>;
    expect(r).to.include.all.keys('nodes50', 'heartbeatCpuUsPerNodePerBeat', 'masterBytesPerNode', 'masterBytesPerRunningWorker', 'targets', 'config', 'notes');
    const s = r.nodes50 as Record<string, unknown>;
    expect(s.nodes).to.equal(50);
    for (const k of ['grantsPerSec', 'heartbeatCpuUsPerNodePerBeat', 'masterBytesPerNode', 'masterBytesPerRunningWorker', 'masterCpuUtilization']) {
      expect(s[k], k).to.be.a('number');
    }
    expect(s.grantsPerSec as number).to.be.greaterThan(0);
    const lat = s.latencyMs as Record<string, number>;
    expect(lat).to.include.all.keys('p50', 'p99');
    expect(lat.samples).to.be.greaterThan(0);
    const checks = s.checks as Record<string, number>;
    // Correctness, not speed: no node was ever granted more than its capacity.
    expect(checks.overcommits).to.equal(0);
    expect((r.config as Record<string, unknown>).scales).to.deep.equal([50]);
  });
});
