// Original file: proto/fuxi/v1/master.proto


export interface HostWorkers {
  'nodeId'?: (string);
  'workers'?: (number);
}

export interface HostWorkers__Output {
  'nodeId': (string);
  'workers': (number);
}
