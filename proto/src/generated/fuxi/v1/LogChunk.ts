// Original file: proto/fuxi/v1/agent.proto


export interface LogChunk {
  'data'?: (Buffer | Uint8Array | string);
}

export interface LogChunk__Output {
  'data': (Buffer);
}
