// Original file: proto/fuxi/v1/master.proto


export interface ListNodesRequest {
}

export interface ListNodesRequest__Output {
}
