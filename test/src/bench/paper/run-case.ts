/**
 * One experiment case of the paper evaluation: a failover mode (Table 4) under one fault type.
 *
 * Starts `masters` real masters on a shared real etcd (own key prefix per case) with the mode's
 * flags, and simulated-node hosts (real agents with simulated workers, every AM a real in-process
 * AppMaster); keeps `active` jobs of the scaled workload running until `jobs` have been submitted
 * and all have ended; meanwhile injects a fault every `faultIntervalMs`:
 *
 * - master: crash = kill -9 of the leader (restarted as a standby after `masterRestartMs`);
 *   timing = SIGSTOP for `masterPauseMs` (past its lease), then SIGCONT;
 * - AMs (`faultFraction` of the running ones): crash = the in-process AM stops and its worker is
 *   reported killed (SIGKILL); timing = silent towards the master for `amPauseMs`;
 * - agents (`faultFraction` of the nodes): crash = stop, down for `agentDownMs`, restart from the
 *   checkpoint; timing = paused for `agentPauseMs`.
 *
 * single = one of the three, in turn; sim = the master plus AMs or agents at once (in turn). Which
 * AMs and agents fail is drawn at random (seeded).
 *
 * Measures what the paper's Tables 5-8 and Figure 10 show (see `CaseResult`), from the master
 * logs, the hosts' counts of worker starts and ends, their timing of master calls, /proc, and the
 * final job list.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { HaCluster, hasExited, LogTail, waitExit, type LogRecord } from '@fuxi/deploy';
import type { JobInfo__Output } from '@fuxi/proto';
import { Histogram, type HistogramJson } from '../../sim/histogram.js';
import { caseName, MODES, type CaseSpec, type PaperEvalOptions } from './options.js';
import { ProcSampler } from './proc-stats.js';
import { SimHost } from './sim-hosts.js';
import { cdf, ratio, round, summarize, type Summary } from './stats.js';
import { CATEGORIES, jobSpec, makeWorkload, rng, type Category, type PlannedJob } from './workload.js';

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const TERMINAL = new Set(['JOB_STATE_SUCCEEDED', 'JOB_STATE_FAILED', 'JOB_STATE_KILLED']);
const MASTER_MSGS = [
  'became leader',
  'recovery complete',
  'application master registered',
  'restarting the application master',
  'agent timing out: slots reserved',
  'job ended',
  'stepped down',
];

/** Teardowns of the cases running now (the benchmark's signal handler runs them). */
export const activeTeardowns = new Set<() => Promise<void>>();

export interface CaseEnv {
  etcdEndpoint: string;
  dir: string;
  say: (s: string) => void;
}

export interface FaultRecord {
  /** ms since the case started. */
  atMs: number;
  component: 'master' | 'am' | 'agent';
  kind: 'crash' | 'timing';
  targets: string[];
  /** Why nothing was injected (e.g. no leader, no AM running). */
  skipped?: string;
}

export interface JobRow {
  submitted: number;
  completed: number;
  failed: number;
  unfinished: number;
}

export interface InstanceRow {
  submitted: number;
  completed: number;
  /** Extra executions: worker starts beyond the first of each instance. */
  rescheduled: number;
  /** rescheduled / submitted (Table 5's ratio). */
  reschedRatio: number;
  /** rescheduled / completed (Table 8's "in completed %"). */
  reschedOfCompleted: number;
  /** Worker starts in all (instances, not AMs). */
  executions: number;
  /** Workers that ended by a signal (killed / evicted) and that failed. */
  killed: number;
  failedExits: number;
}

export interface CaseResult {
  name: string;
  mode: string;
  modeLabel: string;
  faults: string;
  durationMs: number;
  /** The case hit `maxCaseMs` before every job ended. */
  timedOut: boolean;
  jobs: Record<Category | 'total', JobRow>;
  instances: Record<Category | 'total', InstanceRow>;
  /** Master CPU time (all master processes) per instance execution, in microseconds. */
  overheadUsPerInstance: number;
  masterCpuMs: number;
  /** Table 7: fault -> recovered, in seconds. */
  recovery: { master: Summary; agent: Summary; am: Summary; amNotRecovered: number; agentNotRecovered: number };
  /** Table 6: round trips of master calls as the AMs (UpdateRequests) and agents (Heartbeat) saw them, ms. */
  requestHandling: { updateRequests: LatencyRow; heartbeat: LatencyRow };
  /** Table 6: the leader's CPU (percent of one core, per 1 s sample) and resident memory (KB). */
  master: { cpuPct: Summary; rssKb: Summary };
  /**
   * Figure 10: completion time of the jobs that succeeded, submission to end, seconds; `cdf` points
   * are (seconds, fraction of all submitted jobs that succeeded within that time).
   */
  jct: Summary & { cdf: Array<[number, number]> };
  faultsInjected: FaultRecord[];
  /**
   * Counted in the master logs; masterExitsAfterResume / masterUnexpectedExits: master processes
   * that ended on their own after a SIGCONT / otherwise (the benchmark restarts them).
   */
  events: { amRestarts: number; agentsTimingOut: number; masterTakeovers: number; masterExitsAfterResume: number; masterUnexpectedExits: number };
  /** The most common reasons of failed jobs (message -> count). */
  failureReasons: Record<string, number>;
}

export interface LatencyRow {
  count: number;
  avgMs: number;
  stddevMs: number;
  p50Ms: number;
  p99Ms: number;
}

interface AmFault {
  appId: string;
  attempt: number;
  at: number;
}

interface AgentFault {
  nodeId: string;
  at: number;
  kind: 'crash' | 'timing';
}

interface MasterFault {
  at: number;
  recovery: Promise<number | undefined>;
}

export async function runCase(c: CaseSpec, o: PaperEvalOptions, env: CaseEnv, caseIndex: number): Promise<CaseResult> {
  const name = caseName(c);
  const slug = `${c.mode}-${c.faults}`.toLowerCase();
  const dir = join(env.dir, slug);
  mkdirSync(dir, { recursive: true });
  const say = (s: string) => env.say(`${name}: ${s}`);
  const failover = !(MODES[c.mode].masterArgs as readonly string[]).includes('--master-failover');

  const ha = await HaCluster.start({
    dir,
    masters: o.masters,
    agents: 0,
    // Simulated hosts dial in plaintext.
    insecure: true,
    etcd: { endpoints: [env.etcdEndpoint], prefix: `/paper-eval/${slug}/` },
    leaseTtlSec: o.leaseTtlSec,
    recoveryDeadlineMs: o.recoveryDeadlineMs,
    amTimeoutMs: o.amTimeoutMs,
    heartbeatIntervalMs: o.heartbeatIntervalMs,
    amHeartbeatIntervalMs: o.amHeartbeatIntervalMs,
    agentTimeoutMs: o.agentTimeoutMs,
    logLevel: 'info',
    startTimeoutMs: 60_000,
    masterArgs: [...MODES[c.mode].masterArgs, '--agent-timing-out-ms', String(o.agentTimingOutMs), '--am-stall-timeout-ms', String(o.amStallTimeoutMs)],
  });
  const hosts: SimHost[] = [];
  let supervisor: NodeJS.Timeout | undefined;
  const client = ha.client({ retryForMs: 120_000, deadlineMs: 10_000 });
  const teardown = async (): Promise<void> => {
    clearInterval(supervisor);
    await Promise.all(hosts.map((h) => h.stop().catch(() => undefined)));
    await ha.stop();
  };
  activeTeardowns.add(teardown);
  const masterLogs = ha.masters.map((m) => new LogTail(m.logFile, MASTER_MSGS));
  const sampler = new ProcSampler(
    () => ha.masters.filter((m) => m && !m.stopped).map((m) => m.pid),
    () => ha.leader()?.master.pid,
  );
  try {
    const per = Math.floor(o.nodes / o.hosts);
    const starts: Array<Promise<SimHost>> = [];
    for (let i = 0; i < o.hosts; i++) {
      const nodes = i < o.hosts - 1 ? per : o.nodes - per * (o.hosts - 1);
      starts.push(SimHost.start({ index: i, prefix: `h${i + 1}`, nodes, masters: ha.masterAddresses, dir, cpu: o.nodeCpu, memory: o.nodeMemory }));
    }
    hosts.push(...(await Promise.all(starts)));
    await ha.waitForNodes(o.nodes, 180_000);
    say(`${o.masters} masters, ${o.nodes} nodes on ${o.hosts} hosts ready`);

    // ------------------------------------------------------------------ the run
    const plan = makeWorkload(o.workload, slug);
    const byId = new Map(plan.map((j) => [j.id, j]));
    const final = new Map<string, JobInfo__Output>();
    const submitted: PlannedJob[] = [];
    const rand = rng(o.workload.seed * 1_000_003 + caseIndex * 7919 + 17);
    const faults: FaultRecord[] = [];
    const amFaults: AmFault[] = [];
    const agentFaults: AgentFault[] = [];
    const masterFaults: MasterFault[] = [];
    const inFlight: Array<Promise<unknown>> = [];
    let finished = false;
    let masterExitsAfterResume = 0;
    let masterUnexpectedExits = 0;
    const killedPids = new Set<number>();
    const pausedPids = new Set<number>();
    const restarting = new Set<number>();
    // The masters' supervisor (systemd's Restart=always): a master process that ended, killed by a
    // fault or on its own, is started again (as a standby) after masterRestartMs.
    supervisor = setInterval(() => {
      for (const m of ha.masters) {
        if (!m || !hasExited(m.child) || restarting.has(m.index) || finished) continue;
        restarting.add(m.index);
        if (!killedPids.has(m.pid)) {
          if (pausedPids.has(m.pid)) masterExitsAfterResume++;
          else masterUnexpectedExits++;
          say(
            `${m.name} (pid ${m.pid}) exited on its own (${String(m.child.exitCode ?? m.child.signalCode)})${pausedPids.has(m.pid) ? ' after SIGCONT' : ''}; restarting it`,
          );
        }
        void sleep(o.masterRestartMs)
          .then(() => (finished ? undefined : ha.restartMaster(m.index)))
          .catch((e: unknown) => say(`restarting ${m.name} failed: ${String(e).slice(0, 200)}`))
          .finally(() => restarting.delete(m.index));
      }
    }, 250);

    sampler.start();
    const t0 = Date.now();

    const injector = (async () => {
      if (c.faults === 'none') return;
      const kind = c.faults.endsWith('crash') ? 'crash' : 'timing';
      let next = t0 + o.firstFaultMs;
      for (let k = 0; ; k++) {
        while (!finished && Date.now() < next) await sleep(Math.min(200, next - Date.now()));
        if (finished) return;
        next += o.faultIntervalMs;
        // Taken in turn (a run has few injections): single = master, AMs, agents, ...; sim = the
        // master with AMs, then with agents, ...
        const which = c.faults.startsWith('single') ? (['master', 'am', 'agent'] as const)[k % 3]! : k % 2 === 0 ? 'am' : 'agent';
        const at = Date.now();
        const parts: Array<Promise<FaultRecord>> = [];
        if (c.faults.startsWith('sim') || which === 'master') parts.push(injectMaster(kind, at));
        if (which === 'am') parts.push(injectAms(kind, at));
        if (which === 'agent') parts.push(injectAgents(kind, at));
        for (const r of await Promise.all(parts)) {
          faults.push(r);
          say(
            `fault ${k + 1} at ${Math.round(r.atMs / 1000)} s: ${r.component} ${r.kind} ${r.skipped ? `skipped (${r.skipped})` : `${r.targets.length} (${r.targets.slice(0, 4).join(', ')}${r.targets.length > 4 ? ', ...' : ''})`}`,
          );
        }
      }
    })().catch((e: unknown) => {
      // A host that stopped answering its control channel (overloaded) ends the injection, not
      // the run: the case goes on and the report says how many faults went in.
      say(`fault injection stopped: ${String(e).slice(0, 200)}`);
    });

    async function injectMaster(kind: 'crash' | 'timing', at: number): Promise<FaultRecord> {
      const rec: FaultRecord = { atMs: at - t0, component: 'master', kind, targets: [] };
      const l = ha.leader();
      if (!l) return { ...rec, skipped: 'no leader' };
      const m = l.master;
      rec.targets.push(`${m.name} (epoch ${l.epoch})`);
      if (kind === 'crash') {
        killedPids.add(m.pid);
        ha.kill(m, 'SIGKILL');
        await waitExit(m.child, 5000);
      } else {
        pausedPids.add(m.pid);
        ha.kill(m, 'SIGSTOP');
        inFlight.push(sleep(o.masterPauseMs).then(() => ha.kill(m, 'SIGCONT')));
      }
      const recovery = masterRecovery(at, l.epoch);
      masterFaults.push({ at, recovery });
      inFlight.push(recovery);
      return rec;
    }

    /**
     * Fault -> the first "recovery complete" (without master failover: "became leader") of any
     * master with a newer epoch. A leader that fails again before it recovers does not count: the
     * one after it does.
     */
    async function masterRecovery(at: number, oldEpoch: string): Promise<number | undefined> {
      const want = failover ? 'recovery complete' : 'became leader';
      const until = Date.now() + 120_000 + o.masterPauseMs;
      while (Date.now() < until) {
        const hit = masterLogs
          .flatMap((t) => (t.poll(), t.records))
          .filter((r) => r.msg === want && r.timeMs >= at && BigInt(String(r.epoch ?? '0')) > BigInt(oldEpoch || '0'))
          .sort((a, b) => a.timeMs - b.timeMs)[0];
        if (hit) return hit.timeMs - at;
        await sleep(200);
      }
      say(`no master recovery within ${Math.round((until - at) / 1000)} s of the fault at ${Math.round((at - t0) / 1000)} s`);
      return undefined;
    }

    async function injectAms(kind: 'crash' | 'timing', at: number): Promise<FaultRecord> {
      const rec: FaultRecord = { atMs: at - t0, component: 'am', kind, targets: [] };
      const lists = await Promise.all(
        hosts.map(async (h) => ({ h, ams: ((await h.command('list-ams')).ams ?? []) as Array<{ appId: string; amAttempt: number }> })),
      );
      const all = lists.flatMap(({ h, ams }) => ams.map((a) => ({ h, ...a })));
      if (all.length === 0) return { ...rec, skipped: 'no AM running' };
      const n = Math.max(1, Math.round(o.faultFraction * all.length));
      for (const a of pick(all, n, rand)) {
        const r = await a.h.command(kind === 'crash' ? 'crash-am' : 'pause-am', a.appId, String(o.amPauseMs));
        if (!r.ok) continue;
        rec.targets.push(a.appId);
        amFaults.push({ appId: a.appId, attempt: a.amAttempt, at: Date.now() });
      }
      return rec;
    }

    async function injectAgents(kind: 'crash' | 'timing', at: number): Promise<FaultRecord> {
      const rec: FaultRecord = { atMs: at - t0, component: 'agent', kind, targets: [] };
      const all = hosts.flatMap((h) => h.agents.map((a) => ({ h, nodeId: a.nodeId })));
      const n = Math.max(1, Math.round(o.faultFraction * all.length));
      await Promise.all(
        pick(all, n, rand).map(async (a) => {
          const r = await a.h.command(kind === 'crash' ? 'crash-agent' : 'pause-agent', a.nodeId, String(kind === 'crash' ? o.agentDownMs : o.agentPauseMs));
          if (!r.ok) return;
          rec.targets.push(a.nodeId);
          agentFaults.push({ nodeId: a.nodeId, at: Date.now(), kind });
        }),
      );
      return rec;
    }

    // The job driver: keeps `active` jobs submitted and not ended until all have been submitted.
    let lastReport = 0;
    let submitFailures = 0;
    let lastSubmitAt = 0;
    for (;;) {
      while (submitted.length - final.size < o.active && submitted.length < plan.length) {
        const j = plan[submitted.length]!;
        // At most submitRate jobs per second (the first `active` jobs would otherwise all start at once).
        const wait = lastSubmitAt + 1000 / o.submitRate - Date.now();
        if (wait > 0) await sleep(wait);
        lastSubmitAt = Date.now();
        try {
          await client.submit(jobSpec(j, o.workload));
          submitted.push(j);
        } catch (e) {
          if (++submitFailures % 10 === 1) say(`submit of ${j.id} failed (${String(e).slice(0, 160)}); retrying`);
          await sleep(1000);
          break;
        }
      }
      if (final.size >= plan.length) break;
      if (Date.now() - t0 > o.maxCaseMs) {
        say(`stopping after ${o.maxCaseMs} ms: ${plan.length - final.size} jobs have not ended`);
        break;
      }
      await sleep(1000);
      try {
        for (const j of await client.list({ states: ['JOB_STATE_SUCCEEDED', 'JOB_STATE_FAILED', 'JOB_STATE_KILLED'] }))
          if (byId.has(j.jobId) && TERMINAL.has(j.state)) final.set(j.jobId, j);
      } catch (e) {
        say(`ListJobs failed: ${String(e).slice(0, 160)}`);
      }
      if (Date.now() - lastReport > 15_000) {
        lastReport = Date.now();
        const failed = [...final.values()].filter((j) => j.state !== 'JOB_STATE_SUCCEEDED').length;
        say(
          `${Math.round((Date.now() - t0) / 1000)} s: ${submitted.length} submitted, ${final.size} ended (${failed} failed), leader ${ha.leader()?.master.name ?? '-'}`,
        );
      }
    }
    const durationMs = Date.now() - t0;
    const timedOut = final.size < plan.length;
    finished = true;
    clearInterval(supervisor);
    await injector;
    await Promise.allSettled(inFlight);
    // Agent restarts / resumes that are still under way report within a few heartbeats.
    const until = Date.now() + 30_000;
    while (Date.now() < until && agentFaults.some((f) => !agentRecovery(hosts, f))) await sleep(500);
    sampler.stop();

    // ------------------------------------------------------------------ collect
    let all: JobInfo__Output[] = [];
    try {
      all = (await client.list()).filter((j) => byId.has(j.jobId));
    } catch (e) {
      say(`final ListJobs failed: ${String(e)}`);
      all = [...final.values()];
    }
    const infos = new Map(all.map((j) => [j.jobId, j]));
    const stats = await Promise.all(hosts.map((h) => h.command('stats')));
    for (const t of masterLogs) t.poll();
    const masterRecords = masterLogs.flatMap((t) => t.records);

    const jobs = emptyRows<JobRow>(() => ({ submitted: 0, completed: 0, failed: 0, unfinished: 0 }));
    const instances = emptyRows<InstanceRow>(() => ({
      submitted: 0,
      completed: 0,
      rescheduled: 0,
      reschedRatio: 0,
      reschedOfCompleted: 0,
      executions: 0,
      killed: 0,
      failedExits: 0,
    }));
    const perApp = mergeHostStats(stats.map((s) => (s.apps ?? {}) as Record<string, HostAppStats>));
    const jcts: number[] = [];
    const failureReasons: Record<string, number> = {};
    for (const j of submitted) {
      const info = infos.get(j.id) ?? final.get(j.id);
      const state = info?.state ?? 'JOB_STATE_UNSPECIFIED';
      for (const cat of [j.category, 'total'] as const) {
        const row = jobs[cat];
        row.submitted++;
        if (state === 'JOB_STATE_SUCCEEDED') row.completed++;
        else if (TERMINAL.has(state)) row.failed++;
        else row.unfinished++;
        const a = perApp.get(j.id);
        const ir = instances[cat];
        ir.submitted += j.instances;
        if (a) {
          ir.completed += a.succeeded.size;
          ir.executions += a.spawns;
          ir.rescheduled += Math.max(0, a.spawns - a.spawned.size);
          ir.killed += a.killed;
          ir.failedExits += a.failed;
        }
      }
      if (state === 'JOB_STATE_SUCCEEDED' && info) jcts.push((Number(info.finishedAtMs) - Number(info.submittedAtMs)) / 1000);
      else if (info && TERMINAL.has(state)) {
        const why = (info.message || state).replace(/[0-9a-f]{8,}|\d+/g, 'N').slice(0, 140);
        failureReasons[why] = (failureReasons[why] ?? 0) + 1;
      }
    }
    for (const r of Object.values(instances)) {
      r.reschedRatio = ratio(r.rescheduled, r.submitted);
      r.reschedOfCompleted = ratio(r.rescheduled, r.completed);
    }

    // Recovery times (seconds).
    const masterRec = (await Promise.all(masterFaults.map((f) => f.recovery))).filter((v): v is number => v !== undefined).map((v) => v / 1000);
    const agentRec: number[] = [];
    let agentNotRecovered = 0;
    for (const f of agentFaults) {
      const r = agentRecovery(hosts, f);
      if (r === undefined) agentNotRecovered++;
      else agentRec.push(r / 1000);
    }
    const registered = masterRecords.filter((r) => r.msg === 'application master registered');
    const amRec: number[] = [];
    let amNotRecovered = 0;
    for (const f of amFaults) {
      // A new attempt registered with the master, or (timing failure) the paused AM heard from again.
      const r = registered.filter((x) => x.appId === f.appId && Number(x.attempt) > f.attempt && x.timeMs >= f.at - 50).sort((a, b) => a.timeMs - b.timeMs)[0];
      const resumed = hosts.flatMap((h) => h.records('am resumed')).find((x) => x.appId === f.appId && x.timeMs >= f.at - 50);
      const times = [r ? r.timeMs - f.at : Infinity, resumed ? Number(resumed.recoveredMs) : Infinity];
      const best = Math.min(...times);
      if (Number.isFinite(best)) amRec.push(best / 1000);
      else amNotRecovered++;
    }

    const rpc = (m: string) => {
      const h = new Histogram();
      for (const s of stats) {
        const j = (s.rpc as Record<string, HistogramJson> | undefined)?.[m];
        if (j) h.merge(Histogram.from(j));
      }
      return { count: h.count, avgMs: round(h.avg), stddevMs: round(h.stddev), p50Ms: round(h.percentile(50)), p99Ms: round(h.percentile(99)) };
    };
    const jct = summarize(jcts, 2);
    const result: CaseResult = {
      name,
      mode: c.mode,
      modeLabel: MODES[c.mode].label,
      faults: c.faults,
      durationMs,
      timedOut,
      jobs,
      instances,
      overheadUsPerInstance: instances.total.executions > 0 ? round((sampler.totalCpuMs * 1000) / instances.total.executions, 1) : NaN,
      masterCpuMs: Math.round(sampler.totalCpuMs),
      recovery: { master: summarize(masterRec), agent: summarize(agentRec), am: summarize(amRec), amNotRecovered, agentNotRecovered },
      requestHandling: { updateRequests: rpc('UpdateRequests'), heartbeat: rpc('Heartbeat') },
      master: { cpuPct: summarize(sampler.focusCpuPct, 2), rssKb: summarize(sampler.focusRssKb, 0) },
      // y = fraction of all submitted jobs done by then, so failed jobs show as a lower plateau.
      jct: { ...jct, cdf: cdf(jcts).map(([x, y]) => [round(x, 2), round((y * jcts.length) / Math.max(1, submitted.length), 4)]) },
      faultsInjected: faults,
      events: {
        amRestarts: masterRecords.filter((r) => r.msg === 'restarting the application master').length,
        agentsTimingOut: masterRecords.filter((r) => r.msg === 'agent timing out: slots reserved').length,
        masterTakeovers: Math.max(0, masterRecords.filter((r) => r.msg === 'became leader').length - 1),
        masterExitsAfterResume,
        masterUnexpectedExits,
      },
      failureReasons,
    };
    say(
      `done in ${Math.round(durationMs / 1000)} s: jobs ${jobs.total.completed}/${jobs.total.submitted} completed, ${jobs.total.failed} failed` +
        `${jobs.total.unfinished ? `, ${jobs.total.unfinished} unfinished` : ''}; instances ${instances.total.completed}/${instances.total.submitted}, ` +
        `${instances.total.rescheduled} rescheduled (${(100 * instances.total.reschedRatio).toFixed(3)} %); ${faults.length} faults`,
    );
    return result;
  } finally {
    sampler.stop();
    client.close();
    await teardown();
    activeTeardowns.delete(teardown);
  }
}

function agentRecovery(hosts: SimHost[], f: AgentFault): number | undefined {
  const h = hosts.find((x) => x.owns(f.nodeId));
  if (!h) return undefined;
  const msg = f.kind === 'crash' ? 'agent restarted' : 'agent resumed';
  const r: LogRecord | undefined = h.records(msg).find((x) => x.nodeId === f.nodeId && x.timeMs >= f.at - 50);
  return r ? Number(r.recoveredMs) : undefined;
}

interface HostAppStats {
  spawns: number;
  amSpawns: number;
  killed: number;
  failed: number;
  spawned: string[];
  succeeded: string[];
}

function mergeHostStats(
  perHost: Array<Record<string, HostAppStats>>,
): Map<string, { spawns: number; killed: number; failed: number; spawned: Set<string>; succeeded: Set<string> }> {
  const out = new Map<string, { spawns: number; killed: number; failed: number; spawned: Set<string>; succeeded: Set<string> }>();
  for (const apps of perHost) {
    for (const [appId, a] of Object.entries(apps)) {
      let m = out.get(appId);
      if (!m) out.set(appId, (m = { spawns: 0, killed: 0, failed: 0, spawned: new Set(), succeeded: new Set() }));
      m.spawns += a.spawns;
      m.killed += a.killed;
      m.failed += a.failed;
      for (const k of a.spawned) m.spawned.add(k);
      for (const k of a.succeeded) m.succeeded.add(k);
    }
  }
  return out;
}

function emptyRows<T>(make: () => T): Record<Category | 'total', T> {
  const r = {} as Record<Category | 'total', T>;
  for (const c of [...CATEGORIES, 'total'] as const) r[c] = make();
  return r;
}

/** `n` distinct items, chosen with `rand`. */
function pick<T>(xs: readonly T[], n: number, rand: () => number): T[] {
  const a = [...xs];
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [a[i], a[j]] = [a[j]!, a[i]!];
  }
  return a.slice(0, Math.min(n, a.length));
}
