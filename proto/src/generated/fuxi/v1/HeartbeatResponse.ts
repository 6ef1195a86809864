// Original file: proto/fuxi/v1/master.proto

import type { Grant as _fuxi_v1_Grant, Grant__Output as _fuxi_v1_Grant__Output } from '../../fuxi/v1/Grant.js';
import type { ProbeTargets as _fuxi_v1_ProbeTargets, ProbeTargets__Output as _fuxi_v1_ProbeTargets__Output } from '../../fuxi/v1/ProbeTargets.js';
import type { RegisterAgentResponse as _fuxi_v1_RegisterAgentResponse, RegisterAgentResponse__Output as _fuxi_v1_RegisterAgentResponse__Output } from '../../fuxi/v1/RegisterAgentResponse.js';
import type { Long } from '@grpc/proto-loader';

export interface HeartbeatResponse {
  'epoch'?: (number | string | Long);
  /**
   * The master does not know this agent (e.g. it restarted): register again.
   */
  'reregister'?: (boolean);
  /**
   * When the agent is behind: its complete grant table, replacing the old one.
   */
  'fullGrants'?: (boolean);
  'grantSeq'?: (number | string | Long);
  'grants'?: (_fuxi_v1_Grant)[];
  /**
   * This master has not heard this agent's full state yet: send ReportAgentState.
   */
  'reportState'?: (boolean);
  /**
   * The connectivity sequence the master now holds for this agent (send changes on top of it).
   */
  'connectivitySeq'?: (number | string | Long);
  /**
   * The master lacks the base of the agent's changes (e.g. a new leader): send the whole set.
   */
  'connectivityResync'?: (boolean);
  /**
   * Set when the agent's probe_targets_version is stale.
   */
  'probeTargets'?: (_fuxi_v1_ProbeTargets | null);
  /**
   * The master registered the agent from the heartbeat's `rejoin`: RegisterAgent's answer (the
   * rest of this message is then empty but for `epoch`).
   */
  'registered'?: (_fuxi_v1_RegisterAgentResponse | null);
}

export interface HeartbeatResponse__Output {
  'epoch': (string);
  /**
   * The master does not know this agent (e.g. it restarted): register again.
   */
  'reregister': (boolean);
  /**
   * When the agent is behind: its complete grant table, replacing the old one.
   */
  'fullGrants': (boolean);
  'grantSeq': (string);
  'grants': (_fuxi_v1_Grant__Output)[];
  /**
   * This master has not heard this agent's full state yet: send ReportAgentState.
   */
  'reportState': (boolean);
  /**
   * The connectivity sequence the master now holds for this agent (send changes on top of it).
   */
  'connectivitySeq': (string);
  /**
   * The master lacks the base of the agent's changes (e.g. a new leader): send the whole set.
   */
  'connectivityResync': (boolean);
  /**
   * Set when the agent's probe_targets_version is stale.
   */
  'probeTargets': (_fuxi_v1_ProbeTargets__Output | null);
  /**
   * The master registered the agent from the heartbeat's `rejoin`: RegisterAgent's answer (the
   * rest of this message is then empty but for `epoch`).
   */
  'registered': (_fuxi_v1_RegisterAgentResponse__Output | null);
}
