/**
 * The fault matrix: every row of the paper's Table 3 (docs/design.md, "Failover")
 * injected into a real cluster (a real etcd, three masters, two agents, real application masters
 * and real workers, all separate processes on loopback):
 *
 * - crash = `kill -9` (the leader, an agent, a dedicated AM's process group, the AM host; a crashed
 *   agent is started again a second later with the same flags and work dir, while a crashed
 *   master's standby takes over); a hosted AM (the default) crashes alone by an exception inside it,
 *   which the host's wall turns into its end;
 * - timing failure = SIGSTOP held past the component's detection threshold (an agent past
 *   `agentTimingOutMs`, well before `agentTimeoutMs`; an AM or the AM host past `amStallTimeoutMs`;
 *   with a master crash in the row, until the new leader has finished its recovery without them),
 *   then SIGCONT; a hosted AM stalls alone (its master traffic and inputs held by the host), then resumes;
 * - faults of one row are injected within the same millisecond or so.
 *
 * Each row runs two jobs (one `wait`, one `rerun` with a threshold far above the holds) whose
 * instances run on every node and wait for a release file. Before the fault every worker is
 * recorded (node, worker id, pid); once every component has recovered the agents' lists are
 * compared with it, then the jobs are released and must both succeed. The check is the paper's
 * C2: no healthy worker restarted, every job completes, instances re-run only where a node died or
 * a batch job's threshold passed.
 *
 * One HA cluster serves every row (healed between rows; rebuilt only if healing fails). Results go
 * to bench-results/fault-matrix.json (always, also when rows fail). `FUXI_FAULT_ROWS=8-13` runs a
 * subset; `FUXI_FAULT_KEEP=1` keeps the logs.
 */
import { expect } from 'chai';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FuxiClient } from '@fuxi/client';
import { isAlive, type ClusterPlacement, type LeaderInfo, type LogRecord, removeTree } from '@fuxi/deploy';
import type { JobInfo__Output } from '@fuxi/proto';
import type { EtcdProcess } from '../etcd-harness.js';
import { job, sleep, until } from '../harness.js';
import { FaultCluster, isWorkerWrapper, TIMINGS } from './fault-cluster.js';
import { allowedReschedules, isAmWorker, rescheduledInstances, restartedHealthyWorkers, workerKey, type WorkerRef } from './metrics.js';
import { scenarioLabel, type Scenario } from './scenarios.js';

const here = dirname(fileURLToPath(import.meta.url));
/** The repository root (this file is test/dist/faults/fault-matrix.test.js). */
const REPO = join(here, '..', '..', '..');
/** Where the loopback suite writes its results. */
export const FAULT_MATRIX_OUT = process.env.FUXI_FAULT_MATRIX_OUT ?? join(REPO, 'bench-results', 'fault-matrix.json');

/** Instances per node per job (each job has one task per node, with that node as locality hint). */
const INSTANCES_PER_NODE = 2;
/** The `rerun` job's threshold: far above every hold, so no instance may be re-run. */
const RERUN_AFTER_MS = 60_000;
/** A crashed agent is started again this long after the kill (while a crashed master is still failing over). */
const AGENT_RESTART_DELAY_MS = 1000;
/** A stopped agent is held at least this long (past agentTimingOutMs). */
const AGENT_MIN_HOLD_MS = 2500;
/** With a master crash in the row, stopped components are resumed this long after the new leader recovered. */
const AFTER_RECOVERY_HOLD_MS = 1000;
const JOB_END_TIMEOUT_MS = 45_000;

/** Master lines that show a timing-out agent is back (per nodeId). */
const AGENT_BACK_MSGS = ['agent back from timing out: nothing lost', 'agent state adopted', 'agent re-registered', 'agent is back'];
/** Master lines worth showing in a failed row's excerpt besides warnings. */
const NOTABLE = new Set([
  'became leader',
  'recovery complete',
  'soft state recovered; scheduling resumes',
  'restarting the application master',
  'application master registered',
  'application state adopted',
  'agent state adopted',
  'agent timing out: slots reserved',
  'agent back from timing out: nothing lost',
  'job ended',
]);

/** Each worker sleeps until the row's release file exists, then appends its pid to `done-<job>-<task>-<instance>-<attempt>`. */
const HOLD = 'while [ ! -e "$FAULT_DIR/release" ]; do sleep 0.3; done; echo "$$" >> "$FAULT_DIR/done-$1-$2-$3-$4"';

type Ms = number | null;

/** One row of bench-results/fault-matrix.json. */
interface Row {
  scenario: string;
  no: number;
  faults: { fm: string | null; am: string | null; agent: string | null; amHost: string | null };
  expectedFsm: string;
  jobsCompleted: number | null;
  jobsFailed: number | null;
  jobsUnfinished: number | null;
  healthyWorkersRestarted: number | null;
  instancesRescheduled: number | null;
  allowedReschedules: number | null;
  recoveryMs: { master: Ms; agent: Ms; am: Ms };
  passed: boolean;
  problems: string[];
  durationMs: number;
  detail: Record<string, unknown>;
  logExcerpt?: string[];
}

const errorMessage = (e: unknown): string => (e instanceof Error ? e.message : String(e));
const terminal = (s: string) => s === 'JOB_STATE_SUCCEEDED' || s === 'JOB_STATE_FAILED' || s === 'JOB_STATE_KILLED';
const say = (s: string) => process.stderr.write(`      [faults ${new Date().toISOString().slice(11, 23)}] ${s}\n`);

function rowJob(id: string, rowDir: string, nodes: readonly string[], policy: 'wait' | 'rerun') {
  return job({
    id,
    name: id,
    env: { FAULT_DIR: rowDir },
    onAgentTimeout: policy,
    ...(policy === 'rerun' ? { rerunAfterMs: RERUN_AFTER_MS } : {}),
    tasks: nodes.map((n) => ({
      name: `on-${n}`,
      instances: INSTANCES_PER_NODE,
      resources: { cpu: 0.2, memory: 64 },
      command: ['sh', '-c', HOLD, 'hold', '${job}', '${task}', '${instance}', '${attempt}'],
      locality: { nodes: [n] },
      maxAttempts: 3,
    })),
  });
}

/** Polls the leader's fault FSM while a row runs; keeps every change. */
function watchFsm(client: FuxiClient, t0: () => number) {
  const seen: Array<{ atMs: number; state: string; open: string[] }> = [];
  let stopped = false;
  const loop = (async () => {
    let last = '';
    while (!stopped) {
      try {
        const st = await client.clusterStatus();
        const open = st.openEvents.map((e) => `${e.kind}:${e.subject || '-'}`).sort();
        const key = `${st.fsmState}|${open.join(',')}`;
        if (key !== last) {
          last = key;
          seen.push({ atMs: Date.now() - t0(), state: st.fsmState, open });
        }
      } catch {
        /* no leader right now */
      }
      await sleep(200);
    }
  })();
  return {
    seen,
    last: () => seen[seen.length - 1],
    async stop() {
      stopped = true;
      await loop;
    },
  };
}

/**
 * Per job: the agent-timeout policy it was submitted with, the one GetJob's spec shows, and the
 * one each of its AM attempts logged at start ("job started"), each as `policy/rerunAfterMs`.
 */
function policyCheck(
  c: FaultCluster,
  specs: ReadonlyArray<{ jobId: string; onAgentTimeout: string; rerunAfterMs: number }>,
  finals: readonly JobInfo__Output[],
) {
  return specs.map((spec) => {
    const am: string[] = [];
    for (const agent of c.agents) {
      const appDir = join(agent.workDir, 'apps', spec.jobId);
      if (!existsSync(appDir)) continue;
      for (const w of readdirSync(appDir).filter((x) => x.startsWith('am.'))) {
        for (const line of FaultCluster.tail(FaultCluster.workerStdout(agent, spec.jobId, w), 100_000)) {
          if (!line.includes('"job started"')) continue;
          try {
            const r = JSON.parse(line) as { onAgentTimeout?: string; rerunAfterMs?: number };
            am.push(`${String(r.onAgentTimeout)}/${String(r.rerunAfterMs)}`);
          } catch {
            /* partial line */
          }
        }
      }
    }
    const info = finals.find((j) => j.jobId === spec.jobId);
    return {
      jobId: spec.jobId,
      asked: `${spec.onAgentTimeout}/${spec.rerunAfterMs}`,
      spec: info?.spec ? `${info.spec.onAgentTimeout || '(unset)'}/${info.spec.rerunAfterMs}` : '?',
      am,
    };
  });
}

/** What a fault-matrix suite runs on: loopback (`fault-matrix.test.ts`) or the rack (`rack/`). */
export interface FaultMatrixOptions {
  title: string;
  scenarios: Scenario[];
  /** Where the results go (JSON). */
  out: string;
  /** Makes the etcd (and whatever it runs on) before the first row. */
  setup(): Promise<EtcdProcess>;
  /** Where the daemons run (undefined: loopback). */
  placement?(): ClusterPlacement | undefined;
  /** After the last row (the etcd is stopped already): e.g. remove the rack. */
  teardown?(): Promise<void>;
}

/** Defines the suite: one `it` per scenario, one HA cluster healed between rows. */
export function defineFaultMatrix(o: FaultMatrixOptions): void {
  describe(o.title, function () {
    // A row takes 5-10 s when things work; the bound covers every wait of a row timing out.
    this.timeout(240_000);
    const startedAt = Date.now();
    const rows: Row[] = [];
    /** Every worker / AM pid seen: their groups are killed at the end if they still run. */
    const pids = new Set<number>();
    let etcd: EtcdProcess | undefined;
    let fc: FaultCluster | undefined;
    let dir = '';
    let generation = 0;
    let setupError = '';
    let anyFailed = false;

    async function newCluster(): Promise<FaultCluster> {
      generation++;
      const d = join(dir, `cluster-${generation}`);
      mkdirSync(d, { recursive: true });
      const placement = o.placement?.();
      return FaultCluster.start({ dir: d, etcdEndpoint: etcd!.endpoint, prefix: `/faults-${generation}/`, ...(placement ? { placement } : {}) });
    }

    before(async function () {
      this.timeout(90_000);
      try {
        etcd = await o.setup();
        dir = mkdtempSync(join(tmpdir(), 'fuxi-faults-'));
        chmodSync(dir, 0o711); // the agents' unprivileged worker user passes through to its directories
        fc = await newCluster();
      } catch (e) {
        setupError = errorMessage(e);
        throw e;
      }
    });

    beforeEach(async function () {
      this.timeout(90_000);
      if (!fc) throw new Error(`no cluster: ${setupError}`);
      try {
        const did = await fc.heal();
        if (did.length) say(`healed: ${did.join(', ')}`);
      } catch (e) {
        say(`healing failed (${errorMessage(e)}); starting a fresh cluster`);
        await fc.stop(pids).catch(() => undefined);
        fc = await newCluster();
      }
    });

    afterEach(function () {
      if (this.currentTest?.state !== 'passed') anyFailed = true;
    });

    after(async function () {
      this.timeout(90_000);
      writeResults();
      await fc?.stop(pids).catch((e: unknown) => say(`stopping the cluster: ${errorMessage(e)}`));
      await etcd?.stop();
      await o.teardown?.();
      const keep = anyFailed || !!setupError || process.env.FUXI_FAULT_KEEP === '1';
      if (dir && !keep) removeTree(dir);
      else if (dir) process.stderr.write(`  (fault matrix logs kept in ${dir})\n`);
    });

    function writeResults(): void {
      const failed = rows.filter((r) => !r.passed).map((r) => r.no);
      const out = {
        generatedAt: new Date().toISOString(),
        durationMs: Date.now() - startedAt,
        host: { cpus: cpus().length },
        cluster: {
          ...TIMINGS,
          instancesPerNode: INSTANCES_PER_NODE,
          jobsPerRow: 2,
          rerunAfterMs: RERUN_AFTER_MS,
          agentRestartDelayMs: AGENT_RESTART_DELAY_MS,
          clustersStarted: generation,
        },
        definitions: {
          healthyWorkersRestarted:
            'task workers running before the fault (no node died) that afterwards were not running as the same pid, ended other than by succeeding, or whose instance ran again elsewhere',
          instancesRescheduled: "max(sum of the jobs' task retries, instances the agents list as having run again: another node, worker id, pid or attempt)",
          allowedReschedules: "instances on nodes that died, plus a rerun job's instances on an agent timing out longer than its rerunAfterMs",
          'recoveryMs.master': 'kill -9 of the leader -> the new leader logs "recovery complete"',
          'recoveryMs.agent':
            'the agent\'s own failover: restarted process -> its "first heartbeat answered" (crash), or SIGCONT -> the master hearing from it again (timing); detail.agent.faultToRecoveredMs includes the detection/restart delay',
          'recoveryMs.am':
            "the AM's failover: the master starting the next attempt (after detecting the crash or stall) -> that attempt registered (or, for an AM stalled across a master failover, SIGCONT -> its state adopted by the new leader); detail.am.faultToRecoveredMs includes detection",
        },
        ...(setupError ? { setupError } : {}),
        summary: { rows: rows.length, passed: rows.length - failed.length, failed },
        rows,
      };
      try {
        mkdirSync(dirname(o.out), { recursive: true });
        writeFileSync(o.out, JSON.stringify(out, null, 2) + '\n');
        process.stderr.write(`  fault matrix: ${out.summary.passed}/${rows.length} rows passed; written to ${o.out}\n`);
      } catch (e) {
        process.stderr.write(`  could not write ${o.out}: ${errorMessage(e)}\n`);
      }
    }

    for (const s of o.scenarios) {
      it(`row ${scenarioLabel(s)}: no healthy worker restarted, both jobs complete`, async function () {
        const row: Row = {
          scenario: scenarioLabel(s),
          no: s.no,
          faults: { fm: s.fm ?? null, am: s.am ?? null, agent: s.agent ?? null, amHost: s.amHost ?? null },
          expectedFsm: s.fsm,
          jobsCompleted: null,
          jobsFailed: null,
          jobsUnfinished: null,
          healthyWorkersRestarted: null,
          instancesRescheduled: null,
          allowedReschedules: null,
          recoveryMs: { master: null, agent: null, am: null },
          passed: false,
          problems: [],
          durationMs: 0,
          detail: { cluster: generation },
        };
        rows.push(row);
        const began = Date.now();
        try {
          await runRow(s, row);
        } catch (e) {
          row.problems.push(errorMessage(e));
        } finally {
          row.durationMs = Date.now() - began;
        }
        const beyond = Math.max(0, (row.instancesRescheduled ?? 0) - (row.allowedReschedules ?? 0));
        row.passed = row.problems.length === 0 && row.jobsCompleted === 2 && row.jobsFailed === 0 && row.healthyWorkersRestarted === 0 && beyond === 0;
        say(
          `row ${row.scenario}: ${row.passed ? 'ok' : 'FAILED'} completed=${row.jobsCompleted} failed=${row.jobsFailed} restarted=${row.healthyWorkersRestarted} rescheduled=${row.instancesRescheduled}` +
            ` recovery master=${row.recoveryMs.master} agent=${row.recoveryMs.agent} am=${row.recoveryMs.am} (${row.durationMs} ms)`,
        );
        if (!row.passed) row.logExcerpt = excerpt(row);
        expect(
          {
            jobsCompleted: row.jobsCompleted,
            jobsFailed: row.jobsFailed,
            healthyWorkersRestarted: row.healthyWorkersRestarted,
            rescheduledBeyondAllowed: beyond,
          },
          `row ${row.scenario}; problems: ${row.problems.join(' | ') || 'none'}`,
        ).to.deep.equal({ jobsCompleted: 2, jobsFailed: 0, healthyWorkersRestarted: 0, rescheduledBeyondAllowed: 0 });
        expect(row.problems, `row ${row.scenario}`).to.deep.equal([]);
      });
    }

    /** Master warnings and notable lines, agent warnings and the target AM's last lines, around the row. */
    function excerpt(row: Row): string[] {
      const from = Number(row.detail.t0 ?? Date.now() - row.durationMs) - 1000;
      const to = Number(row.detail.t0 ?? 0) + row.durationMs + 1000;
      const lines: string[] = [];
      const fmt = (who: string, r: LogRecord) => {
        const { msg, pid, timeMs, time: _t, level, hostname: _h, name: _n, ...rest } = r as LogRecord & Record<string, unknown>;
        return `${new Date(timeMs).toISOString().slice(11, 23)} ${who} pid ${pid} ${Number(level) >= 50 ? 'ERROR' : Number(level) >= 40 ? 'WARN' : 'info'} ${msg} ${JSON.stringify(rest).slice(0, 300)}`;
      };
      if (!fc) return lines;
      fc.masterLogs.forEach((t, i) => {
        t.poll();
        for (const r of t.records)
          if (r.timeMs >= from && r.timeMs <= to && (Number(r.level) >= 40 || NOTABLE.has(r.msg))) lines.push(fmt(`master-${i + 1}`, r));
      });
      fc.agents.forEach((a, i) => {
        const t = fc!.agentLog(i);
        t.poll();
        for (const r of t.records) if (r.timeMs >= from && r.timeMs <= to && Number(r.level) >= 40) lines.push(fmt(a.nodeId, r));
      });
      lines.sort();
      const out = lines.slice(0, 60);
      if (lines.length > 60) out.push(`... ${lines.length - 60} more lines`);
      const am = row.detail.am as { appId?: string; node?: string } | undefined;
      if (am?.appId && am.node) {
        const agent = fc.agents.find((a) => a.nodeId === am.node);
        if (agent) {
          for (let attempt = 1; attempt <= 6; attempt++) {
            const tail = FaultCluster.tail(FaultCluster.workerStdout(agent, am.appId, `am.${attempt}`), 8);
            if (tail.length) out.push(`--- ${am.node} ${am.appId} am.${attempt} stdout (last lines)`, ...tail.map((l) => l.slice(0, 400)));
          }
        }
      }
      return out;
    }

    async function runRow(s: Scenario, row: Row): Promise<void> {
      const c = fc!;
      const detail = row.detail;
      const client = c.client({ retryForMs: 60_000, deadlineMs: 5000 });
      const fsmClient = c.client({ retryForMs: 500, deadlineMs: 1000 });
      let t0 = 0;
      const fsm = watchFsm(fsmClient, () => t0 || Date.now());
      const rowDir = join(dir, `row-${s.no}`);
      mkdirSync(rowDir, { recursive: true });
      // The jobs' workers (the agents' unprivileged worker user) leave their marks here.
      chmodSync(rowDir, 0o1777);
      const nodes = c.agents.map((a) => a.nodeId);
      const stamp = Date.now().toString(36);
      const specs = [rowJob(`r${s.no}-wait-${stamp}`, rowDir, nodes, 'wait'), rowJob(`r${s.no}-rerun-${stamp}`, rowDir, nodes, 'rerun')];
      const jobIds = specs.map((x) => x.jobId);
      const policies = new Map(specs.map((x) => [x.jobId, { policy: x.onAgentTimeout, rerunAfterMs: x.rerunAfterMs }] as const));
      detail.jobs = jobIds;
      let released = false;
      let agentStopped = -1;
      let amStopped: { pid: number; appId: string; hosted?: WorkerRef } | undefined;
      let hostStopped: string | undefined;
      try {
        // ---------------------------------------------------------------- both jobs running everywhere
        for (const spec of specs) await client.submit(spec);
        const perJob = nodes.length * INSTANCES_PER_NODE;
        const before = await until(
          `both jobs' AMs and ${perJob} instances each running with pids, on every node`,
          async () => {
            const ws = (await c.workers()).filter((w) => jobIds.includes(w.appId) && w.state === 'WORKER_STATE_RUNNING' && w.pid > 0);
            for (const id of jobIds) {
              const mine = ws.filter((w) => w.appId === id);
              if (mine.filter(isAmWorker).length !== 1) return undefined;
              const tasks = mine.filter((w) => !isAmWorker(w));
              if (tasks.length !== perJob) return undefined;
              if (!nodes.every((n) => tasks.some((w) => w.nodeId === n))) return undefined;
            }
            return ws;
          },
          60_000,
          200,
        );
        for (const w of before) pids.add(w.pid);
        detail.workersBefore = before.filter((w) => !isAmWorker(w)).map((w) => `${workerKey(w)}:${w.pid}`);
        detail.fsmAtStart = (await client.clusterStatus().catch(() => undefined))?.fsmState ?? null;

        // ---------------------------------------------------------------- targets
        const amJob = jobIds[0]!;
        const amWorker = before.find((w) => w.appId === amJob && isAmWorker(w))!;
        const amAttemptBefore = (await client.get(amJob)).amAttempt || amWorker.attempt;
        const agentIdx = s.agent
          ? s.am
            ? c.agents.findIndex((a) => a.nodeId !== amWorker.nodeId)
            : c.agents.findIndex((a) => a.nodeId === amWorker.nodeId)
          : -1;
        const agent = agentIdx >= 0 ? c.agents[agentIdx]! : undefined;
        // The AM fault of the row: of the target AM alone (`am`), or of the AM host that holds it (`amHost`).
        const amFault = s.am ?? s.amHost;
        const hosted = c.isHosted(amWorker);
        if (s.amHost && !hosted) throw new Error(`the AM of ${amJob} is not hosted (pid ${amWorker.pid}): no AM host to fail`);
        if (amFault)
          detail.am = {
            appId: amJob,
            node: amWorker.nodeId,
            pid: amWorker.pid,
            attemptBefore: amAttemptBefore,
            hosted,
            ...(s.amHost
              ? { hostedAms: before.filter((w) => isAmWorker(w) && w.nodeId === amWorker.nodeId && w.pid === amWorker.pid).map((w) => w.appId) }
              : {}),
          };
        /** The target AM (attempt before the fault) no longer runs. */
        const oldAmGone = async (): Promise<boolean> => (hosted ? !(await c.hostedAmRunning(amWorker)) : !isWorkerWrapper(amWorker.pid, amJob));
        if (agent) detail.agent = { node: agent.nodeId, pid: agent.pid };
        let oldLeader: LeaderInfo | undefined;
        if (s.fm) {
          oldLeader = await c.ha.waitForLeader();
          detail.master = { killed: oldLeader.master.name, pid: oldLeader.master.pid, epochBefore: oldLeader.epoch };
        }

        // ---------------------------------------------------------------- inject, all at once
        t0 = Date.now();
        detail.t0 = t0;
        if (oldLeader) c.ha.kill(oldLeader.master, 'SIGKILL');
        if (s.am === 'crash' && !(hosted ? await c.faultHostedAm(amWorker, 'throw') : c.signalWorkerGroup(amWorker.pid, amJob, 'SIGKILL')))
          throw new Error(`AM of ${amJob} (pid ${amWorker.pid}${hosted ? ', hosted' : ''}) was gone before the crash`);
        if (s.am === 'timing') {
          if (!(hosted ? await c.faultHostedAm(amWorker, 'pause') : c.signalWorkerGroup(amWorker.pid, amJob, 'SIGSTOP')))
            throw new Error(`AM of ${amJob} (pid ${amWorker.pid}${hosted ? ', hosted' : ''}) was gone before its stall`);
          amStopped = { pid: amWorker.pid, appId: amJob, ...(hosted ? { hosted: amWorker } : {}) };
        }
        if (s.amHost === 'crash' && !c.signalAmHost(amWorker.nodeId, 'SIGKILL')) throw new Error(`the AM host of ${amWorker.nodeId} was gone before the kill`);
        if (s.amHost === 'timing') {
          if (!c.signalAmHost(amWorker.nodeId, 'SIGSTOP')) throw new Error(`the AM host of ${amWorker.nodeId} was gone before SIGSTOP`);
          hostStopped = amWorker.nodeId;
        }
        if (agent && s.agent === 'crash') c.signalAgent(agentIdx, 'SIGKILL');
        if (agent && s.agent === 'timing') {
          c.signalAgent(agentIdx, 'SIGSTOP');
          agentStopped = agentIdx;
        }
        detail.injectSpreadMs = Date.now() - t0;
        say(
          `row ${row.scenario}: injected (${[
            s.fm && `kill -9 ${oldLeader!.master.name}`,
            s.am && `${s.am} ${hosted ? 'hosted ' : ''}AM ${amJob} on ${amWorker.nodeId}`,
            s.amHost && `${s.amHost} of the AM host of ${amWorker.nodeId} (AM ${amJob})`,
            s.agent && `${s.agent} ${agent!.nodeId}`,
          ]
            .filter(Boolean)
            .join(', ')})`,
        );

        // ---------------------------------------------------------------- recover
        const fmTask = (async () => {
          if (!oldLeader) return;
          const next = await c.ha.waitForLeader({ notPids: [oldLeader.master.pid], afterEpoch: oldLeader.epoch, timeoutMs: 30_000 });
          const rec = await c.ha.waitForRecovery(next.master, next.epoch, 30_000);
          row.recoveryMs.master = rec.timeMs - t0;
          Object.assign(detail.master as object, {
            newLeader: next.master.name,
            epoch: next.epoch,
            takeoverMs: next.record.timeMs - t0,
            leaderRecoveredMs: rec.recoveredMs ?? null,
            aggregationMs: rec.aggregationMs ?? null,
            agentsMissing: rec.agentsMissing ?? null,
            appsMissing: rec.appsMissing ?? null,
          });
        })();
        const fmSettled = fmTask.then(
          () => undefined,
          () => undefined,
        );

        const agentTask = (async () => {
          if (!agent) return;
          const d = detail.agent as Record<string, unknown>;
          if (s.agent === 'crash') {
            await sleep(AGENT_RESTART_DELAY_MS);
            const restartAt = Date.now();
            const a = await c.restartAgent(agentIdx);
            d.restartedPid = a.pid;
            d.restartedAfterMs = Date.now() - t0;
            const log = c.agentLog(agentIdx);
            const rec = await log.waitFor((r) => r.pid === a.pid && r.msg === 'first heartbeat answered', {
              what: `"first heartbeat answered" from the restarted ${a.nodeId}`,
              child: a.child,
              timeoutMs: 30_000,
            });
            // The agent's own failover: restarted process -> re-adopted workers, grants back, heartbeating.
            row.recoveryMs.agent = rec.timeMs - restartAt;
            d.faultToRecoveredMs = rec.timeMs - t0;
            const restored = log.last((r) => r.pid === a.pid && r.msg === 'restarted from the local checkpoint');
            d.restored = restored ? { adopted: restored.adopted, ended: restored.ended, pending: restored.pending, grants: restored.grants } : null;
            if (!restored) throw new Error(`the restarted ${a.nodeId} did not log "restarted from the local checkpoint"`);
            return;
          }
          let resumeAt = 0;
          try {
            if (oldLeader) {
              await fmSettled;
              await sleep(AFTER_RECOVERY_HOLD_MS);
            } else {
              await c.waitMasterRecord(
                (r) => r.msg === 'agent timing out: slots reserved' && r.nodeId === agent.nodeId && r.timeMs >= t0,
                `"agent timing out: slots reserved" for ${agent.nodeId}`,
                10_000,
              );
              await sleep(500);
            }
            const minUntil = t0 + AGENT_MIN_HOLD_MS;
            if (Date.now() < minUntil) await sleep(minUntil - Date.now());
          } finally {
            resumeAt = Date.now();
            c.signalAgent(agentIdx, 'SIGCONT');
            agentStopped = -1;
            d.heldMs = resumeAt - t0;
          }
          const rec = await c.waitMasterRecord(
            (r) => AGENT_BACK_MSGS.includes(r.msg) && r.nodeId === agent.nodeId && r.timeMs >= resumeAt - 20,
            `the master hearing from ${agent.nodeId} again`,
            20_000,
          );
          // Detection is the timing threshold itself; recovery is from the agent running again.
          row.recoveryMs.agent = rec.timeMs - resumeAt;
          d.faultToRecoveredMs = rec.timeMs - t0;
          d.backVia = rec.msg;
        })();

        const amTask = (async () => {
          if (!amFault) return;
          const d = detail.am as Record<string, unknown>;
          let resumeAt = t0;
          if (amFault === 'timing') {
            try {
              if (oldLeader) {
                await fmSettled;
                await sleep(AFTER_RECOVERY_HOLD_MS);
              } else {
                await c.waitMasterRecord(
                  (r) => r.msg === 'restarting the application master' && r.appId === amJob && r.timeMs >= t0,
                  `"restarting the application master" for ${amJob}`,
                  TIMINGS.amStallTimeoutMs + 10_000,
                );
                await sleep(300);
              }
              const minUntil = t0 + TIMINGS.amStallTimeoutMs + 500;
              if (Date.now() < minUntil) await sleep(minUntil - Date.now());
            } finally {
              resumeAt = Date.now();
              if (s.amHost) {
                c.signalAmHost(amWorker.nodeId, 'SIGCONT');
                hostStopped = undefined;
              } else if (hosted) await c.faultHostedAm(amWorker, 'resume');
              else c.signalWorkerGroup(amWorker.pid, amJob, 'SIGCONT');
              amStopped = undefined;
              d.heldMs = resumeAt - t0;
            }
          }
          const rec = await c.waitMasterRecord(
            (r) =>
              r.appId === amJob &&
              r.timeMs >= t0 &&
              ((r.msg === 'application master registered' && Number(r.attempt) > amAttemptBefore) ||
                (amFault === 'timing' && !!oldLeader && r.msg === 'application state adopted' && r.timeMs >= resumeAt - 20)),
            `the AM of ${amJob} back (attempt > ${amAttemptBefore} registered${amFault === 'timing' && oldLeader ? ', or the stalled one reporting to the new leader' : ''})`,
            30_000,
          );
          // The AM's failover: from the master starting the new attempt (after detecting the crash or
          // the stall) to that attempt registered; for a stalled AM that reports after a master
          // failover instead, from its resumption.
          const restarting =
            rec.msg === 'application master registered'
              ? c.masterRecords((r) => r.msg === 'restarting the application master' && r.appId === amJob && r.timeMs >= t0 && r.timeMs <= rec.timeMs).at(-1)
              : undefined;
          const from = restarting ? restarting.timeMs : rec.msg === 'application master registered' ? t0 : resumeAt;
          row.recoveryMs.am = rec.timeMs - from;
          d.faultToRecoveredMs = rec.timeMs - t0;
          d.recoveredVia =
            rec.msg === 'application master registered' ? `attempt ${String(rec.attempt)} registered` : 'the stalled attempt reported to the new leader';
          if (rec.msg === 'application master registered') {
            // The replaced attempt must be gone (fenced, or killed by its agent).
            const gone = await until('the old AM attempt to end', oldAmGone, 10_000, 100).catch(() => false);
            d.oldAttemptEnded = gone;
            if (!gone)
              throw new Error(
                `AM attempt ${amAttemptBefore} of ${amJob} (pid ${amWorker.pid}) still runs 10 s after attempt ${String(rec.attempt)} registered`,
              );
          }
        })();

        const results = await Promise.allSettled([fmTask, agentTask, amTask]);
        for (const r of results) if (r.status === 'rejected') row.problems.push(errorMessage(r.reason));

        // ---------------------------------------------------------------- settle, compare, release
        const settled = await until(
          'the fault FSM back to S0 with no open events',
          () => fsm.last()?.state === 'S0' && fsm.last()?.open.length === 0,
          10_000,
          100,
        ).catch(() => false);
        detail.fsmSettledMs = settled ? Date.now() - t0 : null;
        if (!settled)
          row.problems.push(
            `the fault FSM did not return to S0 with no open events within 10 s of recovery (last seen: ${JSON.stringify(fsm.last() ?? null)})`,
          );
        const nodesUp = (await c.ha.agentStates()).length;
        if (nodesUp !== nodes.length) row.problems.push(`only ${nodesUp} of ${nodes.length} agents answer GetAgentState after recovery`);
        const afterRecovery = await c.workers();
        const aliveAtCheck = new Map(before.map((w) => [workerKey(w), isAlive(w.pid)] as const));
        for (const w of afterRecovery) if (w.pid > 0) pids.add(w.pid);

        writeFileSync(join(rowDir, 'release'), '');
        released = true;
        const finals: JobInfo__Output[] = [];
        let unfinished = 0;
        const jobsDeadline = Date.now() + JOB_END_TIMEOUT_MS;
        for (const id of jobIds) {
          const info = await until(
            `job ${id} to end`,
            async () => {
              const j = await client.get(id);
              return terminal(j.state) ? j : undefined;
            },
            Math.max(1000, jobsDeadline - Date.now()),
            250,
          ).catch(async (e: unknown) => {
            unfinished++;
            const j = await client.get(id).catch(() => undefined);
            row.problems.push(
              `${errorMessage(e)} (state ${j?.state ?? '?'}, AM attempt ${j?.amAttempt ?? '?'}, tasks ${JSON.stringify(j?.tasks.map((t) => [t.name, t.running, t.succeeded, t.failed, t.retries]) ?? [])})`,
            );
            await client.kill(id, 'fault matrix: did not end in time').catch(() => undefined);
            return undefined;
          });
          if (info) finals.push(info);
        }
        const final = await c.workers();

        // ---------------------------------------------------------------- measure
        row.jobsCompleted = finals.filter((j) => j.state === 'JOB_STATE_SUCCEEDED').length;
        row.jobsFailed = finals.filter((j) => j.state !== 'JOB_STATE_SUCCEEDED').length;
        row.jobsUnfinished = unfinished;
        for (const j of finals) if (j.state !== 'JOB_STATE_SUCCEEDED') row.problems.push(`job ${j.jobId} ${j.state}: ${j.message}`);
        detail.jobResults = finals.map((j) => ({
          jobId: j.jobId,
          state: j.state,
          amAttempt: j.amAttempt,
          tasks: j.tasks.map((t) => ({ name: t.name, succeeded: t.succeeded, failed: t.failed, retries: t.retries })),
        }));

        const restarted = restartedHealthyWorkers({ before, afterRecovery, final, aliveAtCheck });
        row.healthyWorkersRestarted = restarted.length;
        if (restarted.length) detail.restartedWorkers = restarted;

        const resched = rescheduledInstances(
          finals.map((j) => ({ appId: j.jobId, tasks: j.tasks })),
          before,
          [...afterRecovery, ...final],
        );
        row.instancesRescheduled = Math.max(resched.byRetries, resched.byRuns);
        if (resched.instances.length) detail.rescheduled = resched.instances;
        const held = (detail.agent as { heldMs?: number } | undefined)?.heldMs;
        const timingNodes = new Map<string, number>(
          agent && s.agent === 'timing' && held !== undefined ? [[agent.nodeId, held + TIMINGS.heartbeatIntervalMs]] : [],
        );
        row.allowedReschedules = allowedReschedules({ before, deadNodes: new Set(), timingNodes, policies });

        // Nothing acknowledged is lost, nothing ran twice: every instance of a completed job ran to
        // its end exactly once (its done files hold one pid per run).
        const runs = new Map<string, number>();
        for (const f of readdirSync(rowDir).filter((x) => x.startsWith('done-'))) {
          const inst = f.replace(/^done-/, '').replace(/-\d+$/, '');
          const n = readFileSync(join(rowDir, f), 'utf8').split('\n').filter(Boolean).length;
          runs.set(inst, (runs.get(inst) ?? 0) + n);
        }
        const succeeded = (w: WorkerRef) => finals.some((j) => j.jobId === w.appId && j.state === 'JOB_STATE_SUCCEEDED');
        const taskWorkers = before.filter((w) => !isAmWorker(w));
        const runsOf = (w: WorkerRef) => runs.get(`${w.appId}-${w.task}-${w.instance}`) ?? 0;
        const missing = taskWorkers.filter((w) => succeeded(w) && runsOf(w) === 0);
        if (missing.length) row.problems.push(`no output from ${missing.map((w) => `${w.appId}/${w.task}/${w.instance}`).join(', ')}`);
        const twice = taskWorkers.filter((w) => runsOf(w) > 1);
        if (twice.length) detail.completedMoreThanOnce = twice.map((w) => `${w.appId}/${w.task}/${w.instance} x${runsOf(w)}`);

        // The AMs run the policy their job asked for.
        const amPolicies = policyCheck(c, specs, finals);
        detail.policies = amPolicies;
        for (const p of amPolicies) {
          const bad = p.am.filter((x) => x !== p.asked);
          if (bad.length)
            row.problems.push(`the AM of ${p.jobId} runs with onAgentTimeout ${bad.join(', ')}; the job asked for ${p.asked} (GetJob's spec says ${p.spec})`);
        }

        detail.fsmStates = fsm.seen;
        detail.fsmReached = fsm.seen.some((x) => x.state === s.fsm);
      } finally {
        if (agentStopped >= 0) c.signalAgent(agentStopped, 'SIGCONT');
        if (amStopped?.hosted) await c.faultHostedAm(amStopped.hosted, 'resume');
        else if (amStopped) c.signalWorkerGroup(amStopped.pid, amStopped.appId, 'SIGCONT');
        if (hostStopped) c.signalAmHost(hostStopped, 'SIGCONT');
        if (!released) writeFileSync(join(rowDir, 'release'), '');
        await fsm.stop();
        detail.fsmStates ??= fsm.seen;
        client.close();
        fsmClient.close();
      }
    }
  });
}
