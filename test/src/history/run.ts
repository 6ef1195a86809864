/**
 * One history run: the cluster (`history-cluster.ts`), the clients (`workload.ts`) and the nemesis
 * (`nemesis.ts`) at once; then every fault healed, the jobs given time to finish, the final state
 * observed (the leader's job list, the workers still running by the agents' and the hosts'
 * account, the daemons that exited) and the history checked (`checker.ts`). Writes the summary as
 * JSON (`out`) and the full history as JSON lines next to the logs.
 *
 * ```ts
 * const summary = await runHistory({ dir, faults: 100, out: 'bench-results/history.json' });
 * ```
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { checkHistory, SAFETY_KINDS, type CheckResult, type FinalState } from './checker.js';
import { HistoryCluster } from './history-cluster.js';
import { HistoryRecorder, type JobView } from './history.js';
import { Nemesis, type FaultKind } from './nemesis.js';
import { rng, Workload } from './workload.js';

export interface HistoryRunOptions {
  /** Logs, agent work dirs, the configs and the full history go here. */
  dir: string;
  /** Faults to inject. */
  faults: number;
  /** Summary JSON file (none when omitted). */
  out?: string;
  /** Rack prefix and subnet (default 'fxh', 10.214.0: not the default rack's). */
  prefix?: string;
  subnet?: string;
  clients?: number;
  seed?: number;
  holdMs?: [number, number];
  gapMs?: [number, number];
  /** Clients run alone this long before the first fault. */
  warmupMs?: number;
  /** After healing: how long jobs may take to finish. */
  finishTimeoutMs?: number;
  log?: (s: string) => void;
}

export interface HistorySummary {
  operations: number;
  /** Job ids whose submit was acknowledged. */
  acknowledged: number;
  /** Calls whose outcome is unknown. */
  unknown: number;
  faults: Record<FaultKind, number>;
  lost: number;
  duplicated: number;
  phantom: number;
  orphanWorkers: number;
  daemonExits: number;
  vanished: number;
  regressed: number;
  wrongEnd: number;
  /** Liveness: jobs that failed, and jobs not finished after healing. */
  failed: number;
  unfinished: number;
  /** Anomalies that break a guarantee (everything but `failed` and `unfinished`). */
  safetyAnomalies: number;
  faultsTotal: number;
  faultVariants: Record<string, number>;
  settleTimeouts: number;
  callsByType: Record<string, Record<string, number>>;
  jobsAtEnd: number;
  endStates: Record<string, number>;
  durationMs: { total: number; nemesis: number; finish: number };
  anomalies: CheckResult['anomalies'];
  faultLog: Array<{ kind: string; variant: string; targets: string[]; atMs: number; heldMs: number; note?: string }>;
  seed: number;
  logs: string;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const TERMINAL = new Set(['JOB_STATE_SUCCEEDED', 'JOB_STATE_FAILED', 'JOB_STATE_KILLED']);
const LEASE_TTL_SEC = 3;

export async function runHistory(o: HistoryRunOptions): Promise<HistorySummary> {
  const log = o.log ?? ((s: string) => process.stderr.write(`[history ${new Date().toISOString().slice(11, 23)}] ${s}\n`));
  const seed = o.seed ?? Date.now() % 100_000;
  const t0 = Date.now();
  mkdirSync(o.dir, { recursive: true });
  log(`starting the rack: 3 etcd members, 3 masters, 3 agents (logs in ${o.dir}, seed ${seed})`);
  const hc = await HistoryCluster.start({
    dir: o.dir,
    prefix: o.prefix ?? 'fxh',
    subnet: o.subnet ?? '10.214.0',
    agents: 3,
    agentCpu: '4',
    agentMemory: '8Gi',
    leaseTtlSec: LEASE_TTL_SEC,
    heartbeatIntervalMs: 500,
    agentTimeoutMs: 120_000,
    amTimeoutMs: 30_000,
    etcdQuotaBytes: 24 * 1024 * 1024,
    logLevel: 'info',
  });
  const h = new HistoryRecorder(Date.now, 60_000);
  const workload = new Workload(h, {
    masters: hc.ha.masterAddresses,
    transport: hc.ha.transport(),
    clients: o.clients ?? 4,
    thinkMs: [200, 1200],
    maxActive: 10,
    seed,
    patience: [
      { retryForMs: 8_000, deadlineMs: 4_000 },
      { retryForMs: 1_000, deadlineMs: 1_500 },
    ],
  });
  const nemesis = new Nemesis(hc, {
    holdMs: o.holdMs ?? [1500, 4000],
    gapMs: o.gapMs ?? [500, 2000],
    leaseTtlMs: LEASE_TTL_SEC * 1000,
    fillPrefix: '/history-fill/',
    rand: rng(seed + 7),
    log,
  });
  let tNemesis = 0;
  let tFinish = 0;
  try {
    workload.start();
    await sleep(o.warmupMs ?? 5000);
    log(`nemesis: ${o.faults} faults`);
    tNemesis = Date.now();
    await nemesis.run(o.faults);
    tNemesis = Date.now() - tNemesis;
    log('healing; clients stop');
    await workload.stop();
    await nemesis.healAll();
    if (!(await nemesis.settle(120_000))) log('no serving leader and healthy etcd within 120 s of healing');
    hc.watchAll();

    tFinish = Date.now();
    const final = await observe(hc, o.finishTimeoutMs ?? 180_000, log);
    tFinish = Date.now() - tFinish;
    const res = checkHistory(h.ops, final);
    writeFileSync(join(o.dir, 'history.jsonl'), h.ops.map((op) => JSON.stringify(op)).join('\n') + '\n');
    writeFileSync(join(o.dir, 'final.json'), JSON.stringify(final, null, 1));
    const counts = h.counts();
    const summary: HistorySummary = {
      operations: counts.operations,
      acknowledged: res.acknowledged,
      unknown: counts.unknown,
      faults: nemesis.counts(),
      lost: res.counts.lost,
      duplicated: res.counts.duplicated,
      phantom: res.counts.phantom,
      orphanWorkers: res.counts.orphanWorker,
      daemonExits: res.counts.daemonExit,
      vanished: res.counts.vanished,
      regressed: res.counts.regressed,
      wrongEnd: res.counts.wrongEnd,
      failed: res.counts.failed,
      unfinished: res.counts.unfinished,
      safetyAnomalies: res.anomalies.filter((a) => SAFETY_KINDS.has(a.kind)).length,
      faultsTotal: nemesis.faults.length,
      faultVariants: nemesis.variants(),
      settleTimeouts: nemesis.settleTimeouts,
      callsByType: counts.byType,
      jobsAtEnd: final.jobs.length,
      endStates: res.endStates,
      durationMs: { total: Date.now() - t0, nemesis: tNemesis, finish: tFinish },
      anomalies: res.anomalies.slice(0, 100),
      faultLog: nemesis.faults.map((f) => ({
        kind: f.kind,
        variant: f.variant,
        targets: f.targets,
        atMs: f.startMs - t0,
        heldMs: f.healedMs - f.startMs,
        ...(f.note ? { note: f.note } : {}),
      })),
      seed,
      logs: o.dir,
    };
    if (o.out) {
      mkdirSync(dirname(o.out), { recursive: true });
      writeFileSync(o.out, JSON.stringify(summary, null, 2) + '\n');
    }
    return summary;
  } finally {
    nemesis.stop();
    await workload.stop().catch(() => undefined);
    await hc.stop();
  }
}

/**
 * The state after healing: waits (up to `timeoutMs`) until every listed job is terminal and no
 * worker of a terminal job runs any more, then takes the last look.
 */
async function observe(hc: HistoryCluster, timeoutMs: number, log: (s: string) => void): Promise<FinalState> {
  const client = hc.ha.client({ retryForMs: 30_000, deadlineMs: 10_000 });
  try {
    const until = Date.now() + timeoutMs;
    let jobs: JobView[] = [];
    let lastNote = 0;
    for (;;) {
      jobs = (await client.list()).map((j) => ({ jobId: j.jobId, state: j.state, name: j.name }));
      const open = jobs.filter((j) => !TERMINAL.has(j.state));
      const workers = (await hc.runningWorkers()).filter((w) => {
        const st = jobs.find((j) => j.jobId === w.jobId)?.state;
        return st === undefined || TERMINAL.has(st);
      });
      if ((open.length === 0 && workers.length === 0) || Date.now() > until) break;
      if (Date.now() - lastNote > 15_000) {
        lastNote = Date.now();
        log(`waiting: ${open.length} jobs not finished, ${workers.length} workers of finished jobs still running`);
      }
      await sleep(1000);
    }
    return { jobs, workers: await hc.runningWorkers(), daemonExits: [...hc.daemonExits] };
  } finally {
    client.close();
  }
}
