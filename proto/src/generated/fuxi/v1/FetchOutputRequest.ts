// Original file: proto/fuxi/v1/agent.proto

import type { Long } from '@grpc/proto-loader';

export interface FetchOutputRequest {
  'appId'?: (string);
  /**
   * The worker, by id (as in FUXI_UPSTREAM) ...
   */
  'workerId'?: (string);
  /**
   * ... or by task and instance (its succeeded attempt) when worker_id is empty.
   */
  'task'?: (string);
  'instance'?: (number);
  /**
   * Relative to the worker's output directory; no "..", no absolute path.
   */
  'path'?: (string);
  /**
   * Start at this byte (resuming an interrupted fetch).
   */
  'offset'?: (number | string | Long);
  /**
   * Who reads (optional; the data service reports the path's progress to the reader's AM).
   */
  'readerWorkerId'?: (string);
  'readerNodeId'?: (string);
}

export interface FetchOutputRequest__Output {
  'appId': (string);
  /**
   * The worker, by id (as in FUXI_UPSTREAM) ...
   */
  'workerId': (string);
  /**
   * ... or by task and instance (its succeeded attempt) when worker_id is empty.
   */
  'task': (string);
  'instance': (number);
  /**
   * Relative to the worker's output directory; no "..", no absolute path.
   */
  'path': (string);
  /**
   * Start at this byte (resuming an interrupted fetch).
   */
  'offset': (string);
  /**
   * Who reads (optional; the data service reports the path's progress to the reader's AM).
   */
  'readerWorkerId': (string);
  'readerNodeId': (string);
}
