/**
 * The fault FSM's handlers: what the master does when the event sensor posts a fault. They are
 * subscribed to the dispatcher of the state's FaultBoard, and each uses only the soft-state
 * sources the Table 3 row of its failure combination allows (table3.ts `consult`), in the
 * degree-of-confidence order: the master's own copy, then agents', then AMs'.
 *
 * | fault        | handler                                                                   |
 * |--------------|---------------------------------------------------------------------------|
 * | FM_CRASH     | open the aggregation window: ask agents (FAFullCap) and AMs (AMFullResReq) |
 * | AGENT_TIMING | missing after a failover: Algorithm 1, AM claims stay reserved (AMFullAsgnedRes); timing out: slots reserved (FMFullCap), its AMs told |
 * | AGENT_PARTITIONED | silent but vouched for by peers: slots kept (FMFullCap, after reconnect), AMs not told |
 * | AGENT_CRASH  | re-send the master's grants (FMFullCap; in a failover, the AMs' assignments) |
 * | AM_TIMING    | missing after a failover: Algorithm 2, MockSU (FAFullCap); stalled: restart the AM |
 * | AM_CRASH     | restart the AM; it gets the master's assignments (FMFullAsgnedRes), or the agents' grants in a failover |
 */
import { restartAm } from './am-restart.js';
import type { AppState, MasterState } from './master-state.js';
import { noticeAgents } from './nodes.js';
import { keepMockSu, openAggregation } from './recovery.js';
import { pushGrants } from './sync.js';
import { consult } from './table3.js';

export function subscribeFaultHandlers(st: MasterState): void {
  st.faults.on('FM_CRASH', () => openAggregation(st));
  st.faults.on('AGENT_TIMING', (e) => onAgentTiming(st, e.subject));
  st.faults.on('AGENT_PARTITIONED', (e) => onAgentPartitioned(st, e.subject));
  st.faults.on('AGENT_CRASH', (e) => onAgentCrash(st, e.subject));
  st.faults.on('AM_TIMING', (e) => {
    const app = st.apps.get(e.subject);
    if (!app) return;
    if (!app.reported) keepMockSu(st, app);
    else restartFromBestSource(st, app, e.detail);
  });
  st.faults.on('AM_CRASH', (e) => {
    const app = st.apps.get(e.subject);
    if (app) restartFromBestSource(st, app, e.detail);
  });
}

function onAgentTiming(st: MasterState, nodeId: string): void {
  const node = st.nodes.get(nodeId);
  if (!node) return;
  if (node.status === 'missing') {
    // Algorithm 1: what reported AMs claim on it stays reserved until it reports or is lost
    // (recovery.ts tells those AMs, one notice per AM for all missing agents).
    consult(st, 'AMFullAsgnedRes', { nodeId }, 'Algorithm 1: the slots AMs claim on the missing agent stay reserved');
    return;
  }
  if (node.status !== 'timing-out') return;
  // Table 3 row 3: the master keeps the node's grants (its FMFullCap) for when it comes back.
  consult(st, 'FMFullCap', { nodeId }, 'slots of the timing-out agent reserved; its AMs told');
  noticeAgents(st, nodeId, true);
}

/**
 * The master cannot hear the agent, but its peers can: its workers run on and its AMs may reach
 * them, so nothing is re-run and its AMs are not told. Like a timing failure (Table 3 row 3) the
 * master keeps the node's grants (FMFullCap), which the agent reconciles with when it is heard
 * again; nothing new is placed there meanwhile (the scheduler takes healthy nodes only).
 */
function onAgentPartitioned(st: MasterState, nodeId: string): void {
  const node = st.nodes.get(nodeId);
  if (!node || node.status !== 'partitioned') return;
  consult(st, 'FMFullCap', { nodeId }, 'slots of the agent partitioned from the master kept; its AMs not told');
}

function onAgentCrash(st: MasterState, nodeId: string): void {
  const node = st.nodes.get(nodeId);
  if (!node || !node.reported) return;
  // Row 2: the master's grants are authoritative. In a failover (row 9) the master's table for the
  // node is what the AMs' assignments on it add up to.
  if (consult(st, 'FMFullCap', { nodeId }, "the master's grants re-sent to the restarted agent")) pushGrants(st, [nodeId]);
  else if (consult(st, 'AMFullAsgnedRes', { nodeId }, "grants rebuilt from the AMs' assignments re-sent to the restarted agent")) pushGrants(st, [nodeId]);
}

/**
 * The AM restarts whatever the row (its process must be replaced); what the new attempt is given
 * comes from the most trusted source the row allows: the master's assignments (rows 4-6), the
 * agents' grants (rows 7-8: the master's table was rebuilt from them) or the AMs' (row 13).
 */
function restartFromBestSource(st: MasterState, app: AppState, why: string): void {
  const action = 'the new AM attempt is given its assignments from it';
  const appNodes = new Set<string>();
  for (const su of app.sus.values()) for (const nodeId of su.asgn.keys()) appNodes.add(nodeId);
  const subject = { appId: app.appId, appNodes: [...appNodes] };
  (['FMFullAsgnedRes', 'FAFullCap', 'AMFullAsgnedRes'] as const).some((source) => consult(st, source, subject, action));
  restartAm(st, app, why);
}
