// Original file: proto/fuxi/v1/master.proto


export interface DeleteTestbedRequest {
  'name'?: (string);
  'requestedBy'?: (string);
}

export interface DeleteTestbedRequest__Output {
  'name': (string);
  'requestedBy': (string);
}
