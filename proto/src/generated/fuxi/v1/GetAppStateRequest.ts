// Original file: proto/fuxi/v1/appmaster.proto


export interface GetAppStateRequest {
}

export interface GetAppStateRequest__Output {
}
