/**
 * The job spec: the domain types every component codes against, the user format (YAML or JSON) the
 * `fuxi` CLI reads, and the one validator that the CLI (before submitting) and the master (on every
 * `SubmitJob`, also against node sizes) both run, so a client gets the same message either way.
 *
 * Pure: no fs, no time, no randomness.
 *
 * ```ts
 * const spec = normalizeJobSpec(parseJobSpecText(fs.readFileSync('job.yaml', 'utf8'), 'job.yaml'));
 * validateJobSpec(spec, { nodeCapacities: nodes.map((n) => n.capacity) }); // master side
 * for (const task of topoOrder(spec.tasks)) ...
 * ```
 *
 * Errors are `InvalidArgumentError(fieldPath, reason)` with user-facing field paths
 * (`tasks[1].resources.cpu`, `tasks[0].command`, `am.memory`, `id`); the first problem found, in a
 * fixed order, is reported.
 */
import { parseDocument } from 'yaml';
import { InvalidArgumentError } from './errors.js';
import { format, fits, parseCpu, parseMemory, type Resource } from './resource.js';
import { AM_SU } from './protocol.js';

// ---------------------------------------------------------------------------------------------
// Domain types

export interface CommandSpec {
  /** argv[0] is looked up in PATH; `${instance}` etc. are substituted by the agent. Non-empty. */
  argv: string[];
  env: Record<string, string>;
  /** Working directory; '' = the agent's default (the worker's own directory). */
  cwd: string;
}

export interface TaskSpec {
  name: string;
  instances: number;
  /** Per instance. */
  resource: Resource;
  command: CommandSpec;
  maxAttempts: number;
  dependsOn: string[];
  locality: { nodes: string[]; racks: string[] };
  priority: number;
  /**
   * Gang scheduling: the master grants the task's slots only `minInstances` at once (all or nothing
   * in one scheduling pass), and the AM starts none of its instances before it holds that many.
   * 0 or absent = no gang (slots come one by one); `gang: true` in the user format = `instances`.
   */
  minInstances?: number;
}

export interface JobSpec {
  /** Client-supplied id (idempotent submit); '' = the master generates one. */
  jobId: string;
  name: string;
  quotaGroup: string;
  priority: number;
  /** Extra environment for every worker of the job. */
  env: Record<string, string>;
  /**
   * The AM's own slot. Zero (proto3 unset) = the default of its mode: `DEFAULT_SHARED_AM_RESOURCE`
   * for a hosted AM, `DEFAULT_AM_RESOURCE` for a dedicated one.
   */
  amResource: Resource;
  /**
   * Where the job's application master runs: 'shared' (default) inside the node's AM host, a
   * long-lived process holding many AMs; 'dedicated' in a process of its own (isolation).
   */
  amMode: AmMode;
  tasks: TaskSpec[];
  /**
   * What the AM does when an agent running its workers is timing out (the master keeps their slots
   * reserved and tells the AM): 'wait' keeps the workers, however long (services); 'rerun' re-runs
   * the node's running instances elsewhere once it has been timing out for `rerunAfterMs` (batch).
   */
  onAgentTimeout: AgentTimeoutPolicy;
  /** With 'rerun': how long a node may time out before its instances are re-run elsewhere (>= 0). */
  rerunAfterMs: number;
  /**
   * What the job's processes need of the network. 'connected' (default; absent or '' means it):
   * the AM and every worker go to hosts that all reach one another, and later slots stay inside
   * that set. 'independent': no traffic between the job's hosts beyond the agents' (placement
   * ignores broken links between hosts).
   */
  network?: JobNetwork;
  /**
   * Speculative execution of slow attempts ('' or absent: 'path'). 'off': none. 'base': a backup
   * of an attempt whose progress rate is far below its peers' (LATE), the first to finish wins.
   * 'path': also path-based speculation (PBSE): the host common to slow data paths is found and the
   * work it serves or reads moves off it.
   */
  speculation?: SpeculationMode;
  /**
   * Whether the master's failure prediction may act on the job: 'on' (default; absent or '' means
   * it) lets host blacklists and the per-attempt decision (proceed, reschedule, kill early) apply;
   * 'off' keeps them off the job entirely (its attempts still feed the model).
   */
  failurePrediction?: FailurePrediction;
  /**
   * A testbed (a set of hosts an operator reserved for the job's quota group, `fuxi testbed
   * create`): the job's AM and workers go only to its hosts while it is active. Absent or '': the
   * job may go anywhere its group may (its group's testbeds included).
   */
  testbed?: string;
  /**
   * The external scheduler that places the job's task slots (absent or '': the built-in one), like
   * Kubernetes' `schedulerName`: the master leaves them to the process registered under this name
   * (SchedulerService), and they wait while none is (or fall back after `externalSchedulerFallbackMs`).
   * The AM's own slot is always placed by the master.
   */
  scheduler?: string;
  /** A member of a job array (set by `submitArray` / `fuxi submit --array`, not in job files). */
  array?: JobArrayRef;
}

/** A job array member: the array's id, this member's index, and how many members may run at once (0 = no limit). */
export interface JobArrayRef {
  id: string;
  index: number;
  maxRunning: number;
}

export type AgentTimeoutPolicy = 'wait' | 'rerun';

export type AmMode = 'shared' | 'dedicated';

/** '' (unset) is 'path'. */
export type SpeculationMode = '' | 'off' | 'base' | 'path';

/** The speculation mode a job runs with ('' and absent mean 'path'). */
export function speculationOf(spec: Pick<JobSpec, 'speculation'>): Exclude<SpeculationMode, ''> {
  return spec.speculation || DEFAULT_SPECULATION;
}

/**
 * Backups a task may run at once beside the attempts they back up: a tenth of its instances, at
 * least one. The master's request limit (`speculationAllowance`, default 0.1) leaves that room.
 */
export function speculationCap(instances: number, fraction = 0.1): number {
  return Math.max(1, Math.ceil(fraction * instances));
}

/** '' (unset) is 'connected'. */
export type JobNetwork = '' | 'connected' | 'independent';

/** '' (unset) is 'on'. */
export type FailurePrediction = '' | 'on' | 'off';

export const FAILURE_PREDICTION_MODES: readonly FailurePrediction[] = ['on', 'off'];

/** Whether failure prediction may act on the job ('on', also when unset). */
export function predictionOn(spec: Pick<JobSpec, 'failurePrediction'>): boolean {
  return spec.failurePrediction !== 'off';
}

/** Whether the job's hosts must all reach one another (network 'connected', also when unset). */
export function isConnectedJob(spec: Pick<JobSpec, 'network'>): boolean {
  return spec.network !== 'independent';
}

/**
 * The priority a task's schedule unit runs at: the task's own when it sets one (non-zero), else the
 * job's. The AM declares its units with it, and the master refuses a unit declared above it.
 */
/** The task's gang size: how many of its instances are placed and started together (1: no gang). */
export function gangSize(task: Pick<TaskSpec, 'minInstances' | 'instances'>): number {
  const k = task.minInstances ?? 0;
  return k > 1 ? Math.min(k, task.instances) : 1;
}

export function taskPriority(job: Pick<JobSpec, 'priority'>, task: Pick<TaskSpec, 'priority'>): number {
  return task.priority !== 0 ? task.priority : job.priority;
}

// ---------------------------------------------------------------------------------------------
// Constants

/** Resources of a dedicated application master (its own process) when the spec gives none: 100m cpu, 256 MB. */
export const DEFAULT_AM_RESOURCE: Resource = Object.freeze({ cpuMilli: 100, memoryMb: 256 });
/**
 * Resources of a hosted application master (inside the node's AM host) when the spec gives none:
 * what one more AM costs a running host (docs/architecture.md, "The AM host"); the host's own base
 * is held back by its agent.
 */
export const DEFAULT_SHARED_AM_RESOURCE: Resource = Object.freeze({ cpuMilli: 20, memoryMb: 32 });
export const DEFAULT_AM_MODE: AmMode = 'shared';
export const AM_MODES: readonly AmMode[] = ['shared', 'dedicated'];
export const DEFAULT_QUOTA_GROUP = 'default';
export const DEFAULT_MAX_ATTEMPTS = 3;
export const DEFAULT_ON_AGENT_TIMEOUT: AgentTimeoutPolicy = 'rerun';
export const DEFAULT_RERUN_AFTER_MS = 30_000;
export const AGENT_TIMEOUT_POLICIES: readonly AgentTimeoutPolicy[] = ['wait', 'rerun'];
export const JOB_NETWORKS: readonly JobNetwork[] = ['connected', 'independent'];
export const SPECULATION_MODES: readonly SpeculationMode[] = ['off', 'base', 'path'];
export const DEFAULT_SPECULATION: Exclude<SpeculationMode, ''> = 'path';
export const MAX_INSTANCES = 100_000;
export const JOB_ID_PATTERN = /^[a-z0-9][a-z0-9._-]{0,62}$/;
/** A testbed's name (`fuxi testbed create NAME`): also a store key's last part. */
export const TESTBED_NAME_PATTERN = /^[a-z0-9][a-z0-9._-]{0,62}$/;
export const TASK_NAME_PATTERN = /^[A-Za-z0-9_-]{1,63}$/;
export const ENV_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** An external scheduler's name (a job's `scheduler`, SchedulerService registrations). */
export const SCHEDULER_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;
const MAX_NAME_LENGTH = 255;
const INT32_MAX = 2 ** 31 - 1;
const INT32_MIN = -(2 ** 31);

const JOB_FIELDS = [
  'id',
  'name',
  'quotaGroup',
  'priority',
  'env',
  'am',
  'tasks',
  'onAgentTimeout',
  'rerunAfterMs',
  'network',
  'speculation',
  'failurePrediction',
  'testbed',
  'scheduler',
] as const;
const TASK_FIELDS = [
  'name',
  'instances',
  'resources',
  'command',
  'env',
  'cwd',
  'maxAttempts',
  'dependsOn',
  'locality',
  'priority',
  'gang',
  'minInstances',
] as const;
const RESOURCE_FIELDS = ['cpu', 'memory'] as const;
const AM_FIELDS = ['mode', 'cpu', 'memory'] as const;
const LOCALITY_FIELDS = ['nodes', 'racks'] as const;

// ---------------------------------------------------------------------------------------------
// Parsing text

/**
 * Parses a job spec file's text (YAML or JSON; JSON is YAML). Returns the raw value for
 * `normalizeJobSpec`. Malformed text -> `InvalidArgumentError('', '<source>: invalid YAML at line L,
 * column C: ...')`.
 */
export function parseJobSpecText(text: string, source?: string): unknown {
  const where = source ? `${source}: ` : '';
  const doc = parseDocument(text, { prettyErrors: true, uniqueKeys: true });
  const err = doc.errors[0];
  if (err) {
    const pos = err.linePos?.[0];
    const at = pos ? ` at line ${pos.line}, column ${pos.col}` : '';
    let reason = (err.message.split('\n')[0] ?? '').replace(/ at line \d+, column \d+:?$/, '');
    if (err.code === 'MULTIPLE_DOCS') reason = 'a job spec must be a single document (found "---" separating several)';
    if (err.code === 'DUPLICATE_KEY') reason = 'duplicate key (map keys must be unique)';
    throw new InvalidArgumentError('', `${where}invalid YAML${at}: ${reason}`);
  }
  try {
    return doc.toJS({ maxAliasCount: 100 });
  } catch (e) {
    throw new InvalidArgumentError('', `${where}invalid YAML: ${e instanceof Error ? e.message : String(e)}`);
  }
}

// ---------------------------------------------------------------------------------------------
// User format -> domain

/**
 * Converts the user format (see docs: `id`, `name`, `quotaGroup`, `priority`, `env`, `am` (`shared`
 * (default) / `dedicated`, or `{ mode, cpu, memory }`), `tasks`
 * with `resources`, `command`, ..., `onAgentTimeout: wait | rerun` (default rerun) and
 * `rerunAfterMs` (default 30000), `network: connected | independent` (default connected), `failurePrediction: on | off` (default on)) to a
 * `JobSpec`, applies defaults and runs `validateJobSpec`.
 * Shape problems (unknown fields, wrong types) are checked first, over the whole document, then
 * the domain checks.
 */
export function normalizeJobSpec(raw: unknown): JobSpec {
  const top = asObject(raw, '', 'the job spec must be a mapping (YAML) or an object (JSON)');
  checkKnown(top, '', JOB_FIELDS);

  const jobId = optString(top.id, 'id') ?? '';
  const name = optString(top.name, 'name');
  if (name === undefined) throw new InvalidArgumentError('name', 'is required');
  const quotaGroup = optString(top.quotaGroup, 'quotaGroup') ?? DEFAULT_QUOTA_GROUP;
  if (quotaGroup === '') throw new InvalidArgumentError('quotaGroup', 'must not be empty (omit it for "default")');
  const priority = optInteger(top.priority, 'priority') ?? 0;
  const env = optEnv(top.env, 'env');
  const { amResource, amMode } = userAm(top.am);

  if (top.tasks === undefined || top.tasks === null) throw new InvalidArgumentError('tasks', 'is required (a list of tasks)');
  if (!Array.isArray(top.tasks)) throw new InvalidArgumentError('tasks', `must be a list of tasks, got ${describe(top.tasks)}`);
  const tasks = top.tasks.map((t, i) => userTask(t, `tasks[${i}]`));
  const onAgentTimeout = optString(top.onAgentTimeout, 'onAgentTimeout') ?? DEFAULT_ON_AGENT_TIMEOUT;
  if (onAgentTimeout === '') throw new InvalidArgumentError('onAgentTimeout', `must be "wait" or "rerun" (omit it for "${DEFAULT_ON_AGENT_TIMEOUT}"), got ""`);
  const rerunAfterMs = optInteger(top.rerunAfterMs, 'rerunAfterMs') ?? DEFAULT_RERUN_AFTER_MS;
  const network = optString(top.network, 'network');
  if (network === '') throw new InvalidArgumentError('network', 'must be "connected" or "independent" (omit it for "connected"), got ""');
  const speculation = optString(top.speculation, 'speculation');
  if (speculation === '') throw new InvalidArgumentError('speculation', 'must be "off", "base" or "path" (omit it for "path"), got ""');
  const failurePrediction = optString(top.failurePrediction, 'failurePrediction');
  if (failurePrediction === '') throw new InvalidArgumentError('failurePrediction', 'must be "on" or "off" (omit it for "on"), got ""');
  const testbed = optString(top.testbed, 'testbed');
  if (testbed === '') throw new InvalidArgumentError('testbed', 'must name a testbed (omit it to run anywhere the quota group may), got ""');
  const scheduler = optString(top.scheduler, 'scheduler');
  if (scheduler === '') throw new InvalidArgumentError('scheduler', 'must be an external scheduler\'s name (omit it for the built-in scheduler), got ""');

  return validateJobSpec({
    jobId,
    name,
    quotaGroup,
    priority,
    env,
    amResource: { ...amResource },
    amMode,
    tasks,
    onAgentTimeout: onAgentTimeout as AgentTimeoutPolicy,
    rerunAfterMs,
    ...(network !== undefined ? { network: network as JobNetwork } : {}),
    ...(speculation !== undefined ? { speculation: speculation as SpeculationMode } : {}),
    ...(failurePrediction !== undefined ? { failurePrediction: failurePrediction as FailurePrediction } : {}),
    ...(testbed !== undefined ? { testbed } : {}),
    ...(scheduler !== undefined ? { scheduler } : {}),
  });
}

/**
 * `am`: absent (a shared AM with the default slot), a mode (`am: dedicated`), or a mapping with an
 * optional `mode` and the AM's slot (`cpu` and `memory` together, or neither: the mode's default).
 */
function userAm(raw: unknown): { amResource: Resource; amMode: AmMode } {
  const zero = { cpuMilli: 0, memoryMb: 0 };
  if (raw === undefined || raw === null) return { amResource: zero, amMode: DEFAULT_AM_MODE };
  if (typeof raw === 'string') return { amResource: zero, amMode: userAmMode(raw, 'am') };
  const am = asObject(raw, 'am', 'must be "shared", "dedicated" or a mapping like { mode: dedicated, cpu: 0.5, memory: 512Mi }');
  checkKnown(am, 'am', AM_FIELDS);
  const amMode = am.mode === undefined || am.mode === null ? DEFAULT_AM_MODE : userAmMode(am.mode, 'am.mode');
  const slot = Object.fromEntries(Object.entries(am).filter(([k]) => k !== 'mode'));
  if (Object.keys(slot).length === 0) return { amResource: zero, amMode };
  return { amResource: userResource(slot, 'am'), amMode };
}

function userAmMode(raw: unknown, path: string): AmMode {
  if (typeof raw === 'string' && AM_MODES.includes(raw as AmMode)) return raw as AmMode;
  throw new InvalidArgumentError(path, `must be "shared" (the node's AM host) or "dedicated" (a process of its own), got ${describe(raw)}`);
}

function userTask(raw: unknown, path: string): TaskSpec {
  const t = asObject(raw, path, 'each task must be a mapping');
  checkKnown(t, path, TASK_FIELDS);
  const name = optString(t.name, `${path}.name`);
  if (name === undefined) throw new InvalidArgumentError(`${path}.name`, 'is required');
  const instances = optInteger(t.instances, `${path}.instances`) ?? 1;
  if (t.resources === undefined || t.resources === null) {
    throw new InvalidArgumentError(`${path}.resources`, 'is required (e.g. { cpu: 0.5, memory: 512Mi })');
  }
  const resource = userResource(t.resources, `${path}.resources`);
  const argv = userCommand(t.command, `${path}.command`);
  const env = optEnv(t.env, `${path}.env`);
  const cwd = optString(t.cwd, `${path}.cwd`) ?? '';
  const maxAttempts = optInteger(t.maxAttempts, `${path}.maxAttempts`) ?? DEFAULT_MAX_ATTEMPTS;
  // 0 means "default" in the domain (proto3 zero); in the user format it is an error.
  if (maxAttempts < 1) throw new InvalidArgumentError(`${path}.maxAttempts`, `must be an integer >= 1, got ${maxAttempts}`);
  const dependsOn = optStringList(t.dependsOn, `${path}.dependsOn`, true);
  const locality = { nodes: [] as string[], racks: [] as string[] };
  if (t.locality !== undefined && t.locality !== null) {
    const l = asObject(t.locality, `${path}.locality`, 'must be a mapping like { nodes: [n1], racks: [r1] }');
    checkKnown(l, `${path}.locality`, LOCALITY_FIELDS);
    locality.nodes = optStringList(l.nodes, `${path}.locality.nodes`, true);
    locality.racks = optStringList(l.racks, `${path}.locality.racks`, true);
  }
  const priority = optInteger(t.priority, `${path}.priority`) ?? 0;
  const minInstances = userGang(t, path, instances);
  return { name, instances, resource, command: { argv, env, cwd }, maxAttempts, dependsOn, locality, priority, ...(minInstances > 0 ? { minInstances } : {}) };
}

/**
 * A task's gang size from `gang` and `minInstances` (0: no gang). `gang: true` means all
 * instances; with `minInstances` beside it the two must agree; `gang: false` excludes `minInstances`.
 */
function userGang(t: Record<string, unknown>, path: string, instances: number): number {
  let gang: boolean | undefined;
  if (t.gang !== undefined && t.gang !== null) {
    if (typeof t.gang !== 'boolean') throw new InvalidArgumentError(`${path}.gang`, `must be true or false, got ${describe(t.gang)}`);
    gang = t.gang;
  }
  const min = optInteger(t.minInstances, `${path}.minInstances`);
  if (min !== undefined && (min < 1 || min > instances)) {
    throw new InvalidArgumentError(`${path}.minInstances`, `must be between 1 and instances (${instances}), got ${min}`);
  }
  if (gang === true && min !== undefined && min !== instances) {
    throw new InvalidArgumentError(
      `${path}.minInstances`,
      `gang: true means all ${instances} instances; set minInstances: ${instances} or drop one of the two, got ${min}`,
    );
  }
  if (gang === false && min !== undefined) {
    throw new InvalidArgumentError(`${path}.gang`, `is false but minInstances is ${min}; drop gang: false to schedule ${min} instances at once`);
  }
  return gang === true ? instances : (min ?? 0);
}

function userResource(raw: unknown, path: string): Resource {
  const r = asObject(raw, path, 'must be a mapping like { cpu: 0.5, memory: 512Mi }');
  checkKnown(r, path, RESOURCE_FIELDS);
  if (r.cpu === undefined || r.cpu === null) throw new InvalidArgumentError(`${path}.cpu`, 'is required (cores, e.g. 0.5, or millicores, e.g. "500m")');
  if (r.memory === undefined || r.memory === null) throw new InvalidArgumentError(`${path}.memory`, 'is required (megabytes, e.g. 512, or "512Mi", "2Gi")');
  const cpuMilli = signedQuantity(r.cpu, `${path}.cpu`, parseCpu);
  if (cpuMilli === 0 && typeof r.cpu === 'number' && r.cpu > 0) {
    throw new InvalidArgumentError(`${path}.cpu`, `must be at least 0.001 cores ("1m"), got ${r.cpu}`);
  }
  const memoryMb = signedQuantity(r.memory, `${path}.memory`, parseMemory);
  if (memoryMb === 0 && typeof r.memory === 'number' && r.memory > 0) {
    throw new InvalidArgumentError(`${path}.memory`, `must be at least 1 MB, got ${r.memory}`);
  }
  if (cpuMilli === 0 && memoryMb === 0 && path === 'am') {
    // Zero AM resources mean "default" in the domain; say so in user terms here.
    throw new InvalidArgumentError('am.cpu', 'must be greater than 0, got 0');
  }
  return { cpuMilli, memoryMb };
}

/** Lets "-500m" reach the range check (same message as a negative number) instead of a parse error. */
function signedQuantity(v: unknown, path: string, parse: (v: unknown, field: string) => number): number {
  if (typeof v === 'string' && /^\s*-/.test(v)) return -parse(v.replace(/^\s*-/, ''), path);
  return parse(v, path);
}

const COMMAND_EXPECTED = 'an argv list like ["node", "map.mjs", "${instance}"] or a shell command string';

function userCommand(raw: unknown, path: string): string[] {
  if (raw === undefined || raw === null) throw new InvalidArgumentError(path, `is required (${COMMAND_EXPECTED})`);
  if (typeof raw === 'string') return raw.trim() === '' ? [] : ['/bin/sh', '-c', raw];
  if (!Array.isArray(raw)) throw new InvalidArgumentError(path, `must be ${COMMAND_EXPECTED}, got ${describe(raw)}`);
  return raw.map((a, i) => scalarString(a, `${path}[${i}]`));
}

// ---------------------------------------------------------------------------------------------
// Domain validation

export interface ValidateOptions {
  /** Capacities of the known nodes; when given and non-empty, an instance (or the AM) must fit on one. */
  nodeCapacities?: readonly Resource[];
}

/**
 * Checks a domain spec; throws the first problem as `InvalidArgumentError` with a user-facing field
 * path. Returns a copy with proto3 zero values replaced by defaults (the only zero values that are
 * not errors): `quotaGroup` '' -> 'default', `amMode` '' -> 'shared', `amResource` {0,0} -> the
 * mode's default (`DEFAULT_SHARED_AM_RESOURCE` or `DEFAULT_AM_RESOURCE`), a task's
 * `maxAttempts` 0 -> 3, `onAgentTimeout` '' (or absent) -> 'rerun' and, when `onAgentTimeout` was
 * unset too, `rerunAfterMs` 0 (or absent) -> 30000 (an explicit policy keeps an explicit 0: re-run
 * at once); `network` '' is left out (it means 'connected'). Everything else is returned as given.
 */
function checkArray(a: JobArrayRef): JobArrayRef {
  if (!JOB_ID_PATTERN.test(a.id ?? '')) throw new InvalidArgumentError('array.id', `must be a job id (${JOB_ID_PATTERN.source}), got ${describe(a.id)}`);
  if (!Number.isInteger(a.index) || a.index < 0 || a.index > INT32_MAX)
    throw new InvalidArgumentError('array.index', `must be an integer >= 0, got ${describe(a.index)}`);
  if (!Number.isInteger(a.maxRunning) || a.maxRunning < 0 || a.maxRunning > INT32_MAX)
    throw new InvalidArgumentError('array.maxRunning', `must be an integer >= 0 (0 = no limit), got ${describe(a.maxRunning)}`);
  return { id: a.id, index: a.index, maxRunning: a.maxRunning };
}

export function validateJobSpec(spec: JobSpec, opts: ValidateOptions = {}): JobSpec {
  const out: JobSpec = {
    jobId: spec.jobId ?? '',
    name: spec.name ?? '',
    quotaGroup: spec.quotaGroup || DEFAULT_QUOTA_GROUP,
    priority: spec.priority ?? 0,
    env: { ...(spec.env ?? {}) },
    amResource: { cpuMilli: 0, memoryMb: 0 },
    amMode: DEFAULT_AM_MODE,
    tasks: [],
    onAgentTimeout: DEFAULT_ON_AGENT_TIMEOUT,
    rerunAfterMs: DEFAULT_RERUN_AFTER_MS,
  };
  if (out.jobId !== '' && !JOB_ID_PATTERN.test(out.jobId)) {
    throw new InvalidArgumentError(
      'id',
      `must be 1-63 characters of lowercase letters, digits, '.', '_' or '-', starting with a letter or digit (${JOB_ID_PATTERN.source}), got ${JSON.stringify(out.jobId)}`,
    );
  }
  if (out.name.trim() === '') throw new InvalidArgumentError('name', 'is required');
  if (out.name.length > MAX_NAME_LENGTH) throw new InvalidArgumentError('name', `must be at most ${MAX_NAME_LENGTH} characters, got ${out.name.length}`);
  checkInt32(out.priority, 'priority');
  checkEnv(out.env, 'env');
  // proto3: '' is "unset", the default mode.
  const amMode: unknown = spec.amMode ?? '';
  if (amMode !== '' && !AM_MODES.includes(amMode as AmMode)) {
    throw new InvalidArgumentError('am.mode', `must be "shared" or "dedicated", got ${describe(amMode)}`);
  }
  if (amMode !== '') out.amMode = amMode as AmMode;
  const defaultAm = out.amMode === 'dedicated' ? DEFAULT_AM_RESOURCE : DEFAULT_SHARED_AM_RESOURCE;
  out.amResource = isZeroResource(spec.amResource) ? { ...defaultAm } : { ...(spec.amResource as Resource) };
  checkResource(out.amResource, 'am');
  const capacities = opts.nodeCapacities ?? [];
  checkFitsSomeNode(out.amResource, 'am', capacities);
  // proto3: '' is "unset"; a policy that is unset leaves a 0 rerun_after_ms unset as well.
  const policy: unknown = spec.onAgentTimeout ?? '';
  const policySet = policy !== '';
  if (policySet && !AGENT_TIMEOUT_POLICIES.includes(policy as AgentTimeoutPolicy)) {
    throw new InvalidArgumentError('onAgentTimeout', `must be "wait" or "rerun", got ${describe(policy)}`);
  }
  if (policySet) out.onAgentTimeout = policy as AgentTimeoutPolicy;
  const rerunAfterMs: unknown = spec.rerunAfterMs;
  if (rerunAfterMs !== undefined && rerunAfterMs !== null && (policySet || rerunAfterMs !== 0)) {
    if (typeof rerunAfterMs !== 'number' || !Number.isInteger(rerunAfterMs) || rerunAfterMs < 0 || rerunAfterMs > INT32_MAX) {
      throw new InvalidArgumentError('rerunAfterMs', `must be an integer from 0 to ${INT32_MAX} (milliseconds), got ${describe(rerunAfterMs)}`);
    }
    out.rerunAfterMs = rerunAfterMs;
  }

  // proto3: '' is "unset", the default ('connected'); kept out of the copy so a spec without it
  // stays as it was.
  const network: unknown = spec.network ?? '';
  if (network !== '' && !JOB_NETWORKS.includes(network as JobNetwork)) {
    throw new InvalidArgumentError(
      'network',
      `must be "connected" (the job's hosts must all reach one another) or "independent" (they need not), got ${describe(network)}`,
    );
  }
  if (network !== '') out.network = network as JobNetwork;
  const speculation: unknown = spec.speculation ?? '';
  if (speculation !== '' && !SPECULATION_MODES.includes(speculation as SpeculationMode)) {
    throw new InvalidArgumentError(
      'speculation',
      `must be "off", "base" (backups of slow attempts) or "path" (also path-based: moves work off a slow host), got ${describe(speculation)}`,
    );
  }
  if (speculation !== '') out.speculation = speculation as SpeculationMode;

  // proto3 again: '' is "unset", the default ('on').
  const failurePrediction: unknown = spec.failurePrediction ?? '';
  if (failurePrediction !== '' && !FAILURE_PREDICTION_MODES.includes(failurePrediction as FailurePrediction)) {
    throw new InvalidArgumentError(
      'failurePrediction',
      `must be "on" (the master may blacklist hosts for the job and stop attempts predicted to fail) or "off", got ${describe(failurePrediction)}`,
    );
  }
  if (failurePrediction !== '') out.failurePrediction = failurePrediction as FailurePrediction;

  const testbed: unknown = spec.testbed ?? '';
  if (testbed !== '') {
    if (typeof testbed !== 'string' || !TESTBED_NAME_PATTERN.test(testbed))
      throw new InvalidArgumentError('testbed', `must be a testbed name (${TESTBED_NAME_PATTERN.source}), got ${describe(testbed)}`);
    out.testbed = testbed;
  }
  // proto3: '' is "unset", the built-in scheduler.
  const scheduler: unknown = spec.scheduler ?? '';
  if (typeof scheduler !== 'string' || (scheduler !== '' && !SCHEDULER_NAME_PATTERN.test(scheduler))) {
    throw new InvalidArgumentError(
      'scheduler',
      `must be an external scheduler's name: 1-63 characters of letters, digits, '.', '_' or '-' (${SCHEDULER_NAME_PATTERN.source}), got ${describe(scheduler)}`,
    );
  }
  if (scheduler !== '') out.scheduler = scheduler;

  if (spec.array) out.array = checkArray(spec.array);

  const tasks = spec.tasks ?? [];
  if (tasks.length === 0) throw new InvalidArgumentError('tasks', 'must contain at least one task');
  const indexByName = new Map<string, number>();
  tasks.forEach((t, i) => {
    if (t?.name !== undefined && !indexByName.has(t.name)) indexByName.set(t.name, i);
  });

  tasks.forEach((t, i) => {
    const path = `tasks[${i}]`;
    const name = t.name ?? '';
    if (name === '') throw new InvalidArgumentError(`${path}.name`, 'is required');
    if (name === AM_SU) throw new InvalidArgumentError(`${path}.name`, `"${AM_SU}" is reserved for the application master`);
    if (!TASK_NAME_PATTERN.test(name)) {
      throw new InvalidArgumentError(
        `${path}.name`,
        `must be 1-63 characters of letters, digits, '_' or '-' (${TASK_NAME_PATTERN.source}), got ${JSON.stringify(name)}`,
      );
    }
    const first = indexByName.get(name);
    if (first !== undefined && first !== i) throw new InvalidArgumentError(`${path}.name`, `duplicate task name "${name}" (also tasks[${first}])`);

    const instances = t.instances;
    if (!Number.isInteger(instances) || instances < 1 || instances > MAX_INSTANCES) {
      throw new InvalidArgumentError(`${path}.instances`, `must be an integer from 1 to ${MAX_INSTANCES}, got ${instances}`);
    }
    const resource = t.resource ?? { cpuMilli: 0, memoryMb: 0 };
    checkResource(resource, `${path}.resources`);
    checkFitsSomeNode(resource, `${path}.resources`, capacities);

    const command = t.command ?? { argv: [], env: {}, cwd: '' };
    const argv = command.argv ?? [];
    if (argv.length === 0) throw new InvalidArgumentError(`${path}.command`, `must not be empty (${COMMAND_EXPECTED})`);
    argv.forEach((a, j) => {
      if (typeof a !== 'string') throw new InvalidArgumentError(`${path}.command[${j}]`, `must be a string, got ${describe(a)}`);
    });
    if ((argv[0] ?? '').trim() === '') throw new InvalidArgumentError(`${path}.command[0]`, 'must not be empty (the program to run)');
    checkEnv(command.env ?? {}, `${path}.env`);
    if (typeof (command.cwd ?? '') !== 'string') throw new InvalidArgumentError(`${path}.cwd`, `must be a string, got ${describe(command.cwd)}`);
    const cwdWhy = cwdProblem(command.cwd ?? '');
    if (cwdWhy) throw new InvalidArgumentError(`${path}.cwd`, cwdWhy);

    const maxAttempts = t.maxAttempts || DEFAULT_MAX_ATTEMPTS;
    if (!Number.isInteger(maxAttempts) || maxAttempts < 1 || maxAttempts > INT32_MAX) {
      throw new InvalidArgumentError(`${path}.maxAttempts`, `must be an integer >= 1, got ${t.maxAttempts}`);
    }

    const dependsOn = t.dependsOn ?? [];
    const seen = new Set<string>();
    dependsOn.forEach((d, j) => {
      const dpath = `${path}.dependsOn[${j}]`;
      if (d === name) throw new InvalidArgumentError(dpath, `task "${name}" cannot depend on itself`);
      if (!indexByName.has(d)) {
        throw new InvalidArgumentError(dpath, `unknown task "${d}" (tasks in this job: ${[...indexByName.keys()].join(', ')})`);
      }
      if (seen.has(d)) throw new InvalidArgumentError(dpath, `duplicate dependency "${d}"`);
      seen.add(d);
    });

    const locality = { nodes: [...(t.locality?.nodes ?? [])], racks: [...(t.locality?.racks ?? [])] };
    locality.nodes.forEach((n, j) => {
      if (typeof n !== 'string' || n === '') throw new InvalidArgumentError(`${path}.locality.nodes[${j}]`, 'must be a non-empty node id');
    });
    locality.racks.forEach((r, j) => {
      if (typeof r !== 'string' || r === '') throw new InvalidArgumentError(`${path}.locality.racks[${j}]`, 'must be a non-empty rack name');
    });
    const priority = t.priority ?? 0;
    checkInt32(priority, `${path}.priority`);
    // proto3: 0 is "no gang".
    const minInstances = t.minInstances ?? 0;
    if (!Number.isInteger(minInstances) || minInstances < 0 || minInstances > instances) {
      throw new InvalidArgumentError(`${path}.minInstances`, `must be between 1 and instances (${instances}), got ${minInstances}`);
    }

    out.tasks.push({
      name,
      instances,
      resource: { cpuMilli: resource.cpuMilli, memoryMb: resource.memoryMb },
      command: { argv: [...argv], env: { ...(command.env ?? {}) }, cwd: command.cwd ?? '' },
      maxAttempts,
      dependsOn: [...dependsOn],
      locality,
      priority,
      ...(minInstances > 0 ? { minInstances } : {}),
    });
  });

  const cycle = findCycle(out.tasks);
  if (cycle) {
    const at = indexByName.get(cycle[0] as string) ?? 0;
    throw new InvalidArgumentError(`tasks[${at}].dependsOn`, `cycle: ${cycle.join(' -> ')}`);
  }
  return out;
}

/**
 * Task names in an order where every task comes after the tasks it depends on; ties keep the spec
 * order. Dependencies on unknown tasks are ignored. Throws `InvalidArgumentError` on a cycle.
 */
export function topoOrder(tasks: readonly TaskSpec[]): string[] {
  const cycle = findCycle(tasks);
  if (cycle) throw new InvalidArgumentError('tasks', `cycle: ${cycle.join(' -> ')}`);
  const names = new Set(tasks.map((t) => t.name));
  const done = new Set<string>();
  const out: string[] = [];
  while (out.length < tasks.length) {
    // Take the first task (in spec order) whose dependencies are all done: stable and deterministic.
    const next = tasks.find((t) => !done.has(t.name) && t.dependsOn.every((d) => done.has(d) || !names.has(d) || d === t.name));
    if (!next) break; // only reachable with duplicate names; validateJobSpec rejects those
    done.add(next.name);
    out.push(next.name);
  }
  return out;
}

/** The first dependency cycle found (DFS in spec order), as names with the first repeated at the end. */
function findCycle(tasks: readonly TaskSpec[]): string[] | undefined {
  const deps = new Map<string, string[]>();
  const order = new Map<string, number>();
  tasks.forEach((t, i) => {
    if (!deps.has(t.name)) {
      deps.set(
        t.name,
        t.dependsOn.filter((d) => d !== t.name),
      );
      order.set(t.name, i);
    }
  });
  const state = new Map<string, 'visiting' | 'done'>();
  const stack: string[] = [];
  const visit = (n: string): string[] | undefined => {
    const s = state.get(n);
    if (s === 'done') return undefined;
    if (s === 'visiting') {
      const loop = stack.slice(stack.indexOf(n));
      // Start the loop at its member that comes first in the spec, so the message is stable.
      let k = 0;
      loop.forEach((m, j) => {
        if ((order.get(m) ?? 0) < (order.get(loop[k] as string) ?? 0)) k = j;
      });
      const rotated = [...loop.slice(k), ...loop.slice(0, k)];
      return [...rotated, rotated[0] as string];
    }
    state.set(n, 'visiting');
    stack.push(n);
    for (const d of deps.get(n) ?? []) {
      if (!deps.has(d)) continue;
      const c = visit(d);
      if (c) return c;
    }
    stack.pop();
    state.set(n, 'done');
    return undefined;
  };
  for (const name of deps.keys()) {
    const c = visit(name);
    if (c) return c;
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// Helpers

function isZeroResource(r: Resource | undefined | null): boolean {
  return !r || ((r.cpuMilli ?? 0) === 0 && (r.memoryMb ?? 0) === 0);
}

function checkResource(r: Resource, path: string): void {
  const cpu = r.cpuMilli ?? 0;
  const mem = r.memoryMb ?? 0;
  if (!Number.isInteger(cpu) || cpu <= 0) throw new InvalidArgumentError(`${path}.cpu`, `must be greater than 0, got ${cpu / 1000}`);
  if (cpu > INT32_MAX) throw new InvalidArgumentError(`${path}.cpu`, `must be at most ${Math.floor(INT32_MAX / 1000)} cores, got ${cpu / 1000}`);
  if (!Number.isInteger(mem) || mem <= 0) throw new InvalidArgumentError(`${path}.memory`, `must be greater than 0, got ${mem}`);
  if (mem > INT32_MAX) throw new InvalidArgumentError(`${path}.memory`, `must be at most ${INT32_MAX} MB, got ${mem}`);
}

function checkFitsSomeNode(r: Resource, path: string, capacities: readonly Resource[]): void {
  if (capacities.length === 0 || capacities.some((c) => fits(r, c))) return;
  const largest = capacities.reduce((a, c) => ({ cpuMilli: Math.max(a.cpuMilli, c.cpuMilli), memoryMb: Math.max(a.memoryMb, c.memoryMb) }), {
    cpuMilli: 0,
    memoryMb: 0,
  });
  throw new InvalidArgumentError(path, `${format(r)} is larger than every node (largest: ${format(largest)})`);
}

function checkInt32(v: number, path: string): void {
  if (!Number.isInteger(v) || v < INT32_MIN || v > INT32_MAX) throw new InvalidArgumentError(path, `must be an integer, got ${v}`);
}

/**
 * A job's `cwd` judged without the file system (at submit): a relative path that climbs above the
 * worker's directory (`../x`, `a/../../x`) is refused; an absolute one is left to the agent that runs
 * it (its `allowedPaths`, with symlinks resolved). Returns the reason, or undefined.
 */
export function cwdProblem(p: string): string | undefined {
  if (p.includes('\0')) return 'must not contain a NUL byte';
  if (p === '' || p.startsWith('/')) return undefined;
  let depth = 0;
  for (const seg of p.split('/')) {
    if (seg === '' || seg === '.') continue;
    depth += seg === '..' ? -1 : 1;
    if (depth < 0) return `${JSON.stringify(p)} climbs out of the worker's directory`;
  }
  return undefined;
}

function checkEnv(env: Record<string, string>, path: string): void {
  for (const [k, v] of Object.entries(env)) {
    if (!ENV_NAME_PATTERN.test(k)) {
      throw new InvalidArgumentError(`${path}.${k}`, `invalid environment variable name (expected ${ENV_NAME_PATTERN.source})`);
    }
    if (typeof v !== 'string') throw new InvalidArgumentError(`${path}.${k}`, `must be a string, got ${describe(v)}`);
  }
}

function asObject(v: unknown, path: string, expected: string): Record<string, unknown> {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new InvalidArgumentError(path, `${expected}, got ${describe(v)}`);
  return v as Record<string, unknown>;
}

function checkKnown(obj: Record<string, unknown>, path: string, known: readonly string[]): void {
  for (const k of Object.keys(obj)) {
    if (known.includes(k)) continue;
    const guess = suggest(k, known);
    throw new InvalidArgumentError(path, `unknown field "${k}" (known: ${known.join(', ')})${guess ? `; did you mean "${guess}"?` : ''}`);
  }
}

function optString(v: unknown, path: string): string | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw new InvalidArgumentError(path, `must be a string, got ${describe(v)}`);
  return v;
}

function optInteger(v: unknown, path: string): number | undefined {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isInteger(v)) throw new InvalidArgumentError(path, `must be an integer, got ${describe(v)}`);
  return v;
}

/** Strings, and numbers / booleans as their text (YAML turns `8080` into a number). */
function scalarString(v: unknown, path: string): string {
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  throw new InvalidArgumentError(path, `must be a string, got ${describe(v)}`);
}

function optStringList(v: unknown, path: string, allowSingle: boolean): string[] {
  if (v === undefined || v === null) return [];
  if (allowSingle && typeof v === 'string') return [v];
  if (!Array.isArray(v)) throw new InvalidArgumentError(path, `must be a list of strings, got ${describe(v)}`);
  return v.map((x, i) => {
    if (typeof x !== 'string') throw new InvalidArgumentError(`${path}[${i}]`, `must be a string, got ${describe(x)}`);
    return x;
  });
}

function optEnv(v: unknown, path: string): Record<string, string> {
  if (v === undefined || v === null) return {};
  const o = asObject(v, path, 'must be a mapping of variable names to values');
  const out: Record<string, string> = {};
  for (const [k, x] of Object.entries(o)) out[k] = scalarString(x, `${path}.${k}`);
  return out;
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  if (typeof v === 'object') return 'a mapping';
  if (typeof v === 'string') return JSON.stringify(v);
  return String(v);
}

/** The known name closest to `k` (edit distance <= 2, or same letters ignoring case), if any. */
function suggest(k: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestD = 3;
  for (const c of known) {
    const d = c.toLowerCase() === k.toLowerCase() ? 0 : editDistance(k, c);
    if (d < bestD) {
      bestD = d;
      best = c;
    }
  }
  return best;
}

function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) {
      const sub = (prev[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1);
      cur.push(Math.min((prev[j] as number) + 1, (cur[j - 1] as number) + 1, sub));
    }
    prev = cur;
  }
  return prev[b.length] as number;
}
