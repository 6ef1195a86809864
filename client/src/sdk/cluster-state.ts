/**
 * Names of the master's fault FSM states (paper Fig. 5) as `GetClusterStatus` reports them; they
 * live in `@fuxi/common`, shared with the master.
 */
export { FSM_STATE_NAMES, fsmStateLabel } from '@fuxi/common';
