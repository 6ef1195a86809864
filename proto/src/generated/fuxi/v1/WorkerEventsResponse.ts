// Original file: proto/fuxi/v1/appmaster.proto


export interface WorkerEventsResponse {
}

export interface WorkerEventsResponse__Output {
}
