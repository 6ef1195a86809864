// Original file: proto/fuxi/v1/master.proto


export interface WorkerSummary {
  'running'?: (number);
  'pending'?: (number);
  'finished'?: (number);
}

export interface WorkerSummary__Output {
  'running': (number);
  'pending': (number);
  'finished': (number);
}
