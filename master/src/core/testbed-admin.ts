/**
 * Testbeds in the master (testbeds.ts holds the domain rules): creating and deleting them in two
 * steps (plan, then apply once the store write is durable, so a failed write leaves memory as it
 * was), loading them at takeover, the scheduling pass owed when a window opens or closes, and how
 * operators see them (`fuxi testbed list`, the TESTBED column of `fuxi nodes`).
 *
 * ```ts
 * const { testbed, ops } = planTestbed(st, req); // throws on bad input; changes nothing
 * await store.batch(ops);
 * addTestbed(st, testbed); // only now the scheduler heeds it
 * ```
 */
import { AM_SU, dominantShare, NotFoundError } from '@fuxi/common';
import { isRegistered, type MasterState } from './master-state.js';
import { scheduleOrDefer } from './scheduling.js';
import { KEYS, type StoreOp } from './store-ops.js';
import { TERMINAL_STATES, type JobRecord } from './types.js';
import { activeTestbedOf, isActive, nextBoundary, resolveTestbed, type CreateTestbed, type Testbed, type TestbedNode } from './testbeds.js';

/** A testbed as operators see it. */
export interface TestbedView extends Testbed {
  /** Holding its hosts now (inside its window). */
  active: boolean;
}

/** Per host, the slots of other quota groups' work on it (they run on; nothing new starts). */
export interface OthersRunning {
  nodeId: string;
  workers: number;
}

export interface TestbedPlan {
  testbed: Testbed;
  /** Empty when the same testbed exists already (a retry): nothing to write. */
  ops: StoreOp[];
  othersRunning: OthersRunning[];
}

function testbedNodes(st: MasterState): TestbedNode[] {
  return [...st.nodes.values()].map((n) => ({
    id: n.info.nodeId,
    labels: n.info.labels ?? {},
    healthy: n.status === 'healthy' && n.reported && isRegistered(n),
    cordoned: st.admin.has(n.info.nodeId),
    load: dominantShare(n.allocated, n.info.capacity),
  }));
}

/** Checks and resolves a create request. Changes nothing: `addTestbed` applies it once `ops` are durable. */
export function planTestbed(st: MasterState, req: CreateTestbed): TestbedPlan {
  const testbed = resolveTestbed(req, { nodes: testbedNodes(st), groups: new Set(st.groups.keys()), testbeds: st.testbeds, nowMs: st.now });
  const ops: StoreOp[] = st.testbeds.get(testbed.name) === testbed ? [] : [{ type: 'put', key: KEYS.testbed(testbed.name), value: JSON.stringify(testbed) }];
  return { testbed, ops, othersRunning: othersRunning(st, testbed) };
}

/** Work of other quota groups on the testbed's hosts now, by host (slots held; AMs count too). */
function othersRunning(st: MasterState, tb: Testbed): OthersRunning[] {
  const hosts = new Set(tb.hosts);
  const count = new Map<string, number>();
  for (const app of st.apps.values()) {
    if (app.job.spec.quotaGroup === tb.group) continue;
    for (const su of app.sus.values())
      for (const [nodeId, slots] of su.asgn) if (slots > 0 && hosts.has(nodeId)) count.set(nodeId, (count.get(nodeId) ?? 0) + (su.suId === AM_SU ? 1 : slots));
  }
  return [...count.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([nodeId, workers]) => ({ nodeId, workers }));
}

/** Applies a planned testbed (its write is durable): the scheduler heeds it from the next pass. */
export function addTestbed(st: MasterState, tb: Testbed): void {
  if (st.testbeds.get(tb.name) === tb) return;
  st.testbeds.set(tb.name, tb);
  st.testbedBoundaryMs = nextBoundary(st.testbeds, st.now);
  st.log.info({ testbed: tb.name, group: tb.group, hosts: tb.hosts, startMs: tb.startMs, endMs: tb.endMs }, 'testbed created');
  // Jobs confined to it may place now.
  scheduleOrDefer(st);
}

/** The write that deletes testbed `name`; NOT_FOUND when there is none. Changes nothing. */
export function planDeleteTestbed(st: MasterState, name: string): StoreOp[] {
  if (!st.testbeds.has(name)) throw new NotFoundError('testbed', name);
  return [{ type: 'del', key: KEYS.testbed(name) }];
}

/** Applies a deletion (its write is durable): the hosts are ordinary again. */
export function removeTestbed(st: MasterState, name: string): void {
  const tb = st.testbeds.get(name);
  if (tb === undefined) return;
  st.testbeds.delete(name);
  st.testbedBoundaryMs = nextBoundary(st.testbeds, st.now);
  st.log.info({ testbed: name, group: tb.group, hosts: tb.hosts }, 'testbed deleted');
  scheduleOrDefer(st);
}

/** Loads the records read from the store (a new leader). */
export function loadTestbeds(st: MasterState, records: readonly Testbed[]): void {
  st.testbeds.clear();
  for (const r of records) st.testbeds.set(r.name, r);
  st.testbedBoundaryMs = nextBoundary(st.testbeds, st.now);
}

/** Whether a testbed's window opened or closed since the last tick (a scheduling pass is due). */
export function tickTestbeds(st: MasterState): boolean {
  if (st.testbedBoundaryMs === undefined || st.now < st.testbedBoundaryMs) return false;
  st.testbedBoundaryMs = nextBoundary(st.testbeds, st.now);
  st.log.info({ active: [...st.testbeds.values()].filter((t) => isActive(t, st.now)).map((t) => t.name) }, 'testbed window opened or closed');
  return true;
}

/** Every testbed, by name. */
export function listTestbeds(st: MasterState): TestbedView[] {
  return [...st.testbeds.values()].sort((a, b) => (a.name < b.name ? -1 : 1)).map((tb) => ({ ...tb, active: isActive(tb, st.now) }));
}

/**
 * The job as `fuxi status` shows it: one that names a testbed not active now says so while it has
 * no other message (it waits for the window, or for a testbed that was deleted).
 */
export function testbedJobView(st: MasterState, job: JobRecord): JobRecord {
  const name = job.spec.testbed;
  if (name === undefined || job.message !== '' || TERMINAL_STATES.has(job.state)) return job;
  const tb = st.testbeds.get(name);
  if (tb !== undefined && isActive(tb, st.now)) return job;
  const why =
    tb === undefined
      ? `waiting: testbed ${name} does not exist (deleted?)`
      : tb.startMs !== undefined && st.now < tb.startMs
        ? `waiting: testbed ${name} opens at ${new Date(tb.startMs).toISOString()}`
        : `waiting: testbed ${name} ended at ${new Date(tb.endMs ?? 0).toISOString()}`;
  return { ...job, message: why };
}

/** The name of the testbed holding the node now, if any. */
export function testbedOfNode(st: MasterState, nodeId: string): string | undefined {
  return st.testbeds.size === 0 ? undefined : activeTestbedOf(st.testbeds, nodeId, st.now)?.name;
}
