// Original file: proto/fuxi/v1/agent.proto


export interface ReadLogRequest {
  'appId'?: (string);
  'task'?: (string);
  'instance'?: (number);
  /**
   * "stdout" (default) or "stderr".
   */
  'stream'?: (string);
  /**
   * Latest attempt when 0.
   */
  'attempt'?: (number);
  'follow'?: (boolean);
}

export interface ReadLogRequest__Output {
  'appId': (string);
  'task': (string);
  'instance': (number);
  /**
   * "stdout" (default) or "stderr".
   */
  'stream': (string);
  /**
   * Latest attempt when 0.
   */
  'attempt': (number);
  'follow': (boolean);
}
