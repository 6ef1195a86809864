/**
 * Benchmark (not a test): failure prediction off and on over one simulated cluster and job mix.
 *
 * A discrete-event simulation on a fake clock (1 s ticks) drives the master's own cores: the
 * scheduler (`schedule()` over a snapshot each tick), and with prediction on the attempt history,
 * the failure model, the blacklist and the ATLAS+ decision (master/src/core/failure-prediction.ts).
 * Hosts have a hidden failure proneness: most are sound, some fail many attempts, some flap (go
 * down and come back; their running attempts are lost), some fail attempts started under memory
 * pressure. Some tasks fail on any host (a bug of the job's own). The proneness is never shown to
 * the predictor: it sees attempt ends (host, task, exit, signal, duration, load and memory at
 * start) and flaps, as the master would.
 *
 * Every instance has 3 attempts (DEFAULT_MAX_ATTEMPTS); a job fails when one of its instances
 * used them all. An attempt's outcome is a hash of (seed, job, task, instance, attempt, host), so
 * both runs draw the same luck for the same choice.
 *
 * The model-only version of `make bench-prediction` (which runs on the node simulator,
 * prediction-sim.ts). Writes bench-results/prediction-des.json `{"off": P, "on": P}`, P = {failedAttempts, failedJobs,
 * jobs, meanJctMs, wastedSlotSeconds}, and prints more (decisions taken, hosts listed).
 *
 *   node test/dist/bench/prediction.js [--seed N] [--jobs N] [--hosts N] [--config '{"blockAt": 0.5}'] [--samples FILE]
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { DEFAULT_MAX_ATTEMPTS, dominantShare, res, seededRandom, type Resource } from '@fuxi/common';
import { REPO_ROOT } from '@fuxi/deploy';
import { FailurePredictor, type HostLoad } from '@fuxi/master/core/failure-prediction';
import { parsePredictionConfig, type PredictionConfig } from '@fuxi/master/core/prediction-config';
import { schedule, type HostBlacklist, type SchedNode, type SchedUnit } from '@fuxi/master/core/scheduler';

const TICK_MS = 1000;
const CAPACITY = res(8000, 16384);
/** How often running attempts are looked at again (prediction on). */
const RECHECK_MS = 20_000;
/** A host an attempt was moved off stays out of its job's reach this long. */
const MOVED_OFF_MS = 5 * 60_000;
const MAX_LAUNCH_MOVES = 2;

type HostKind = 'sound' | 'failing' | 'flapping' | 'memory';

interface Host {
  id: string;
  rack: string;
  kind: HostKind;
  allocated: Resource;
  up: boolean;
  /** Next time it goes down or comes back (flapping hosts). */
  nextFlipMs: number;
}

interface TaskDef {
  name: string;
  instances: number;
  durationMs: number;
  resource: Resource;
  /** Failure probability on any host (a bug of the job's own). */
  ownFail: number;
}

interface JobDef {
  id: string;
  seq: number;
  submitMs: number;
  tasks: TaskDef[];
}

interface Attempt {
  job: JobRun;
  task: number;
  inst: number;
  host: Host;
  startMs: number;
  endMs: number;
  fails: boolean;
  loadAtStart: number;
  memAtStart: number;
  nextCheckMs: number;
}

interface JobRun {
  def: JobDef;
  stage: number;
  /** Per instance of the current stage: attempts used, done, running, launch moves. */
  used: number[];
  done: boolean[];
  running: (Attempt | undefined)[];
  moves: number[];
  pending: number[];
  endMs: number | undefined;
  failed: boolean;
  movedOff: Map<string, number>;
}

interface Result {
  failedAttempts: number;
  failedJobs: number;
  jobs: number;
  meanJctMs: number;
  wastedSlotSeconds: number;
}

interface Extra {
  rescheduledAtLaunch: number;
  rescheduledRunning: number;
  killedEarly: number;
  lostToFlaps: number;
  trainings: number;
  blockedHostSeconds: number;
  grayHostSeconds: number;
  blockedByKind: Record<HostKind, number>;
  /** Failed attempts by the kind of host they ran on ('lost' for flaps; 'own' for a buggy task's). */
  failedBy: Record<string, number>;
  makespanMs: number;
}

function hash01(...parts: Array<string | number>): number {
  let h = 2166136261;
  for (const p of parts) {
    const s = String(p);
    for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
    h = Math.imul(h ^ 0x2c, 16777619);
  }
  h ^= h >>> 15;
  h = Math.imul(h, 0x2c1b3c6d);
  h ^= h >>> 12;
  return (h >>> 0) / 4294967296;
}

function makeHosts(n: number, rand: () => number): Host[] {
  const kinds: HostKind[] = [];
  const share: Array<[HostKind, number]> = [
    ['failing', 0.1],
    ['flapping', 0.1],
    ['memory', 0.15],
  ];
  for (const [k, f] of share) for (let i = 0; i < Math.round(f * n); i++) kinds.push(k);
  while (kinds.length < n) kinds.push('sound');
  for (let i = kinds.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [kinds[i], kinds[j]] = [kinds[j]!, kinds[i]!];
  }
  return kinds.map((kind, i) => ({
    id: `h${String(i).padStart(3, '0')}`,
    rack: `r${i % 4}`,
    kind,
    allocated: res(0, 0),
    up: true,
    nextFlipMs: kind === 'flapping' ? Math.round(60_000 + rand() * 8 * 60_000) : Infinity,
  }));
}

function makeJobs(n: number, rand: () => number): JobDef[] {
  const jobs: JobDef[] = [];
  let t = 0;
  for (let i = 0; i < n; i++) {
    t += Math.round(-Math.log(1 - rand()) * 12_000);
    const base = 30_000 + Math.round(rand() * 150_000);
    const mem = 1024 * (1 + Math.floor(rand() * 6));
    const buggy = rand() < 0.06;
    const tasks: TaskDef[] = [{ name: 'map', instances: 4 + Math.floor(rand() * 30), durationMs: base, resource: res(1000, mem), ownFail: buggy ? 0.4 : 0 }];
    if (rand() < 0.6)
      tasks.push({ name: 'reduce', instances: 1 + Math.floor(rand() * 6), durationMs: Math.round(base * 0.8), resource: res(1000, mem), ownFail: 0 });
    jobs.push({ id: `job-${String(i).padStart(4, '0')}`, seq: i, submitMs: t, tasks });
  }
  return jobs;
}

/** The hidden failure probability of an attempt starting on `h` with `mem` memory allocated there. */
function hiddenFailure(h: Host, mem: number, task: TaskDef): number {
  let p = 0.015;
  if (h.kind === 'failing') p = 0.45;
  if (h.kind === 'memory' && mem >= 0.7) p = 0.6;
  return 1 - (1 - p) * (1 - task.ownFail);
}

function simulate(
  mode: 'off' | 'on',
  seed: number,
  jobCount: number,
  hostCount: number,
  config: PredictionConfig,
): { result: Result; extra: Extra; samples: Array<{ x: number[]; y: number; t: number }> } {
  const setup = seededRandom(seed);
  const hosts = makeHosts(hostCount, setup);
  const defs = makeJobs(jobCount, setup);
  const byId = new Map(hosts.map((h) => [h.id, h]));
  const predictor = new FailurePredictor({ ...config, enabled: mode === 'on', seed });
  const trainRand = seededRandom(seed ^ 0x5eed);
  const running = new Set<Attempt>();
  const active: JobRun[] = [];
  const finished: JobRun[] = [];
  let failedAttempts = 0;
  let wasted = 0;
  const extra: Extra = {
    rescheduledAtLaunch: 0,
    rescheduledRunning: 0,
    killedEarly: 0,
    lostToFlaps: 0,
    trainings: 0,
    blockedHostSeconds: 0,
    grayHostSeconds: 0,
    blockedByKind: { sound: 0, failing: 0, flapping: 0, memory: 0 },
    failedBy: {},
    makespanMs: 0,
  };
  let nextJob = 0;
  let now = 0;

  const memOf = (h: Host): number => h.allocated.memoryMb / CAPACITY.memoryMb;
  const loadOf = (h: Host): number => dominantShare(h.allocated, CAPACITY);
  const release = (a: Attempt): void => {
    const r = a.job.def.tasks[a.task]!.resource;
    a.host.allocated = res(a.host.allocated.cpuMilli - r.cpuMilli, a.host.allocated.memoryMb - r.memoryMb);
    running.delete(a);
    a.job.running[a.inst] = undefined;
  };
  const startStage = (j: JobRun): void => {
    const n = j.def.tasks[j.stage]!.instances;
    j.used = new Array<number>(n).fill(0);
    j.done = new Array<boolean>(n).fill(false);
    j.running = new Array<Attempt | undefined>(n).fill(undefined);
    j.moves = new Array<number>(n).fill(0);
    j.pending = Array.from({ length: n }, (_, i) => i);
  };
  const endJob = (j: JobRun, failed: boolean): void => {
    j.failed = failed;
    j.endMs = now;
    for (const a of j.running) {
      if (a === undefined) continue;
      wasted += (now - a.startMs) / 1000;
      release(a);
    }
    active.splice(active.indexOf(j), 1);
    finished.push(j);
    predictor.jobEnded(j.def.id, now);
  };
  /** An attempt ended: `how` 'ok', 'failed' (exit 1), 'lost' (host down), 'killed' (ATLAS+ kill), 'moved' (rescheduled). */
  const ended = (a: Attempt, how: 'ok' | 'failed' | 'lost' | 'killed' | 'moved'): void => {
    const j = a.job;
    const task = j.def.tasks[a.task]!;
    release(a);
    const durationMs = now - a.startMs;
    if (mode === 'on' && how !== 'moved') {
      predictor.attemptEnded(
        {
          nodeId: a.host.id,
          appId: j.def.id,
          task: task.name,
          exitCode: how === 'ok' ? 0 : how === 'failed' ? 1 : -1,
          signal: how === 'lost' || how === 'killed' ? 'SIGKILL' : '',
          durationMs,
          resource: task.resource,
          loadAtStart: a.loadAtStart,
          memAtStart: a.memAtStart,
          killed: how === 'killed',
        },
        now,
      );
    }
    if (how === 'ok') {
      j.done[a.inst] = true;
      if (j.done.every(Boolean)) {
        j.stage++;
        if (j.stage >= j.def.tasks.length) endJob(j, false);
        else startStage(j);
      }
      return;
    }
    wasted += durationMs / 1000;
    if (how === 'moved') {
      j.pending.push(a.inst);
      return;
    }
    failedAttempts++;
    const cause = how === 'lost' ? 'lost' : how === 'killed' ? 'killed' : task.ownFail > 0 ? 'own' : a.host.kind;
    extra.failedBy[cause] = (extra.failedBy[cause] ?? 0) + 1;
    j.used[a.inst]!++;
    if (j.used[a.inst]! >= DEFAULT_MAX_ATTEMPTS) endJob(j, true);
    else j.pending.push(a.inst);
  };

  const predictElsewhere = (j: JobRun, task: TaskDef, except: Host, list: HostBlacklist): number | undefined => {
    let best: number | undefined;
    for (const h of hosts) {
      if (h === except || !h.up || list.blocked.has(h.id) || (j.movedOff.get(h.id) ?? -Infinity) > now) continue;
      if (h.allocated.cpuMilli + task.resource.cpuMilli > CAPACITY.cpuMilli || h.allocated.memoryMb + task.resource.memoryMb > CAPACITY.memoryMb) continue;
      const mem = (h.allocated.memoryMb + task.resource.memoryMb) / CAPACITY.memoryMb;
      const p = predictor.predict(h.id, j.def.id, task.name, loadOf(h), mem, now);
      if (best === undefined || p < best) best = p;
    }
    return best;
  };

  while (nextJob < defs.length || active.length > 0) {
    now += TICK_MS;
    // Submissions.
    while (nextJob < defs.length && defs[nextJob]!.submitMs <= now) {
      const def = defs[nextJob++]!;
      const j: JobRun = { def, stage: 0, used: [], done: [], running: [], moves: [], pending: [], endMs: undefined, failed: false, movedOff: new Map() };
      startStage(j);
      active.push(j);
    }
    // Flapping hosts go down (their attempts are lost) and come back.
    for (const h of hosts) {
      if (h.nextFlipMs > now) continue;
      const r = hash01(seed, h.id, now);
      if (h.up) {
        h.up = false;
        h.nextFlipMs = now + 30_000 + Math.round(r * 90_000);
        for (const a of [...running]) if (a.host === h) (extra.lostToFlaps++, ended(a, 'lost'));
        if (mode === 'on') predictor.hostFlapped(h.id, now);
      } else {
        h.up = true;
        h.nextFlipMs = now + 4 * 60_000 + Math.round(r * 10 * 60_000);
      }
    }
    // Attempt ends.
    for (const a of [...running]) if (a.endMs <= now && running.has(a)) ended(a, a.fails ? 'failed' : 'ok');

    // Training, off the scheduling path.
    const loads: HostLoad[] = hosts.map((h) => ({ nodeId: h.id, load: loadOf(h), mem: memOf(h) }));
    if (mode === 'on') {
      if (predictor.maybeTrain(loads, now, trainRand)) extra.trainings++;
      else if (now % 10_000 === 0) predictor.scoreHosts(loads, now);
    }
    const list = predictor.blacklistView(now, hosts.length);
    extra.blockedHostSeconds += list.blocked.size;
    extra.grayHostSeconds += list.gray.size;
    for (const id of list.blocked) extra.blockedByKind[byId.get(id)!.kind]++;

    // ATLAS+ on running attempts.
    if (mode === 'on' && predictor.hasModel) {
      for (const a of [...running]) {
        if (a.nextCheckMs > now || !running.has(a)) continue;
        a.nextCheckMs = now + RECHECK_MS;
        const task = a.job.def.tasks[a.task]!;
        const pHere = predictor.predict(a.host.id, a.job.def.id, task.name, a.loadAtStart, a.memAtStart, now);
        const pElse = predictElsewhere(a.job, task, a.host, list);
        const d = predictor.decideAttempt(pHere, pElse, task.durationMs / 1000, (now - a.startMs) / 1000, false);
        if (d.action === 'reschedule') {
          extra.rescheduledRunning++;
          a.job.movedOff.set(a.host.id, now + MOVED_OFF_MS);
          ended(a, 'moved');
        } else if (d.action === 'kill') {
          extra.killedEarly++;
          ended(a, 'killed');
        }
      }
    }

    // Scheduling: one unit per job's current task with pending instances.
    const units: SchedUnit[] = [];
    for (const j of active) {
      if (j.pending.length === 0) continue;
      const task = j.def.tasks[j.stage]!;
      units.push({
        appId: j.def.id,
        suId: task.name,
        resource: task.resource,
        priority: 0,
        quotaGroup: 'default',
        submitSeq: j.def.seq,
        requests: new Map([['', j.pending.length]]),
      });
    }
    if (units.length === 0) continue;
    const perApp = new Map<string, ReadonlySet<string>>(list.perApp);
    for (const j of active) {
      const off = [...j.movedOff].filter(([, until]) => until > now).map(([id]) => id);
      if (off.length > 0) perApp.set(j.def.id, new Set([...(list.perApp.get(j.def.id) ?? []), ...off]));
    }
    const nodes = new Map<string, SchedNode>(
      hosts.map((h) => [h.id, { id: h.id, rack: h.rack, capacity: CAPACITY, allocated: h.allocated, schedulable: h.up }]),
    );
    const plan = schedule({ nodes, units, groups: new Map(), groupUsage: new Map(), blacklist: { ...list, perApp } });
    const jobsById = new Map(active.map((j) => [j.def.id, j]));
    for (const p of plan.placements) {
      const j = jobsById.get(p.appId)!;
      const task = j.def.tasks[j.stage]!;
      const h = byId.get(p.nodeId)!;
      for (let k = 0; k < p.slots; k++) {
        const inst = j.pending.shift();
        if (inst === undefined) break;
        const mem = (h.allocated.memoryMb + task.resource.memoryMb) / CAPACITY.memoryMb;
        const load = dominantShare(res(h.allocated.cpuMilli + task.resource.cpuMilli, h.allocated.memoryMb + task.resource.memoryMb), CAPACITY);
        if (mode === 'on' && predictor.hasModel && j.moves[inst]! < MAX_LAUNCH_MOVES) {
          const pHere = predictor.predict(h.id, j.def.id, task.name, load, mem, now);
          const d = predictor.decideAttempt(pHere, predictElsewhere(j, task, h, list), task.durationMs / 1000, 0, false);
          if (d.action === 'reschedule') {
            extra.rescheduledAtLaunch++;
            j.moves[inst]!++;
            j.movedOff.set(h.id, now + MOVED_OFF_MS);
            j.pending.push(inst);
            continue;
          }
        }
        const attemptNo = j.used[inst]! * 10 + j.moves[inst]!;
        const u = hash01(seed, j.def.id, j.stage, inst, attemptNo, h.id);
        const fails = u < hiddenFailure(h, mem, task);
        const dur = Math.round(task.durationMs * (0.85 + 0.3 * hash01(seed, 'd', j.def.id, j.stage, inst)));
        const endMs = fails ? now + Math.round(dur * (0.15 + 0.85 * hash01(seed, 'f', j.def.id, inst, attemptNo))) : now + dur;
        const a: Attempt = {
          job: j,
          task: j.stage,
          inst,
          host: h,
          startMs: now,
          endMs,
          fails,
          loadAtStart: load,
          memAtStart: mem,
          nextCheckMs: now + RECHECK_MS,
        };
        h.allocated = res(h.allocated.cpuMilli + task.resource.cpuMilli, h.allocated.memoryMb + task.resource.memoryMb);
        j.running[inst] = a;
        running.add(a);
      }
    }
  }
  extra.makespanMs = now;
  const jct = finished.reduce((s, j) => s + ((j.endMs ?? now) - j.def.submitMs), 0) / Math.max(1, finished.length);
  return {
    result: {
      failedAttempts,
      failedJobs: finished.filter((j) => j.failed).length,
      jobs: finished.length,
      meanJctMs: Math.round(jct),
      wastedSlotSeconds: Math.round(wasted),
    },
    extra,
    samples: predictor.history.trainingSet().map((s) => ({ x: s.x, y: s.y, t: s.endMs })),
  };
}

function main(): void {
  const { values } = parseArgs({
    options: {
      seed: { type: 'string', default: '3' },
      jobs: { type: 'string', default: '500' },
      hosts: { type: 'string', default: '60' },
      /** The master's `failurePrediction` config as JSON (defaults otherwise). */
      config: { type: 'string', default: '{}' },
      /** Writes the training set the on run ended with (features, outcome, end time) to this file (prediction-models.ts reads it). */
      samples: { type: 'string' },
    },
  });
  const config = parsePredictionConfig(JSON.parse(values.config) as unknown);
  const seed = Number(values.seed);
  const jobs = Number(values.jobs);
  const hosts = Number(values.hosts);
  const t0 = performance.now();
  const off = simulate('off', seed, jobs, hosts, config);
  const on = simulate('on', seed, jobs, hosts, config);
  const pct = (a: number, b: number): string => `${(((b - a) / Math.max(1, a)) * 100).toFixed(1)}%`;
  console.log(`prediction off: ${JSON.stringify(off.result)}`);
  console.log(`prediction on:  ${JSON.stringify(on.result)}`);
  console.log(
    `on vs off: failed attempts ${pct(off.result.failedAttempts, on.result.failedAttempts)}, failed jobs ${pct(off.result.failedJobs, on.result.failedJobs)}, ` +
      `mean JCT ${pct(off.result.meanJctMs, on.result.meanJctMs)}, wasted slot-seconds ${pct(off.result.wastedSlotSeconds, on.result.wastedSlotSeconds)}`,
  );
  console.log(`on, details: ${JSON.stringify(on.extra)}`);
  console.log(`off, details: ${JSON.stringify(off.extra)}`);
  console.log(`(${((performance.now() - t0) / 1000).toFixed(1)} s)`);
  const out = join(REPO_ROOT, 'bench-results');
  mkdirSync(out, { recursive: true });
  writeFileSync(join(out, 'prediction-des.json'), JSON.stringify({ off: off.result, on: on.result }, null, 2) + '\n');
  if (values.samples !== undefined) writeFileSync(values.samples, JSON.stringify(on.samples) + '\n');
}

main();
