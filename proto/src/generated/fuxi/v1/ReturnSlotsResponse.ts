// Original file: proto/fuxi/v1/master.proto


export interface ReturnSlotsResponse {
}

export interface ReturnSlotsResponse__Output {
}
