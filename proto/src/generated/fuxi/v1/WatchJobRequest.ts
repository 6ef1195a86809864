// Original file: proto/fuxi/v1/master.proto


export interface WatchJobRequest {
  'jobId'?: (string);
}

export interface WatchJobRequest__Output {
  'jobId': (string);
}
