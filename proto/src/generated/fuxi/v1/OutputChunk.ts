// Original file: proto/fuxi/v1/agent.proto

import type { Long } from '@grpc/proto-loader';

/**
 * The first chunk carries the file's total size and the worker that wrote it.
 */
export interface OutputChunk {
  'data'?: (Buffer | Uint8Array | string);
  'size'?: (number | string | Long);
  'workerId'?: (string);
}

/**
 * The first chunk carries the file's total size and the worker that wrote it.
 */
export interface OutputChunk__Output {
  'data': (Buffer);
  'size': (string);
  'workerId': (string);
}
