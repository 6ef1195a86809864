/**
 * Scheduling passes: collect the outstanding requests of every app, let the pure scheduler
 * (scheduler.ts) plan over a live view of the nodes and of the hosts' connectivity
 * (placement-scope.ts) and of the hosts failure prediction holds back (prediction-hooks.ts) and
 * testbeds reserve (testbed-admin.ts), and apply the plan: assignments in the ledger, grants to agents, AM
 * launches, assignment tables to AMs, and the message of a job that waits only for connectivity.
 * The tasks of a job held for an external scheduler (external-registry.ts) are left out; its
 * placements come in through `applyPlacements` (external-schedulers.ts).
 * No pass runs while a failover's aggregation window is open.
 */
import { AM_SU, gangSize, predictionOn } from '@fuxi/common';
import { setAsgn } from './ledger.js';
import type { AppState, MasterState, NodeState, ScheduleUnitState } from './master-state.js';
import { connectivityAware, isScoped, liveLinks, noteWaiting, reachOf, scopesOf } from './placement-scope.js';
import { blacklistOf } from './prediction-hooks.js';
import { externalHolds } from './external-registry.js';
import { schedule, type AmShare, type Placement, type SchedNode, type SchedUnit } from './scheduler.js';
import { amShareFull } from './sched-am-share.js';
import { amBound, firstPerGroup, needsMore, type QueuedAm } from './sched-am-queue.js';
import { schedulableTotal } from './sched-nodes.js';
import { reservationsOf } from './sched-testbeds.js';
import { putJob } from './store-ops.js';
import { isActive } from './testbeds.js';
import { pushAssignments, pushGrants } from './sync.js';

/**
 * A node as the scheduler sees it, read live from its state. A node partitioned from the master
 * takes nothing new: the master cannot push its grants there; nor does one its operator cordoned or
 * is draining (node-admin.ts). Grants it holds stay.
 */
function schedView(st: MasterState, n: NodeState): SchedNode {
  return {
    get id() {
      return n.info.nodeId;
    },
    get rack() {
      return n.info.rack;
    },
    get capacity() {
      return n.info.capacity;
    },
    get allocated() {
      return n.allocated;
    },
    get schedulable() {
      return nodeSchedulable(st, n);
    },
  };
}

/** Whether a node takes new slots (see schedView). */
export function nodeSchedulable(st: MasterState, n: NodeState): boolean {
  return n.reported && n.status === 'healthy' && !st.admin.has(n.info.nodeId) && !(st.connectivity.partitioned.has(n.info.nodeId) && connectivityAware(st));
}

/**
 * The nodes as the scheduler sees them. Views are made once per node (nodes are never removed)
 * and read the node's current state, so a scheduling pass allocates nothing per node.
 */
function schedulerNodes(st: MasterState): ReadonlyMap<string, SchedNode> {
  if (st.schedNodes.size !== st.nodes.size) {
    for (const [id, n] of st.nodes) if (!st.schedNodes.has(id)) st.schedNodes.set(id, schedView(st, n));
  }
  return st.schedNodes;
}

/** A pass now, or (batch scheduling) a pass owed to the next `runDueSchedule`. */
export function scheduleOrDefer(st: MasterState): void {
  st.external.changed = true;
  if ((st.cfg.schedulingIntervalMs ?? 0) > 0) {
    st.due = true;
    return;
  }
  runScheduler(st);
}

/**
 * The task units of the apps that may have outstanding requests (`st.requesting`; an app leaves
 * the set once it asks for no task slot: a queued AM is in its group's queue, `st.amQueues`).
 */
function pendingTasks(st: MasterState): SchedUnit[] {
  const tasks: SchedUnit[] = [];
  for (const appId of st.requesting) {
    const app = st.apps.get(appId);
    if (app === undefined) {
      st.requesting.delete(appId);
      continue;
    }
    let asks = false;
    for (const su of app.sus.values()) {
      // A queued AM's wait is on record from when it was asked for (jobs.ts, am-restart.ts); it is
      // brought in step when a pass takes it from the queue (runScheduler).
      if (su.suId === AM_SU) {
        if (su.requests.size === 0 && (su.waits?.length ?? 0) > 0) st.grantWaits.noteRequests(su, st.now);
        continue;
      }
      if (su.requests.size > 0 || (su.waits?.length ?? 0) > 0) st.grantWaits.noteRequests(su, st.now);
      if (su.requests.size === 0) continue;
      asks = true;
      // A task of a job with an external scheduler is that scheduler's while it holds it.
      if (externalHolds(st, app)) continue;
      tasks.push(unitOf(st, app, su));
    }
    if (!asks) st.requesting.delete(appId);
  }
  return tasks;
}

/** The app's AM still waits for its slot (a queue entry that does not is dropped). */
function amWaiting(st: MasterState, q: QueuedAm): boolean {
  return (st.apps.get(q.appId)?.sus.get(AM_SU)?.requests.size ?? 0) > 0;
}

/** The scheduler's unit of an app's schedule unit with outstanding requests. */
function unitOf(st: MasterState, app: AppState, su: ScheduleUnitState): SchedUnit {
  const unit: SchedUnit = {
    appId: app.appId,
    suId: su.suId,
    resource: su.resource,
    priority: su.priority,
    quotaGroup: app.job.spec.quotaGroup,
    submitSeq: app.job.submitSeq,
    requests: su.requests,
  };
  // The AM's slot is a connected app's first: the most connected node (CASPR Algorithm 1).
  if (su.suId === AM_SU && isScoped(st, app)) unit.mostConnected = true;
  if (!predictionOn(app.job.spec)) unit.predictionOff = true;
  // A gang task (its SU id is the task's name): what it still lacks of its gang comes at once.
  const task = su.suId === AM_SU ? undefined : app.job.spec.tasks.find((t) => t.name === su.suId);
  const gang = task === undefined ? 1 : gangSize(task) - su.granted;
  if (gang > 1) unit.gang = gang;
  // A job that names a testbed goes only to its hosts (its AM too).
  if (app.job.spec.testbed) unit.testbed = app.job.spec.testbed;
  return unit;
}

/** The AM share rule's input: the configured share and what AMs hold now (granted AM slots). */
function amShareOf(st: MasterState): AmShare {
  return { share: st.cfg.maxAmShare ?? 1, used: st.amUsed };
}

/** Runs the scheduler over the current state and applies its plan. */
export function runScheduler(st: MasterState): void {
  st.due = false;
  st.external.changed = true;
  if (st.recovering) return;
  const nodes = schedulerNodes(st);
  const amShare = amShareOf(st);
  const tasks = pendingTasks(st);
  // AMs hold their whole share: none can be placed this pass (sched-am-share.ts).
  const amsWait = !amShareFull(amShare, nodes) && [...st.amQueues.values()].some((q) => q.size > 0);
  const links = liveLinks(st);
  if (tasks.length === 0 && !amsWait) {
    noteWaiting(st, { placements: [], unsatisfied: [] }, links);
    return;
  }
  const blacklist = blacklistOf(st);
  const reservations = st.testbeds.size === 0 ? undefined : reservationsOf([...st.testbeds.values()].filter((tb) => isActive(tb, st.now)));
  const aware = connectivityAware(st);
  // Of the queued AMs, per quota group the first ones the share may place (twice as many again
  // when a group might have placed more: sched-am-queue.ts). The first guess: as many as fit of
  // the size of each group's first AM.
  const waiting = (q: QueuedAm) => amWaiting(st, q);
  let n = 0;
  if (amsWait) n = amBound(amShare, schedulableTotal(nodes.values()), firstPerGroup(st.amQueues, 1, waiting).chosen) + 1;
  for (;;) {
    const pick = amsWait ? firstPerGroup(st.amQueues, n, waiting) : { chosen: [], cut: new Set<string>() };
    const units = [...tasks];
    for (const q of pick.chosen) {
      const app = st.apps.get(q.appId)!;
      const su = app.sus.get(AM_SU)!;
      st.grantWaits.noteRequests(su, st.now);
      units.push(unitOf(st, app, su));
    }
    const plan = schedule({
      nodes,
      units,
      groups: st.groups,
      groupUsage: st.usage,
      reach: reachOf(links),
      scopes: aware ? scopesOf(st, new Set(units.map((u) => u.appId))) : undefined,
      ...(blacklist ? { blacklist } : {}),
      ...(reservations ? { reservations } : {}),
      amShare,
    });
    if (needsMore(pick, plan)) {
      n *= 2;
      continue;
    }
    applyPlacements(st, plan.placements, () => noteWaiting(st, plan, links));
    return;
  }
}

/**
 * Applies placements (a plan's, or an external scheduler's that passed external-placement.ts):
 * assignments in the ledger, grants to agents, AM launches, assignment tables to AMs. `beforePush`
 * runs after the ledger changed and before anything is pushed.
 */
export function applyPlacements(st: MasterState, placements: readonly Placement[], beforePush?: () => void): void {
  if (placements.length > 0) st.external.changed = true;
  const grantNodes = new Set<string>();
  const appChanges = new Map<string, Array<{ nodeId: string }>>();
  for (const p of placements) {
    const app = st.apps.get(p.appId);
    const su = app?.sus.get(p.suId);
    if (!app || !su) continue;
    const left = (su.requests.get(p.location) ?? 0) - p.slots;
    if (left > 0) su.requests.set(p.location, left);
    else su.requests.delete(p.location);
    setAsgn(st, app, su, p.nodeId, (su.asgn.get(p.nodeId) ?? 0) + p.slots);
    st.grantWaits.placed(su, p.slots, st.now);
    grantNodes.add(p.nodeId);
    if (p.suId !== AM_SU) {
      const list = appChanges.get(app.appId) ?? [];
      list.push({ nodeId: p.nodeId });
      appChanges.set(app.appId, list);
      continue;
    }
    const node = st.nodes.get(p.nodeId);
    app.job.amNodeId = p.nodeId;
    if (app.amState === 'waiting') app.amState = 'launching'; // never demote a registered AM
    app.lastContactMs = st.now;
    st.out.push({
      kind: 'launchAm',
      appId: app.appId,
      attempt: app.job.amAttempt,
      nodeId: p.nodeId,
      address: node?.info.address ?? '',
      resource: su.resource,
      epoch: st.epoch,
    });
    // The AM's location is hard state (metaAM): a new master must not launch it twice.
    st.out.push(putJob(app.job), { kind: 'jobChanged', jobId: app.appId });
    st.log.info({ appId: app.appId, nodeId: p.nodeId, attempt: app.job.amAttempt }, 'launching application master');
  }
  // After the placements: the waiting messages name the app's hosts, the new ones included.
  beforePush?.();
  // The outbox sends grants before AM launches and assignments, so plans rarely wait for their grant.
  pushGrants(st, grantNodes);
  for (const [appId, changed] of appChanges) {
    const app = st.apps.get(appId);
    if (app) pushAssignments(st, app, changed);
  }
}
