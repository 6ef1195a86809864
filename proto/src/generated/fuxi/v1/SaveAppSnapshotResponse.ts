// Original file: proto/fuxi/v1/master.proto


export interface SaveAppSnapshotResponse {
}

export interface SaveAppSnapshotResponse__Output {
}
