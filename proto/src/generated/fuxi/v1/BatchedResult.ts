// Original file: proto/fuxi/v1/common.proto


/**
 * The answer to one batched call: its response message serialized, or its error.
 */
export interface BatchedResult {
  'response'?: (Buffer | Uint8Array | string);
  /**
   * Empty when the call succeeded; else the Fuxi error code (INVALID_ARGUMENT, UNAVAILABLE, ...).
   */
  'code'?: (string);
  'message'?: (string);
  /**
   * The error's details, as the `fuxi-*` trailers of a call alone carry them (e.g. leader).
   */
  'details'?: ({[key: string]: string});
}

/**
 * The answer to one batched call: its response message serialized, or its error.
 */
export interface BatchedResult__Output {
  'response': (Buffer);
  /**
   * Empty when the call succeeded; else the Fuxi error code (INVALID_ARGUMENT, UNAVAILABLE, ...).
   */
  'code': (string);
  'message': (string);
  /**
   * The error's details, as the `fuxi-*` trailers of a call alone carry them (e.g. leader).
   */
  'details': ({[key: string]: string});
}
