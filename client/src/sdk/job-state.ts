/** Job states as the wire carries them (enum names), and small pure helpers around them. */
import type { JobState__Output } from '@fuxi/proto';

export type JobStateName = JobState__Output;

export const TERMINAL_JOB_STATES: ReadonlySet<string> = new Set(['JOB_STATE_SUCCEEDED', 'JOB_STATE_FAILED', 'JOB_STATE_KILLED']);

/** True for SUCCEEDED, FAILED and KILLED. */
export function isTerminal(state: string): boolean {
  return TERMINAL_JOB_STATES.has(state);
}

/** `JOB_STATE_RUNNING` -> `RUNNING`. */
export function shortState(state: string): string {
  return state.replace(/^(JOB|WORKER)_STATE_/, '');
}

const STATES = ['SUBMITTED', 'RUNNING', 'SUCCEEDED', 'FAILED', 'KILLED'] as const;

/** `running`, `RUNNING` or `JOB_STATE_RUNNING` -> `JOB_STATE_RUNNING`; undefined when unknown. */
export function parseJobState(s: string): JobStateName | undefined {
  const up = s
    .trim()
    .toUpperCase()
    .replace(/^JOB_STATE_/, '');
  return (STATES as readonly string[]).includes(up) ? (`JOB_STATE_${up}` as JobStateName) : undefined;
}

export const JOB_STATE_NAMES: readonly string[] = STATES.map((s) => s.toLowerCase());
