// Original file: proto/fuxi/v1/scheduler.proto


export interface RegisterSchedulerRequest {
  /**
   * The name jobs use in their spec (`scheduler: <name>`).
   */
  'name'?: (string);
  /**
   * A testbed name, or a quota group: the hosts it may place on. Empty: every host.
   */
  'testbed'?: (string);
  'quotaGroup'?: (string);
  /**
   * "queue" (one decision per pending request, in queue order) or "slot" (fill free slots).
   */
  'style'?: (string);
}

export interface RegisterSchedulerRequest__Output {
  /**
   * The name jobs use in their spec (`scheduler: <name>`).
   */
  'name': (string);
  /**
   * A testbed name, or a quota group: the hosts it may place on. Empty: every host.
   */
  'testbed': (string);
  'quotaGroup': (string);
  /**
   * "queue" (one decision per pending request, in queue order) or "slot" (fill free slots).
   */
  'style': (string);
}
