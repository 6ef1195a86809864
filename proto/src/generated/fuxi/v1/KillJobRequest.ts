// Original file: proto/fuxi/v1/master.proto


export interface KillJobRequest {
  'jobId'?: (string);
  'reason'?: (string);
}

export interface KillJobRequest__Output {
  'jobId': (string);
  'reason': (string);
}
