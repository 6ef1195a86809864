// Original file: proto/fuxi/v1/common.proto

import type { Long } from '@grpc/proto-loader';

/**
 * One data path: a reader worker fetching the output of a worker on another host (source ->
 * destination), as measured by the reader's SDK or by the serving agent's data service.
 */
export interface PathRecord {
  'srcNode'?: (string);
  'dstNode'?: (string);
  /**
   * The worker whose output is read, and the worker reading it.
   */
  'srcWorker'?: (string);
  'readerWorker'?: (string);
  'bytes'?: (number | string | Long);
  'elapsedMs'?: (number | string | Long);
  'done'?: (boolean);
}

/**
 * One data path: a reader worker fetching the output of a worker on another host (source ->
 * destination), as measured by the reader's SDK or by the serving agent's data service.
 */
export interface PathRecord__Output {
  'srcNode': (string);
  'dstNode': (string);
  /**
   * The worker whose output is read, and the worker reading it.
   */
  'srcWorker': (string);
  'readerWorker': (string);
  'bytes': (string);
  'elapsedMs': (string);
  'done': (boolean);
}
