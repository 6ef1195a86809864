// Original file: proto/fuxi/v1/master.proto


export interface RegisterAppRequest {
  'appId'?: (string);
  'amAttempt'?: (number);
  /**
   * host:port of the AM's AppMasterService.
   */
  'address'?: (string);
}

export interface RegisterAppRequest__Output {
  'appId': (string);
  'amAttempt': (number);
  /**
   * host:port of the AM's AppMasterService.
   */
  'address': (string);
}
