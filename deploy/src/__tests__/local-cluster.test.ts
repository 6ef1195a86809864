import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isAlive, killedUnlessReady, startNodeProcess, waitExit, waitForLogLine } from '../local-cluster.js';

describe('LocalCluster daemon start', function () {
  this.timeout(30_000);
  let dir: string;
  before(() => (dir = mkdtempSync(join(tmpdir(), 'fuxi-local-cluster-test-'))));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('kills, by its pid, a daemon that never says it is ready, and passes the error on', async () => {
    const log = join(dir, 'silent.log');
    // A real process that runs on and never logs the line waited for.
    const child = startNodeProcess(['-e', 'setInterval(() => {}, 1000)'], log);
    const pid = child.pid!;
    expect(isAlive(pid)).to.equal(true);
    const err = await killedUnlessReady(child, () => waitForLogLine(log, 'master ready', child, 300)).catch((e: unknown) => e as Error);
    expect(err).to.be.instanceOf(Error);
    expect((err as Error).message).to.include('no "master ready" within 300 ms');
    expect(await waitExit(child, 5000)).to.equal(true);
    expect(child.signalCode).to.equal('SIGKILL');
  });

  it('leaves a daemon that is ready running', async () => {
    const log = join(dir, 'ready.log');
    const child = startNodeProcess(['-e', `console.log(JSON.stringify({ msg: 'agent ready', pid: process.pid })); setInterval(() => {}, 1000)`], log);
    try {
      const rec = await killedUnlessReady(child, () => waitForLogLine(log, 'agent ready', child, 10_000));
      expect(rec.pid).to.equal(child.pid);
      expect(isAlive(child.pid!)).to.equal(true);
    } finally {
      child.kill('SIGKILL');
      await waitExit(child, 5000);
    }
  });
});
