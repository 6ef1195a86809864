// Original file: proto/fuxi/v1/agent.proto


export interface GetAgentStateRequest {
}

export interface GetAgentStateRequest__Output {
}
