/**
 * Testbeds: named sets of hosts an operator reserves for one quota group, optionally for a time
 * window (`fuxi testbed create|list|delete`; seed 002's Testbed, without its ghost pods: the
 * master's scheduler simply keeps other groups off the hosts). While a testbed is active only its
 * group's jobs (and their AMs) get new slots on its hosts; a job that names it (`testbed:` in its
 * spec) gets slots only there. Workers of other groups already on a host when it is reserved run
 * on to their end; none starts there afterwards.
 *
 * A testbed is small hard state (`testbeds/<name>`), written before it is acknowledged and applied
 * to memory only once the write succeeded (master-core.ts `planTestbed`, then `addTestbed`). Its
 * hosts are resolved once, when it is created: a selector by label or count is not re-evaluated.
 * Before its start and from its end its hosts are ordinary; expiry needs no write.
 *
 * ```ts
 * const tb = resolveTestbed({ name: 'ml', group: 'research', selector: { count: 2 } }, { nodes, groups, testbeds, nowMs });
 * testbeds.set(tb.name, tb); // once `testbeds/ml` is durable
 * activeTestbedOf(testbeds, 'a1', nowMs)?.group; // 'research'
 * ```
 */
import { AlreadyExistsError, InvalidArgumentError, TESTBED_NAME_PATTERN } from '@fuxi/common';

export interface TestbedSelector {
  hosts?: string[];
  label?: string /* key=value */;
  count?: number;
}

export interface Testbed {
  name: string;
  group: string /* quota group */;
  selector: TestbedSelector;
  hosts: string[] /* node ids, resolved when created */;
  startMs?: number;
  endMs?: number;
  createdMs: number;
}

/** The longest window (and the furthest start) a testbed may have: one year. */
export const MAX_TESTBED_WINDOW_MS = 365 * 24 * 60 * 60 * 1000;
/** Hosts named in one message before "and N more". */
const LISTED = 5;

/** Whether `tb` holds its hosts at `nowMs` (inside its window; no window: always). */
export function isActive(tb: Testbed, nowMs: number): boolean {
  return (tb.startMs === undefined || nowMs >= tb.startMs) && (tb.endMs === undefined || nowMs < tb.endMs);
}

/** Whether `tb` is over (its end has passed): it holds nothing any more, ever. */
export function isExpired(tb: Testbed, nowMs: number): boolean {
  return tb.endMs !== undefined && nowMs >= tb.endMs;
}

/** The testbed that holds nodeId at nowMs (a testbed with a window is active only inside it). */
export function activeTestbedOf(testbeds: ReadonlyMap<string, Testbed>, nodeId: string, nowMs: number): Testbed | undefined {
  for (const tb of testbeds.values()) if (isActive(tb, nowMs) && tb.hosts.includes(nodeId)) return tb;
  return undefined;
}

/** The node ids of testbed `name` if it is active at nowMs, else []. */
export function testbedHosts(testbeds: ReadonlyMap<string, Testbed>, name: string, nowMs: number): string[] {
  const tb = testbeds.get(name);
  return tb !== undefined && isActive(tb, nowMs) ? [...tb.hosts] : [];
}

/** The quota group holding each reserved host at nowMs (only active testbeds). */
export function reservedHosts(testbeds: ReadonlyMap<string, Testbed>, nowMs: number): Map<string, string> {
  const out = new Map<string, string>();
  for (const tb of testbeds.values()) if (isActive(tb, nowMs)) for (const h of tb.hosts) out.set(h, tb.group);
  return out;
}

/**
 * The next time after nowMs at which some testbed starts or ends (undefined: none): the master runs a
 * scheduling pass then, so hosts a window frees or takes are used at once.
 */
export function nextBoundary(testbeds: ReadonlyMap<string, Testbed>, nowMs: number): number | undefined {
  let next: number | undefined;
  for (const tb of testbeds.values()) for (const t of [tb.startMs, tb.endMs]) if (t !== undefined && t > nowMs && (next === undefined || t < next)) next = t;
  return next;
}

/** [from, to) of a testbed's window; no start: from its creation, no end: forever. */
function windowOf(tb: Pick<Testbed, 'startMs' | 'endMs' | 'createdMs'>): [number, number] {
  return [tb.startMs ?? tb.createdMs, tb.endMs ?? Infinity];
}

/** Whether the two testbeds' windows share a moment. */
export function windowsOverlap(a: Pick<Testbed, 'startMs' | 'endMs' | 'createdMs'>, b: Pick<Testbed, 'startMs' | 'endMs' | 'createdMs'>): boolean {
  const [a0, a1] = windowOf(a);
  const [b0, b1] = windowOf(b);
  return a0 < b1 && b0 < a1;
}

/** A node as testbed resolution sees it. */
export interface TestbedNode {
  id: string;
  labels: Readonly<Record<string, string>>;
  /** Healthy and heard from (a count picks only such nodes). */
  healthy: boolean;
  /** An operator cordoned or is draining it (a count skips it). */
  cordoned: boolean;
  /** Dominant share of its allocation (a count picks the least loaded). */
  load: number;
}

export interface CreateTestbed {
  name: string;
  group: string;
  selector: TestbedSelector;
  startMs?: number;
  endMs?: number;
}

export interface ResolveContext {
  /** The nodes the master knows. */
  nodes: readonly TestbedNode[];
  /** The configured quota groups. */
  groups: ReadonlySet<string>;
  testbeds: ReadonlyMap<string, Testbed>;
  nowMs: number;
}

/**
 * Checks a create request and resolves its selector to hosts. Throws InvalidArgumentError naming the
 * field (`name`, `group`, `selector`, `hosts`, `label`, `count`, `start`, `end`), or
 * AlreadyExistsError for a name in use with another definition. An identical request for an
 * existing testbed (a retry) returns the existing one.
 */
export function resolveTestbed(req: CreateTestbed, ctx: ResolveContext): Testbed {
  if (typeof req.name !== 'string' || !TESTBED_NAME_PATTERN.test(req.name))
    throw new InvalidArgumentError(
      'name',
      `must be 1-63 characters of lowercase letters, digits, '.', '_' or '-' (${TESTBED_NAME_PATTERN.source}), got ${JSON.stringify(req.name)}`,
    );
  if (!req.group) throw new InvalidArgumentError('group', 'is required (a configured quota group)');
  if (!ctx.groups.has(req.group))
    throw new InvalidArgumentError('group', `"${req.group}" is not a configured quota group (configured: ${[...ctx.groups].sort().join(', ')})`);
  const sel = normalizeSelector(req.selector);
  const { startMs, endMs } = checkWindow(req.startMs, req.endMs, ctx.nowMs);
  const existing = ctx.testbeds.get(req.name);
  if (existing !== undefined) {
    if (sameDefinition(existing, { ...req, selector: sel, startMs, endMs })) return existing;
    throw new AlreadyExistsError('testbed', req.name, `for group "${existing.group}" on ${listed(existing.hosts)} (delete it first)`);
  }
  const draft = { createdMs: ctx.nowMs, ...(startMs !== undefined ? { startMs } : {}), ...(endMs !== undefined ? { endMs } : {}) };
  // Hosts held by another testbed whose window meets this one's, by host.
  const taken = new Map<string, string>();
  for (const tb of ctx.testbeds.values()) if (windowsOverlap(tb, draft)) for (const h of tb.hosts) taken.set(h, tb.name);
  const hosts = selectHosts(sel, ctx, taken);
  return { name: req.name, group: req.group, selector: sel, hosts, ...draft };
}

function normalizeSelector(s: TestbedSelector | undefined): TestbedSelector {
  const hosts = s?.hosts?.filter((h) => h !== '') ?? [];
  const label = s?.label ?? '';
  const count = s?.count ?? 0;
  const given = (hosts.length > 0 ? 1 : 0) + (label !== '' ? 1 : 0) + (count !== 0 ? 1 : 0);
  if (given !== 1) throw new InvalidArgumentError('selector', `give exactly one of hosts, label (key=value) or count, got ${given === 0 ? 'none' : given}`);
  if (hosts.length > 0) return { hosts: [...new Set(hosts)].sort() };
  if (label !== '') {
    const eq = label.indexOf('=');
    if (eq <= 0) throw new InvalidArgumentError('label', `must be key=value, got ${JSON.stringify(label)}`);
    return { label };
  }
  if (!Number.isSafeInteger(count) || count < 1) throw new InvalidArgumentError('count', `must be an integer >= 1, got ${count}`);
  return { count };
}

function checkWindow(start: number | undefined, end: number | undefined, nowMs: number): { startMs?: number; endMs?: number } {
  const startMs = start === undefined || start === 0 ? undefined : start;
  const endMs = end === undefined || end === 0 ? undefined : end;
  if (startMs !== undefined && (!Number.isSafeInteger(startMs) || startMs < 0))
    throw new InvalidArgumentError('start', `must be a time (ms since the epoch), got ${startMs}`);
  if (endMs !== undefined && (!Number.isSafeInteger(endMs) || endMs < 0))
    throw new InvalidArgumentError('end', `must be a time (ms since the epoch), got ${endMs}`);
  if (startMs !== undefined && startMs > nowMs + MAX_TESTBED_WINDOW_MS)
    throw new InvalidArgumentError('start', `is more than a year away (${new Date(startMs).toISOString()})`);
  if (endMs !== undefined) {
    if (endMs <= nowMs) throw new InvalidArgumentError('end', `is not in the future (${new Date(endMs).toISOString()})`);
    if (startMs !== undefined && endMs <= startMs)
      throw new InvalidArgumentError('end', `must be after start (${new Date(endMs).toISOString()} <= ${new Date(startMs).toISOString()})`);
    if (endMs - Math.max(startMs ?? nowMs, nowMs) > MAX_TESTBED_WINDOW_MS) throw new InvalidArgumentError('end', 'makes a window longer than a year');
  }
  return { ...(startMs !== undefined ? { startMs } : {}), ...(endMs !== undefined ? { endMs } : {}) };
}

function selectHosts(sel: TestbedSelector, ctx: ResolveContext, taken: ReadonlyMap<string, string>): string[] {
  const byId = new Map(ctx.nodes.map((n) => [n.id, n]));
  const clash = (field: string, ids: readonly string[]): void => {
    const held = ids.filter((h) => taken.has(h));
    if (held.length > 0)
      throw new InvalidArgumentError(
        field,
        `${held
          .map((h) => `${h} is in testbed "${taken.get(h)}"`)
          .slice(0, LISTED)
          .join(', ')}${held.length > LISTED ? ` and ${held.length - LISTED} more` : ''} (their windows overlap)`,
      );
  };
  if (sel.hosts !== undefined) {
    const unknown = sel.hosts.filter((h) => !byId.has(h));
    if (unknown.length > 0) throw new InvalidArgumentError('hosts', `unknown node${unknown.length > 1 ? 's' : ''} ${listed(unknown)}`);
    clash('hosts', sel.hosts);
    return [...sel.hosts];
  }
  if (sel.label !== undefined) {
    const eq = sel.label.indexOf('=');
    const key = sel.label.slice(0, eq);
    const value = sel.label.slice(eq + 1);
    const ids = ctx.nodes
      .filter((n) => n.labels[key] === value)
      .map((n) => n.id)
      .sort();
    if (ids.length === 0) throw new InvalidArgumentError('label', `no node carries ${sel.label}`);
    clash('label', ids);
    return ids;
  }
  const want = sel.count ?? 0;
  const free = ctx.nodes
    .filter((n) => n.healthy && !n.cordoned && !taken.has(n.id))
    .sort((a, b) => a.load - b.load || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  if (free.length < want)
    throw new InvalidArgumentError('count', `asks for ${want} hosts; only ${free.length} are healthy, uncordoned and in no testbed whose window overlaps`);
  return free
    .slice(0, want)
    .map((n) => n.id)
    .sort();
}

function sameDefinition(tb: Testbed, req: CreateTestbed): boolean {
  const s = tb.selector;
  const r = req.selector;
  return (
    tb.group === req.group &&
    tb.startMs === req.startMs &&
    tb.endMs === req.endMs &&
    (s.label ?? '') === (r.label ?? '') &&
    (s.count ?? 0) === (r.count ?? 0) &&
    (s.hosts ?? []).join(',') === (r.hosts ?? []).join(',')
  );
}

/**
 * Checks the testbed a submitted job names: it must exist, not be over, and belong to the job's
 * quota group (InvalidArgumentError on `testbed`). A job may name a testbed whose window has not
 * opened yet: it waits for it.
 */
export function checkJobTestbed(testbeds: ReadonlyMap<string, Testbed>, spec: { testbed?: string; quotaGroup: string }, nowMs: number): void {
  const name = spec.testbed;
  if (name === undefined || name === '') return;
  const tb = testbeds.get(name);
  if (tb === undefined) throw new InvalidArgumentError('testbed', `no testbed "${name}" (see fuxi testbed list)`);
  if (tb.group !== spec.quotaGroup) throw new InvalidArgumentError('testbed', `"${name}" is reserved for quota group "${tb.group}", not "${spec.quotaGroup}"`);
  if (isExpired(tb, nowMs)) throw new InvalidArgumentError('testbed', `"${name}" ended at ${new Date(tb.endMs ?? 0).toISOString()}`);
}

/** A testbed record read from the store; undefined when it is not one (logged and skipped by the caller). */
export function parseTestbed(json: string): Testbed | undefined {
  try {
    const v = JSON.parse(json) as Partial<Testbed>;
    if (typeof v.name !== 'string' || typeof v.group !== 'string' || !Array.isArray(v.hosts) || typeof v.createdMs !== 'number') return undefined;
    return {
      name: v.name,
      group: v.group,
      selector: v.selector ?? {},
      hosts: v.hosts.filter((h): h is string => typeof h === 'string'),
      createdMs: v.createdMs,
      ...(typeof v.startMs === 'number' ? { startMs: v.startMs } : {}),
      ...(typeof v.endMs === 'number' ? { endMs: v.endMs } : {}),
    };
  } catch {
    return undefined;
  }
}

function listed(xs: readonly string[]): string {
  return xs.length <= LISTED ? xs.join(', ') : `${xs.slice(0, LISTED).join(', ')} and ${xs.length - LISTED} more`;
}
