#!/usr/bin/env node
/**
 * `make test-history`: the history test over at least 100 faults (see `run.ts`). Writes
 * bench-results/history.json; exits 1 when the checker found a safety anomaly (logs are then
 * kept). Liveness findings (jobs failed by a fault, jobs not finished) are reported, not fatal.
 *
 *   node test/dist/history/main.js [--faults 100] [--seed N] [--clients 4] [--out FILE] [--keep]
 */
import { chmodSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { REPO_ROOT, removeTree } from '@fuxi/deploy';
import { runHistory } from './run.js';

const { values } = parseArgs({
  options: {
    faults: { type: 'string', default: '100' },
    seed: { type: 'string' },
    clients: { type: 'string', default: '4' },
    out: { type: 'string', default: join(REPO_ROOT, 'bench-results', 'history.json') },
    keep: { type: 'boolean', default: false },
  },
});

const dir = mkdtempSync(join(tmpdir(), 'fuxi-history-'));

chmodSync(dir, 0o711); // the agents' unprivileged worker user passes through to its directories
const s = await runHistory({
  dir,
  faults: Number(values.faults),
  clients: Number(values.clients),
  out: values.out,
  ...(values.seed !== undefined ? { seed: Number(values.seed) } : {}),
});
const bad = s.safetyAnomalies;
process.stdout.write(
  `${JSON.stringify(
    {
      operations: s.operations,
      acknowledged: s.acknowledged,
      unknown: s.unknown,
      faults: s.faults,
      faultsTotal: s.faultsTotal,
      lost: s.lost,
      duplicated: s.duplicated,
      phantom: s.phantom,
      orphanWorkers: s.orphanWorkers,
      daemonExits: s.daemonExits,
      vanished: s.vanished,
      regressed: s.regressed,
      wrongEnd: s.wrongEnd,
      failed: s.failed,
      unfinished: s.unfinished,
      endStates: s.endStates,
      minutes: +(s.durationMs.total / 60_000).toFixed(1),
    },
    null,
    2,
  )}\n`,
);
for (const a of s.anomalies.slice(0, 20)) process.stdout.write(`${a.kind} ${a.jobId}: ${a.detail} (ops ${a.ops.join(', ')})\n`);
if (bad > 0) {
  process.stdout.write(`${bad} safety anomalies; logs and the full history kept in ${dir}\n`);
  process.exit(1);
}
if (s.anomalies.length > 0) {
  values.keep = true;
  process.stdout.write(`no safety anomaly; ${s.anomalies.length} liveness findings (above)\n`);
}
if (s.faultsTotal < Number(values.faults)) {
  process.stdout.write(`only ${s.faultsTotal} of ${values.faults} faults ran; logs kept in ${dir}\n`);
  process.exit(1);
}
if (values.keep) process.stdout.write(`logs kept in ${dir}\n`);
else removeTree(dir);
