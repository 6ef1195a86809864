// Original file: proto/fuxi/v1/master.proto


export interface ProbePeer {
  'nodeId'?: (string);
  /**
   * host:port of the peer's UDP probe responder.
   */
  'address'?: (string);
}

export interface ProbePeer__Output {
  'nodeId': (string);
  /**
   * host:port of the peer's UDP probe responder.
   */
  'address': (string);
}
