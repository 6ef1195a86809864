// Original file: proto/fuxi/v1/master.proto


export interface GetAppSnapshotResponse {
  'topology'?: (string);
  /**
   * Every entry appended by every attempt, in order.
   */
  'entries'?: (string)[];
}

export interface GetAppSnapshotResponse__Output {
  'topology': (string);
  /**
   * Every entry appended by every attempt, in order.
   */
  'entries': (string)[];
}
