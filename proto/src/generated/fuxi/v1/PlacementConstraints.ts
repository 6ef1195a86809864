// Original file: proto/fuxi/v1/master.proto


/**
 * What an AM asks of the hosts of its future grants, beyond the hosts its AM and its running
 * workers are on (which every new grant of a "connected" job must reach anyway).
 */
export interface PlacementConstraints {
  /**
   * Hosts every new grant must reach, e.g. the hosts that serve outputs later tasks will read.
   */
  'reach'?: (string)[];
  /**
   * Hosts the app gives up (cut off from the rest of its hosts): no new grant there.
   */
  'avoid'?: (string)[];
}

/**
 * What an AM asks of the hosts of its future grants, beyond the hosts its AM and its running
 * workers are on (which every new grant of a "connected" job must reach anyway).
 */
export interface PlacementConstraints__Output {
  /**
   * Hosts every new grant must reach, e.g. the hosts that serve outputs later tasks will read.
   */
  'reach': (string)[];
  /**
   * Hosts the app gives up (cut off from the rest of its hosts): no new grant there.
   */
  'avoid': (string)[];
}
