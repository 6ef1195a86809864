// Original file: proto/fuxi/v1/agent.proto


export interface ListWorkersRequest {
  'appId'?: (string);
}

export interface ListWorkersRequest__Output {
  'appId': (string);
}
