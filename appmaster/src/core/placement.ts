/**
 * Placement: every step ends by binding each task's free slots to its pending instances (an
 * instance that failed on a node prefers another node; one that already turned a slot down takes
 * any), turning each binding into a worker plan for that node's agent (argv, env and cwd with
 * `${...}` substituted, `FUXI_*` variables, `FUXI_UPSTREAM`, and the node's grant table that holds
 * the slot: `Hold.grantTable`), giving surplus slots back and sizing
 * the outstanding requests to what is still pending. Nothing is planned or returned on a node that
 * is timing out or has not listed its workers yet; nothing is planned on a host given up in a network
 * partition or being drained by an operator (its free slots go back), nor for a task one of whose dependencies runs again (an output
 * re-run in a partition: FUXI_UPSTREAM would not be complete).
 *
 * A gang task (`minInstances` k > 1, `gang: true`) binds nothing until its started instances plus
 * its free slots reach k (or all it still has to start, if fewer): then every free slot is bound at
 * once. Slots that arrive before then are kept, not returned (the master grants a gang whole, so
 * that wait is short). Once the gang has started, an instance that fails is retried alone like any
 * other, while the others keep running: there is no whole-gang restart.
 */
import { gangSize, substitute } from '@fuxi/common';
import { avoided, blocked, byKey, pendingInstances, setInstanceState, workerIdOf, type AmState, type Instance, type Task } from './am-state.js';
import { effective, returnSlots } from './holds.js';
import { sizeRequests } from './requests.js';
import type { TaskSpec, WorkerPlan } from './types.js';

/** Binds free slots, returns unusable ones and sizes the outstanding requests, task by task. */
export function reconcile(st: AmState, now: number): void {
  if (st.done) return;
  // Waiting and finished tasks need no slots: whatever they hold goes back.
  for (const t of st.tasks.values()) reconcileTask(st, t, now);
}

/** One task's free slots bound (steps 1-2), the rest returned (3), its requests sized (4). */
function reconcileTask(st: AmState, task: Task, now: number): void {
  const free = new Map<string, number>();
  for (const [nodeId, h] of byKey(task.holds)) {
    // Slots on a timing-out node, or one whose workers we do not know yet, are left as they are.
    if (blocked(st, nodeId)) continue;
    const n = effective(h) - h.used;
    if (n <= 0) continue;
    // A host given up in a partition: its slots go back (the master revokes what still runs there).
    if (avoided(st, nodeId)) returnSlots(st, task, h, n, now);
    else free.set(nodeId, n);
  }
  // A task whose dependency runs again (an output re-run in a partition) waits for it: no plans.
  const ready = task.state !== 'active' || task.spec.dependsOn.every((d) => st.tasks.get(d)?.state === 'succeeded');
  // A gang that cannot start k instances yet keeps its free slots and plans nothing.
  if (ready && !gangCanStart(task, free)) {
    sizeRequests(st, task, task.counts.pending);
    return;
  }
  const take = (inst: Instance, nodeId: string): void => {
    const n = free.get(nodeId)!;
    if (n <= 1) free.delete(nodeId);
    else free.set(nodeId, n - 1);
    launch(st, task, inst, nodeId);
  };
  // 1. Every pending instance (in index order) takes a free slot on a node it has not failed on.
  //    Once no slot is free nothing else can happen, so the walk stops there: a step costs the
  //    slots it binds, not the task's size.
  const seen: Instance[] = [];
  for (const inst of pendingInstances(task, () => ready && free.size > 0)) {
    seen.push(inst);
    const nodeId = [...free.keys()].find((n) => !inst.failedNodes.has(n) && !inst.avoidNodes.has(n) && !inst.predictedBad.has(n));
    if (nodeId !== undefined) take(inst, nodeId);
  }
  // 2. Instances that already turned down a slot take whatever is left (a one-node cluster), except
  //    a node failure prediction moved them off.
  for (const inst of seen) {
    if (inst.state !== 'pending' || !inst.declined) continue;
    const nodeId = inst.predictedBad.size === 0 ? free.keys().next().value : [...free.keys()].find((n) => !inst.predictedBad.has(n));
    if (nodeId !== undefined) take(inst, nodeId);
  }
  // 3. Free slots left now are surplus, or only on nodes the remaining instances failed on (every
  //    pending instance was seen): return them (the latter ask for a fresh slot anywhere below).
  if (free.size > 0) {
    for (const inst of seen) if (inst.state === 'pending') inst.declined = true;
    for (const [nodeId, n] of free) returnSlots(st, task, task.holds.get(nodeId)!, n, now);
  }
  // 4. Outstanding requests follow what is still needed.
  sizeRequests(st, task, ready ? task.counts.pending : 0);
}

/**
 * Whether a task may bind its free slots: always, unless it is a gang (k > 1) whose instances
 * started (running or succeeded) plus its free slots are fewer than k and than all it has to start.
 */
export function gangCanStart(task: Task, free: ReadonlyMap<string, number>): boolean {
  const k = gangSize(task.spec);
  if (k <= 1 || task.counts.pending === 0) return true;
  const started = task.counts.running + task.counts.succeeded;
  let slots = 0;
  for (const n of free.values()) slots += n;
  return started + slots >= Math.min(k, started + task.counts.pending);
}

/** A new attempt of `inst` on `nodeId`: it uses one of the task's slots there and goes out as a plan. */
function launch(st: AmState, task: Task, inst: Instance, nodeId: string): void {
  const h = task.holds.get(nodeId)!;
  h.used++;
  inst.attempt = Math.max(inst.attempt, inst.highest) + 1;
  inst.highest = inst.attempt;
  setInstanceState(task, inst, 'running');
  inst.nodeId = nodeId;
  inst.started = false;
  inst.adopted = false;
  inst.lostAttempt = 0;
  inst.upstreamAt = task.upstreamMoves;
  const plan = planOf(st, task, inst);
  const list = st.out.plans.get(nodeId);
  if (list) list.push(plan);
  else st.out.plans.set(nodeId, [plan]);
  st.log.debug({ task: task.spec.name, instance: inst.index, attempt: inst.attempt, node: nodeId }, 'instance planned');
}

/** The worker plan of the instance's current attempt. */
function planOf(st: AmState, task: Task, inst: Instance): WorkerPlan {
  const spec = st.spec!;
  const ts = task.spec;
  const vars: Record<string, string | number> = {
    instance: inst.index,
    task: ts.name,
    job: spec.jobId || spec.name,
    jobName: spec.name,
    attempt: inst.attempt,
    instances: ts.instances,
  };
  const env: Record<string, string> = {
    FUXI_JOB_ID: spec.jobId,
    FUXI_TASK: ts.name,
    FUXI_INSTANCE: String(inst.index),
    FUXI_INSTANCES: String(ts.instances),
    FUXI_ATTEMPT: String(inst.attempt),
  };
  if (ts.dependsOn.length > 0) env.FUXI_UPSTREAM = upstreamOf(st, ts);
  for (const [k, v] of Object.entries({ ...spec.env, ...ts.command.env })) env[k] = substitute(v, vars);
  return {
    workerId: workerIdOf(ts.name, inst.index, inst.attempt),
    suId: task.suId,
    task: ts.name,
    instance: inst.index,
    attempt: inst.attempt,
    command: { argv: ts.command.argv.map((a) => substitute(a, vars)), env, cwd: substitute(ts.command.cwd, vars) },
    resource: ts.resource,
    ...grantTableOf(task, inst.nodeId),
  };
}

/** The grant table the agent must have applied before it starts a plan on the task's slot on `nodeId` (see `Hold.grantTable`). */
function grantTableOf(task: Task, nodeId: string): Pick<WorkerPlan, 'grantEpoch' | 'grantSeq'> {
  const g = task.holds.get(nodeId)?.grantTable;
  return g ? { grantEpoch: g.epoch, grantSeq: g.seq } : {};
}

/**
 * `FUXI_UPSTREAM` for a task's workers: for every task it depends on, where each instance's
 * output is, as `{"map": {"hosts": ["10.0.0.7:7071", ...], "nodes": ["n7", ...], "outputs": [[hostIndex, "map.0.1"], ...]}}`
 * (index = instance; hostIndex -1 and "" when unknown; `nodes[i]` is the node id of `hosts[i]`). Hosts are listed once, so a thousand
 * upstream instances on a few dozen hosts stay a few kilobytes. Workers read it with the SDK's
 * `upstreamOutputs()` and fetch from those agents' data service; no filesystem is shared.
 */
function upstreamOf(st: AmState, ts: TaskSpec): string {
  const out: Record<string, { hosts: string[]; nodes: string[]; outputs: Array<[number, string]> }> = {};
  for (const dep of ts.dependsOn) {
    const t = st.tasks.get(dep);
    if (!t) continue;
    const hosts: string[] = [];
    const nodes: string[] = [];
    const index = new Map<string, number>();
    const outputs = t.instances.map((i): [number, string] => {
      const o = i.output;
      const address = o ? o.nodeAddress || st.nodeAddresses.get(o.nodeId) || '' : '';
      if (!o || !address) return [-1, o?.workerId ?? ''];
      let h = index.get(address);
      if (h === undefined) {
        h = hosts.length;
        hosts.push(address);
        nodes.push(o.nodeId);
        index.set(address, h);
      }
      return [h, o.workerId];
    });
    out[dep] = { hosts, nodes, outputs };
  }
  return JSON.stringify(out);
}
