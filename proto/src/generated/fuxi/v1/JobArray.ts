// Original file: proto/fuxi/v1/common.proto


export interface JobArray {
  'id'?: (string);
  'index'?: (number);
  'maxRunning'?: (number);
}

export interface JobArray__Output {
  'id': (string);
  'index': (number);
  'maxRunning': (number);
}
