// Original file: proto/fuxi/v1/master.proto


export interface SubmitJobResult {
  'jobId'?: (string);
  /**
   * Created now; with dry_run, would be created.
   */
  'created'?: (boolean);
  /**
   * Empty when taken (created or already there); else the gRPC status name the job alone would
   * have got from SubmitJob (INVALID_ARGUMENT, ALREADY_EXISTS, ...) and its message.
   */
  'errorCode'?: (string);
  'errorMessage'?: (string);
}

export interface SubmitJobResult__Output {
  'jobId': (string);
  /**
   * Created now; with dry_run, would be created.
   */
  'created': (boolean);
  /**
   * Empty when taken (created or already there); else the gRPC status name the job alone would
   * have got from SubmitJob (INVALID_ARGUMENT, ALREADY_EXISTS, ...) and its message.
   */
  'errorCode': (string);
  'errorMessage': (string);
}
