// Original file: proto/fuxi/v1/master.proto


export interface GetClusterStatusRequest {
}

export interface GetClusterStatusRequest__Output {
}
