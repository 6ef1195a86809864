// Original file: proto/fuxi/v1/master.proto


export interface GetAppSnapshotRequest {
  'appId'?: (string);
}

export interface GetAppSnapshotRequest__Output {
  'appId': (string);
}
