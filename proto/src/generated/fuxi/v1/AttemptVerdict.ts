// Original file: proto/fuxi/v1/master.proto


/**
 * ATLAS+'s decision on one running attempt of the app: "reschedule" (stop it and run the
 * instance elsewhere, not counted as a failure) or "kill" (stop it as failed: it was predicted to
 * fail); never for a job with failurePrediction off.
 */
export interface AttemptVerdict {
  'workerId'?: (string);
  'nodeId'?: (string);
  'action'?: (string);
  /**
   * Predicted failure probability where it runs, and on the best other host.
   */
  'pHere'?: (number | string);
  'pElsewhere'?: (number | string);
}

/**
 * ATLAS+'s decision on one running attempt of the app: "reschedule" (stop it and run the
 * instance elsewhere, not counted as a failure) or "kill" (stop it as failed: it was predicted to
 * fail); never for a job with failurePrediction off.
 */
export interface AttemptVerdict__Output {
  'workerId': (string);
  'nodeId': (string);
  'action': (string);
  /**
   * Predicted failure probability where it runs, and on the best other host.
   */
  'pHere': (number);
  'pElsewhere': (number);
}
