/**
 * Speculation against a slow host on the rack: three agent hosts, a3's link slowed to 1 Mbit/s both
 * ways (tc tbf). The same shuffle job (maps write one partition per reducer; reducers fetch theirs
 * from every map's host through the agents' data service and check every byte) runs with
 * `speculation: base` and with `speculation: path`. Both finish correctly; the path job finishes
 * sooner, because it finds a3 as the slow end of its data paths and moves the outputs a3 serves
 * (and the readers on it) elsewhere, while base speculation's backups read from a3 like the
 * originals. The rack is its own ('fxg', 10.218.0).
 */
import { expect } from 'chai';
import { chmodSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FuxiClient } from '@fuxi/client';
import { shuffleResultOk, shuffleSpec, removeTree } from '@fuxi/deploy';
import { RackCluster } from './rack-cluster.js';

describe('speculation on the rack: with one host at 1 Mbit/s, a path job beats the same job with base speculation', function () {
  this.timeout(600_000);
  let rc: RackCluster | undefined;
  let client: FuxiClient;
  let dir = '';
  let failed = false;

  before(async function () {
    this.timeout(180_000);
    dir = mkdtempSync(join(tmpdir(), 'fuxi-stragglers-rack-'));
    chmodSync(dir, 0o711); // the agents' unprivileged worker user passes through to its directories
    rc = await RackCluster.start({
      dir,
      agents: 3,
      prefix: 'fxg',
      subnet: '10.218.0',
      heartbeatIntervalMs: 1000,
      agentCpu: '2',
      agentMemory: '2Gi',
      logLevel: 'info',
    });
    client = rc.ha.client({ retryForMs: 60_000 });
    await rc.ha.waitForNodes(3, 60_000);
  });
  afterEach(function () {
    if (this.currentTest?.state === 'failed') failed = true;
  });
  after(async function () {
    this.timeout(120_000);
    client?.close();
    await rc?.stop();
    if (dir && !failed) removeTree(dir);
    else if (dir) process.stderr.write(`  (rack logs kept in ${dir})\n`);
  });

  async function run(mode: 'base' | 'path'): Promise<{ ms: number; backups: number }> {
    const spec = shuffleSpec(`rack-${mode}`, { maps: 6, reduces: 3, partitionBytes: 256 * 1024, speculation: mode });
    const t0 = Date.now();
    const { jobId } = await client.submit(spec);
    const info = await client.waitFor(jobId);
    const ms = Date.now() - t0;
    expect(info.state, `${mode} job ${jobId}: ${info.message}`).to.equal('JOB_STATE_SUCCEEDED');
    expect(await shuffleResultOk(client, jobId, spec), `${mode} job ${jobId}: every reducer read every byte`).to.equal(true);
    return { ms, backups: info.tasks.reduce((s, t) => s + (t.backups ?? 0), 0) };
  }

  it('both jobs are correct; the path job finishes sooner and moved work off the slow host', async () => {
    // A warm-up job with every link at full speed (code and page cache warm on every host).
    await run('path');
    await rc!.rack.slow('a3', '1mbit');
    try {
      const base = await run('base');
      const path = await run('path');
      process.stderr.write(`    base ${base.ms} ms (${base.backups} backups), path ${path.ms} ms (${path.backups} backups)\n`);
      expect(path.backups, 'the path job moved work off a3').to.be.greaterThan(0);
      expect(path.ms, 'the path job finishes sooner than the base job').to.be.lessThan(base.ms);
    } finally {
      await rc!.rack.unslow('a3');
    }
  });
});
