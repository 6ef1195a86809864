/**
 * Connectivity-aware placement, the master's side (CASPR, seed 000; the scheduler's side is
 * sched-reach.ts): the graph as the scheduler sees it, each connected app's scope (its anchors:
 * the hosts of its slots, its AM's among them, and the hosts its AM asked to stay in reach of; the
 * hosts it gave up), the constraints AMs send, the message of a job that waits only for
 * connectivity, and the graph handed to AMs. `connectivityAware: false` turns all of it off.
 *
 * Only links between nodes the master hears (or that are partitioned from it, which their peers
 * still reach) count: a node silent to the master and to its peers is down or cut off from
 * everyone, and the links its probers report to it say nothing about which hosts can work
 * together (its slots are handled as timing out, then lost).
 *
 * ```ts
 * const live = liveLinks(st);
 * const plan = schedule({ ...snapshot, reach: reachOf(live), scopes: scopesOf(st, appIds) });
 * noteWaiting(st, plan, live); // "waiting: no free host reaches all of a1, a3 (broken links: a1-a2)"
 * ```
 */
import { isConnectedJob } from '@fuxi/common';
import { brokenLinks, type BrokenLink } from './connectivity.js';
import type { AppState, MasterState } from './master-state.js';
import { externalWaitingMessage } from './external-registry.js';
import type { PlacementScope, Plan, Reach } from './sched-types.js';
import { TERMINAL_STATES, type ConnectivityView, type JobRecord, type PlacementConstraints } from './types.js';

const NOTHING: ReadonlySet<string> = new Set();
/** Hosts and links named in a waiting message before "and N more". */
const LISTED = 5;

export function connectivityAware(st: MasterState): boolean {
  return st.cfg.connectivityAware !== false;
}

/** Every broken link of the graph (recomputed when its version moves). */
function allLinks(st: MasterState): BrokenLink[] {
  const cs = st.connectivity;
  if (st.linksCache?.version !== cs.version) st.linksCache = { version: cs.version, links: brokenLinks(cs) };
  return st.linksCache.links;
}

/** A node whose links count: the master hears it, or it is partitioned from the master only. */
function counts(st: MasterState, nodeId: string): boolean {
  const n = st.nodes.get(nodeId);
  return n !== undefined && (n.status === 'healthy' || st.connectivity.partitioned.has(nodeId));
}

/** The broken links placement heeds: between nodes that count (none with `connectivityAware` off). */
export function liveLinks(st: MasterState): BrokenLink[] {
  if (!connectivityAware(st)) return [];
  const links = allLinks(st);
  return links.length === 0 ? links : links.filter((l) => counts(st, l.a) && counts(st, l.b));
}

const linkKey = (a: string, b: string): string => (a < b ? `${a}\u0000${b}` : `${b}\u0000${a}`);

/** The scheduler's view of `links`; undefined when there are none (every node reaches every other). */
export function reachOf(links: readonly BrokenLink[]): Reach | undefined {
  if (links.length === 0) return undefined;
  const peers = new Map<string, string[]>();
  const cut = new Set<string>();
  for (const l of links) {
    peers.set(l.a, [...(peers.get(l.a) ?? []), l.b]);
    peers.set(l.b, [...(peers.get(l.b) ?? []), l.a]);
    cut.add(linkKey(l.a, l.b));
  }
  return {
    reachable: (a, b) => a === b || !cut.has(linkKey(a, b)),
    brokenDegree: (id) => peers.get(id)?.length ?? 0,
    unreachablePeers: (id) => peers.get(id) ?? [],
  };
}

/** Whether the app's new slots are bound by its scope (a connected job, with the graph heeded). */
export function isScoped(st: MasterState, app: AppState): boolean {
  return connectivityAware(st) && isConnectedJob(app.job.spec);
}

/** The constraints of the app's current AM attempt (a new attempt states its own). */
function constraintsOf(app: AppState): PlacementConstraints | undefined {
  const c = app.constraints;
  return c !== undefined && c.attempt === app.job.amAttempt ? c : undefined;
}

function* anchorHosts(app: AppState, c: PlacementConstraints | undefined): Generator<string> {
  for (const su of app.sus.values()) for (const [nodeId, slots] of su.asgn) if (slots > 0) yield nodeId;
  if (c !== undefined) yield* c.reach;
}

/** The scopes of the connected apps among `appIds` (anchors read only if the scheduler needs them). */
export function scopesOf(st: MasterState, appIds: Iterable<string>): Map<string, PlacementScope> {
  const scopes = new Map<string, PlacementScope>();
  for (const appId of appIds) {
    const app = st.apps.get(appId);
    if (app === undefined || !isScoped(st, app) || scopes.has(appId)) continue;
    const c = constraintsOf(app);
    scopes.set(appId, {
      anchors: { [Symbol.iterator]: () => anchorHosts(app, c) },
      avoid: c === undefined || c.avoid.length === 0 ? NOTHING : new Set(c.avoid),
    });
  }
  return scopes;
}

/**
 * The AM's constraints (UpdateRequests, ReportAppState) replace the app's. Hosts the master does
 * not know are dropped (they bound nothing and would only grow the state). Returns whether they
 * changed.
 */
export function setConstraints(st: MasterState, app: AppState, c: PlacementConstraints): boolean {
  const known = (ids: readonly string[]): string[] => [...new Set(ids.filter((id) => st.nodes.has(id)))].sort();
  const next = { attempt: app.job.amAttempt, reach: known(c.reach), avoid: known(c.avoid) };
  const prev = constraintsOf(app);
  app.constraints = next;
  const changed = prev === undefined ? next.reach.length + next.avoid.length > 0 : !sameList(prev.reach, next.reach) || !sameList(prev.avoid, next.avoid);
  // The first ones this master hears of an app (its start, or every AM's report to a new leader)
  // are no news to an operator.
  if (changed)
    st.log[prev === undefined ? 'debug' : 'info'](
      { appId: app.appId, reach: next.reach, avoid: next.avoid },
      'placement constraints of the application master',
    );
  return changed;
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/**
 * After a scheduling pass: an app whose requests were left short only for connectivity
 * ('unreachable') gets its waiting message; every other app's is cleared.
 */
export function noteWaiting(st: MasterState, plan: Plan, links: readonly BrokenLink[]): void {
  const blocked = new Set<string>();
  for (const u of plan.unsatisfied) if (u.reason === 'unreachable') blocked.add(u.appId);
  for (const appId of [...st.waitingApps]) if (!blocked.has(appId)) setWaiting(st, appId, undefined);
  for (const appId of blocked) {
    const app = st.apps.get(appId);
    if (app !== undefined) setWaiting(st, appId, waitingMessage(st, app, links));
  }
  if (blocked.size > 0) st.waitingVersion = st.connectivity.version;
}

/** Some app waits for connectivity and the graph changed since the pass that left it waiting. */
export function waitersMayPlace(st: MasterState): boolean {
  return st.waitingApps.size > 0 && st.waitingVersion !== st.connectivity.version;
}

function setWaiting(st: MasterState, appId: string, message: string | undefined): void {
  const app = st.apps.get(appId);
  if (message === undefined || app === undefined) st.waitingApps.delete(appId);
  else st.waitingApps.add(appId);
  if (app === undefined || app.waiting === message) return;
  if (message === undefined) st.log.info({ appId }, 'placement no longer waits for connectivity');
  else st.log.warn({ appId, reason: message }, 'placement waits for connectivity');
  app.waiting = message;
  st.out.push({ kind: 'jobChanged', jobId: appId });
}

function waitingMessage(st: MasterState, app: AppState, links: readonly BrokenLink[]): string {
  const c = constraintsOf(app);
  const avoid = new Set(c?.avoid ?? []);
  const anchors = [...new Set(anchorHosts(app, c))].filter((id) => !avoid.has(id) && counts(st, id)).sort();
  const held = new Set(anchors);
  const cuts = links.filter((l) => held.has(l.a) || held.has(l.b)).map((l) => `${l.a}-${l.b}`);
  let m = anchors.length > 0 ? `waiting: no free host reaches all of ${listed(anchors)}` : 'waiting: no free host it may use';
  if (cuts.length > 0) m += ` (broken links: ${listed(cuts)})`;
  if (avoid.size > 0) m += `; avoiding ${listed([...avoid].sort())}`;
  return m;
}

function listed(xs: readonly string[]): string {
  return xs.length <= LISTED ? xs.join(', ') : `${xs.slice(0, LISTED).join(', ')} and ${xs.length - LISTED} more`;
}

/** The job as `fuxi status` shows it: a running job's message says what its placement waits for. */
export function jobView(st: MasterState, job: JobRecord): JobRecord {
  const app = st.apps.get(job.jobId);
  const waiting = app?.waiting ?? (app && externalWaitingMessage(st, app));
  if (waiting === undefined || job.message !== '' || TERMINAL_STATES.has(job.state)) return job;
  return { ...job, message: waiting };
}

/** The graph for an AM that holds `amVersion` of it; undefined when that is current (or the graph is not heeded). */
export function connectivityFor(st: MasterState, amVersion: number): ConnectivityView | undefined {
  const cs = st.connectivity;
  if (amVersion === cs.version) return undefined;
  const draining = drainingNodes(st);
  // Unaware of connectivity, AMs still hear of drains (and of their end: the version moved).
  if (!connectivityAware(st)) return draining.length > 0 || amVersion !== 0 ? { version: cs.version, brokenLinks: [], partitioned: [], draining } : undefined;
  return {
    version: cs.version,
    brokenLinks: allLinks(st).map((l) => ({ a: l.a, b: l.b, sinceMs: l.sinceMs })),
    partitioned: [...cs.partitioned].sort(),
    draining,
  };
}

/** Nodes an operator is draining (node-admin.ts), by id. */
export function drainingNodes(st: MasterState): string[] {
  const out: string[] = [];
  for (const a of st.admin.values()) if (a.state === 'draining') out.push(a.nodeId);
  return out.sort();
}
