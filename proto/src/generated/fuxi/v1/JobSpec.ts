// Original file: proto/fuxi/v1/common.proto

import type { TaskSpec as _fuxi_v1_TaskSpec, TaskSpec__Output as _fuxi_v1_TaskSpec__Output } from '../../fuxi/v1/TaskSpec.js';
import type { Resource as _fuxi_v1_Resource, Resource__Output as _fuxi_v1_Resource__Output } from '../../fuxi/v1/Resource.js';
import type { JobArray as _fuxi_v1_JobArray, JobArray__Output as _fuxi_v1_JobArray__Output } from '../../fuxi/v1/JobArray.js';

export interface JobSpec {
  /**
   * Client-supplied id: makes submission idempotent. Generated when empty.
   */
  'jobId'?: (string);
  'name'?: (string);
  'quotaGroup'?: (string);
  'priority'?: (number);
  'tasks'?: (_fuxi_v1_TaskSpec)[];
  /**
   * Resources for the job's application master.
   */
  'amResource'?: (_fuxi_v1_Resource | null);
  /**
   * Extra environment for every worker of the job.
   */
  'env'?: ({[key: string]: string});
  /**
   * What the AM does when an agent running its workers is timing out: "wait" (services: keep the
   * workers, however long) or "rerun" (batch: re-run its instances elsewhere once the agent has
   * been timing out for rerun_after_ms). Default "rerun".
   */
  'onAgentTimeout'?: (string);
  'rerunAfterMs'?: (number);
  /**
   * Where the application master runs: "shared" (the node's AM host, many AMs in one process) or
   * "dedicated" (a process of its own). Default "shared".
   */
  'amMode'?: (string);
  /**
   * What the job's processes need of the network: "connected" (default: the AM and every worker
   * are placed on hosts that all reach one another, and later grants stay inside that set) or
   * "independent" (no worker-to-worker or AM-to-worker traffic beyond the agents': placement
   * ignores partial partitions between hosts).
   */
  'network'?: (string);
  /**
   * Speculative execution of slow attempts: "off", "base" (LATE: a backup of an attempt whose
   * progress rate is far below its peers') or "path" (default: also path-based speculation, which
   * finds the host common to slow data paths and moves the work that host serves or reads).
   */
  'speculation'?: (string);
  /**
   * Whether the master's failure prediction may act on the job (host blacklists, early kill or
   * reschedule of attempts): "on" (default; "" means it) or "off".
   */
  'failurePrediction'?: (string);
  /**
   * A testbed of the job's quota group (`fuxi testbed create`): the job's AM and workers go only to
   * its hosts while it is active ('' = anywhere the quota group may go).
   */
  'testbed'?: (string);
  /**
   * The external scheduler that places the job's task slots (SchedulerService), by the name it
   * registers under; "" = the built-in scheduler. The AM's slot is always placed by the master.
   */
  'scheduler'?: (string);
  /**
   * Set on the members of a job array (`fuxi submit --array`, SDK `submitArray`): the array's id,
   * this member's index, and how many members may run at once (0 = no limit).
   */
  'array'?: (_fuxi_v1_JobArray | null);
}

export interface JobSpec__Output {
  /**
   * Client-supplied id: makes submission idempotent. Generated when empty.
   */
  'jobId': (string);
  'name': (string);
  'quotaGroup': (string);
  'priority': (number);
  'tasks': (_fuxi_v1_TaskSpec__Output)[];
  /**
   * Resources for the job's application master.
   */
  'amResource': (_fuxi_v1_Resource__Output | null);
  /**
   * Extra environment for every worker of the job.
   */
  'env': ({[key: string]: string});
  /**
   * What the AM does when an agent running its workers is timing out: "wait" (services: keep the
   * workers, however long) or "rerun" (batch: re-run its instances elsewhere once the agent has
   * been timing out for rerun_after_ms). Default "rerun".
   */
  'onAgentTimeout': (string);
  'rerunAfterMs': (number);
  /**
   * Where the application master runs: "shared" (the node's AM host, many AMs in one process) or
   * "dedicated" (a process of its own). Default "shared".
   */
  'amMode': (string);
  /**
   * What the job's processes need of the network: "connected" (default: the AM and every worker
   * are placed on hosts that all reach one another, and later grants stay inside that set) or
   * "independent" (no worker-to-worker or AM-to-worker traffic beyond the agents': placement
   * ignores partial partitions between hosts).
   */
  'network': (string);
  /**
   * Speculative execution of slow attempts: "off", "base" (LATE: a backup of an attempt whose
   * progress rate is far below its peers') or "path" (default: also path-based speculation, which
   * finds the host common to slow data paths and moves the work that host serves or reads).
   */
  'speculation': (string);
  /**
   * Whether the master's failure prediction may act on the job (host blacklists, early kill or
   * reschedule of attempts): "on" (default; "" means it) or "off".
   */
  'failurePrediction': (string);
  /**
   * A testbed of the job's quota group (`fuxi testbed create`): the job's AM and workers go only to
   * its hosts while it is active ('' = anywhere the quota group may go).
   */
  'testbed': (string);
  /**
   * The external scheduler that places the job's task slots (SchedulerService), by the name it
   * registers under; "" = the built-in scheduler. The AM's slot is always placed by the master.
   */
  'scheduler': (string);
  /**
   * Set on the members of a job array (`fuxi submit --array`, SDK `submitArray`): the array's id,
   * this member's index, and how many members may run at once (0 = no limit).
   */
  'array': (_fuxi_v1_JobArray__Output | null);
}
