// Original file: proto/fuxi/v1/master.proto


export interface OutstandingRequest {
  'suId'?: (string);
  'location'?: (string);
  'count'?: (number);
}

export interface OutstandingRequest__Output {
  'suId': (string);
  'location': (string);
  'count': (number);
}
