/**
 * Options of the paper evaluation (`make bench-paper`): cluster size, workload, failover settings,
 * fault injection, and which (mode, fault type) cases to run. Every number is a flag.
 */
import { parseArgs } from 'node:util';
import type { WorkloadOptions } from './workload.js';

/** The paper's Table 4: which failover each case deploys. */
export const MODES = {
  FT: { label: 'Fuxi-FT: master and AM failover', masterArgs: [] as string[] },
  FMFO: { label: 'FM failover, no AM failover', masterArgs: ['--max-am-attempts', '1'] },
  AMFO: { label: 'no FM failover, AM failover', masterArgs: ['--master-failover', 'false'] },
  NoFO: { label: 'no FM failover, no AM failover', masterArgs: ['--master-failover', 'false', '--max-am-attempts', '1'] },
} as const;
export type Mode = keyof typeof MODES;

/** none = the baseline; single = master, or 5 % of AMs, or 5 % of agents; sim = master + 5 % of AMs or agents. */
export const FAULT_TYPES = ['none', 'single-crash', 'single-timing', 'sim-crash', 'sim-timing'] as const;
export type FaultType = (typeof FAULT_TYPES)[number];

export interface CaseSpec {
  mode: Mode;
  faults: FaultType;
}

export const caseName = (c: CaseSpec): string => `${c.mode}/${c.faults}`;

export interface PaperEvalOptions {
  cases: CaseSpec[];
  // cluster
  nodes: number;
  hosts: number;
  nodeCpu: string;
  nodeMemory: string;
  masters: number;
  // workload
  workload: WorkloadOptions;
  /** Jobs kept active (submitted, not finished). */
  active: number;
  /** Submissions per second at most. */
  submitRate: number;
  // failover settings of the master
  leaseTtlSec: number;
  recoveryDeadlineMs: number;
  amTimeoutMs: number;
  heartbeatIntervalMs: number;
  amHeartbeatIntervalMs: number;
  agentTimingOutMs: number;
  agentTimeoutMs: number;
  amStallTimeoutMs: number;
  // fault injection
  faultIntervalMs: number;
  firstFaultMs: number;
  /** Share of AMs / agents failing in one injection (0.05 in the paper). */
  faultFraction: number;
  /** A crashed agent restarts after this long. */
  agentDownMs: number;
  /** Timing failures: how long an agent / AM / the master is paused. */
  agentPauseMs: number;
  amPauseMs: number;
  masterPauseMs: number;
  /** A killed master is started again (as a standby) after this long. */
  masterRestartMs: number;
  // run
  maxCaseMs: number;
  outDir: string;
  keep: boolean;
  quiet: boolean;
}

export const DEFAULT_CASES = 'FT/none,FT/single-crash,FT/single-timing,FT/sim-crash,FT/sim-timing,FMFO/sim-crash,AMFO/sim-crash,NoFO/sim-crash';

export function parseCases(s: string): CaseSpec[] {
  const out: CaseSpec[] = [];
  for (const item of s
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean)) {
    const [mode, faults] = item.split('/');
    if (!mode || !(mode in MODES)) throw new Error(`--cases: unknown mode ${JSON.stringify(mode)} in "${item}" (known: ${Object.keys(MODES).join(', ')})`);
    if (!faults || !(FAULT_TYPES as readonly string[]).includes(faults))
      throw new Error(`--cases: unknown fault type ${JSON.stringify(faults)} in "${item}" (known: ${FAULT_TYPES.join(', ')})`);
    out.push({ mode: mode as Mode, faults: faults as FaultType });
  }
  if (out.length === 0) throw new Error('--cases: at least one case');
  return out;
}

const FLAGS = {
  cases: DEFAULT_CASES,
  nodes: '300',
  hosts: '2',
  'node-cpu': '23',
  'node-memory': '82Gi',
  masters: '3',
  jobs: '400',
  active: '200',
  'submit-rate': '20',
  sizes: '10,100,1000',
  'size-scale': '0.1',
  mix: '20,45,35',
  'instance-cpu': '0.5',
  'instance-memory': '1Gi',
  'am-cpu': '0.1',
  'am-memory': '100Mi',
  'instance-ms': '30000',
  'instance-jitter': '0.25',
  'instance-failure': '0',
  'max-attempts': '3',
  seed: '1',
  'lease-ttl-sec': '5',
  'recovery-deadline-ms': '5000',
  'am-timeout-ms': '30000',
  'heartbeat-interval-ms': '1000',
  'am-heartbeat-interval-ms': '1000',
  'agent-timing-out-ms': '5000',
  'agent-timeout-ms': '60000',
  'am-stall-timeout-ms': '20000',
  'fault-interval-ms': '30000',
  'first-fault-ms': '20000',
  'fault-fraction': '0.05',
  'agent-down-ms': '1000',
  'agent-pause-ms': '10000',
  'am-pause-ms': '25000',
  'master-pause-ms': '',
  'master-restart-ms': '2000',
  'max-case-ms': '300000',
  'out-dir': '',
} as const;

export const USAGE = `node test/dist/bench/paper-eval.js [--flag value ...]
  ${Object.entries(FLAGS)
    .map(([k, v]) => `--${k} ${v === '' ? '(derived)' : v}`)
    .join('\n  ')}
  --keep (keep logs)  --quiet (no progress on stderr)`;

export function parseOptions(argv: string[], defaultOutDir: string): PaperEvalOptions {
  const options: Record<string, { type: 'string' | 'boolean'; default?: string | boolean }> = {
    keep: { type: 'boolean', default: false },
    quiet: { type: 'boolean', default: false },
    help: { type: 'boolean', default: false },
  };
  for (const [k, v] of Object.entries(FLAGS)) options[k] = { type: 'string', default: v };
  const { values } = parseArgs({ args: argv, options, strict: true, allowPositionals: false });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    process.exit(0);
  }
  const str = (k: keyof typeof FLAGS): string => String(values[k]);
  const num = (k: keyof typeof FLAGS, min: number, integer = true): number => {
    const n = Number(str(k));
    if (!Number.isFinite(n) || n < min || (integer && !Number.isInteger(n)))
      throw new Error(`--${k} must be ${integer ? 'an integer' : 'a number'} >= ${min}, got ${JSON.stringify(str(k))}`);
    return n;
  };
  const triple = (k: 'sizes' | 'mix'): [number, number, number] => {
    const xs = str(k).split(',').map(Number);
    if (xs.length !== 3 || xs.some((x) => !Number.isFinite(x) || x < 0)) throw new Error(`--${k} must be three numbers, e.g. ${FLAGS[k]}`);
    return xs as [number, number, number];
  };
  const scale = num('size-scale', 0, false);
  const sizes = triple('sizes').map((s) => Math.max(1, Math.round(s * scale))) as [number, number, number];
  const mix = triple('mix');
  if (mix.every((m) => m === 0)) throw new Error('--mix: at least one category must have a share');
  const leaseTtlSec = num('lease-ttl-sec', 2);
  const faultIntervalMs = num('fault-interval-ms', 1000);
  const o: PaperEvalOptions = {
    cases: parseCases(str('cases')),
    nodes: num('nodes', 1),
    hosts: num('hosts', 1),
    nodeCpu: str('node-cpu'),
    nodeMemory: str('node-memory'),
    masters: num('masters', 2),
    workload: {
      jobs: num('jobs', 1),
      sizes,
      mix,
      instanceCpu: num('instance-cpu', 0.001, false),
      instanceMemory: str('instance-memory'),
      amCpu: num('am-cpu', 0.001, false),
      amMemory: str('am-memory'),
      instanceMs: num('instance-ms', 1),
      instanceJitter: Math.min(0.9, num('instance-jitter', 0, false)),
      instanceFailure: ((): number => {
        const p = num('instance-failure', 0, false);
        if (p > 1) throw new Error(`--instance-failure must be a probability between 0 and 1, got ${p}`);
        return p;
      })(),
      maxAttempts: num('max-attempts', 1),
      seed: num('seed', 0),
    },
    active: num('active', 1),
    submitRate: num('submit-rate', 0.01, false),
    leaseTtlSec,
    recoveryDeadlineMs: num('recovery-deadline-ms', 1),
    amTimeoutMs: num('am-timeout-ms', 1),
    heartbeatIntervalMs: num('heartbeat-interval-ms', 1),
    amHeartbeatIntervalMs: num('am-heartbeat-interval-ms', 1),
    agentTimingOutMs: num('agent-timing-out-ms', 1),
    agentTimeoutMs: num('agent-timeout-ms', 1),
    amStallTimeoutMs: num('am-stall-timeout-ms', 0),
    faultIntervalMs,
    firstFaultMs: str('first-fault-ms') === '' ? faultIntervalMs : num('first-fault-ms', 0),
    faultFraction: num('fault-fraction', 0, false),
    agentDownMs: num('agent-down-ms', 0),
    agentPauseMs: num('agent-pause-ms', 0),
    amPauseMs: num('am-pause-ms', 0),
    masterPauseMs: str('master-pause-ms') === '' ? leaseTtlSec * 1000 + 3000 : num('master-pause-ms', 0),
    masterRestartMs: num('master-restart-ms', 0),
    maxCaseMs: num('max-case-ms', 1000),
    outDir: str('out-dir') || defaultOutDir,
    keep: Boolean(values.keep),
    quiet: Boolean(values.quiet),
  };
  if (o.nodes < o.hosts) throw new Error('--nodes must be at least --hosts');
  return o;
}
