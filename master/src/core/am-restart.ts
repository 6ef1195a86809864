/**
 * AM failover: a new attempt of an application master after its process ended, it stalled, or its
 * node was lost. The app keeps every slot it holds (its workers keep running); the new attempt's
 * number reaches agents with the grants, which fences the old one. After a master failover a
 * restart waits until every agent has reported (Table 3, row 13).
 */
import { AM_SU } from '@fuxi/common';
import { mintAttemptToken } from './am-tokens.js';
import { endJob } from './jobs.js';
import { markRequesting, setAsgn } from './ledger.js';
import { isUnreported, type AppState, type MasterState } from './master-state.js';
import { runScheduler } from './scheduling.js';
import { putJob } from './store-ops.js';
import { pushGrants } from './sync.js';
import type { HeartbeatInput } from './types.js';

export function unreportedAgents(st: MasterState): number {
  let n = 0;
  for (const node of st.nodes.values()) if (isUnreported(node)) n++;
  return n;
}

/**
 * The AM process of the current attempt ended before finishing its app (an agent's heartbeat says
 * so): an AM crash. The AM_CRASH handler restarts it (fault-handlers.ts).
 */
export function onAmWorker(st: MasterState, nodeId: string, am: HeartbeatInput['amWorkers'][number]): void {
  const app = st.apps.get(am.appId);
  if (!app || app.job.amAttempt !== am.amAttempt) return;
  if (am.state === 'pending' || am.state === 'running') return;
  const how = am.signal ? `signal ${am.signal}` : `exit code ${am.exitCode}`;
  const detail = am.message ? `: ${am.message}` : '';
  st.log.warn(
    { appId: am.appId, nodeId, state: am.state, exitCode: am.exitCode, signal: am.signal },
    'application master process ended before finishing the app',
  );
  repostAmFault(st, 'AM_CRASH', app, `application master exited (${how})${detail}`);
}

/** How long after its launch (or a takeover) an AM may be missing from its agent's reports. */
export const AM_LAUNCH_GRACE_MS = 10_000;

/**
 * An AM the master launched on this node that the node's heartbeat does not list (no process for
 * its attempt, not even an ended one) well after the launch: the launch never reached the agent (a
 * leader that placed it stepped down before sending it, say). Treated as an AM crash, so a new
 * attempt starts now rather than after the AM timeouts.
 */
export function checkAmLaunches(st: MasterState, nodeId: string, reported: HeartbeatInput['amWorkers']): void {
  if (st.recovering) return;
  for (const app of st.apps.values()) {
    if (app.amState !== 'launching' || app.job.amNodeId !== nodeId || app.pendingAmRestart) continue;
    if (st.now - app.lastContactMs < AM_LAUNCH_GRACE_MS) continue;
    if (reported.some((w) => w.appId === app.appId && w.amAttempt === app.job.amAttempt)) continue;
    st.log.warn({ appId: app.appId, nodeId, attempt: app.job.amAttempt }, 'application master launched but unknown to its agent');
    repostAmFault(st, 'AM_CRASH', app, `its agent ${nodeId} has no application master process for attempt ${app.job.amAttempt} (the launch never reached it)`);
  }
}

/**
 * Posts an AM fault so that its handler restarts the AM. A fault of that app already open (an
 * attempt that failed again before registering) is resolved first, so the new one is dispatched.
 */
export function repostAmFault(st: MasterState, kind: 'AM_CRASH' | 'AM_TIMING', app: AppState, why: string): void {
  st.faults.resolve(kind, app.appId, st.now, 'failed again');
  st.faults.post(kind, app.appId, st.now, why);
  st.faults.recovering(kind, app.appId, st.now);
}

/** Runs AM restarts that were waiting for agents to report, once none is left unreported. */
export function runPendingAmRestarts(st: MasterState): void {
  if (st.recovering || unreportedAgents(st) > 0) return;
  for (const app of [...st.apps.values()]) {
    if (app.pendingAmRestart && st.apps.has(app.appId)) restartAm(st, app, app.pendingAmRestart);
  }
}

/**
 * A new attempt on the same node if it is healthy and not cordoned or draining (node-admin.ts),
 * else wherever the scheduler puts it; the job fails when no attempts are left.
 */
export function restartAm(st: MasterState, app: AppState, why: string): void {
  if (app.job.amAttempt >= st.cfg.maxAmAttempts) {
    endJob(st, app.job, 'failed', `${why}; no AM attempts left (${st.cfg.maxAmAttempts})`);
    return;
  }
  // After a failover, agents that have not reported may run this app's workers and hold its
  // grants; a new AM would see neither and run those instances again (Table 3, row 13). Its
  // restart waits until every such agent has reported or been declared lost.
  if (unreportedAgents(st) > 0) {
    if (!app.pendingAmRestart)
      st.log.warn({ appId: app.appId, reason: why, waitingFor: unreportedAgents(st) }, 'AM restart waits for agents that have not reported');
    app.pendingAmRestart = why;
    app.amState = 'waiting';
    st.out.push({ kind: 'jobChanged', jobId: app.appId });
    return;
  }
  const oldAttempt = app.job.amAttempt;
  const oldNodeId = app.job.amNodeId;
  newAttempt(st, app, why);
  const amSu = app.sus.get(AM_SU)!;
  const node = st.nodes.get(oldNodeId);
  const nodesOfApp = renameGrants(st, app);
  const stopOld = (): void => {
    if (node)
      st.out.push({
        kind: 'stopWorkers',
        nodeId: oldNodeId,
        address: node.info.address,
        appId: app.appId,
        epoch: st.epoch,
        reason: why,
        workerIds: [`am.${oldAttempt}`],
      });
  };
  if (node && node.reported && node.status === 'healthy' && !st.admin.has(oldNodeId) && (amSu.asgn.get(oldNodeId) ?? 0) > 0) {
    // Same node: the old AM's slot is the new one's (the agent starts it once the old one is gone).
    pushGrants(st, nodesOfApp);
    stopOld();
    app.amState = 'launching';
    st.out.push(putJob(app.job));
    st.out.push({
      kind: 'launchAm',
      appId: app.appId,
      attempt: app.job.amAttempt,
      nodeId: oldNodeId,
      address: node.info.address,
      resource: amSu.resource,
      epoch: st.epoch,
    });
    return;
  }
  if (oldNodeId && (amSu.asgn.get(oldNodeId) ?? 0) > 0) {
    stopOld();
    setAsgn(st, app, amSu, oldNodeId, 0);
  }
  app.job.amNodeId = '';
  amSu.requests.set('', 1);
  markRequesting(st, app);
  st.grantWaits.noteRequests(amSu, st.now);
  pushGrants(st, nodesOfApp);
  st.out.push(putJob(app.job));
  runScheduler(st);
}

/** The app's bookkeeping for its next AM attempt: it asks again from zero. */
function newAttempt(st: MasterState, app: AppState, why: string): void {
  app.pendingAmRestart = undefined;
  app.job.amAttempt += 1;
  mintAttemptToken(st, app.job);
  app.job.amAddress = '';
  app.amState = 'waiting';
  app.lastRequestSeq = 0;
  app.lastReturnSeq = 0;
  app.lastContactMs = st.now;
  app.amRestarts = (app.amRestarts ?? 0) + 1;
  app.snapshotSeq = 0;
  for (const su of app.sus.values()) if (su.suId !== AM_SU) su.requests.clear();
  st.log.warn({ appId: app.appId, attempt: app.job.amAttempt, reason: why }, 'restarting the application master');
  st.out.push({ kind: 'jobChanged', jobId: app.appId });
}

/** Every grant of the app now names the new attempt; returns the nodes that hold one. */
function renameGrants(st: MasterState, app: AppState): Set<string> {
  const nodesOfApp = new Set<string>();
  for (const su of app.sus.values()) for (const n of su.asgn.keys()) nodesOfApp.add(n);
  for (const n of nodesOfApp) {
    const ns = st.nodes.get(n);
    if (!ns) continue;
    for (const [k, g] of ns.grants) if (g.appId === app.appId) ns.grants.set(k, { ...g, amAttempt: app.job.amAttempt, amTokenHash: app.job.amTokenHash });
  }
  return nodesOfApp;
}
