// Original file: proto/fuxi/v1/scheduler.proto


export interface SlotPlacement {
  'appId'?: (string);
  'unit'?: (string);
  'nodeId'?: (string);
  'count'?: (number);
}

export interface SlotPlacement__Output {
  'appId': (string);
  'unit': (string);
  'nodeId': (string);
  'count': (number);
}
