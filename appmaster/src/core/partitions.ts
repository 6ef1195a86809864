/**
 * Network partitions inside a job (CASPR, seed 000: W-W and D-W cuts while the job runs). The
 * master sends the AM its connectivity graph: the broken links between hosts and the nodes it
 * cannot hear although their peers still reach them (partitioned from the master). The job's hosts
 * are the AM's host, the hosts of its running workers, and the hosts holding outputs of succeeded
 * instances that a task not yet finished still needs (FUXI_UPSTREAM points there). A broken link
 * between two of them stalls the job (a worker cannot fetch an output, or the AM cannot reach a
 * worker's agent), so the AM gives up the fewest hosts that make the rest a clique again:
 *
 * - **Which hosts.** A minimum weighted vertex cover of the broken links among job hosts: a host
 *   weighs the instances it would re-run (running workers, needed outputs); on a tie, the cover
 *   re-running fewer outputs, then the one with fewer hosts, then by node id. The AM's own host is
 *   never given up (a worker host cut from it is), nor a node partitioned from the master (its
 *   workers keep running; the master cannot push revocations there). A link no give-up can mend
 *   (between two such hosts) is logged once and left. Links of a host the master reports timing
 *   out (isolated from everyone) are left to the timing-out policy (timing-out.ts).
 * - **What happens there.** Every instance whose running worker or needed output is on a given-up
 *   host runs again elsewhere, at most once per instance per partition, counted as a re-execution
 *   of its task (`reexecutions`) and not as a failed attempt (maxAttempts untouched). Its worker
 *   is stopped (StopWorkers, if the agent is reachable) and its slot returned, so the master
 *   revokes the grant and the agent kills the worker otherwise. A task whose output runs again is
 *   active again, and tasks depending on it plan nothing until it has succeeded again; an attempt
 *   of theirs planned before (a stale FUXI_UPSTREAM) that ends without success is a re-execution
 *   too, once per partition. A running attempt of theirs on a host cut from the given-up one (its
 *   fetches from there cannot finish) is stopped and runs again at once, also once. Other workers
 *   on hosts not given up are never touched.
 * - **Placement constraints** for the master (`placementConstraints`): `reach` = hosts of needed
 *   outputs and running workers, `avoid` = hosts given up. The shell sends them with UpdateRequests
 *   and in ReportAppState.
 * - **Heal.** A given-up host is usable again once no broken link touches it; re-executions already
 *   started stay. A partition starts with a give-up while no host is given up and ends when none is
 *   any more, so a later cut is a new partition (instances may run again, once).
 *
 * ```ts
 * setConnectivity(st, [{ a: 'n2', b: 'n3' }], [], now); // then resolvePartitions(st, now) in the same step
 * placementConstraints(st); // { reach: ['n1', 'n2'], avoid: ['n3'] }
 * ```
 */
import { blocked, byKey, setInstanceState, setOutput, workerIdOf, type AmState, type Instance, type Task } from './am-state.js';
import { setTaskState } from './dag.js';
import { effective } from './holds.js';
import { dropShadow, releaseSlot, stopWorker } from './workers.js';

/** A broken link as the master sends it (node ids). */
export interface LinkInput {
  a: string;
  b: string;
}

/** What the AM asks of the hosts of its future grants (`PlacementConstraints` on the wire). */
export interface Constraints {
  reach: string[];
  avoid: string[];
}

/** Covers the exact search looks at before the best found so far stands (many links broken at once). */
const SEARCH_BUDGET = 20_000;

/** The graph the master sent replaces the one held. */
export function setConnectivity(st: AmState, links: readonly LinkInput[], partitioned: readonly string[]): void {
  const seen = new Set<string>();
  const list: Array<readonly [string, string]> = [];
  for (const l of links) {
    if (!l.a || !l.b || l.a === l.b) continue;
    const pair: readonly [string, string] = l.a < l.b ? [l.a, l.b] : [l.b, l.a];
    const k = `${pair[0]}|${pair[1]}`;
    if (seen.has(k)) continue;
    seen.add(k);
    list.push(pair);
  }
  list.sort((x, y) => cmp(x[0], y[0]) || cmp(x[1], y[1]));
  const net = st.net;
  const was = net.links.length;
  net.links = list;
  net.partitioned = new Set(partitioned.filter(Boolean));
  for (const k of [...net.unmendable]) if (!seen.has(k)) net.unmendable.delete(k);
  if (list.length !== was || list.length > 0 || net.partitioned.size > 0)
    st.log.info({ brokenLinks: list.map((l) => `${l[0]}-${l[1]}`), partitioned: [...net.partitioned].sort() }, 'connectivity from the master');
}

/**
 * After every input: given-up hosts that no broken link touches any more are usable again (the
 * partition ends when none is left); broken links between job hosts are mended by giving up the
 * fewest hosts (see the header). Costs nothing while the graph is empty and nothing is given up.
 */
export function resolvePartitions(st: AmState, now: number): void {
  const net = st.net;
  if (st.done || (net.links.length === 0 && net.avoid.size === 0)) return;
  const touched = new Set<string>();
  for (const [a, b] of net.links) touched.add(a).add(b);
  for (const [host, since] of byKey(net.avoid)) {
    if (touched.has(host)) continue;
    net.avoid.delete(host);
    st.log.info({ host, givenUpMs: now - since, partition: net.partition }, 'host given up in a partition is reachable again; usable again');
  }
  if (net.avoid.size === 0 && net.links.length === 0) return;

  const hosts = jobHosts(st);
  const cut: Array<readonly [string, string]> = [];
  // A host the master reports timing out (isolated from everyone) is left to the timing-out policy.
  for (const l of net.links) if (hosts.has(l[0]) && hosts.has(l[1]) && !st.timingOut.has(l[0]) && !st.timingOut.has(l[1])) cut.push(l);
  if (cut.length === 0) return;
  const canGiveUp = (h: string) => h !== st.amNodeId && !net.partitioned.has(h);
  const mendable = cut.filter((l) => {
    if (canGiveUp(l[0]) || canGiveUp(l[1])) return true;
    const k = `${l[0]}|${l[1]}`;
    if (!net.unmendable.has(k)) {
      net.unmendable.add(k);
      st.log.warn(
        { link: `${l[0]}-${l[1]}`, amHost: st.amNodeId, partitioned: [...net.partitioned].sort() },
        'broken link between job hosts that no give-up can mend (the AM host or hosts partitioned from the master); left as it is',
      );
    }
    return false;
  });
  if (mendable.length === 0) return;
  const cover = minCover(mendable, hosts, canGiveUp);
  if (net.avoid.size === 0) net.partition++;
  for (const host of cover) giveUp(st, host, hosts.get(host)!, mendable, now);
}

/** What a job host holds: running workers (shadows too) and outputs a task not yet finished needs. */
interface HostLoad {
  running: number;
  outputs: number;
}

/**
 * The job's hosts not given up: the AM's host, hosts of live workers and of needed outputs, and
 * hosts where free slots are about to take work (weighing nothing: a fresh slot on a host cut off
 * from the job is given up before anything runs there).
 */
export function jobHosts(st: AmState): Map<string, HostLoad> {
  const out = new Map<string, HostLoad>();
  const at = (h: string): HostLoad => {
    let l = out.get(h);
    if (!l) out.set(h, (l = { running: 0, outputs: 0 }));
    return l;
  };
  if (st.amNodeId) at(st.amNodeId);
  for (const t of st.tasks.values()) {
    for (const [h, hold] of t.holds) {
      if (hold.used > 0) at(h).running += hold.used;
      else if (effective(hold) > 0 && !blocked(st, h)) at(h);
    }
  }
  for (const t of neededTasks(st)) for (const [h, n] of t.outputHosts) at(h).outputs += n;
  for (const h of st.net.avoid.keys()) out.delete(h);
  return out;
}

/** Tasks whose outputs a task not yet finished (waiting or active) depends on. */
export function neededTasks(st: AmState): Set<Task> {
  const needed = new Set<Task>();
  for (const t of st.tasks.values()) {
    if (t.state === 'succeeded' || t.state === 'failed') continue;
    for (const d of t.spec.dependsOn) {
      const dt = st.tasks.get(d);
      if (dt) needed.add(dt);
    }
  }
  return needed;
}

/** `reach`: hosts of needed outputs and running workers (not given up); `avoid`: hosts given up. Both sorted. */
export function placementConstraints(st: AmState): Constraints {
  if (!st.spec || st.done) return { reach: [], avoid: [] };
  const hosts = jobHosts(st);
  const reach = [...hosts].filter(([, l]) => l.running + l.outputs > 0).map(([h]) => h);
  const avoid = new Set([...st.net.avoid.keys(), ...st.speculation.slowHosts.keys()]);
  return { reach: reach.sort(), avoid: [...avoid].sort() };
}

/**
 * A minimum weighted vertex cover of `links` using only hosts `canGiveUp` allows (every link has
 * at least one): branch and bound from a greedy cover, exploring at most SEARCH_BUDGET nodes (the
 * best cover found so far stands after that). Cost: instances re-run, then outputs re-run, then
 * hosts, then the sorted ids, so the answer is deterministic.
 */
export function minCover(links: ReadonlyArray<readonly [string, string]>, load: ReadonlyMap<string, HostLoad>, canGiveUp: (h: string) => boolean): string[] {
  const w = (h: string): HostLoad => load.get(h) ?? { running: 0, outputs: 0 };
  type Cost = [all: number, outputs: number, hosts: number, ids: string];
  const costOf = (set: ReadonlySet<string>): Cost => {
    const ids = [...set].sort();
    let all = 0;
    let outputs = 0;
    for (const h of ids) {
      all += w(h).running + w(h).outputs;
      outputs += w(h).outputs;
    }
    return [all, outputs, ids.length, ids.join('\u0000')];
  };
  const less = (x: Cost, y: Cost) => (x[0] - y[0] || x[1] - y[1] || x[2] - y[2] || cmp(x[3], y[3])) < 0;
  // A link with one end that may be given up forces it.
  const forced = new Set<string>();
  for (const [a, b] of links) {
    if (!canGiveUp(a)) forced.add(b);
    else if (!canGiveUp(b)) forced.add(a);
  }
  const open = links.filter(([a, b]) => !forced.has(a) && !forced.has(b));
  // Greedy: the end covering the most open links per instance re-run, until none is open.
  let best = new Set(forced);
  for (let left = open; left.length > 0;) {
    const score = new Map<string, number>();
    for (const [a, b] of left) for (const h of [a, b]) score.set(h, (score.get(h) ?? 0) + 1);
    const ratio = (h: string, n: number) => n / Math.max(1, w(h).running + w(h).outputs);
    const pick = [...score].sort((x, y) => ratio(y[0], y[1]) - ratio(x[0], x[1]) || cmp(x[0], y[0]))[0]![0];
    best.add(pick);
    left = left.filter(([a, b]) => a !== pick && b !== pick);
  }
  let bestCost = costOf(best);
  const chosen = new Set(forced);
  let budget = SEARCH_BUDGET;
  const search = (): void => {
    if (budget-- <= 0) return;
    const c = costOf(chosen);
    const link = open.find(([a, b]) => !chosen.has(a) && !chosen.has(b));
    if (!link) {
      if (less(c, bestCost)) {
        best = new Set(chosen);
        bestCost = c;
      }
      return;
    }
    // Adding a host never lowers the instances or outputs re-run and adds a host: prune what cannot win.
    const b = bestCost;
    if (c[0] > b[0] || (c[0] === b[0] && (c[1] > b[1] || (c[1] === b[1] && c[2] >= b[2])))) return;
    for (const h of link) {
      chosen.add(h);
      search();
      chosen.delete(h);
    }
  };
  search();
  return [...best].sort();
}

/**
 * `host` is given up: nothing is planned there any more, live attempts there are stopped (their
 * slots go back in this step's placement), and instances whose worker or needed output is there
 * run again elsewhere, once per partition.
 */
function giveUp(st: AmState, host: string, load: HostLoad, links: ReadonlyArray<readonly [string, string]>, now: number): void {
  const net = st.net;
  net.avoid.set(host, now);
  const peers = links.filter((l) => l[0] === host || l[1] === host).map((l) => (l[0] === host ? l[1] : l[0]));
  st.log.warn(
    { host, cutFrom: peers, running: load.running, outputs: load.outputs, partition: net.partition },
    'host cut off from other hosts of the job; given up: its instances run again elsewhere',
  );
  const needed = neededTasks(st);
  /** Tasks with an output on `host` that runs again. */
  const moved = new Set<string>();
  let rerun = 0;
  let kept = 0;
  for (const t of st.tasks.values()) {
    for (const inst of t.instances) {
      if (st.done) return;
      for (const sh of [...inst.shadows]) {
        if (sh.nodeId !== host) continue;
        stopWorker(st, host, workerIdOf(t.spec.name, inst.index, sh.attempt));
        dropShadow(t, inst, sh);
      }
      const onHost = (inst.state === 'running' && inst.nodeId === host) || (inst.state === 'succeeded' && inst.output?.nodeId === host && needed.has(t));
      if (!onHost) continue;
      if (inst.partitionRerun === net.partition) {
        kept++;
        continue;
      }
      if (inst.state === 'running') {
        stopWorker(st, host, workerIdOf(t.spec.name, inst.index, inst.attempt));
        releaseSlot(t, inst);
      } else {
        setOutput(t, inst, undefined);
        if (t.state === 'succeeded') setTaskState(st, t, 'active');
        for (const d of st.tasks.values()) if (d.spec.dependsOn.includes(t.spec.name)) d.upstreamMoves++;
        moved.add(t.spec.name);
      }
      countRerun(st, t, inst);
      rerun++;
    }
  }
  // Running attempts that read outputs from `host` while cut from it wait on fetches that cannot
  // finish: they run again now (once), after the outputs they need have run again.
  const cutFrom = new Set(peers);
  for (const d of st.tasks.values()) {
    if (!d.spec.dependsOn.some((u) => moved.has(u))) continue;
    for (const inst of d.instances) {
      if (st.done) return;
      if (inst.state !== 'running' || !inst.nodeId || !cutFrom.has(inst.nodeId) || inst.partitionRerun === net.partition) continue;
      stopWorker(st, inst.nodeId, workerIdOf(d.spec.name, inst.index, inst.attempt));
      releaseSlot(d, inst);
      countRerun(st, d, inst);
      rerun++;
    }
  }
  if (kept > 0) st.log.warn({ host, instances: kept, partition: net.partition }, 'instances already run again once in this partition are left where they are');
  st.log.info({ host, instances: rerun, partition: net.partition }, 'instances of a given-up host run again');
}

/** The instance runs again: a re-execution of its task, not a failed attempt. */
function countRerun(st: AmState, t: Task, inst: Instance): void {
  const was = inst.state;
  setInstanceState(t, inst, 'pending');
  inst.partitionRerun = st.net.partition;
  inst.reruns++;
  inst.declined = false;
  inst.lostAttempt = 0;
  t.reexecutions++;
  st.log.info({ task: t.spec.name, instance: inst.index, attempt: inst.attempt, was, partition: st.net.partition }, 'instance runs again (partition)');
}

/**
 * The current attempt of `inst` ended without success (its slot already released). If it was
 * planned before an output it reads ran again in a partition (its FUXI_UPSTREAM named a host given
 * up), the end is the partition's doing: it runs again as a re-execution, once per partition, and
 * true is returned; else false (a failed attempt as usual).
 */
export function excuseStaleUpstream(st: AmState, task: Task, inst: Instance, nodeId: string, reason: string): boolean {
  if (inst.upstreamAt >= task.upstreamMoves || st.net.partition === 0 || inst.partitionRerun === st.net.partition) return false;
  st.log.info(
    { task: task.spec.name, instance: inst.index, attempt: inst.attempt, node: nodeId, reason },
    'attempt planned before its upstream outputs ran again (partition) ended; not counted as a failure',
  );
  countRerun(st, task, inst);
  return true;
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
