/**
 * Plans and stops, from an AM (epoch '0', fenced by its AM attempt) or from the master (epoch > 0,
 * fenced by its epoch; it plans AM processes only): a plan is accepted as a PENDING worker (once per
 * worker id) and starts when its grant has room; a stop kills pending workers at once and asks
 * running ones to stop.
 */
import { AM_SU, cmpInt64, InvalidArgumentError, isWorkerActive } from '@fuxi/common';
import { copyWorker, putWorker, touch, wkey, type CoreState, type WorkerRecord } from './core-state.js';
import { checkAmAttempt, checkEpoch, raiseAmAttempt } from './grants.js';
import { finish, requestStop, startPending } from './lifecycle.js';
import { workersById } from './queries.js';
import type { Effect, PlanInput, StartWorkersInput, StopWorkersInput, WorkerInfo } from './types.js';

/**
 * Plans from an AM (epoch '0') or from the master (epoch > 0, AM processes only). Each plan starts
 * at once when its grant has room, else waits as PENDING. Duplicate worker ids return the current
 * status. Throws StaleEpochError for an old master epoch or AM attempt.
 */
export function startWorkers(st: CoreState, req: StartWorkersInput, now: number): { workers: WorkerInfo[]; effects: Effect[] } {
  if (!req.appId) throw new InvalidArgumentError('appId', 'must not be empty');
  const fromMaster = cmpInt64(req.epoch, 0) > 0;
  validatePlans(req.plans, fromMaster);
  if (fromMaster) checkEpoch(st, req.epoch);
  checkAmAttempt(st, req.appId, req.amAttempt);
  const effects: Effect[] = raiseAmAttempt(st, req.appId, req.amAttempt, now, 'plan');
  noteAmAddress(st, req);
  const ids: string[] = [];
  for (const p of req.plans) {
    ids.push(p.workerId);
    if (st.workers.has(wkey(req.appId, p.workerId))) continue; // idempotent retry
    effects.push(...acceptPlan(st, req, p, now));
  }
  effects.push(...startPending(st, now));
  return { workers: workersById(st, req.appId, ids), effects };
}

function validatePlans(plans: readonly PlanInput[], fromMaster: boolean): void {
  plans.forEach((p, i) => {
    if (!p.workerId) throw new InvalidArgumentError(`plans[${i}].workerId`, 'must not be empty');
    if (!p.suId) throw new InvalidArgumentError(`plans[${i}].suId`, 'must not be empty');
    if (fromMaster && p.suId !== AM_SU)
      throw new InvalidArgumentError(`plans[${i}].suId`, `the master may only start application masters (su "${AM_SU}"), got "${p.suId}"`);
    if (!fromMaster && p.suId === AM_SU)
      throw new InvalidArgumentError(`plans[${i}].suId`, `su "${AM_SU}" is reserved for application masters started by the master`);
  });
}

/** Events of the app go to the address of its newest AM attempt. */
function noteAmAddress(st: CoreState, req: StartWorkersInput): void {
  const app = st.apps.get(req.appId)!;
  if (req.amAddress && req.amAttempt >= app.amAttempt && app.amAddress !== req.amAddress) {
    app.amAddress = req.amAddress;
    st.dirtyApps.add(req.appId);
  }
}

/** Records a new plan as a PENDING worker (REJECTED at once when its command is empty). */
function acceptPlan(st: CoreState, req: StartWorkersInput, p: PlanInput, now: number): Effect[] {
  const w = pendingWorker(st, req, p, now);
  putWorker(st, w);
  touch(st, w);
  if (w.command.argv.length === 0 || !w.command.argv[0]) return finish(st, w, 'REJECTED', now, 'plan has an empty command (argv)');
  return [
    {
      kind: 'log',
      level: 'debug',
      msg: 'plan accepted',
      fields: { workerId: w.workerId, appId: w.appId, suId: w.suId, task: w.task, instance: w.instance, attempt: w.attempt },
    },
  ];
}

function pendingWorker(st: CoreState, req: StartWorkersInput, p: PlanInput, now: number): WorkerRecord {
  return {
    workerId: p.workerId,
    appId: req.appId,
    suId: p.suId,
    task: p.task,
    instance: p.instance,
    attempt: p.attempt,
    amAttempt: req.amAttempt,
    amAddress: req.amAddress,
    nodeId: st.nodeId,
    command: { argv: [...p.command.argv], env: { ...p.command.env }, cwd: p.command.cwd },
    resource: { ...p.resource },
    state: 'PENDING',
    pid: 0,
    startTime: '',
    bootId: '',
    exitCode: null,
    signal: null,
    message: '',
    acceptedAtMs: now,
    startedAtMs: 0,
    finishedAtMs: 0,
    stopReason: '',
    order: st.nextOrder++,
    startOrder: 0,
    ...(p.grantTable ? { grantTable: { ...p.grantTable } } : {}),
  };
}

/**
 * Stops workers of an app (all of them when `workerIds` is empty). From the master (epoch > 0) any
 * worker; from an AM, not AM processes. Unknown ids are skipped.
 */
export function stopWorkers(st: CoreState, req: StopWorkersInput, now: number): { workers: WorkerInfo[]; effects: Effect[] } {
  if (!req.appId) throw new InvalidArgumentError('appId', 'must not be empty');
  const fromMaster = cmpInt64(req.epoch, 0) > 0;
  if (fromMaster) checkEpoch(st, req.epoch);
  else checkAmAttempt(st, req.appId, req.amAttempt);
  const reason = req.reason || (fromMaster ? 'stopped by the master' : 'stopped by the application master');
  const targets = stopTargets(st, req, fromMaster);
  const effects: Effect[] = [];
  for (const w of targets) {
    if (w.state === 'PENDING') effects.push(...finish(st, w, 'KILLED', now, reason));
    else if (isWorkerActive(w.state)) effects.push(...requestStop(st, w, reason));
  }
  effects.push(...startPending(st, now));
  return { workers: targets.map(copyWorker), effects };
}

function stopTargets(st: CoreState, req: StopWorkersInput, fromMaster: boolean): WorkerRecord[] {
  let targets: WorkerRecord[];
  if (req.workerIds.length === 0) targets = [...st.workers.values()].filter((w) => w.appId === req.appId);
  else targets = req.workerIds.map((id) => st.workers.get(wkey(req.appId, id))).filter((w): w is WorkerRecord => w !== undefined);
  if (!fromMaster) targets = targets.filter((w) => w.suId !== AM_SU);
  return targets;
}
