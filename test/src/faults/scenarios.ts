/**
 * The rows of the paper's Table 3 (docs/design.md, "The fault FSM and Table 3"): every combination of a master (FM)
 * crash, an application-master (AM) crash or timing failure and an agent crash or timing failure
 * that the fault matrix injects, with the state of the system FSM (paper Fig. 5) each one puts the
 * master in.
 *
 * Row 6 of the paper is "AM crash/timing + agent crash/timing"; the matrix runs it as AM crash +
 * agent timing, on different nodes (rows 11-13 cover the other AM / agent kinds together with a
 * master crash).
 *
 * AMs run in their node's AM host by default, so an AM fault of rows 4-13 is a fault of that one
 * hosted AM (crash: an exception inside it, which the host's wall turns into its end; timing: its
 * master traffic stalled). Rows 14 and 15, beyond the paper, fail the AM host itself (every AM it
 * holds at once): kill -9, and SIGSTOP past the AM stall timeout.
 */

/** How a component fails: `crash` = kill -9; `timing` = SIGSTOP past its detection threshold, then SIGCONT. */
export type FailureKind = 'crash' | 'timing';

export interface Scenario {
  /** Row number in Table 3. */
  no: number;
  /** The row's name as the paper gives it. */
  name: string;
  fm?: 'crash';
  am?: FailureKind;
  agent?: FailureKind;
  /** The AM host holding the target AM, with every AM in it. */
  amHost?: FailureKind;
  /** The FSM state of the row (S1 master, S2 AM, S3 agent, S4 master+AM, S5 master+agent, S6 all three, S2S3 AM+agent). */
  fsm: string;
}

export const SCENARIOS: readonly Scenario[] = [
  { no: 1, name: 'FM crash', fm: 'crash', fsm: 'S1' },
  { no: 2, name: 'agent crash', agent: 'crash', fsm: 'S3' },
  { no: 3, name: 'agent timing', agent: 'timing', fsm: 'S3' },
  { no: 4, name: 'AM crash', am: 'crash', fsm: 'S2' },
  { no: 5, name: 'AM timing', am: 'timing', fsm: 'S2' },
  { no: 6, name: 'AM crash + agent timing', am: 'crash', agent: 'timing', fsm: 'S2S3' },
  { no: 7, name: 'FM crash + AM crash', fm: 'crash', am: 'crash', fsm: 'S4' },
  { no: 8, name: 'FM crash + AM timing', fm: 'crash', am: 'timing', fsm: 'S4' },
  { no: 9, name: 'FM crash + agent crash', fm: 'crash', agent: 'crash', fsm: 'S5' },
  { no: 10, name: 'FM crash + agent timing', fm: 'crash', agent: 'timing', fsm: 'S5' },
  { no: 11, name: 'FM crash + AM timing + agent timing', fm: 'crash', am: 'timing', agent: 'timing', fsm: 'S6' },
  { no: 12, name: 'FM crash + AM timing + agent crash', fm: 'crash', am: 'timing', agent: 'crash', fsm: 'S6' },
  { no: 13, name: 'FM crash + AM crash + agent timing', fm: 'crash', am: 'crash', agent: 'timing', fsm: 'S6' },
  { no: 14, name: 'AM host crash', amHost: 'crash', fsm: 'S2' },
  { no: 15, name: 'AM host timing', amHost: 'timing', fsm: 'S2' },
];

/** `3 agent timing` */
export function scenarioLabel(s: Scenario): string {
  return `${s.no} ${s.name}`;
}

/**
 * Rows to run: all of them, or those listed in `FUXI_FAULT_ROWS` (e.g. `1,4,11` or `8-13`), for
 * running a few rows while working on one failure mode.
 */
export function selectedScenarios(env: string | undefined = process.env.FUXI_FAULT_ROWS): Scenario[] {
  if (!env || env.trim() === '') return [...SCENARIOS];
  const wanted = new Set<number>();
  for (const part of env
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)) {
    const m = /^(\d+)(?:-(\d+))?$/.exec(part);
    if (!m) throw new Error(`FUXI_FAULT_ROWS: "${part}" is not a row number or a range like 8-13`);
    const from = Number(m[1]);
    const to = m[2] === undefined ? from : Number(m[2]);
    for (let n = from; n <= to; n++) wanted.add(n);
  }
  const rows = SCENARIOS.filter((s) => wanted.has(s.no));
  if (rows.length === 0) throw new Error(`FUXI_FAULT_ROWS=${env} selects no row of the matrix (1-${SCENARIOS.length})`);
  return rows;
}
