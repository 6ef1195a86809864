// Original file: proto/fuxi/v1/appmaster.proto


export interface AgentsTimedOutResponse {
}

export interface AgentsTimedOutResponse__Output {
}
