// Original file: proto/fuxi/v1/master.proto


export interface ListTestbedsRequest {
}

export interface ListTestbedsRequest__Output {
}
