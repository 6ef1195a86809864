// Original file: proto/fuxi/v1/master.proto


export interface FinishAppResponse {
}

export interface FinishAppResponse__Output {
}
