// Original file: proto/fuxi/v1/master.proto


export interface GetJobRequest {
  'jobId'?: (string);
}

export interface GetJobRequest__Output {
  'jobId': (string);
}
