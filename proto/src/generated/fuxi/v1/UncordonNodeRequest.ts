// Original file: proto/fuxi/v1/master.proto


export interface UncordonNodeRequest {
  'nodeId'?: (string);
  'requestedBy'?: (string);
}

export interface UncordonNodeRequest__Output {
  'nodeId': (string);
  'requestedBy': (string);
}
