// Original file: proto/fuxi/v1/common.proto

export const WorkerState = {
  WORKER_STATE_UNSPECIFIED: 'WORKER_STATE_UNSPECIFIED',
  /**
   * Plan accepted; waiting for a grant with room.
   */
  WORKER_STATE_PENDING: 'WORKER_STATE_PENDING',
  WORKER_STATE_RUNNING: 'WORKER_STATE_RUNNING',
  WORKER_STATE_SUCCEEDED: 'WORKER_STATE_SUCCEEDED',
  WORKER_STATE_FAILED: 'WORKER_STATE_FAILED',
  /**
   * Stopped on request (kill, slot revoked).
   */
  WORKER_STATE_KILLED: 'WORKER_STATE_KILLED',
  /**
   * The plan could not be started (bad command, no grant).
   */
  WORKER_STATE_REJECTED: 'WORKER_STATE_REJECTED',
} as const;

export type WorkerState =
  | 'WORKER_STATE_UNSPECIFIED'
  | 0
  /**
   * Plan accepted; waiting for a grant with room.
   */
  | 'WORKER_STATE_PENDING'
  | 1
  | 'WORKER_STATE_RUNNING'
  | 2
  | 'WORKER_STATE_SUCCEEDED'
  | 3
  | 'WORKER_STATE_FAILED'
  | 4
  /**
   * Stopped on request (kill, slot revoked).
   */
  | 'WORKER_STATE_KILLED'
  | 5
  /**
   * The plan could not be started (bad command, no grant).
   */
  | 'WORKER_STATE_REJECTED'
  | 6

export type WorkerState__Output = typeof WorkerState[keyof typeof WorkerState]
