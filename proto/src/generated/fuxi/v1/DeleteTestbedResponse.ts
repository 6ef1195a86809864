// Original file: proto/fuxi/v1/master.proto


export interface DeleteTestbedResponse {
}

export interface DeleteTestbedResponse__Output {
}
