// Original file: proto/fuxi/v1/master.proto


export interface ReportAppStateResponse {
}

export interface ReportAppStateResponse__Output {
}
