// Original file: proto/fuxi/v1/common.proto


export interface TaskProgress {
  'name'?: (string);
  'total'?: (number);
  'pending'?: (number);
  'running'?: (number);
  'succeeded'?: (number);
  'failed'?: (number);
  /**
   * Attempts that failed and were retried.
   */
  'retries'?: (number);
  /**
   * Instances run again because a network partition cut their worker or output off from the
   * job's other hosts (not failed attempts).
   */
  'reexecutions'?: (number);
  /**
   * Fraction done over its instances (0-1): succeeded ones count 1, running ones what they report.
   */
  'progress'?: (number | string);
  /**
   * Speculative attempts started: backups beside a slow attempt, and attempts moved off a slow host
   * (speculation.ts of the DAG AM).
   */
  'backups'?: (number);
}

export interface TaskProgress__Output {
  'name': (string);
  'total': (number);
  'pending': (number);
  'running': (number);
  'succeeded': (number);
  'failed': (number);
  /**
   * Attempts that failed and were retried.
   */
  'retries': (number);
  /**
   * Instances run again because a network partition cut their worker or output off from the
   * job's other hosts (not failed attempts).
   */
  'reexecutions': (number);
  /**
   * Fraction done over its instances (0-1): succeeded ones count 1, running ones what they report.
   */
  'progress': (number);
  /**
   * Speculative attempts started: backups beside a slow attempt, and attempts moved off a slow host
   * (speculation.ts of the DAG AM).
   */
  'backups': (number);
}
