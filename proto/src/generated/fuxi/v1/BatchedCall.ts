// Original file: proto/fuxi/v1/common.proto


/**
 * Calls of one service carried in one (MasterService.AmCalls, AgentService.Calls,
 * AppMasterService.Calls): each is what a call of `method` alone would carry, its request
 * serialized as that method's request message.
 */
export interface BatchedCall {
  /**
   * The method's name in its service (e.g. "UpdateRequests").
   */
  'method'?: (string);
  /**
   * The bearer token of this call (an AM attempt's token); empty: the batch caller's identity.
   */
  'token'?: (string);
  'request'?: (Buffer | Uint8Array | string);
  /**
   * The instance the call is for, on a server of many (AppMasterService.Calls at an AM host: the
   * route of the AM's address `host:port#route`); empty elsewhere.
   */
  'route'?: (string);
}

/**
 * Calls of one service carried in one (MasterService.AmCalls, AgentService.Calls,
 * AppMasterService.Calls): each is what a call of `method` alone would carry, its request
 * serialized as that method's request message.
 */
export interface BatchedCall__Output {
  /**
   * The method's name in its service (e.g. "UpdateRequests").
   */
  'method': (string);
  /**
   * The bearer token of this call (an AM attempt's token); empty: the batch caller's identity.
   */
  'token': (string);
  'request': (Buffer);
  /**
   * The instance the call is for, on a server of many (AppMasterService.Calls at an AM host: the
   * route of the AM's address `host:port#route`); empty elsewhere.
   */
  'route': (string);
}
