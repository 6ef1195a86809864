// Original file: proto/fuxi/v1/master.proto

import type { FaultEvent as _fuxi_v1_FaultEvent, FaultEvent__Output as _fuxi_v1_FaultEvent__Output } from '../../fuxi/v1/FaultEvent.js';
import type { RecoveryProgress as _fuxi_v1_RecoveryProgress, RecoveryProgress__Output as _fuxi_v1_RecoveryProgress__Output } from '../../fuxi/v1/RecoveryProgress.js';
import type { Condition as _fuxi_v1_Condition, Condition__Output as _fuxi_v1_Condition__Output } from '../../fuxi/v1/Condition.js';
import type { Connectivity as _fuxi_v1_Connectivity, Connectivity__Output as _fuxi_v1_Connectivity__Output } from '../../fuxi/v1/Connectivity.js';
import type { Long } from '@grpc/proto-loader';

export interface ClusterStatus {
  'leader'?: (string);
  'epoch'?: (number | string | Long);
  /**
   * The system FSM state: S0 normal, S1 master, S2 AM, S3 agent, S4 master+AM, S5 master+agent,
   * S6 all three, S2S3 AM+agent.
   */
  'fsmState'?: (string);
  'openEvents'?: (_fuxi_v1_FaultEvent)[];
  'recovery'?: (_fuxi_v1_RecoveryProgress | null);
  'nodesHealthy'?: (number);
  'nodesTimingOut'?: (number);
  'nodesLost'?: (number);
  'appsRunning'?: (number);
  /**
   * Conditions an operator must act on (empty when none), e.g. the store out of space.
   */
  'conditions'?: (_fuxi_v1_Condition)[];
  /**
   * Broken links between hosts and nodes partitioned from the master (partial partitions).
   */
  'connectivity'?: (_fuxi_v1_Connectivity | null);
  /**
   * The leader's web dashboard (http://host:port/; served beside its metrics), '' when it serves
   * none. A standby's dashboard redirects to it.
   */
  'dashboardUrl'?: (string);
}

export interface ClusterStatus__Output {
  'leader': (string);
  'epoch': (string);
  /**
   * The system FSM state: S0 normal, S1 master, S2 AM, S3 agent, S4 master+AM, S5 master+agent,
   * S6 all three, S2S3 AM+agent.
   */
  'fsmState': (string);
  'openEvents': (_fuxi_v1_FaultEvent__Output)[];
  'recovery': (_fuxi_v1_RecoveryProgress__Output | null);
  'nodesHealthy': (number);
  'nodesTimingOut': (number);
  'nodesLost': (number);
  'appsRunning': (number);
  /**
   * Conditions an operator must act on (empty when none), e.g. the store out of space.
   */
  'conditions': (_fuxi_v1_Condition__Output)[];
  /**
   * Broken links between hosts and nodes partitioned from the master (partial partitions).
   */
  'connectivity': (_fuxi_v1_Connectivity__Output | null);
  /**
   * The leader's web dashboard (http://host:port/; served beside its metrics), '' when it serves
   * none. A standby's dashboard redirects to it.
   */
  'dashboardUrl': (string);
}
