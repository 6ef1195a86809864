// Original file: proto/fuxi/v1/scheduler.proto


export interface PlacementRejection {
  /**
   * Index into PlaceRequest.placements.
   */
  'index'?: (number);
  /**
   * FENCED, NOT_REGISTERED, NOT_ITS_JOB, UNKNOWN_UNIT, OUT_OF_SCOPE, HOST_UNSCHEDULABLE,
   * OVER_CAPACITY, OVER_REQUEST, PARTIAL_GANG, INVALID.
   */
  'code'?: (string);
  'message'?: (string);
}

export interface PlacementRejection__Output {
  /**
   * Index into PlaceRequest.placements.
   */
  'index': (number);
  /**
   * FENCED, NOT_REGISTERED, NOT_ITS_JOB, UNKNOWN_UNIT, OUT_OF_SCOPE, HOST_UNSCHEDULABLE,
   * OVER_CAPACITY, OVER_REQUEST, PARTIAL_GANG, INVALID.
   */
  'code': (string);
  'message': (string);
}
