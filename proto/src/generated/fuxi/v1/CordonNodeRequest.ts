// Original file: proto/fuxi/v1/master.proto


export interface CordonNodeRequest {
  'nodeId'?: (string);
  'reason'?: (string);
  'requestedBy'?: (string);
}

export interface CordonNodeRequest__Output {
  'nodeId': (string);
  'reason': (string);
  'requestedBy': (string);
}
