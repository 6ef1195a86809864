// Original file: proto/fuxi/v1/master.proto


export interface SubmitJobResponse {
  'jobId'?: (string);
  /**
   * False when a job with this id already existed (idempotent retry).
   */
  'created'?: (boolean);
}

export interface SubmitJobResponse__Output {
  'jobId': (string);
  /**
   * False when a job with this id already existed (idempotent retry).
   */
  'created': (boolean);
}
