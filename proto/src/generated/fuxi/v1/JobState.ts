// Original file: proto/fuxi/v1/common.proto

export const JobState = {
  JOB_STATE_UNSPECIFIED: 'JOB_STATE_UNSPECIFIED',
  JOB_STATE_SUBMITTED: 'JOB_STATE_SUBMITTED',
  JOB_STATE_RUNNING: 'JOB_STATE_RUNNING',
  JOB_STATE_SUCCEEDED: 'JOB_STATE_SUCCEEDED',
  JOB_STATE_FAILED: 'JOB_STATE_FAILED',
  JOB_STATE_KILLED: 'JOB_STATE_KILLED',
} as const;

export type JobState =
  | 'JOB_STATE_UNSPECIFIED'
  | 0
  | 'JOB_STATE_SUBMITTED'
  | 1
  | 'JOB_STATE_RUNNING'
  | 2
  | 'JOB_STATE_SUCCEEDED'
  | 3
  | 'JOB_STATE_FAILED'
  | 4
  | 'JOB_STATE_KILLED'
  | 5

export type JobState__Output = typeof JobState[keyof typeof JobState]
