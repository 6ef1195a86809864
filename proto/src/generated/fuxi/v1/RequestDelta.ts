// Original file: proto/fuxi/v1/master.proto


/**
 * One change to an SU's outstanding request. `location` is "" (anywhere),
 * "node:<id>" or "rack:<name>": preference node > rack > any.
 */
export interface RequestDelta {
  'suId'?: (string);
  'location'?: (string);
  'delta'?: (number);
}

/**
 * One change to an SU's outstanding request. `location` is "" (anywhere),
 * "node:<id>" or "rack:<name>": preference node > rack > any.
 */
export interface RequestDelta__Output {
  'suId': (string);
  'location': (string);
  'delta': (number);
}
