// Original file: proto/fuxi/v1/common.proto


export interface LocalityHint {
  'nodes'?: (string)[];
  'racks'?: (string)[];
}

export interface LocalityHint__Output {
  'nodes': (string)[];
  'racks': (string)[];
}
