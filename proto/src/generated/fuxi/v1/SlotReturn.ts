// Original file: proto/fuxi/v1/master.proto


export interface SlotReturn {
  'suId'?: (string);
  'nodeId'?: (string);
  'slots'?: (number);
}

export interface SlotReturn__Output {
  'suId': (string);
  'nodeId': (string);
  'slots': (number);
}
