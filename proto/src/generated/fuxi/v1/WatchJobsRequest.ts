// Original file: proto/fuxi/v1/master.proto


export interface WatchJobsRequest {
  'jobIds'?: (string)[];
  /**
   * And every member of this job array.
   */
  'arrayId'?: (string);
  /**
   * Only terminal states (one message per job), not every change.
   */
  'endsOnly'?: (boolean);
}

export interface WatchJobsRequest__Output {
  'jobIds': (string)[];
  /**
   * And every member of this job array.
   */
  'arrayId': (string);
  /**
   * Only terminal states (one message per job), not every change.
   */
  'endsOnly': (boolean);
}
