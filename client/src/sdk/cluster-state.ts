/**
 * Names of the master's fault FSM states (paper Fig. 5) as `GetClusterStatus` reports them. The
 * SDK keeps its own copy (it never depends on master internals); the master's is in
 * `master/src/core/fault-fsm.ts`.
 */
export const FSM_STATE_NAMES: Readonly<Record<string, string>> = {
  S0: 'normal',
  S1: 'master failure',
  S2: 'AM failure',
  S3: 'agent failure',
  S4: 'master + AM failure',
  S5: 'master + agent failure',
  S6: 'master + AM + agent failure',
  S2S3: 'AM + agent failure',
};

/** `S5` -> `S5 master + agent failure`; an unknown state as it is; '' -> `-`. */
export function fsmStateLabel(state: string): string {
  if (!state) return '-';
  const name = FSM_STATE_NAMES[state];
  return name ? `${state} ${name}` : state;
}
