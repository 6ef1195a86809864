/**
 * Which soft-state sources a recovery step may use: the Table 3 row of the failure combination
 * that concerns the step's subject (the master, the node and the app it touches), and the record
 * of every source used (`MasterState.used`). Recovery handlers ask `consult` before they take
 * anything from a source; a source the row does not list is not used.
 */
import { table3Row, type FaultKind, type SoftStateSource, type Table3Row } from './fault-fsm.js';
import type { MasterState } from './master-state.js';

/** Whom a recovery step concerns: a node, an app, and the nodes the app holds slots on. */
export interface Subject {
  nodeId?: string;
  appId?: string;
  appNodes?: readonly string[];
}

/**
 * The Table 3 row for the open faults of the master and of the given node and app (not of every
 * component in the cluster: an agent timing out on one rack does not change how another app's AM
 * is believed). `extra` adds faults the step itself stands for (e.g. an agent that has not
 * reported yet inside the aggregation window is, to the AMs' claims on it, an agent the master
 * cannot hear: AGENT_TIMING). Undefined when nothing concerns the subject (S0).
 */
export function rowFor(st: MasterState, subject: Subject, extra: FaultKind[] = []): Table3Row | undefined {
  const kinds: Array<{ kind: FaultKind }> = extra.map((kind) => ({ kind }));
  if (st.faults.isOpen('FM_CRASH', '')) kinds.push({ kind: 'FM_CRASH' });
  const nodeIds = [...(subject.nodeId ? [subject.nodeId] : []), ...(subject.appNodes ?? [])];
  for (const kind of ['AGENT_CRASH', 'AGENT_TIMING', 'AGENT_PARTITIONED'] as const) if (nodeIds.some((n) => st.faults.isOpen(kind, n))) kinds.push({ kind });
  for (const kind of ['AM_CRASH', 'AM_TIMING'] as const) if (subject.appId && st.faults.isOpen(kind, subject.appId)) kinds.push({ kind });
  return table3Row(kinds);
}

/**
 * Whether `source` may be used for the subject now, recording the use (row, timing, action) when
 * it may. With no fault open for the subject every source is the normal protocol's (row 0). The
 * faults of a component that has reconnected are resolved before it is consulted: its state is then
 * used "after reconnect".
 */
export function consult(
  st: MasterState,
  source: SoftStateSource,
  subject: Subject,
  action: string,
  opts: { extra?: FaultKind[]; reconnected?: boolean } = {},
): boolean {
  const row = rowFor(st, subject, opts.extra);
  const who = subject.appId ?? subject.nodeId ?? '';
  if (!row) {
    st.used({ row: 0, source, timing: opts.reconnected ? 'after-reconnect' : 'now', subject: who, action });
    return true;
  }
  const cell = row.sources.find((s) => s.source === source);
  if (!cell) {
    st.log.info({ row: row.row, source, subject: who, action }, 'Table 3 row does not allow this source; not used');
    return false;
  }
  // A component that has just reconnected gives its state after reconnect (the AR cells).
  st.used({ row: row.row, source, timing: opts.reconnected ? 'after-reconnect' : cell.timing, subject: who, action });
  return true;
}
