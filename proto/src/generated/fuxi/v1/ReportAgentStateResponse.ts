// Original file: proto/fuxi/v1/master.proto


export interface ReportAgentStateResponse {
}

export interface ReportAgentStateResponse__Output {
}
