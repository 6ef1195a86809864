/**
 * The states of the master's fault FSM (paper Fig. 5): S0 normal, S1 FM, S2 AM, S3 agent, S4 FM+AM,
 * S5 FM+agent, S6 all three; S2S3 AM+agent (Table 3 row 6). The master computes them; the SDK and
 * CLI show them as `GetClusterStatus` reports them.
 */
export type FsmState = 'S0' | 'S1' | 'S2' | 'S3' | 'S4' | 'S5' | 'S6' | 'S2S3';
export const FSM_STATES: readonly FsmState[] = ['S0', 'S1', 'S2', 'S3', 'S4', 'S5', 'S6', 'S2S3'];

/** Human names of the FSM states (`fuxi cluster status` prints `S5 master + agent failure`). */
export const FSM_STATE_NAMES: Readonly<Record<FsmState, string>> = {
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
  const name = (FSM_STATE_NAMES as Readonly<Record<string, string>>)[state];
  return name ? `${state} ${name}` : state;
}
