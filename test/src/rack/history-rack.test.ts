/**
 * The history test, one minute of it (`make test-history` runs the full one over 100 faults): on
 * a rack of its own (prefix 'fxhs', 10.214.1, so it never meets another rack), clients submit,
 * resubmit, kill and read jobs while the nemesis hits every fault kind once (kill -9 and pause of
 * masters, kill and pause of etcd members, master-to-etcd links cut, etcd's space filled); after
 * healing, the checker finds no lost, duplicated, phantom or vanished job, no regressed state, no
 * wrong end, no orphan worker and no daemon exit (jobs failed by a fault are liveness findings,
 * reported by `make test-history`, not failures here).
 */
import { expect } from 'chai';
import { chmodSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SAFETY_KINDS } from '../history/checker.js';
import { runHistory } from '../history/run.js';
import { removeTree } from '@fuxi/deploy';

describe('history under a nemesis (one minute): every call checked after every fault kind', function () {
  this.timeout(600_000);

  it('loses, duplicates and invents no job, leaves no worker of a finished job running, and no daemon exits', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'fuxi-history-short-'));
    chmodSync(dir, 0o711); // the agents' unprivileged worker user passes through to its directories
    const s = await runHistory({ dir, faults: 6, prefix: 'fxhs', subnet: '10.214.1', clients: 3, warmupMs: 5000, holdMs: [3000, 6000], gapMs: [2000, 4000] });
    const safety = s.anomalies.filter((a) => SAFETY_KINDS.has(a.kind));
    const report = safety.map((a) => `${a.kind} ${a.jobId}: ${a.detail}`).join('\n');
    expect(s.faultsTotal, 'faults injected').to.equal(6);
    expect(
      Object.values(s.faults).every((n) => n === 1),
      `every kind once: ${JSON.stringify(s.faults)}`,
    ).to.equal(true);
    expect(s.acknowledged, 'acknowledged submits').to.be.greaterThan(0);
    expect(safety, `${report}\n(logs kept in ${dir})`).to.deep.equal([]);
    removeTree(dir);
  });
});
